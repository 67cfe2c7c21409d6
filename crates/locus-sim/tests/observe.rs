//! The simulator calls the runtime's observer, so `RuntimeBuilder::trace` writes the
//! same trace format on both engines, in simulated time.

use locus::{Config, Runtime, Topology};
use locus_bench::random_dag;
use locus_sim::Sim;

fn traced_run(seed: u64, name: &str) -> (locus::Report, Vec<u8>) {
    let path = std::env::temp_dir().join(format!(
        "locus-sim-observe-{}-{name}.json",
        std::process::id()
    ));
    let rt = Runtime::builder()
        .topology(Topology::from_spec("4x2").unwrap())
        .config(Config::DsaOpt)
        .engine(Sim::new().seed(seed))
        .trace(&path)
        .build()
        .unwrap();
    let out = random_dag::run(
        &rt,
        &random_dag::Params {
            tasks: 40,
            data: 10,
            max_len: 256,
            max_inputs: 3,
            seed: 5,
            hints: true,
        },
    )
    .unwrap();
    assert!(out.verified);
    let trace = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    (out.report, trace)
}

#[test]
fn the_runtime_trace_of_a_simulated_run_is_deterministic_and_complete() {
    let (report, a) = traced_run(3, "a");
    let (_, b) = traced_run(3, "b");
    assert!(a == b, "same seed, byte-identical trace");
    let v: serde_json::Value = serde_json::from_slice(&a).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let slices: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len() as u64, report.tasks + 1);
    let rows = events.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!(rows, 8);
    let makespan_us = report.wall_s * 1e6;
    let mut bytes = 0;
    for e in &slices {
        let end = e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap();
        assert!(end <= makespan_us + 0.002, "{e}");
        let data_node = e["args"]["data_node"].as_u64().unwrap() as usize;
        assert_eq!(e["cname"], locus::observe::node_colour(data_node));
        for k in [
            "read_local_bytes",
            "read_remote_bytes",
            "write_local_bytes",
            "write_remote_bytes",
        ] {
            bytes += e["args"][k].as_u64().unwrap();
        }
    }
    let l = &report.locality;
    assert_eq!(
        bytes,
        l.read_local_bytes + l.read_remote_bytes + l.write_local_bytes + l.write_remote_bytes
    );
}
