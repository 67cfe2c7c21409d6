//! Every picture `locus bench` writes, on the host, on four virtual nodes and in the
//! simulator on `opteron-64`, rendered as a reader would see it: text laid out in the
//! system's fonts (resvg), and checked for text outside the canvas, a legend, axis
//! titles with units, error bars on threads-engine charts, and a PNG of the same size.

use std::path::{Path, PathBuf};

use resvg::usvg;

mod common;
use common::locus;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The system's fonts with `sans-serif` set to an installed face, as `locus bench`
/// renders them.
fn fonts() -> std::sync::Arc<usvg::fontdb::Database> {
    let mut db = usvg::fontdb::Database::new();
    db.load_system_fonts();
    let families: Vec<String> = db
        .faces()
        .flat_map(|f| f.families.iter().map(|(n, _)| n.clone()))
        .collect();
    let sans = [
        "DejaVu Sans",
        "Liberation Sans",
        "Arial",
        "Noto Sans",
        "FreeSans",
    ]
    .into_iter()
    .find(|w| families.iter().any(|f| f == w))
    .map(str::to_string)
    .or_else(|| families.first().cloned())
    .expect("the tests need a font to lay out text (fonts-dejavu-core)");
    db.set_sans_serif_family(sans);
    std::sync::Arc::new(db)
}

/// Text boxes of the laid-out picture, in canvas coordinates.
fn text_boxes(group: &usvg::Group, out: &mut Vec<usvg::Rect>) {
    for node in group.children() {
        match node {
            usvg::Node::Group(g) => text_boxes(g, out),
            usvg::Node::Text(t) => out.push(t.abs_bounding_box()),
            _ => {}
        }
    }
}

/// What one picture must have; returns the number of error bars.
fn check_picture(svg_path: &Path) -> usize {
    let what = svg_path.display();
    let text = std::fs::read_to_string(svg_path).unwrap();
    let tree = usvg::Tree::from_str(
        &text,
        &usvg::Options {
            fontdb: fonts(),
            ..usvg::Options::default()
        },
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let size = tree.size();
    // Shown at its own size in report.html, whose page is 1,400 px wide.
    assert!(
        size.width() <= 1400.0,
        "{what}: {} px wide, wider than the report's page of 1,400 px",
        size.width()
    );
    let mut boxes = Vec::new();
    text_boxes(tree.root(), &mut boxes);
    assert!(boxes.len() > 5, "{what}: no text laid out");
    for b in &boxes {
        assert!(
            b.left() >= -0.5
                && b.top() >= -0.5
                && b.right() <= size.width() + 0.5
                && b.bottom() <= size.height() + 0.5,
            "{what}: text at {b:?} leaves the canvas of {} x {}",
            size.width(),
            size.height()
        );
    }

    let doc = roxmltree::Document::parse(&text).unwrap();
    assert!(
        doc.descendants()
            .any(|n| n.attribute("class") == Some("legend")),
        "{what}: no legend"
    );
    let titles: Vec<String> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("axis-title"))
        .map(|n| n.text().unwrap_or("").to_string())
        .collect();
    assert!(!titles.is_empty(), "{what}: no axis title");
    assert!(
        titles
            .iter()
            .any(|t| t.contains('(') && t.ends_with(')') && !t.ends_with("()")),
        "{what}: no axis title names its unit: {titles:?}"
    );

    // The PNG beside it: same size.
    let png = std::fs::read(svg_path.with_extension("png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{what}: PNG signature");
    let dim = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!(
        (dim(16), dim(20)),
        (size.width().ceil() as u32, size.height().ceil() as u32),
        "{what}: PNG size"
    );
    doc.descendants()
        .filter(|n| n.attribute("class") == Some("error-bar"))
        .count()
}

fn bench(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["bench", "--out", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = locus(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn svgs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    v.sort();
    v
}

const THREADS: &[&str] = &[
    "--kernels",
    "jacobi-1d,blur-roberts",
    "--configs",
    "dsa-base,dsa-opt",
    "--repeat",
    "2",
];

#[test]
fn host_pictures_have_error_bars_and_skip_what_one_node_cannot_show() {
    let host_nodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("node"))
            })
            .count()
        })
        .unwrap_or(1);
    let dir = scratch("figures-host");
    let stdout = bench(&dir, THREADS);
    let pictures = svgs(&dir);
    if host_nodes <= 1 {
        // One real node: the table, the report and the picture say so, and call the
        // speedups what they measure there.
        assert!(stdout.contains("on host (1 real node, "), "{stdout}");
        assert!(
            stdout.contains("note: on host (1 real node, ")
                && stdout.contains("measure allocation (page faults, peak memory) and scheduling cost, not locality"),
            "{stdout}"
        );
        let speedup = std::fs::read_to_string(dir.join("speedup.svg")).unwrap();
        assert!(
            speedup.contains("Allocation and scheduling cost, not locality")
                && !speedup.contains("Speedup over"),
            "{speedup}"
        );
        let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(report.contains("1 real node"), "{report}");
        // What the speedups measure there, beside the time: minor page faults and peak
        // memory per configuration. Immediate allocation (dsa-base) touches every
        // version's pages, deferred allocation (dsa-opt) reuses a few.
        assert!(report.contains("<th>minor faults</th>") && report.contains("<th>peak (MiB)</th>"));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        let faults = |kernel: &str, config: &str| {
            summary["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["bench"] == kernel && r["config"] == config)
                .unwrap()["minor_faults"]
                .as_u64()
                .unwrap()
        };
        assert!(
            faults("jacobi-1d", "dsa-base") > 2 * faults("jacobi-1d", "dsa-opt"),
            "{summary}"
        );
        assert!(report.contains("not locality"), "{report}");
        assert_eq!(
            pictures,
            vec![dir.join("speedup.svg"), dir.join("timeline.svg")],
            "{stdout}"
        );
        // The timeline says the host has one node.
        let timeline = std::fs::read_to_string(dir.join("timeline.svg")).unwrap();
        assert!(
            timeline.contains("one node: every byte is local")
                && timeline.contains("1 real node")
                && timeline.contains(">node 0</text>")
                && !timeline.contains(">node 1</text>"),
            "{timeline}"
        );
        assert!(report.contains("<figure id=\"timeline\"><svg"), "{report}");
        assert!(
            stdout.contains("locality.svg not drawn: one NUMA node"),
            "{stdout}"
        );
        assert!(
            stdout.contains("traffic.svg not drawn: one NUMA node"),
            "{stdout}"
        );
    }
    for p in &pictures {
        // Two kernels and the geometric mean, two configurations (speedup); two
        // kernels (locality).
        let bars = check_picture(p);
        if p.ends_with("speedup.svg") {
            assert_eq!(bars, 6, "{}", p.display());
        }
    }
}

