//! `report.html` of `locus bench` (one self-contained file: table, figures, command
//! line, host topology, commit, date) and `locus compare DIR_A DIR_B`.

use std::path::{Path, PathBuf};

mod common;
use common::{locus, stderr, stdout};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn sim_bench(dir: &Path, configs: &str) {
    let out = locus(&[
        "bench",
        "--engine",
        "sim",
        "--topology",
        "2x2",
        "--kernels",
        "bitonic,kmeans",
        "--configs",
        configs,
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn bench_writes_a_self_contained_report() {
    let dir = scratch("report-html");
    sim_bench(&dir, "dsa-base,dsa-opt");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    // The command line, the date, the commit and the host's topology.
    assert!(
        html.contains("bench --engine sim --topology 2x2"),
        "command line"
    );
    assert!(html.contains(" UTC</dd>"), "date");
    assert!(html.contains("<dt>Commit</dt>"));
    assert!(html.contains("Host topology") && html.contains("topology host"));
    // The table: one row per kernel and configuration, then the geometric means.
    assert!(html.contains("<th>time (s)</th>") && html.contains("<th>speedup over dsa-base</th>"));
    assert_eq!(
        html.matches("<tr>").count(),
        1 + 4,
        "header and four kernel rows"
    );
    assert_eq!(html.matches("<tr class=\"geomean\">").count(), 2);
    // Every picture inline; nothing fetched from elsewhere.
    for name in ["speedup", "locality", "traffic"] {
        assert!(
            html.contains(&format!("<figure id=\"{name}\"><svg")),
            "{name}"
        );
    }
    for outside in ["<script", "<link", "<img", "src=", "url(http"] {
        assert!(!html.contains(outside), "{outside}");
    }
}

#[test]
fn compare_puts_two_outputs_side_by_side_with_ratios() {
    let a = scratch("compare-a");
    let b = scratch("compare-b");
    sim_bench(&a, "dsa-base,dsa-opt");
    // The simulator is deterministic: the same configuration gives the same figures.
    sim_bench(&b, "dsa-opt,dfa");
    let chart = scratch("compare-out");
    let out = locus(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        chart.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let header = text.lines().find(|l| l.starts_with("kernel")).unwrap();
    for column in [
        "A time (s)",
        "B time (s)",
        "time B/A",
        "r_loc_rt B/A",
        "peak B/A",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let row = |kernel: &str, config: &str| -> Vec<String> {
        text.lines()
            .find(|l| {
                let mut w = l.split_whitespace();
                w.next() == Some(kernel) && w.next() == Some(config)
            })
            .unwrap_or_else(|| panic!("no row {kernel} {config}: {text}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    // dsa-opt ran on both sides: ratios of 1.
    let same = row("bitonic", "dsa-opt");
    assert_eq!(same[2], same[3], "{text}");
    assert_eq!(same[4], "1.00", "{text}");
    assert_eq!(same[7], "1.00", "{text}");
    // dsa-base only in A, dfa only in B: no ratio.
    assert_eq!(row("bitonic", "dsa-base")[3], "-");
    assert_eq!(row("kmeans", "dfa")[2], "-");
    assert!(chart.join("compare.svg").is_file() && chart.join("compare.png").is_file());

    let missing = locus(&["compare", a.to_str().unwrap(), "/nonexistent-locus-dir"]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(stderr(&missing).lines().count(), 1);
}
