//! Explicit problem sizes on the command line (`--size`, `--blocks`, `--block-len`,
//! `--iterations`, `--param FIELD=VALUE`), run as a user would: every workload runs and
//! verifies at sizes of its own, the report shows the parameters used, and a size the
//! kernel cannot run is one line on stderr with exit status 2.

mod common;
use common::{locus, stderr};

/// Runs `locus <command> <bench> --topology 2x1 --json <size...>` and returns the report.
fn report(command: &str, bench: &str, size: &[&str]) -> serde_json::Value {
    let mut args = vec![command, bench, "--topology", "2x1", "--json"];
    args.extend_from_slice(size);
    let o = locus(&args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

/// A bad size: exit status 2, exactly one line on stderr, nothing on stdout.
fn assert_usage_error(args: &[&str], needle: &str) {
    let o = locus(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line, got {err:?}");
    assert!(
        err.contains(needle),
        "{args:?}: {err:?} should name {needle:?}"
    );
    assert!(o.stdout.is_empty(), "{args:?}: nothing on stdout");
}

/// A workload, its size options, and fields of `params` they must give.
type Case = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, u64)],
);

/// Every workload at explicit sizes.
const CASES: &[Case] = &[
    (
        "random-dag",
        &["--size", "120", "--param", "data=8"],
        &[("tasks", 120), ("data", 8)],
    ),
    (
        "overhead",
        &["--size", "20", "--iterations", "5", "--param", "chains=3"],
        &[("length", 20), ("rounds", 5), ("chains", 3)],
    ),
    (
        "jacobi-1d",
        &["--size", "48", "--blocks", "4", "--iterations", "3"],
        &[("blocks", 4), ("block_len", 12), ("iterations", 3)],
    ),
    (
        "jacobi-2d",
        &[
            "--size",
            "24",
            "--block-len",
            "6",
            "--iterations",
            "2",
            "--param",
            "block_cols=8",
        ],
        &[
            ("rows", 24),
            ("cols", 24),
            ("block_rows", 6),
            ("block_cols", 8),
        ],
    ),
    (
        "jacobi-3d",
        &["--size", "6", "--blocks", "2", "--iterations", "2"],
        &[("depth", 6), ("block_depth", 3), ("block_cols", 3)],
    ),
    (
        "seidel-1d",
        &["--blocks", "6", "--block-len", "5", "--iterations", "2"],
        &[("len", 30), ("block_len", 5)],
    ),
    (
        "seidel-2d",
        &["--size", "20", "--blocks", "4", "--iterations", "2"],
        &[("rows", 20), ("block_rows", 5), ("block_cols", 5)],
    ),
    (
        "seidel-3d",
        &["--size", "6", "--block-len", "3", "--iterations", "1"],
        &[("depth", 6), ("block_rows", 3), ("iterations", 1)],
    ),
    (
        "kmeans",
        &[
            "--size",
            "120",
            "--blocks",
            "6",
            "--iterations",
            "2",
            "--param",
            "clusters=5",
            "--param",
            "dims=2",
        ],
        &[
            ("points", 120),
            ("block_points", 20),
            ("clusters", 5),
            ("dims", 2),
        ],
    ),
    (
        "blur-roberts",
        &["--size", "18", "--block-len", "6"],
        &[("rows", 18), ("block_cols", 6)],
    ),
    (
        "bitonic",
        &["--size", "256", "--blocks", "4", "--param", "seed=3"],
        &[("len", 256), ("block_len", 64), ("seed", 3)],
    ),
];

#[test]
fn every_workload_runs_and_verifies_at_explicit_sizes() {
    for (bench, size, want) in CASES {
        let v = report("run", bench, size);
        assert_eq!(v["verified"], true, "{bench}");
        for (field, value) in *want {
            assert_eq!(
                v["params"][field], *value,
                "{bench}: {field} in {}",
                v["params"]
            );
        }
    }
}