#[test]
fn virtual_nodes_draw_every_picture_with_error_bars() {
    let dir = scratch("figures-4x1");
    let mut args = THREADS.to_vec();
    args.extend(["--topology", "4x1"]);
    let stdout = bench(&dir, &args);
    let pictures = svgs(&dir);
    let names: Vec<&str> = pictures
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["locality.svg", "speedup.svg", "timeline.svg", "traffic.svg"],
        "{stdout}"
    );
    let bars: Vec<usize> = pictures.iter().map(|p| check_picture(p)).collect();
    assert_eq!(bars, [4, 6, 0, 0]);
    // Four virtual nodes in the timeline, labelled as placement in one memory.
    let timeline = std::fs::read_to_string(dir.join("timeline.svg")).unwrap();
    assert!(
        timeline.contains(">node 3</text>")
            && timeline.contains("virtual nodes: bytes counted by where Locus placed them"),
        "{timeline}"
    );
    // Virtual nodes are never shown as nodes: their memory is the host's.
    assert!(stdout.contains("on 4x1 (4 virtual nodes over "), "{stdout}");
    assert!(!stdout.contains("(4 nodes"), "{stdout}");
    let speedup = std::fs::read_to_string(dir.join("speedup.svg")).unwrap();
    assert!(
        speedup.contains("Allocation and scheduling cost, not locality")
            && speedup.contains("4 virtual nodes over "),
        "{speedup}"
    );
    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        report.contains("4 virtual nodes over ") && report.contains("not locality"),
        "{report}"
    );
    let locality = std::fs::read_to_string(dir.join("locality.svg")).unwrap();
    assert!(locality.contains("interleaved: 1/4 nodes"));
    let traffic = std::fs::read_to_string(dir.join("traffic.svg")).unwrap();
    assert!(traffic.contains("dsa-opt: ") && traffic.contains("% local"));
}

