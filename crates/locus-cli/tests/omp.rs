//! `locus omp`: gcc-compiled OpenMP programs (`tests/omp/*.c`, built here with
//! `gcc -fopenmp`) run on Locus's OpenMP runtime, on 1, 2 and 4 threads, checking their
//! own results; refused constructs and misuse stop them with one line and status 2.
//! Without gcc the tests say so and pass (CI has gcc).

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{locus, locus_env, stderr, stdout};

/// Builds `tests/omp/NAME.c` with `gcc -fopenmp`; `None` without gcc.
fn build(name: &str) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/omp/{name}.c"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp");
    std::fs::create_dir_all(&dir).unwrap();
    // A binary per call: tests that build the same program run at once, and one must
    // not run the file another's gcc is rewriting.
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let bin = dir.join(format!("{name}-{n}"));
    let out = match Command::new("gcc")
        .args(["-fopenmp", "-O2", "-Wall", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gcc is not available ({e}): {name} not tested");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "gcc {name}.c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(bin)
}

fn run(bin: &Path, opts: &[&str], args: &[&str]) -> std::process::Output {
    let mut all = vec!["omp"];
    all.extend_from_slice(opts);
    all.push("--");
    all.push(bin.to_str().unwrap());
    all.extend_from_slice(args);
    // LD_BIND_NOW: every symbol the program needs is resolved at load, so a missing one
    // fails the test even where the program never calls it.
    locus_env(&all, &[("LD_BIND_NOW", "1")])
}

#[test]
fn worksharing_constructs_and_locks_verify_on_1_2_and_4_threads() {
    let Some(bin) = build("worksharing") else {
        return;
    };
    for threads in ["1", "2", "4"] {
        let o = run(&bin, &["--threads", threads], &[]);
        assert!(
            o.status.success() && stdout(&o).ends_with("ok\n"),
            "{threads} threads: {}{}",
            stdout(&o),
            stderr(&o)
        );
    }
}

#[test]
fn tasks_with_dependences_verify_and_the_report_counts_every_task() {
    let Some(bin) = build("tasks") else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp");
    for threads in ["1", "2", "4"] {
        for topology in ["host", "2x2"] {
            let report = dir.join(format!("tasks-{threads}-{topology}.json"));
            let o = run(
                &bin,
                &[
                    "--threads",
                    threads,
                    "--topology",
                    topology,
                    "--report",
                    report.to_str().unwrap(),
                ],
                &[],
            );
            let out = stdout(&o);
            assert!(
                o.status.success() && out.ends_with("ok\n"),
                "{threads} threads on {topology}: {out}{}",
                stderr(&o)
            );
            let created: u64 = out
                .lines()
                .find_map(|l| l.strip_prefix("tasks "))
                .and_then(|n| n.parse().ok())
                .expect("the program prints its task count");
            let r: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
            let omp = &r["openmp"];
            assert_eq!(omp["explicit_tasks"], created, "{omp}");
            // Every deferred task and every implicit task is a task of Locus's report.
            assert_eq!(
                r["tasks"].as_u64().unwrap(),
                omp["deferred_tasks"].as_u64().unwrap() + omp["implicit_tasks"].as_u64().unwrap()
            );
            assert!(omp["deferred_tasks"].as_u64().unwrap() > 8000);
            if topology == "2x2" {
                assert_eq!(r["topology"]["nodes"], 2);
            }
        }
    }
}

#[test]
fn a_refused_construct_stops_the_program_with_one_line() {
    let Some(bin) = build("refused") else {
        return;
    };
    let o = run(&bin, &[], &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("taskloop") && err.contains("Locus's OpenMP runtime"),
        "{err}"
    );
    assert!(!stdout(&o).contains("ran"), "the construct must not run");
}

#[test]
fn misuse_is_reported_in_one_line() {
    let Some(bin) = build("misuse") else {
        return;
    };
    for (case, needle) in [
        ("destroyed-lock", "destroyed lock"),
        ("barrier-in-task", "barrier inside an explicit task"),
    ] {
        let o = run(&bin, &["--threads", "2"], &[case]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{case}: {err}");
        assert_eq!(err.lines().count(), 1, "{case}: {err}");
        assert!(err.contains(needle), "{case}: {err}");
    }
}

#[test]
fn the_exit_status_of_the_program_is_forwarded() {
    let o = locus(&["omp", "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
}

#[test]
fn bad_arguments_get_one_line_and_status_2() {
    for args in [
        &["omp", "--threads", "0", "--", "true"][..],
        &["omp", "--config", "fast", "--", "true"],
        &["omp", "--topology", "3y", "--", "true"],
        &["omp", "--affinity", "sometimes", "--", "true"],
        &["omp"],
        &["omp", "--", "/nonexistent/program"],
    ] {
        let o = locus(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_program_built_for_libomp_is_refused() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp");
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("clang-built");
    // An ELF header and the name of clang's runtime in its string table.
    std::fs::write(&fake, b"\x7fELF....\0libomp.so.5\0").unwrap();
    let o = locus(&["omp", "--", fake.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("libomp.so"), "{err}");
}

#[test]
fn tasks_get_the_node_of_their_out_memory_as_home_on_virtual_nodes() {
    let Some(bin) = build("placement") else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp");
    for affinity in ["strict", "non-strict"] {
        let report = dir.join(format!("placement-{affinity}.json"));
        let o = run(
            &bin,
            &[
                "--threads",
                "4",
                "--topology",
                "2x2",
                "--affinity",
                affinity,
                "--report",
                report.to_str().unwrap(),
            ],
            &[],
        );
        let out = stdout(&o);
        assert!(
            o.status.success() && out.ends_with("ok\n"),
            "{out}{}",
            stderr(&o)
        );
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let omp = &r["openmp"];
        // Every compute task names a block an initialisation task wrote first: each
        // has a home, the node of the worker that wrote it.
        assert_eq!(omp["tasks_with_home"], 80, "{omp}");
        if affinity == "strict" {
            assert_eq!(omp["tasks_on_home"], 80, "{omp}");
        }
    }
    // On one node there is nothing to place.
    let report = dir.join("placement-host.json");
    let o = run(
        &bin,
        &["--threads", "2", "--report", report.to_str().unwrap()],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    if r["topology"]["nodes"] == 1 {
        assert_eq!(r["openmp"]["tasks_with_home"], 0);
    }
}

#[test]
fn omp_display_env_prints_the_settings_at_start() {
    let Some(bin) = build("tasks") else {
        return;
    };
    let o = locus_env(
        &[
            "omp",
            "--threads",
            "2",
            "--config",
            "home",
            "--",
            bin.to_str().unwrap(),
        ],
        &[("OMP_DISPLAY_ENV", "verbose")],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("OPENMP DISPLAY ENVIRONMENT BEGIN"), "{err}");
    assert!(err.contains("OMP_NUM_THREADS = '2'"), "{err}");
    assert!(err.contains("LOCUS_CONFIG = 'home'"), "{err}");
    // A setting the runtime cannot use: one line, status 2.
    let o = locus_env(
        &["omp", "--", bin.to_str().unwrap()],
        &[("OMP_SCHEDULE", "fastest")],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("OMP_SCHEDULE"), "{err}");
}

#[test]
fn the_trace_keeps_every_region_with_slices_named_by_kind() {
    let Some(bin) = build("tasks") else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp");
    let (trace, report) = (
        dir.join("tasks-trace.json"),
        dir.join("tasks-trace-report.json"),
    );
    let o = run(
        &bin,
        &[
            "--threads",
            "2",
            "--trace",
            trace.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().expect("a Chrome trace");
    let slices = |name: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == name)
            .count() as u64
    };
    let omp = &r["openmp"];
    assert!(omp["regions"].as_u64().unwrap() > 1, "{omp}");
    assert_eq!(slices("omp-task"), omp["deferred_tasks"].as_u64().unwrap());
    assert_eq!(
        slices("omp-implicit-task"),
        omp["implicit_tasks"].as_u64().unwrap()
    );
}