#[test]
fn the_simulator_takes_explicit_sizes_too() {
    let v = report(
        "sim",
        "jacobi-2d",
        &["--size", "32", "--blocks", "2", "--iterations", "3"],
    );
    assert_eq!(v["engine"], "sim");
    assert_eq!(v["verified"], true);
    assert_eq!(v["params"]["block_rows"], 16);
    assert_eq!(v["tasks"], 4 * 3);
    // Paper sizes, then overrides: still paper-sized data, so the bodies are skipped.
    let v = report(
        "sim",
        "seidel-1d",
        &["--preset", "paper", "--iterations", "1"],
    );
    assert_eq!(v["params"]["len"], 1u64 << 28);
    assert_eq!(v["params"]["iterations"], 1);
    assert_eq!(v["bodies"], "skipped");
    assert_eq!(v["tasks"], 1 << 12);
}

#[test]
fn sizes_a_kernel_cannot_run_are_one_line_and_status_2() {
    let run = |bench: &'static str, size: &[&'static str]| {
        let mut args = vec!["run", bench, "--topology", "2x1"];
        args.extend_from_slice(size);
        args
    };
    assert_usage_error(&run("jacobi-2d", &["--block-len", "100"]), "--block-len");
    assert_usage_error(
        &run("jacobi-2d", &["--size", "100", "--blocks", "3"]),
        "--blocks 3",
    );
    assert_usage_error(
        &run("seidel-3d", &["--size", "0"]),
        "--size must be at least 1",
    );
    assert_usage_error(&run("kmeans", &["--iterations", "0"]), "--iterations");
    assert_usage_error(&run("bitonic", &["--size", "1000"]), "power of two");
    assert_usage_error(
        &run("blur-roberts", &["--iterations", "2"]),
        "means nothing",
    );
    assert_usage_error(&run("random-dag", &["--block-len", "2"]), "--block-len");
    assert_usage_error(
        &run("jacobi-2d", &["--param", "depth=4"]),
        "unknown --param `depth`",
    );
    assert_usage_error(
        &run("jacobi-2d", &["--param", "rows=abc"]),
        "--param rows=abc",
    );
    assert_usage_error(&run("kmeans", &["--param", "clusters=0"]), "clusters");
    assert_usage_error(
        &run("jacobi-3d", &["--size", "1048576", "--blocks", "1"]),
        "2^48",
    );
    assert_usage_error(&run("jacobi-1d", &["--size", "abc"]), "--size");
    assert_usage_error(&run("jacobi-1d", &["--blocks", "-3"]), "--blocks");
    assert_usage_error(
        &["sim", "jacobi-2d", "--topology", "2x1", "--block-len", "7"],
        "--block-len",
    );
}

/// A `--param` key is a field of the kernel's parameters, given once: the options of
/// their own (`--migrate`, `--affinity`) do not pass through `--param`.
#[test]
fn param_keys_are_fields_given_once() {
    for (bench, key) in [
        ("random-dag", "--migrate=bogus"),
        ("random-dag", "--migrate=now"),
        ("twisted-stream", "--migrate=now"),
        ("jacobi-2d", "--affinity=strict"),
        ("spmv", "--matrix=a.mtx"),
    ] {
        let param = format!("--param={key}");
        let option = key.split('=').next().unwrap();
        assert_usage_error(
            &["run", bench, "--topology", "2x1", &param],
            &format!("{bench}: unknown --param `{option}` (fields: "),
        );
    }
    assert_usage_error(
        &[
            "run",
            "random-dag",
            "--topology",
            "2x1",
            "--param=--migrate=x",
        ],
        "(fields: data, hints, max_inputs, max_len, seed, tasks; size=tiny|small|paper)",
    );
    assert_usage_error(
        &[
            "sim",
            "random-dag",
            "--topology",
            "2x1",
            "--param",
            "seed=1",
            "--param",
            "seed=2",
        ],
        "--param seed is given twice",
    );
    assert_usage_error(
        &[
            "run",
            "kmeans",
            "--topology",
            "2x1",
            "--param",
            "size=tiny",
            "--param",
            "size=tiny",
        ],
        "--param size is given twice",
    );
}
