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

/// The commit a report names is the one the binary was built from, whatever
/// repository the command runs in.
#[test]
fn the_commit_shown_is_the_builds_not_the_working_directorys() {
    let built = env!("LOCUS_COMMIT");
    assert!(!built.is_empty());
    let git = |dir: &Path, args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    // The build's commit is the repository's HEAD when git was there at build time.
    if let Some(head) = git(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &["rev-parse", "--short", "HEAD"],
    ) {
        assert!(
            head.starts_with(built) || built.starts_with(&head),
            "built from {built}, HEAD is {head}"
        );
    } else {
        assert_eq!(built, "unknown");
    }
    // Another repository as the working directory, with a commit of its own.
    let elsewhere = scratch("report-commit-elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let other = git(&elsewhere, &["init", "-q"]).and_then(|_| {
        std::fs::write(elsewhere.join("f"), "x").unwrap();
        git(&elsewhere, &["add", "f"])?;
        git(
            &elsewhere,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.com",
                "commit",
                "-q",
                "-m",
                "other",
            ],
        )?;
        git(&elsewhere, &["rev-parse", "--short", "HEAD"])
    });
    let out_dir = elsewhere.join("out");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_locus"))
        .args([
            "bench",
            "--engine",
            "sim",
            "--topology",
            "2x1",
            "--kernels",
            "bitonic",
            "--configs",
            "dsa-opt",
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .current_dir(&elsewhere)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(
        html.contains(&format!(
            "<dt>Commit</dt><dd><code>{built}</code> (of the build)"
        )),
        "{html}"
    );
    if let Some(other) = other {
        assert!(
            !html.contains(&other),
            "the working directory's commit {other}"
        );
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
    let out = compare_to(&a, &b, &chart);
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
    // The chart: B/A ratios per configuration, the runs by their own names.
    let svg = std::fs::read_to_string(chart.join("compare.svg")).unwrap();
    assert!(
        svg.contains("Median time of compare-b / median time of compare-a"),
        "{svg}"
    );
    assert!(
        svg.contains(">dsa-opt</text>") && svg.contains(">dfa</text>"),
        "{svg}"
    );
    assert!(
        !svg.contains(">A</text>") && !svg.contains(">B</text>"),
        "{svg}"
    );
    assert!(svg.contains("as fast as compare-a"), "{svg}");
    assert!(!svg.contains(">geomean</text>"), "no empty group: {svg}");
    // Its report: both runs named, the table and the chart inline.
    let html = std::fs::read_to_string(chart.join("report.html")).unwrap();
    assert!(html.contains("<h1>locus compare report</h1>"), "{html}");
    assert!(html.contains("compare-a") && html.contains("compare-b"));
    assert!(html.contains("<th>time B/A</th>") && html.contains("<td>dsa-opt</td>"));
    assert!(html.contains("<figure id=\"compare\"><svg"), "{html}");
    assert!(html.contains(&format!(
        "<code>{}</code> (of the build)",
        env!("LOCUS_COMMIT")
    )));

    // The same simulated machine on both sides: no warning.
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    assert!(!text.contains("note: A and B ran on different"), "{text}");

    let missing = locus(&["compare", a.to_str().unwrap(), "/nonexistent-locus-dir"]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(stderr(&missing).lines().count(), 1);
}

/// `locus compare A B --out CHART`.
fn compare_to(a: &Path, b: &Path, chart: &Path) -> std::process::Output {
    locus(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        chart.to_str().unwrap(),
    ])
}

/// Writes `summary` as `DIR/summary.json` in a fresh directory.
fn summary_dir(name: &str, summary: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("summary.json"), summary).unwrap();
    dir
}

/// Names of any length are shown whole in the table (a format width stops at 65,535),
/// and cut short in the chart's labels.
#[test]
fn compare_shows_names_of_any_length() {
    let long = "k".repeat(70_000);
    let row = |median: f64| {
        serde_json::json!({"rows": [{"bench": long, "config": "ws", "median_s": median}]})
            .to_string()
    };
    let a = summary_dir("compare-long-a", &row(0.5));
    let b = summary_dir("compare-long-b", &row(0.25));
    let chart = scratch("compare-long-out");
    let out = compare_to(&a, &b, &chart);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let line = text
        .lines()
        .find(|l| l.starts_with(&long))
        .unwrap_or_else(|| panic!("no row: {}", &text[..200]));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        &cells[1..5],
        ["ws", "0.5000", "0.2500", "0.50"],
        "{}",
        &line[70_000..]
    );
    let svg = std::fs::read_to_string(chart.join("compare.svg")).unwrap();
    assert!(!svg.contains(&long) && svg.contains('…'));
    assert!(chart.join("compare.png").is_file());
}

