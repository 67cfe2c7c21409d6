//! The Chrome traces of `locus run --trace` (threads engine) and `locus sim --trace`
//! (simulator), checked against the layout Perfetto shows as intended: one process per
//! NUMA node holding its workers, slices named by kind, of their locality's category,
//! with the same documented
//! arguments from both engines, flow events whose two ends land on slices, counter
//! tracks per node; gzip-compressed when the name ends in `.gz`; one stderr line saying
//! where the trace went.

use std::collections::{BTreeSet, HashMap};
use std::io::Read;

use serde_json::Value;

mod common;
use common::{locus, stderr};

/// The `args` keys of every slice (the observe module's documentation lists them).
const ARGS: [&str; 14] = [
    "task",
    "run",
    "locality",
    "task_id",
    "made_ready_by",
    "ready_ns",
    "wait_ns",
    "worker",
    "worker_node",
    "data_node",
    "read_local_bytes",
    "read_remote_bytes",
    "write_local_bytes",
    "write_remote_bytes",
];

/// Counter (name, series): Perfetto shows the tracks as `NAME SERIES`.
const COUNTERS: [(&str, &str); 4] = [
    ("memory in use", "bytes"),
    ("ready", "tasks"),
    ("local", "bytes"),
    ("remote", "bytes"),
];

/// Runs `args` with `--trace PATH` (`.json.gz`) and returns the decompressed trace.
fn traced(args: &[&str], name: &str) -> Value {
    let path = std::env::temp_dir().join(format!(
        "locus-cli-schema-{}-{name}.json.gz",
        std::process::id()
    ));
    let mut all = args.to_vec();
    all.extend(["--trace", path.to_str().unwrap()]);
    let o = locus(&all);
    let err = stderr(&o);
    assert!(o.status.success(), "{all:?}: {err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("trace")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains(path.to_str().unwrap()), "{err}");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(&bytes[..2], b"\x1f\x8b", "gzip magic");
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_end(&mut json)
        .unwrap();
    serde_json::from_slice(&json).expect("the trace is JSON")
}

/// Checks the schema; returns the `args` keys of the slices.
fn check(trace: &Value, nodes: u64, workers: u64) -> BTreeSet<String> {
    let events = trace["traceEvents"].as_array().unwrap();
    let of = |ph: &'static str| events.iter().filter(move |e| e["ph"] == ph);

    // One process per node, each named after it.
    let processes: HashMap<u64, String> = of("M")
        .filter(|e| e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // What ran, then one process per node, with short names.
    assert_eq!(processes.len() as u64, nodes + 1, "{processes:?}");
    assert!(processes[&0].starts_with("locus "), "{processes:?}");
    for node in 0..nodes {
        let name = &processes[&(node + 1)];
        assert!(name.starts_with(&format!("node {node} (")), "{processes:?}");
        assert!(name.len() <= 20, "{processes:?}");
    }
    // Its workers as threads: every worker once, in its node's process.
    let threads: Vec<(u64, u64)> = of("M")
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
        .collect();
    assert_eq!(threads.len() as u64, workers);
    let tids: BTreeSet<u64> = threads.iter().map(|t| t.1).collect();
    assert_eq!(tids.len() as u64, workers);

    let slices: Vec<&Value> = of("X").collect();
    assert!(slices.len() > 4);
    let mut keys = BTreeSet::new();
    for s in &slices {
        assert!(threads.contains(&(s["pid"].as_u64().unwrap(), s["tid"].as_u64().unwrap())));
        assert_eq!(
            s["args"]["worker_node"].as_u64().unwrap() + 1,
            s["pid"].as_u64().unwrap(),
            "{s}"
        );
        // Named by kind; the locality is the category and an argument.
        let name = s["name"].as_str().unwrap();
        let task = s["args"]["task"].as_str().unwrap();
        assert_eq!(name, locus::observe::task_kind(task), "{s}");
        let locality = s["cat"].as_str().unwrap();
        assert!(
            ["local", "remote", "mixed", "no data"].contains(&locality),
            "{s}"
        );
        assert_eq!(s["args"]["locality"], locality, "{s}");
        let mine: BTreeSet<String> = s["args"].as_object().unwrap().keys().cloned().collect();
        if keys.is_empty() {
            keys = mine;
        } else {
            assert_eq!(keys, mine, "{s}");
        }
    }
    let expected: BTreeSet<String> = ARGS.iter().map(|k| k.to_string()).collect();
    assert_eq!(keys, expected);

    // Flows: every start has one end with its id, and both land on a slice of their row
    // (the start within one, the end at one's start).
    let on_slice = |e: &Value, at_start: bool| {
        let ts = e["ts"].as_f64().unwrap();
        slices.iter().any(|s| {
            let (start, dur) = (s["ts"].as_f64().unwrap(), s["dur"].as_f64().unwrap());
            s["pid"] == e["pid"]
                && s["tid"] == e["tid"]
                && if at_start {
                    (start - ts).abs() < 1e-9
                } else {
                    start <= ts && ts <= start + dur
                }
        })
    };
    let starts: Vec<&Value> = of("s").collect();
    let ends: Vec<&Value> = of("f").collect();
    assert!(!starts.is_empty(), "no flow events");
    assert_eq!(starts.len(), ends.len());
    for s in &starts {
        let end = ends
            .iter()
            .find(|f| f["id"] == s["id"])
            .unwrap_or_else(|| panic!("flow {s} has no end"));
        assert_eq!(end["bp"], "e");
        assert!(on_slice(s, false), "flow start {s} is on no slice");
        assert!(on_slice(end, true), "flow end {end} starts no slice");
    }
    // Every slice a flow leads to names its producer.
    let made_ready = slices
        .iter()
        .filter(|s| s["args"]["made_ready_by"].as_i64().unwrap() >= 0)
        .count();
    assert_eq!(made_ready, ends.len());

    // Counter tracks: the three of every node.
    for node in 1..=nodes {
        for (name, series) in COUNTERS {
            assert!(
                of("C")
                    .any(|c| c["pid"] == node && c["name"] == name && c["args"][series].is_u64()),
                "no `{name} {series}` counter for process {node}"
            );
        }
    }
    keys
}

#[test]
fn both_engines_write_the_same_schema() {
    let threads = traced(
        &[
            "run",
            "jacobi-2d",
            "--topology",
            "2x1",
            "--config",
            "dsa-opt",
            "--param",
            "size=tiny",
        ],
        "threads",
    );
    let sim = traced(
        &[
            "sim",
            "jacobi-2d",
            "--topology",
            "4x2",
            "--config",
            "dsa-opt",
            "--param",
            "size=tiny",
        ],
        "sim",
    );
    let a = check(&threads, 2, 2);
    let b = check(&sim, 4, 8);
    assert_eq!(a, b, "the same args keys from both engines");
    // Memory in use is sampled from the pools: some node held some bytes.
    for trace in [&threads, &sim] {
        let events = trace["traceEvents"].as_array().unwrap();
        assert!(events.iter().any(|e| e["ph"] == "C"
            && e["name"] == "memory in use"
            && e["args"]["bytes"].as_u64().unwrap() > 0));
    }
}
