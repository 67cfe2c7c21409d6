//! The command line as a whole process, under random argument vectors for `locus run`,
//! `locus sim` and `locus topo`: never a panic, and exit status 0, 2 (a bad argument,
//! one line on stderr) or 1 only for a run that did not verify.
//!
//! The vectors mix every option with values that break naive parsers (zero, huge
//! numbers, negative or unicode text, nothing). Numbers large enough to be valid and
//! slow (billions of iterations) are left out: the property is about parsing and
//! validation, and every run it starts stays small.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;

const BENCHES: &[&str] = &[
    "random-dag",
    "overhead",
    "jacobi-1d",
    "jacobi-2d",
    "jacobi-3d",
    "seidel-1d",
    "seidel-2d",
    "seidel-3d",
    "kmeans",
    "blur-roberts",
    "bitonic",
];

/// A directory of its own, so that `--trace FILE` with a random name stays inside it.
fn scratch() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("args-props");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Numbers: valid small ones, zero, negative, past every limit, not numbers.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (0u32..9).prop_map(|n| n.to_string()),
        1 => Just("16".to_string()),
        1 => Just("-1".to_string()),
        1 => Just(usize::MAX.to_string()),
        1 => Just("18446744073709551616".to_string()),
        1 => Just((1u64 << 40).to_string()),
        1 => Just(String::new()),
        1 => Just("٣".to_string()),
        1 => "\\PC{0,4}",
    ]
}

/// Numbers for what sets a run's length: small, or refused.
fn short() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u32..4).prop_map(|n| n.to_string()),
        1 => Just("-3".to_string()),
        1 => Just("18446744073709551616".to_string()),
        1 => "\\PC{0,3}",
    ]
}

fn param() -> impl Strategy<Value = String> {
    let keys = vec![
        "rows",
        "cols",
        "block_rows",
        "block_len",
        "len",
        "blocks",
        "clusters",
        "dims",
        "seed",
        "hints",
        "data",
        "max_len",
        "chains",
        "fan",
        "size",
        "control",
        "",
        "nope",
    ];
    prop_oneof![
        6 => (prop::sample::select(keys), number()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => prop::sample::select(vec![
            "size=tiny",
            "size=paper",
            "size=huge",
            "=",
            "x",
            "a=b=c"
        ])
        .prop_map(str::to_string),
        1 => "\\PC{0,8}",
    ]
}

/// One option with its value, or a stray word.
fn option() -> impl Strategy<Value = Vec<String>> {
    let one = |flag: &'static str, value: BoxedStrategy<String>| {
        value.prop_map(move |v| vec![flag.to_string(), v])
    };
    let mut benches = BENCHES.to_vec();
    benches.extend(["quicksort", ""]);
    prop_oneof![
        3 => one(
            "--topology",
            prop::sample::select(vec![
                "2x1",
                "1x1",
                "host",
                "opteron-64",
                "0x1",
                "2x1:10,20,20,10",
                "2x1:10,5,5,10",
                "2x1:@/nonexistent",
                "9999999999999999999999x1",
                "",
                "nehalem",
                "2x1\nx",
            ])
            .prop_map(str::to_string)
            .boxed()
        ),
        3 => one(
            "--config",
            prop::sample::select(vec!["dsa-opt", "ws", "shm-base", "home", "dfa", "nope"])
                .prop_map(str::to_string)
                .boxed()
        ),
        3 => one("--threads", number().boxed()),
        3 => one(
            "--control",
            prop::sample::select(vec!["seq", "parallel", "both"])
                .prop_map(str::to_string)
                .boxed()
        ),
        2 => one(
            "--preset",
            prop::sample::select(vec!["paper", "tiny"])
                .prop_map(str::to_string)
                .boxed()
        ),
        6 => one("--size", number().boxed()),
        6 => one("--blocks", number().boxed()),
        6 => one("--block-len", number().boxed()),
        3 => one("--iterations", short().boxed()),
        12 => one("--param", param().boxed()),
        3 => one(
            "--trace",
            prop_oneof![
                Just("trace.json".to_string()),
                Just("missing/trace.json".to_string()),
                Just(".".to_string()),
                Just(String::new()),
            ]
            .boxed()
        ),
        2 => Just(vec!["--json".to_string()]),
        1 => prop::sample::select(benches).prop_map(|b| vec![b.to_string()]),
        1 => "\\PC{0,6}".prop_map(|w| vec![w]),
        1 => Just(vec!["--".to_string()]),
    ]
}

