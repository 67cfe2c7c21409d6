//! `locus run KERNEL --replay`: the kernel runs as a recorded graph, verifies, and its
//! report says so; kernels that cannot replay, parallel control, and a distributed run
//! are refused with status 2.

mod common;

use common::{locus, stderr, stdout};

#[test]
fn replay_runs_verify_and_are_marked_in_the_report() {
    for bench in ["overhead", "jacobi-2d", "seidel-2d"] {
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
