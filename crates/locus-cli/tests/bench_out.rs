//! `locus bench --out DIR` into a directory that already holds a previous run: the
//! directory ends up with this run's files only (its own earlier reports and pictures
//! removed, other files kept), each written whole.

use std::path::{Path, PathBuf};

mod common;
use common::locus;

/// A fresh directory under the target's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The smallest bench there is: one kernel, one configuration, in the simulator.
fn bench(dir: &Path, kernel: &str) {
    let out = locus(&[
        "bench",
        "--engine",
        "sim",
        "--configs",
        "dsa-base",
        "--kernels",
        kernel,
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_second_run_leaves_only_its_own_reports() {
    let dir = scratch("bench-out-twice");
    // Files of the user's, some named like reports of another tool.
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    std::fs::write(dir.join("results.json"), "{}").unwrap();
    std::fs::write(dir.join("bitonic.mine.1.json"), "{}").unwrap();
    bench(&dir, "bitonic");
    assert!(dir.join("bitonic.dsa-base.1.json").exists());
    // A picture an earlier bench drew and this one does not (one configuration: no
    // speedup) goes too.
    std::fs::write(dir.join("speedup.png"), "old").unwrap();
    bench(&dir, "jacobi-1d");
    assert_eq!(
        entries(&dir),
        [
            "bitonic.mine.1.json",
            "jacobi-1d.dsa-base.1.json",
            "locality.png",
            "locality.svg",
            "notes.txt",
            "report.html",
            "results.json",
            "summary.json",
            "timeline.png",
            "timeline.svg",
            "traffic.png",
            "traffic.svg",
        ]
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["kernels"], serde_json::json!(["jacobi-1d"]));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reports_from_an_interrupted_run_are_cleared_too() {
    let dir = scratch("bench-out-interrupted");
    // What a killed run leaves: a report of another configuration and a temporary file.
    std::fs::write(dir.join("kmeans.dfa.3.json"), "{\"bench\":").unwrap();
    std::fs::write(dir.join(".summary.json.tmp-123-0"), "{").unwrap();
    std::fs::write(dir.join("traffic-ws.svg"), "<svg").unwrap();
    bench(&dir, "jacobi-1d");
    let names = entries(&dir);
    assert!(
        !names
            .iter()
            .any(|n| n.contains("kmeans") || n.contains(".tmp-") || n == "traffic-ws.svg"),
        "{names:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