#[test]
fn simulated_pictures_on_opteron_64() {
    let dir = scratch("figures-sim");
    let stdout = bench(
        &dir,
        &[
            "--engine",
            "sim",
            "--kernels",
            "jacobi-2d,bitonic",
            "--configs",
            "dsa-base,dsa-opt,shm-base",
        ],
    );
    let pictures = svgs(&dir);
    assert_eq!(pictures.len(), 4, "{stdout}");
    // A simulated machine says so, and its speedups are locality's.
    assert!(
        stdout.contains("on opteron-64 (simulated: 8 nodes, 64 CPUs)"),
        "{stdout}"
    );
    assert!(!stdout.contains("not locality"), "{stdout}");
    // No page faults in the simulator: its buffers are the host's.
    assert!(!stdout.contains("minor faults"), "{stdout}");
    let speedup = std::fs::read_to_string(dir.join("speedup.svg")).unwrap();
    assert!(
        speedup.contains("Speedup over dsa-base (opteron-64 (simulated"),
        "{speedup}"
    );
    for p in &pictures {
        // One deterministic run each: nothing to draw error bars from.
        assert_eq!(check_picture(p), 0, "{}", p.display());
    }
    // One colour scale for eight-node matrices of three configurations.
    let traffic = std::fs::read_to_string(dir.join("traffic.svg")).unwrap();
    assert_eq!(traffic.matches("class=\"legend\"").count(), 1);
    // The timeline: eight nodes, each with local and remote bytes and ready tasks, of
    // jacobi-2d (the first kernel) under dsa-opt (the first that is not the baseline).
    let timeline = std::fs::read_to_string(dir.join("timeline.svg")).unwrap();
    assert!(
        timeline.contains("jacobi-2d under dsa-opt (opteron-64 (simulated")
            && timeline.contains(">node 7</text>")
            && !timeline.contains("one node"),
        "{timeline}"
    );
    assert_eq!(timeline.matches("<polyline").count(), 8 * 3);
    assert_eq!(traffic.matches("% local</text>").count(), 3);
}

#[test]
fn a_missing_baseline_draws_no_speedup_and_says_why() {
    let dir = scratch("figures-baseline");
    let stdout = bench(
        &dir,
        &[
            "--engine",
            "sim",
            "--kernels",
            "bitonic",
            "--configs",
            "dsa-opt",
        ],
    );
    assert!(
        stdout.contains("speedup.svg not drawn: the baseline dsa-base is not among"),
        "{stdout}"
    );
    assert!(!dir.join("speedup.svg").exists());
    let dir = scratch("figures-baseline-2");
    let stdout = bench(
        &dir,
        &[
            "--engine",
            "sim",
            "--kernels",
            "bitonic",
            "--configs",
            "dsa-opt,dfa",
            "--baseline",
            "dfa",
        ],
    );
    assert!(stdout.contains("speedup over dfa"), "{stdout}");
    check_picture(&dir.join("speedup.svg"));
}

#[test]
fn the_home_study_draws_paper_4s_three_figures() {
    let dir = scratch("figures-home");
    // Four nodes of two workers: HS 1, 4 and 8 (the whole machine), BF, Cilk-like and
    // weighted pushing; bodies skipped to keep the test short.
    let stdout = bench(
        &dir,
        &["--suite", "home", "--topology", "4x2", "--bodies", "skip"],
    );
    for policy in ["HS 1", "HS 4", "HS 8", "BF", "Cilk-like", "push-weighted"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(policy)),
            "no row for {policy}: {stdout}"
        );
    }
    let pictures = svgs(&dir);
    let names: Vec<_> = pictures
        .iter()
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["home-locality", "home-tasks", "home-time"]);
    // Error bars on the load-balance figure only: least to most loaded worker, one per
    // policy.
    let bars: Vec<usize> = pictures.iter().map(|p| check_picture(p)).collect();
    assert_eq!(bars, [0, 6, 0]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("home.json")).unwrap()).unwrap();
    let policies = report["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 6);
    for p in policies {
        let tasks: u64 = p["tasks_per_worker"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap())
            .sum();
        assert!(tasks > 0, "{p}");
        assert!(p["verified"].is_null(), "bodies were skipped: {p}");
    }
    // Its report: the heading, the table as printed and the three figures inline.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("locus bench home: paper 4&#39;s SparseLU study on")
            || html.contains("locus bench home: paper 4's SparseLU study on"),
        "{html}"
    );
    assert!(
        html.contains("<pre>") && html.contains("Cilk-like"),
        "{html}"
    );
    for name in ["home-locality", "home-tasks", "home-time"] {
        assert!(
            html.contains(&format!("<figure id=\"{name}\"><svg")),
            "{name}"
        );
    }
    // A second study in the same directory replaces the first's files.
    bench(
        &dir,
        &["--suite", "home", "--topology", "4x2", "--bodies", "skip"],
    );
    assert_eq!(svgs(&dir).len(), 3);
}

