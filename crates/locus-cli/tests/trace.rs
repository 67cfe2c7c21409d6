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

#[test]
fn an_unwritable_trace_is_one_line_and_exit_status_2() {
    for cmd in ["run", "sim"] {
        let path = temp_path("no-such-dir").join("t.json");
        let args = [
            cmd,
            "jacobi-1d",
            "--topology",
            "2x1",
            "--param",
            "size=tiny",
            "--trace",
            path.to_str().unwrap(),
        ];
        let o = locus(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains("cannot write the trace to"), "{err}");
        assert!(o.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
}
