//! The `locus` binary, run as a user would.

mod common;
use common::{locus, stderr, stdout};

/// A bad argument: exit status 2, exactly one line on stderr, nothing on stdout.
fn assert_usage_error(args: &[&str], needle: &str) {
    let o = locus(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.lines().count(),
        1,
        "{args:?}: one line on stderr, got {err:?}"
    );
    assert!(err.ends_with('\n'));
    assert!(
        err.contains(needle),
        "{args:?}: {err:?} should mention {needle:?}"
    );
    assert!(o.stdout.is_empty(), "{args:?}: nothing on stdout");
}

#[test]
fn topo_json_for_sgi_uv2000() {
    let o = locus(&["topo", "--topology", "sgi-uv2000", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["name"], "sgi-uv2000");
    assert_eq!(v["num_nodes"], 24);
    assert_eq!(v["num_cpus"], 192);
    assert_eq!(v["nodes"].as_array().unwrap().len(), 24);
    assert_eq!(v["nodes"][23]["cpus"].as_array().unwrap().len(), 8);
    assert_eq!(v["read_cost"][0][23], 7.48);
    assert_eq!(v["write_cost"][0][1], 4.04);
    assert_eq!(v["distances"][0][0], 10);
    assert_eq!(v["cost_origin"], "measured");
}

#[test]
fn topo_table_for_opteron_64() {
    let o = locus(&["topo", "--topology", "opteron-64"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("8 nodes, 64 CPUs, 64.0 GiB"), "{out}");
    for factor in ["1.81", "2.16", "4.34", "1.20", "1.74", "2.48"] {
        assert!(out.contains(factor), "missing {factor} in {out}");
    }
}

#[test]
fn topo_on_the_host() {
    let o = locus(&["topo"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("topology host"));
    assert!(stdout(&o).contains("free"), "{}", stdout(&o));
    let o = locus(&["topo", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["source"], "sysfs");
    assert!(v["num_cpus"].as_u64().unwrap() >= 1);
    // Each node's free memory, at most its memory.
    let free = v["free_memory_bytes"].as_array().unwrap();
    assert_eq!(free.len() as u64, v["num_nodes"].as_u64().unwrap());
    for (node, bytes) in free.iter().enumerate() {
        let size = v["nodes"][node]["memory_bytes"].as_u64().unwrap();
        assert!(
            bytes.as_u64().unwrap() <= size,
            "node {node}: {bytes} of {size}"
        );
    }
}

#[test]
fn topo_synthetic_with_distances() {
    let o = locus(&["topo", "--topology", "2x2:10,15,15,10", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["read_cost"][0][1], 1.5);
    assert_eq!(v["num_cpus"], 4);
    assert!(
        v.get("free_memory_bytes").is_none(),
        "a model has no free memory"
    );
}

#[test]
fn bad_topologies_are_one_line_and_status_2() {
    assert_usage_error(&["topo", "--topology", "0x3"], "at least one node");
    assert_usage_error(&["topo", "--topology", "4x0"], "at least one CPU");
    assert_usage_error(&["topo", "--topology", "cray-1"], "unknown topology preset");
    assert_usage_error(&["topo", "--topology", "4x"], "malformed");
    assert_usage_error(&["topo", "--topology", "2x1:10,20,30,10"], "asymmetric");
    assert_usage_error(&["topo", "--topology", "2x1:10,20,20"], "not square");
    assert_usage_error(&["topo", "--topology", "2x1:10,5,5,10"], "not the smallest");
}

#[test]
fn bad_arguments_are_one_line_and_status_2() {
    assert_usage_error(&[], "missing subcommand");
    assert_usage_error(&["frobnicate"], "frobnicate");
    assert_usage_error(&["topo", "--bogus"], "--bogus");
    assert_usage_error(&["run", "not-a-bench"], "not-a-bench");
    assert_usage_error(&["run", "jacobi-2d", "--config", "fast"], "fast");
    assert_usage_error(&["run", "jacobi-2d", "--threads", "0"], "--threads");
    assert_usage_error(&["sim", "jacobi-2d"], "--topology");
    assert_usage_error(
        &[
            "run",
            "jacobi-1d",
            "--preset",
            "paper",
            "--param",
            "size=tiny",
        ],
        "--preset",
    );
    assert_usage_error(&["bench", "--configs", "ws,nope"], "nope");
}

#[test]
fn unbuilt_parts_and_bad_runs_say_so_in_one_line() {
    assert_usage_error(
        &["run", "jacobi-2d", "--topology", "2x1", "--blocks", "7"],
        "--blocks 7",
    );
    assert_usage_error(
        &["run", "random-dag", "--topology", "2x1", "--threads", "3"],
        "3 threads asked",
    );
    assert_usage_error(
        &[
            "run",
            "random-dag",
            "--topology",
            "2x1",
            "--param",
            "size=huge",
        ],
        "unknown size",
    );
    assert_usage_error(
        &[
            "bench",
            "--suite",
            "quick",
            "--configs",
            "ws,dfa",
            "--engine",
            "sim",
            "--peers",
        ],
        "not built yet",
    );
    assert_usage_error(
        &["run", "jacobi-2d", "--topology", "0x3"],
        "at least one node",
    );
}

#[test]
fn run_prints_one_verified_json_report() {
    let o = locus(&[
        "run",
        "random-dag",
        "--config",
        "dsa-base",
        "--topology",
        "2x1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["bench"], "random-dag");
    assert_eq!(v["verified"], true);
    assert_eq!(v["engine"], "threads");
    assert_eq!(v["config"], "dsa-base");
    assert_eq!(v["topology"]["nodes"], 2);
    assert_eq!(v["traffic"].as_array().unwrap().len(), 2);
    assert!(v["tasks"].as_u64().unwrap() > 0);
    let l = &v["locality"];
    assert!(l["read_local_bytes"].as_u64().unwrap() + l["read_remote_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn dfa_writes_locally_and_dsa_base_does_not() {
    let remote_writes = |config: &str| {
        let o = locus(&[
            "run",
            "random-dag",
            "--config",
            config,
            "--topology",
            "2x1",
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["verified"], true);
        v["locality"]["write_remote_bytes"].as_u64().unwrap()
    };
    assert_eq!(remote_writes("dfa"), 0);
    // Immediate allocation places every buffer on the control program's node; the
    // other node's worker writes remotely. (Stealing makes this all but certain on a
    // 2000-task graph; the check below tolerates nothing else.)
    assert!(remote_writes("dsa-base") > 0);
}

#[test]
fn sim_runs_a_kernel_on_a_paper_machine() {
    let o = locus(&[
        "sim",
        "jacobi-2d",
        "--topology",
        "opteron-64",
        "--config",
        "dsa-opt",
        "--param",
        "size=tiny",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["engine"], "sim");
    assert_eq!(v["verified"], true);
    assert_eq!(v["topology"]["cpus"], 64);
    assert_eq!(v["locality"]["write_remote_bytes"], 0);
}

#[test]
fn help_and_version_succeed() {
    for args in [
        &["--help"][..],
        &["--version"],
        &["topo", "--help"],
        &["run", "--help"],
    ] {
        let o = locus(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert!(!o.stdout.is_empty());
    }
}

#[test]
fn demo_shows_host_and_opteron_64() {
    let o = locus(&["demo"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("host (host, sysfs)"), "{out}");
    assert!(out.contains("opteron-64 (preset)"), "{out}");
    assert!(out.contains("n3,n5,n7 4.34/2.48"), "{out}");
    assert!(out.contains("laid over this host"), "{out}");
    // What the demo says of the machine comes from the topology it read.
    let host = locus_topo::Topology::host().unwrap();
    let cpus = host.num_cpus();
    let said = format!(
        "this host ({cpus} CPU{}, {} NUMA node",
        if cpus == 1 { "" } else { "s" },
        host.num_nodes()
    );
    assert!(out.contains(&said), "no `{said}` in: {out}");
    assert!(!out.contains("2-core host"), "{out}");
}

/// The public documentation speaks of the machine a reader has, not of one machine.
#[test]
fn public_docs_do_not_describe_one_development_machine() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Spelt in two parts so that this file does not match itself.
    let phrases = [
        ["this ", "2-core host"].concat(),
        ["this ", "2-core machine"].concat(),
    ];
    let mut offenders = Vec::new();
    let mut stack = vec![root.join("crates"), root.join("README.md")];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            if path.ends_with("target") {
                continue;
            }
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("rs" | "md")) {
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                if phrases.iter().any(|p| line.contains(p.as_str())) {
                    offenders.push(format!("{}:{}", path.display(), i + 1));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}

#[test]
fn shm_base_runs_the_shared_versions() {
    let out = locus(&[
        "run",
        "jacobi-2d",
        "--topology",
        "2x1",
        "--config",
        "shm-base",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["config"], "shm-base");
    assert_eq!(r["verified"], true);
    assert_eq!(r["settings"]["data"], "shared, interleave");
    // Interleaved over two nodes: half of every access is local.
    let loc = r["locality"]["r_loc_rt"].as_f64().unwrap();
    assert!((0.45..=0.55).contains(&loc), "{loc}");
    assert_eq!(r["memory"]["allocations"], 0);
    assert!(r["memory"]["shared_peak_bytes"].as_u64().unwrap() > 0);
}

/// Without the `mpi` feature, `--distributed` says how to get it, as a usage error.
#[cfg(not(feature = "mpi"))]
#[test]
fn distributed_without_mpi_is_a_usage_error() {
    assert_usage_error(&["run", "jacobi-2d", "--distributed"], "--features mpi");
}

/// `--probe` measures this machine: a `--topology` naming another is refused.
#[test]
fn topo_probe_refuses_a_topology() {
    assert_usage_error(
        &["topo", "--probe", "--topology", "opteron-64"],
        "--probe measures this machine",
    );
    assert_usage_error(
        &["topo", "--probe", "--json", "--topology", "2x2"],
        "drop --topology 2x2",
    );
}

/// A negative number is an invalid value of its option, not an unknown argument.
#[test]
fn negative_numbers_are_invalid_values() {
    for (args, option) in [
        (
            &["run", "random-dag", "--threads", "-1"][..],
            "--threads <N>",
        ),
        (&["run", "random-dag", "--vicinity", "-1"], "--vicinity <N>"),
        (
            &["sim", "random-dag", "--topology", "2x1", "--threads", "-1"],
            "--threads <N>",
        ),
        (
            &["sim", "random-dag", "--topology", "2x1", "--vicinity", "-2"],
            "--vicinity <N>",
        ),
        (&["bench", "--threads", "-1"], "--threads <N>"),
        (&["bench", "--repeat", "-1"], "--repeat <N>"),
        (&["soak", "--seed", "-1"], "--seed <S>"),
        (&["soak", "--watchdog-secs", "-1"], "--watchdog-secs <SECS>"),
    ] {
        let value = args.last().unwrap();
        assert_usage_error(args, &format!("invalid value '{value}' for '{option}'"));
    }
}

#[test]
fn one_node_and_one_worker_are_singular() {
    let out = locus(&[
        "run",
        "jacobi-1d",
        "--topology",
        "1x1",
        "--param",
        "size=tiny",
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("1x1, 1 node, 1 worker, threads engine"),
        "{text}"
    );
    assert!(text.contains("on 1x1 (1 worker, threads engine)"), "{text}");
    assert!(
        !text.contains("1 nodes") && !text.contains("1 workers,"),
        "{text}"
    );
}

#[test]
fn huge_pages_help_names_on_and_off_only() {
    let help = stdout(&locus(&["run", "--help"]));
    let at = help
        .find("--huge-pages <ON|OFF>")
        .expect("--huge-pages in run --help");
    let entry = &help[at..help[at..].find("--json").map_or(help.len(), |e| at + e)];
    assert!(entry.contains("[possible values: on, off]"), "{entry}");
    assert!(!entry.contains("true"), "{entry}");
    let bad = locus(&["run", "jacobi-1d", "--huge-pages", "true"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}