#[test]
fn every_configuration_fits_the_report_page() {
    // All ten configurations on eight simulated nodes: the widest bar charts and the
    // most traffic panels `locus bench` draws.
    let dir = scratch("figures-all-configs");
    let stdout = bench(&dir, &["--engine", "sim", "--kernels", "bitonic,jacobi-2d"]);
    let pictures = svgs(&dir);
    assert_eq!(pictures.len(), 4, "{stdout}");
    for p in &pictures {
        check_picture(p);
    }
}

/// The twisted study on threads: its vectors share one memory (one real node, or
/// virtual nodes), which the output and the report say; both line charts pass the
/// checks, and the report holds them and the tables.
#[test]
fn the_twisted_study_says_when_remote_means_the_same_memory() {
    for (name, topology, machine) in [
        ("figures-twisted-host", "host", "host (1 real node, "),
        ("figures-twisted-2x1", "2x1", "2x1 (2 virtual nodes over "),
    ] {
        let dir = scratch(name);
        let stdout = bench(
            &dir,
            &[
                "--suite",
                "twisted",
                "--engine",
                "threads",
                "--topology",
                topology,
            ],
        );
        let note = format!("remote and local vectors lie in the same memory on {machine}");
        assert!(stdout.contains(&format!("note: {note}")), "{stdout}");
        assert!(
            stdout.contains("the phases differ by allocation, caching and noise, not by distance"),
            "{stdout}"
        );
        let pictures = svgs(&dir);
        let names: Vec<_> = pictures
            .iter()
            .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["twisted-mixed", "twisted-remote"], "{stdout}");
        for p in &pictures {
            check_picture(p);
        }
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(html.contains(&note), "{html}");
        assert!(html.contains("migrate nothing (none)"), "{html}");
        for name in names {
            assert!(
                html.contains(&format!("<figure id=\"{name}\"><svg")),
                "{name}"
            );
        }
    }
}

/// `locus compare`'s chart of B/A ratios spanning two decades (0.01 to 0.27, as
/// threads against the simulator gives): a logarithmic axis, an error bar per ratio
/// from the runs' ranges, and every check of the other pictures.
#[test]
fn compare_ratios_spanning_decades_have_a_log_axis_and_error_bars() {
    let side = |name: &str, scale: f64| {
        let dir = scratch(name);
        std::fs::create_dir_all(&dir).unwrap();
        let rows: Vec<serde_json::Value> = [("bitonic", 1.0), ("jacobi-2d", 27.0)]
            .iter()
            .flat_map(|&(kernel, k)| {
                ["dsa-base", "dsa-opt"].map(|config| {
                    let t = scale * k;
                    serde_json::json!({"bench": kernel, "config": config,
                        "median_s": t, "min_s": t * 0.9, "max_s": t * 1.1})
                })
            })
            .collect();
        let summary = serde_json::json!({"engine": "threads", "rows": rows});
        std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
        dir
    };
    // A's times 1 and 27 s, B's 0.01 s: ratios of 0.01 and 0.00037... and back: B
    // takes 0.01 x A.
    let a = side("compare-log-a", 1.0);
    let b = side("compare-log-b", 0.01);
    let b_mixed = {
        let dir = scratch("compare-log-b2");
        std::fs::create_dir_all(&dir).unwrap();
        let rows = serde_json::json!({"engine": "threads", "rows": [
            {"bench": "bitonic", "config": "dsa-base", "median_s": 0.01, "min_s": 0.009, "max_s": 0.011},
            {"bench": "bitonic", "config": "dsa-opt", "median_s": 0.27, "min_s": 0.25, "max_s": 0.3},
            {"bench": "jacobi-2d", "config": "dsa-base", "median_s": 27.0 * 0.05, "min_s": 1.3, "max_s": 1.4},
            {"bench": "jacobi-2d", "config": "dsa-opt", "median_s": 27.0 * 0.1, "min_s": 2.6, "max_s": 2.8},
        ]});
        std::fs::write(dir.join("summary.json"), rows.to_string()).unwrap();
        dir
    };
    for (b, name) in [(&b, "compare-log-out"), (&b_mixed, "compare-log-out2")] {
        let chart = scratch(name);
        let out = locus(&[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            chart.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let svg_path = chart.join("compare.svg");
        let bars = check_picture(&svg_path);
        let svg = std::fs::read_to_string(&svg_path).unwrap();
        if name.ends_with('2') {
            assert!(svg.contains("log scale)"), "{svg}");
            assert_eq!(bars, 4, "one error bar per ratio");
        }
    }
}