/// A summary that is not the shape `locus bench` writes is refused: one line naming
/// the file and what is wrong, exit status 2, no table.
#[test]
fn compare_refuses_summaries_of_the_wrong_shape() {
    let good = summary_dir(
        "compare-shape-good",
        r#"{"engine": "sim", "rows": [{"bench": "bitonic", "config": "ws", "median_s": 0.5}]}"#,
    );
    let cases = [
        (r#"{"rows": []}"#, "no rows"),
        (r#"{"rows": {}}"#, "no `rows` array"),
        (r#"[1, 2]"#, "no `rows` array"),
        (r#"{"rows": [{"foo": 1}]}"#, "rows[0]: no `bench`"),
        (
            r#"{"rows": [1, "x", null]}"#,
            "rows[0]: a number, not an object",
        ),
        (
            r#"{"rows": [{"bench": "bitonic", "config": 3, "median_s": 1}]}"#,
            "rows[0]: `config` is a number, not a string",
        ),
        (
            r#"{"rows": [{"bench": "bitonic", "config": "ws"}]}"#,
            "rows[0]: no `median_s`",
        ),
        (
            r#"{"rows": [{"bench": "bitonic", "config": "ws", "median_s": 1},
                         {"bench": "bitonic", "config": "dfa", "median_s": "fast"}]}"#,
            "rows[1]: `median_s` is a string, not a number or null",
        ),
        (
            r#"{"rows": [{"bench": "bitonic", "config": "ws", "median_s": 1, "peak_bytes": [1]}]}"#,
            "rows[0]: `peak_bytes` is an array",
        ),
    ];
    for (summary, needle) in cases {
        let bad = summary_dir("compare-shape-bad", summary);
        for (a, b) in [(&good, &bad), (&bad, &good)] {
            let out = locus(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{summary}: {err}");
            assert_eq!(err.lines().count(), 1, "{summary}: {err}");
            assert!(err.contains(needle), "{summary}: {err}");
            assert!(err.contains(&format!("{}", bad.join("summary.json").display())));
            assert!(out.stdout.is_empty(), "{summary}");
        }
    }
    // Rows without values (every repetition failed, or a geometric mean) are `null`.
    let nulls = summary_dir(
        "compare-shape-nulls",
        r#"{"rows": [{"bench": "bitonic", "config": "ws", "median_s": null, "r_loc_rt": null}]}"#,
    );
    let out = locus(&["compare", good.to_str().unwrap(), nulls.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Runs of different engines or machines are compared with a warning: one line on
/// stderr, a note in the output and in the report.
#[test]
fn compare_warns_when_a_and_b_ran_on_different_machines_or_engines() {
    let summary = |engine: &str, topology: &str, host: &str, cpu: &str| {
        serde_json::json!({
            "engine": engine,
            "topology": {"name": topology, "nodes": 1, "cpus": 2},
            "host": {"name": host, "cpu_model": cpu, "nodes": 1, "cpus": 2},
            "rows": [{"bench": "bitonic", "config": "ws", "median_s": 0.5, "peak_bytes": 3u64 << 30}],
        })
        .to_string()
    };
    let cases = [
        (
            summary("threads", "host", "alpha", "Xeon"),
            summary("sim", "opteron-64", "alpha", "Xeon"),
            "A and B ran on different engines (threads vs sim)",
        ),
        (
            summary("threads", "host", "alpha", "Xeon"),
            summary("threads", "host", "beta", "EPYC"),
            "A and B ran on different machines (host alpha vs beta; CPU Xeon vs EPYC)",
        ),
        (
            summary("sim", "opteron-64", "alpha", "Xeon"),
            summary("sim", "sgi-uv2000", "beta", "Xeon"),
            "A and B ran on different machines (simulated machine opteron-64 vs sgi-uv2000)",
        ),
    ];
    for (k, (a, b, warning)) in cases.iter().enumerate() {
        let a = summary_dir(&format!("compare-machines-a{k}"), a);
        let b = summary_dir(&format!("compare-machines-b{k}"), b);
        let chart = scratch(&format!("compare-machines-out{k}"));
        let out = compare_to(&a, &b, &chart);
        assert!(out.status.success(), "{}", stderr(&out));
        let err = stderr(&out);
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].starts_with("locus: warning: "), "{err}");
        assert!(lines[0].contains(warning), "{err}");
        let text = stdout(&out);
        assert!(text.contains(&format!("note: {warning}")), "{text}");
        let html = std::fs::read_to_string(chart.join("report.html")).unwrap();
        assert!(html.contains(warning), "{html}");
        // 3 GiB peaks are shown in GiB.
        assert!(
            text.contains("A peak (GiB)") && text.contains("B peak (GiB)"),
            "{text}"
        );
        let row = text.lines().find(|l| l.starts_with("bitonic")).unwrap();
        assert!(row.contains("  3.0  "), "{row}");
    }
    // The same host: no warning; a small peak in KiB.
    let same = serde_json::json!({
        "engine": "threads",
        "host": {"name": "alpha", "cpu_model": "Xeon", "nodes": 1, "cpus": 2},
        "rows": [{"bench": "bitonic", "config": "ws", "median_s": 0.5, "peak_bytes": 512 * 1024}],
    })
    .to_string();
    let a = summary_dir("compare-same-a", &same);
    let b = summary_dir("compare-same-b", &same);
    let out = locus(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("A peak (KiB)"), "{text}");
    assert!(text.contains("  512.0  "), "{text}");
}

/// `locus bench` records the machine it ran on for `locus compare`.
#[test]
fn the_summary_names_the_host() {
    let dir = scratch("report-host");
    sim_bench(&dir, "dsa-opt");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let host = &v["host"];
    assert!(host["cpus"].as_u64().unwrap() >= 1, "{host}");
    assert!(host["nodes"].as_u64().unwrap() >= 1, "{host}");
    if let Ok(name) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        assert_eq!(host["name"], name.trim(), "{host}");
    }
}
