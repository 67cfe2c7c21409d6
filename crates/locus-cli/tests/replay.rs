//! `locus run KERNEL --replay`: the kernel runs as a recorded graph, verifies, and its
//! report and trace say so; kernels that cannot replay, parallel control, and a distributed run
//! are refused with status 2.

mod common;

use common::{locus, stderr, stdout};

#[test]
fn replay_runs_verify_and_are_marked_in_the_report() {
    for bench in ["overhead", "jacobi-2d", "seidel-2d", "cholesky"] {
        let out = locus(&[
            "run",
            bench,
            "--param",
            "size=tiny",
            "--topology",
            "2x1",
            "--replay",
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{bench}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(report["verified"], true, "{bench}");
        assert_eq!(report["settings"]["replay"], bench, "{bench}: {report}");
        assert!(
            report["settings"]["replayed_iterations"].is_string(),
            "{report}"
        );
    }
}

#[test]
fn a_trace_shows_every_replayed_task() {
    let path = std::env::temp_dir().join(format!("locus-replay-trace-{}.json", std::process::id()));
    let out = locus(&[
        "run",
        "jacobi-2d",
        "--param",
        "size=tiny",
        "--topology",
        "2x1",
        "--replay",
        "--trace",
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    let events = trace["traceEvents"].as_array().expect("trace events");
    let slices = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "jacobi-2d")
        .count();
    // 8 blocks, 3 sweeps: two replayed, the last one dynamic.
    assert_eq!(slices, 24, "{trace}");
}

#[test]
fn what_cannot_replay_is_a_usage_error() {
    for args in [
        &["run", "bitonic", "--param", "size=tiny", "--replay"][..],
        &[
            "run",
            "jacobi-2d",
            "--param",
            "size=tiny",
            "--replay",
            "--control",
            "parallel",
        ],
        &[
            "run",
            "overhead",
            "--param",
            "size=tiny",
            "--iterations",
            "7",
            "--replay",
        ],
    ] {
        let out = locus(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--replay"), "{}", stderr(&out));
    }
}

#[test]
fn replay_placement_is_a_setting_of_run_and_sim() {
    for (command, placement) in [("run", "strict"), ("sim", "strict"), ("sim", "stealable")] {
        let out = locus(&[
            command,
            "seidel-2d",
            "--param",
            "size=tiny",
            "--topology",
            "2x1",
            "--replay",
            "--replay-placement",
            placement,
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{command}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(report["verified"], true, "{command}");
        assert_eq!(
            report["settings"]["replay_placement"], placement,
            "{command}: {report}"
        );
    }
    // Only with --replay, and only the two placements.
    for args in [
        &["sim", "seidel-2d", "--replay-placement", "strict"][..],
        &[
            "run",
            "seidel-2d",
            "--replay",
            "--replay-placement",
            "loose",
        ],
    ] {
        let out = locus(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
}
