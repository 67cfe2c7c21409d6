//! `locus bench` as a whole process: the table, the reports, the pictures, and the
//! one-line refusals of what is not built.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{locus, locus_env};

/// A fresh directory under the target's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Parses an SVG file as XML, and checks its frame: a root `svg`, a title, a legend.
fn assert_valid_svg(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.starts_with("<?xml"), "{}", path.display());
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not valid XML: {e}", path.display()));
    assert_eq!(
        doc.root_element().tag_name().name(),
        "svg",
        "{}",
        path.display()
    );
    assert!(
        doc.descendants().any(|n| n.has_tag_name("title")),
        "{}: no title",
        path.display()
    );
    assert!(
        doc.descendants()
            .any(|n| n.attribute("class") == Some("legend")),
        "{}: no legend",
        path.display()
    );
}

#[test]
fn sim_bench_writes_table_reports_and_pictures() {
    let dir = scratch("bench-sim");
    let out = locus(&[
        "bench",
        "--engine",
        "sim",
        "--configs",
        "dsa-base,dsa-opt,shm-base",
        "--kernels",
        "jacobi-2d,bitonic",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("opteron-64"), "{stdout}");
    let header = stdout
        .lines()
        .find(|l| l.starts_with("kernel"))
        .expect("a table header");
    for column in [
        "config",
        "time (s)",
        "min (s)",
        "max (s)",
        "speedup over dsa-base",
        "r_loc_rt",
        "peak (MiB)",
        "verified",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("jacobi-2d") || l.starts_with("bitonic"))
        .collect();
    assert_eq!(rows.len(), 6, "{stdout}");
    assert!(
        rows.iter().all(|r| r.trim_end().ends_with("yes")),
        "{stdout}"
    );
    let base = rows.iter().find(|r| r.contains("dsa-base")).unwrap();
    assert!(base.contains("1.00x"), "{base}");

    for kernel in ["jacobi-2d", "bitonic"] {
        for config in ["dsa-base", "dsa-opt", "shm-base"] {
            let path = dir.join(format!("{kernel}.{config}.1.json"));
            let run: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            assert_eq!(run["bench"], kernel);
            assert_eq!(run["config"], config);
            assert_eq!(run["engine"], "sim");
            assert_eq!(run["verified"], true);
            assert!(run["params"].is_object() && run["locality"]["r_loc_rt"].is_f64());
            assert_eq!(run["traffic"].as_array().unwrap().len(), 8);
        }
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["engine"], "sim");
    assert_eq!(summary["runs"], 6);
    assert_eq!(summary["failed_runs"], 0);
    assert!(summary["stream_triad"].is_null());
    let rows = summary["rows"].as_array().unwrap();
    // Six kernel rows, then a geometric mean per configuration.
    assert_eq!(rows.len(), 9);
    for row in &rows[..6] {
        assert_eq!(row["verified"], true);
        let loc = row["r_loc_rt"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&loc));
        if row["config"] == "dsa-base" {
            assert_eq!(row["speedup"], 1.0);
        }
    }
    for svg in ["speedup.svg", "locality.svg", "traffic.svg"] {
        assert_valid_svg(&dir.join(svg));
    }
}