fn argv() -> impl Strategy<Value = Vec<String>> {
    (
        prop::sample::select(vec!["run", "sim", "topo"]),
        prop::sample::select(BENCHES.to_vec()),
        prop::sample::select(vec!["2x1", "1x1", "opteron-64", "4x2"]),
        prop::collection::vec(option(), 0..6),
        prop::bool::weighted(0.8),
    )
        .prop_map(|(command, bench, topology, mut options, tiny)| {
            // An option given twice is refused before anything is validated: keep the
            // first of each (`--param` repeats).
            let mut seen = Vec::new();
            options.retain(|o| {
                let flag = o[0].clone();
                let repeatable = !flag.starts_with("--") || flag == "--param" || flag == "--";
                repeatable || {
                    let new = !seen.contains(&flag);
                    seen.push(flag);
                    new
                }
            });
            let mut args = vec![command.to_string()];
            // Mostly a benchmark and a topology, so that the options get validated
            // rather than the vector refused for a missing argument.
            if command != "topo" && tiny {
                args.push(bench.to_string());
                if !seen.iter().any(|f| f == "--topology") {
                    args.extend(["--topology".into(), topology.into()]);
                }
            }
            if command == "topo" {
                // `topo` takes a topology and `--json`; other options stay rare (the
                // first one is kept whatever it is).
                for (i, o) in options.into_iter().enumerate() {
                    if i == 0 || o[0] == "--topology" || o[0] == "--json" {
                        args.extend(o);
                    }
                }
            } else {
                args.extend(options.into_iter().flatten());
            }
            // Mostly tiny sizes, so that the runs the vector starts stay short in debug.
            if tiny && command != "topo" {
                args.extend(["--param".to_string(), "size=tiny".to_string()]);
            }
            args
        })
}

/// Runs `locus ARGS` in the scratch directory: its exit status, `None` if it was still
/// running after `limit` (then killed), and what it wrote on stderr.
fn locus(args: &[String], limit: Duration) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(args)
        .current_dir(scratch())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the locus binary runs");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut text).unwrap();
        String::from_utf8_lossy(&text).into_owned()
    });
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stderr = reader.join().unwrap();
            // A signal (an abort) has no code: -1.
            return (Some(status.code().unwrap_or(-1)), stderr);
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            return (None, reader.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_argument_vectors_never_panic(args in argv()) {
        let (code, stderr) = locus(&args, Duration::from_secs(120));
        prop_assert!(!stderr.contains("panicked at"), "{args:?}: {stderr}");
        let Some(code) = code else {
            // Without `size=tiny`, a vector runs a kernel at its default size, whose
            // valid small blocks may ask for millions of tasks (`run seidel-1d
            // --block-len 1`: 7.9 million), more than a debug build runs in the limit.
            // A tiny run must end in it.
            prop_assert!(
                !args.iter().any(|a| a == "size=tiny"),
                "{args:?} still running after 120 s"
            );
            return Ok(());
        };
        prop_assert!(
            code == 0 || code == 2 || (code == 1 && stderr.contains("does not match")),
            "{args:?}: exit status {code}: {stderr}"
        );
        if code == 2 {
            let lines: Vec<&str> = stderr.lines().collect();
            prop_assert_eq!(lines.len(), 1, "{:?}: {}", args, stderr);
            prop_assert!(lines[0].starts_with("locus: ") && lines[0].len() > 8, "{stderr}");
        }
    }
}
