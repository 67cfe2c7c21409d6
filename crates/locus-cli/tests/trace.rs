//! `locus run --trace FILE` and `locus sim --trace FILE`, run as a user would.

use std::path::PathBuf;

mod common;
use common::{locus, stderr};

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "locus-cli-trace-{}-{name}.json",
        std::process::id()
    ))
}

/// Runs `args` with `--json --trace PATH` and returns the report and the trace.
fn report_and_trace(args: &[&str], name: &str) -> (serde_json::Value, serde_json::Value) {
    let path = temp_path(name);
    let path_arg = path.to_str().unwrap();
    let mut all = args.to_vec();
    all.extend(["--json", "--trace", path_arg]);
    let o = locus(&all);
    assert!(o.status.success(), "{all:?}: {}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON report");
    let trace = serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("JSON trace");
    std::fs::remove_file(&path).unwrap();
    (report, trace)
}

#[test]
fn run_trace_has_a_slice_per_task_and_a_row_per_worker() {
    let (report, trace) = report_and_trace(
        &[
            "run",
            "jacobi-2d",
            "--topology",
            "2x1",
            "--config",
            "dfa",
            "--param",
            "size=tiny",
        ],
        "run",
    );
    assert_eq!(report["verified"], true);
    let events = trace["traceEvents"].as_array().unwrap();
    let slices: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    // The tasks of the report, plus the root (the control program).
    assert_eq!(slices.len() as u64, report["tasks"].as_u64().unwrap() + 1);
    let rows: Vec<_> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(rows, ["worker 0", "worker 1"]);
    let wall_us = report["wall_s"].as_f64().unwrap() * 1e6;
    for e in &slices {
        let end = e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap();
        assert!(end <= wall_us + 0.002, "{e} ends after {wall_us} us");
        assert!(e["cname"].is_string());
        // Deferred allocation: every write is local.
        assert_eq!(e["args"]["write_remote_bytes"], 0, "{e}");
    }
}

/// A kernel of several runs (stream: one per STREAM operation and repetition) keeps
/// every run in its trace, one after another, each task a slice named by its kind.
#[test]
fn every_run_of_a_kernel_is_in_its_trace() {
    for (cmd, bench, kinds) in [
        (
            "run",
            "stream",
            &["stream-init", "copy", "scale", "add", "triad"][..],
        ),
        (
            "sim",
            "stream",
            &["stream-init", "copy", "scale", "add", "triad"][..],
        ),
        ("run", "twisted-stream", &["triad"][..]),
        ("run", "cholesky", &["potrf", "trsm", "syrk", "gemm"][..]),
    ] {
        let (report, trace) = report_and_trace(&[cmd, bench, "--topology", "2x1"], bench);
        let events = trace["traceEvents"].as_array().unwrap();
        let slices: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
        let runs: Vec<_> = events.iter().filter(|e| e["ph"] == "i").collect();
        assert!(!runs.is_empty(), "{cmd} {bench}");
        // The report's tasks, and the root (the control program) of every run.
        let roots = slices.iter().filter(|e| e["name"] == "root").count();
        assert_eq!(roots, runs.len(), "{cmd} {bench}");
        assert_eq!(
            slices.len() as u64,
            report["tasks"].as_u64().unwrap() + roots as u64,
            "{cmd} {bench}: every task of every run"
        );
        for kind in kinds {
            assert!(
                slices.iter().any(|e| e["name"] == *kind),
                "{cmd} {bench}: no slice named {kind}"
            );
        }
        for e in &slices {
            let name = e["name"].as_str().unwrap();
            let task = e["args"]["task"].as_str().unwrap();
            assert!(
                task.starts_with(name) && !name.ends_with(|c: char| c.is_ascii_digit()),
                "{cmd} {bench}: {name} for {task}"
            );
        }
        // Run after run: each run's slices start at or after its mark.
        let mark = |run: u64| runs[run as usize - 1]["ts"].as_f64().unwrap();
        for e in &slices {
            let run = e["args"]["run"].as_u64().unwrap();
            assert!(e["ts"].as_f64().unwrap() >= mark(run) - 1e-9, "{e}");
            if let Some(next) = runs.get(run as usize) {
                let end = e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap();
                assert!(end <= next["ts"].as_f64().unwrap() + 0.002, "{e}");
            }
        }
    }
}

#[test]
fn sim_trace_still_works() {
    let (report, trace) = report_and_trace(
        &[
            "sim",
            "jacobi-1d",
            "--topology",
            "4x2",
            "--param",
            "size=tiny",
        ],
        "sim",
    );
    let events = trace["traceEvents"].as_array().unwrap();
    let slices = events.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(slices as u64, report["tasks"].as_u64().unwrap() + 1);
    let rows = events.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!(rows, 8);
}

/// `CMD jacobi-1d` at the tiny size on `2x1`, its trace written to `path`.
fn tiny_traced<'a>(cmd: &'a str, path: &'a std::path::Path) -> [&'a str; 8] {
    [
        cmd,
        "jacobi-1d",
        "--topology",
        "2x1",
        "--param",
        "size=tiny",
        "--trace",
        path.to_str().unwrap(),
    ]
}

#[test]
fn an_unwritable_trace_is_one_line_and_exit_status_2() {
    for cmd in ["run", "sim"] {
        let path = temp_path("no-such-dir").join("t.json");
        let args = tiny_traced(cmd, &path);
        let o = locus(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains("cannot write the trace to"), "{err}");
        assert!(o.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
}

/// A trace that cannot be written after a finished run (here: past the file-size limit
/// `ulimit -f`, with SIGXFSZ ignored so that the write fails with EFBIG) is a failure,
/// exit status 1, not a usage error: the argument was good.
#[test]
fn a_trace_write_that_fails_after_the_run_is_exit_status_1() {
    for cmd in ["run", "sim"] {
        let path = temp_path(&format!("too-large-{cmd}"));
        let script = format!(
            "trap '' XFSZ; ulimit -f 1; exec '{}' {cmd} jacobi-1d --topology 2x1 --trace '{}'",
            env!("CARGO_BIN_EXE_locus"),
            path.display()
        );
        let o = std::process::Command::new("sh")
            .args(["-c", &script])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        let last = err.lines().last().unwrap_or("");
        assert!(last.contains("cannot write the trace to"), "{cmd}: {err}");
        assert!(!path.exists(), "{cmd}: no partial trace");
    }
}

/// `.t.json.tmp-PID-N` left by a process killed while writing (SIGINT) goes with the
/// next `run` or `sim` that writes `t.json`; a temporary file of a live process stays.
#[test]
fn temporaries_of_interrupted_trace_writes_are_removed() {
    let dir = std::env::temp_dir().join(format!("locus-cli-trace-{}-stale", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let live = format!(".t.json.tmp-{}-0", std::process::id());
    for cmd in ["run", "sim"] {
        let stale = format!(".t.json.tmp-{dead}-3");
        std::fs::write(dir.join(&stale), "{\"traceEvents\":[").unwrap();
        std::fs::write(dir.join(&live), "{").unwrap();
        let path = dir.join("t.json");
        let o = locus(&tiny_traced(cmd, &path));
        assert!(o.status.success(), "{cmd}: {}", stderr(&o));
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [live.clone(), "t.json".to_string()], "{cmd}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