fn assert_one_line_usage_error(out: &Output, mentions: &str) {
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(mentions), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn simulated_peers_are_refused() {
    let out = locus(&["bench", "--peers", "--engine", "sim"]);
    assert_one_line_usage_error(&out, "--peers");
}

/// `--replay` takes replayable kernels only, and no study suite.
#[test]
fn replay_takes_replayable_kernels() {
    let out = locus(&["bench", "--replay", "--kernels", "bitonic"]);
    assert_one_line_usage_error(&out, "bitonic does not run as a recorded graph");
    let out = locus(&["bench", "--replay", "--suite", "home"]);
    assert_one_line_usage_error(&out, "--replay");
}

/// `--replay`: the configurations' runs replay recorded graphs, and the reports say so.
#[test]
fn replayed_bench_runs_are_marked() {
    let dir = scratch("bench-replay");
    let out = locus(&[
        "bench",
        "--replay",
        "--kernels",
        "overhead,jacobi-2d,spmv,bicgstab",
        "--configs",
        "dsa-opt",
        "--repeat",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("replaying recorded graphs (--replay)"),
        "{stdout}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["replay"], true);
    // spmv and bicgstab, hinted by default, replay without their hints.
    assert_eq!(summary["verified_runs"], 4, "{summary}");
    let run: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("overhead.dsa-opt.1.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(run["settings"]["replay"], "overhead", "{run}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("spmv.dsa-opt.1.json")).unwrap())
            .unwrap();
    assert_eq!(run["params"]["affinity"], "none", "{run}");
}

#[test]
fn unknown_kernel_is_refused() {
    let out = locus(&["bench", "--engine", "sim", "--kernels", "jacobi-4d"]);
    assert_one_line_usage_error(&out, "jacobi-4d");
    // The nearest name, then every valid one.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean `jacobi-1d`?"), "{err}");
    assert!(
        err.contains("jacobi-2d") && err.contains("bitonic"),
        "{err}"
    );
    let far = locus(&["bench", "--engine", "sim", "--kernels", "xyzzy-zzz"]);
    assert!(!String::from_utf8_lossy(&far.stderr).contains("did you mean"));
    // `--kernels` is documented.
    let help = locus(&["bench", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("--kernels <K,...>"));
}

/// Whether gcc is installed, which the peer tests need. CI installs gcc and sets
/// LOCUS_PEERS_REQUIRED: a missing compiler fails there.
fn gcc_installed() -> bool {
    let gcc = Command::new("gcc").arg("--version").output();
    if gcc.is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(
        std::env::var_os("LOCUS_PEERS_REQUIRED").is_none(),
        "gcc is not installed, and LOCUS_PEERS_REQUIRED is set"
    );
    println!("note: gcc is not installed; skipping a peer test");
    false
}

/// `locus bench --peers ARGS --out DIR`, which must succeed; its standard output.
fn bench_peers(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["bench", "--peers", "--out", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = locus(&all);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `--peers --replay`: Locus's column is the overhead graph replayed, and the peer
/// table and `peers.json` say so.
#[test]
fn peers_run_beside_replayed_locus() {
    if !gcc_installed() {
        return;
    }
    let dir = scratch("bench-peers-replay");
    let args = [
        "--replay",
        "--kernels",
        "overhead",
        "--configs",
        "dsa-opt",
        "--repeat",
        "1",
    ];
    let stdout = bench_peers(&dir, &args);
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            l.starts_with("overhead ") && l.contains("dsa-opt replayed") && l.ends_with(", yes")
        })
        .collect();
    assert_eq!(rows.len(), 1, "{stdout}");
    assert!(
        stdout.contains("Peers against Locus on ") && stdout.contains("(--replay)"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(dir.join("peers.json")).unwrap();
    for field in [
        "\"locus_replay\": true",
        "\"config\": \"dsa-opt replayed\"",
        "\"locus_verified\": true",
    ] {
        assert!(report.contains(field), "{field} in {report}");
    }
}

/// `--peers` builds the OpenMP peer with gcc, runs it alternately with Locus and writes
/// the peer table and `peers.json`.
#[test]
fn peers_run_beside_locus() {
    if !gcc_installed() {
        return;
    }
    let dir = scratch("bench-peers");
    let stdout = bench_peers(&dir, &["--kernels", "bitonic", "--configs", "ws"]);
    assert!(stdout.contains("openmp-gcc/locus"), "{stdout}");
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("bitonic ") && l.ends_with("yes, yes"))
        .collect();
    assert_eq!(rows.len(), 2, "dsa-opt and ws against the peer: {stdout}");
    assert!(dir.join("peers").join("bitonic").is_file());
    let report = std::fs::read_to_string(dir.join("peers.json")).unwrap();
    for field in [
        "\"peer\": \"openmp-gcc\"",
        "\"kernel\": \"bitonic\"",
        "\"config\": \"dsa-opt\"",
        "\"config\": \"ws\"",
        "\"peer_verified\": true",
        "\"locus_verified\": true",
        "\"ratio_peer_over_locus\"",
    ] {
        assert!(report.contains(field), "{field} in {report}");
    }
    assert!(!report.contains("\"peer_verified\": false"), "{report}");
    // The peers' table is in the report too.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("Peers against Locus on ") && html.contains("openmp-gcc/locus"),
        "{html}"
    );
}

/// Runs whose task bodies were skipped computed nothing: the table, the run reports,
/// `summary.json` and the progress lines say `skipped`, none says verified, and the
/// command still succeeds. `--bodies skip` (hidden) makes such runs at quick sizes, as
/// the paper suite does in the simulator.
#[test]
fn skipped_bodies_are_reported_as_skipped_never_verified() {
    let dir = scratch("bench-skipped");
    let out = locus(&[
        "bench",
        "--engine",
        "sim",
        "--bodies",
        "skip",
        "--configs",
        "dsa-base,dsa-opt",
        "--kernels",
        "jacobi-1d,kmeans",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("jacobi-1d") || l.starts_with("kmeans"))
        .collect();
    assert_eq!(rows.len(), 4, "{stdout}");
    for row in &rows {
        assert!(row.trim_end().ends_with("  skipped"), "{stdout}");
        assert!(!row.contains("yes"), "{stdout}");
    }
    assert!(
        stdout.contains("4 of 4 runs skipped their task bodies"),
        "{stdout}"
    );
    assert!(stderr.contains("task bodies skipped"), "{stderr}");

    for kernel in ["jacobi-1d", "kmeans"] {
        for config in ["dsa-base", "dsa-opt"] {
            let path = dir.join(format!("{kernel}.{config}.1.json"));
            let run: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            assert!(run["verified"].is_null(), "{run}");
            assert_eq!(run["bodies"], "skipped");
            assert!(run["tasks"].as_u64().unwrap() > 0);
        }
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["runs"], 4);
    assert_eq!(summary["failed_runs"], 0);
    assert_eq!(summary["skipped_runs"], 4);
    assert_eq!(summary["verified_runs"], 0);
    let rows = summary["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "four kernel rows, two geometric means");
    for row in &rows[..4] {
        assert_ne!(row["verified"], true, "{row}");
        assert!(row["verified"].is_null(), "{row}");
        assert_eq!(row["bodies"], "skipped", "{row}");
        assert_eq!(row["verified_runs"], 0, "{row}");
        assert_eq!(row["skipped_runs"], 1, "{row}");
    }
}

/// `--bodies` only means something in the simulator.
#[test]
fn bodies_on_threads_is_refused() {
    let out = locus(&["bench", "--bodies", "skip", "--kernels", "bitonic"]);
    assert_one_line_usage_error(&out, "--bodies");
}

/// `locus sim` at a size whose bodies are skipped says so in text and JSON, claims no
/// verification, and succeeds.
#[test]
fn a_skipped_simulation_claims_no_verification() {
    let args = [
        "sim",
        "jacobi-1d",
        "--topology",
        "2x1",
        "--size",
        "268435456",
        "--blocks",
        "4",
        "--iterations",
        "1",
    ];
    let out = locus(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = stdout.lines().next().unwrap();
    assert!(first.contains("task bodies were skipped"), "{stdout}");
    assert!(!stdout.contains("verified against"), "{stdout}");
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let out = locus(&json_args);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["verified"].is_null(), "{v}");
    assert_eq!(v["bodies"], "skipped");
    assert_eq!(v["tasks"], 4);
}

#[test]
fn the_home_study_refuses_the_options_of_the_matrix() {
    for (extra, mentions) in [
        (&["--peers"][..], "--peers"),
        (&["--configs", "ws"][..], "--configs"),
        (&["--repeat", "2"][..], "--repeat"),
        (&["--engine", "threads", "--bodies", "skip"][..], "--bodies"),
    ] {
        let mut args = vec!["bench", "--suite", "home"];
        args.extend_from_slice(extra);
        assert_one_line_usage_error(&locus(&args), mentions);
    }
}

/// `--threads` beyond the topology is refused before any run, with the message `locus
/// run` gives, and nothing is written: the matrix and both studies.
#[test]
fn threads_beyond_the_topology_are_refused_before_any_run() {
    let dir = scratch("bench-too-many-threads");
    let out = dir.to_str().unwrap();
    let too_many = [
        "bench",
        "--engine",
        "sim",
        "--topology",
        "2x1",
        "--threads",
        "5",
    ];
    let matrix = [
        &too_many[..],
        &["--kernels", "random-dag", "--configs", "ws", "--out", out],
    ]
    .concat();
    for args in [
        &matrix[..],
        &["bench", "--suite", "home", "--threads", "500", "--out", out],
        &[
            "bench",
            "--suite",
            "twisted",
            "--topology",
            "2x1",
            "--threads",
            "3",
            "--out",
            out,
        ],
    ] {
        let o = locus(args);
        assert_one_line_usage_error(&o, "threads asked, but topology");
        assert!(!dir.exists(), "{args:?}: nothing is written");
    }
    let o = locus(&too_many);
    let run = locus(&["run", "random-dag", "--topology", "2x1", "--threads", "5"]);
    assert_eq!(o.stderr, run.stderr, "the message of `locus run`");
}

/// Checks one progress line, `locus: progress: D/T done, XmYYs elapsed, about XmYYs
/// left (now: ...)` or `..., time left unknown (now: ...)`, and gives D and T.
fn progress_line(line: &str) -> (u64, u64) {
    let clock = |s: &str| {
        let (m, s) = s
            .strip_suffix('s')
            .and_then(|s| s.split_once('m'))
            .unwrap_or_else(|| panic!("not a duration: {line}"));
        assert!(m.parse::<u64>().is_ok() && s.len() == 2, "{line}");
        assert!(s.parse::<u64>().is_ok_and(|s| s < 60), "{line}");
    };
    let rest = line.strip_prefix("locus: progress: ").expect("the prefix");
    let (counts, rest) = rest.split_once(" done, ").expect("done");
    let (done, total) = counts.split_once('/').expect("done/total");
    let (done, total): (u64, u64) = (done.parse().unwrap(), total.parse().unwrap());
    let (elapsed, rest) = rest.split_once(" elapsed, ").expect("elapsed");
    clock(elapsed);
    let rest = if let Some(rest) = rest.strip_prefix("time left unknown") {
        assert_eq!(done, 0, "{line}");
        rest
    } else {
        let rest = rest.strip_prefix("about ").expect("an estimate");
        let (left, rest) = rest.split_once(" left").expect("left");
        clock(left);
        rest
    };
    assert!(rest.is_empty() || rest.starts_with(" (now: "), "{line}");
    (done, total)
}

/// Without a terminal (stderr is a pipe here) indicatif shows nothing; `locus bench`
/// prints a progress line at intervals instead, with runs done, runs in all, the time
/// elapsed and an estimate of the time left.
#[test]
fn progress_lines_show_life_when_stderr_is_no_terminal() {
    let dir = scratch("bench-progress");
    // Every millisecond instead of every 10 s, so that this short run prints some.
    let out = locus_env(
        &[
            "bench",
            "--engine",
            "sim",
            "--configs",
            "dsa-opt",
            "--kernels",
            "jacobi-1d,kmeans,bitonic",
            "--out",
            dir.to_str().unwrap(),
        ],
        &[("LOCUS_PROGRESS_EVERY_MS", "1")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("locus: progress"))
        .collect();
    assert!(!lines.is_empty(), "no progress line:\n{stderr}");
    let mut last = 0;
    for line in &lines {
        let (done, total) = progress_line(line);
        assert_eq!(total, 3, "{line}");
        assert!(last <= done && done <= total, "{stderr}");
        last = done;
    }
    assert!(!stdout.contains("locus: progress"), "{stdout}");
}
