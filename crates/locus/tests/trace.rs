//! Observation of `threads` runs: the Chrome trace written by `RuntimeBuilder::trace`,
//! and the observer seam.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use locus::observe::{node_colour, Observer, TaskSpan, TraceRecorder};
use locus::{Config, Error, Runtime, Topology};
use serde_json::Value;

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("locus-trace-{}-{name}.json", std::process::id()))
}

fn events(trace: &Value) -> &[Value] {
    trace["traceEvents"].as_array().expect("traceEvents")
}

/// `blocks` write-only tasks of 4 KiB each, then a reader of every block.
fn write_then_read(rt: &Runtime, blocks: usize) -> locus::Report {
    let data: Vec<_> = (0..blocks)
        .map(|i| rt.data::<u64>(format!("d{i}"), 512))
        .collect();
    let finished = rt
        .run(|s| -> Result<(), Error> {
            for (i, d) in data.iter().enumerate() {
                s.spawn(format!("fill {i}"), d.write(), move |_, out| {
                    out.iter_mut().for_each(|x| *x = i as u64);
                })?;
            }
            for (i, d) in data.iter().enumerate() {
                s.spawn(format!("check {i}"), d.read(), move |_, x| {
                    assert!(x.iter().all(|&v| v == i as u64));
                })?;
            }
            Ok(())
        })
        .unwrap();
    finished.value.unwrap();
    finished.report
}

#[test]
fn dfa_trace_has_one_event_per_task_one_row_per_worker_and_local_colours() {
    let path = temp_path("dfa");
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .config(Config::Dfa)
        .trace(&path)
        .build()
        .unwrap();
    let report = write_then_read(&rt, 24);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let trace: Value = serde_json::from_slice(&bytes).expect("the trace is JSON");
    let events = events(&trace);

    // One named row per worker, in the process of its node.
    let rows: Vec<&Value> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .collect();
    assert_eq!(rows.len(), rt.workers());
    for (w, &node) in rt.worker_nodes().iter().enumerate() {
        let row = rows.iter().find(|e| e["tid"] == w as u64).expect("a row");
        assert_eq!(row["args"]["name"], format!("worker {w}"));
        assert_eq!(row["pid"], node as u64 + 1);
    }

    // One complete event per task of the report, plus the root (the control program).
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(report.tasks, 48);
    assert_eq!(slices.len() as u64, report.tasks + 1);
    let task = |e: &Value| e["args"]["task"].as_str().unwrap().to_string();
    assert_eq!(slices.iter().filter(|e| task(e) == "root").count(), 1);
    for i in 0..24 {
        for kind in ["fill", "check"] {
            let name = format!("{kind} {i}");
            assert_eq!(slices.iter().filter(|e| task(e) == name).count(), 1);
            // Named by kind, the whole name an argument.
            assert_eq!(
                slices
                    .iter()
                    .filter(|e| e["name"] == kind && task(e) == name)
                    .count(),
                1
            );
        }
    }

    // Within the run, in microseconds.
    let wall_us = report.wall_s * 1e6;
    for e in &slices {
        let ts = e["ts"].as_f64().unwrap();
        let dur = e["dur"].as_f64().unwrap();
        assert!(ts >= 0.0 && dur >= 0.0, "{e}");
        assert!(
            ts + dur <= wall_us + 0.002,
            "{e} ends after the run ({wall_us} us)"
        );
    }

    // Colours: the node of the task's data. With deferred allocation every write is
    // local, so a write-only task is coloured by its own worker's node.
    let mut write_bytes = 0;
    for e in &slices {
        let data_node = e["args"]["data_node"].as_u64().unwrap() as usize;
        assert_eq!(e["cname"], node_colour(data_node), "{e}");
        assert_eq!(e["args"]["write_remote_bytes"], 0, "{e}");
        let worker = e["tid"].as_u64().unwrap() as usize;
        let worker_node = rt.worker_nodes()[worker];
        assert_eq!(e["args"]["worker_node"], worker_node as u64);
        if task(e).starts_with("fill") {
            // Written locally: of category `local`.
            assert_eq!(e["cat"], "local", "{e}");
            assert_eq!(e["args"]["locality"], "local", "{e}");
            assert_eq!(data_node, worker_node, "{e}");
            assert_eq!(e["args"]["write_local_bytes"], 4096);
            write_bytes += 4096;
        }
        if task(e).starts_with("check") {
            let read = e["args"]["read_local_bytes"].as_u64().unwrap()
                + e["args"]["read_remote_bytes"].as_u64().unwrap();
            assert_eq!(read, 4096);
            // Read-only: the data node is where the block was written.
            let local = e["args"]["read_local_bytes"] == 4096;
            assert_eq!(local, data_node == worker_node, "{e}");
        }
    }
    // The trace's bytes agree with the report's.
    assert_eq!(write_bytes, report.locality.write_local_bytes);
    let read_local: u64 = slices
        .iter()
        .map(|e| e["args"]["read_local_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(read_local, report.locality.read_local_bytes);
}

/// Each run rewrites the trace with every run so far, one after another.
#[test]
fn every_run_rewrites_the_trace_with_every_run() {
    let path = temp_path("runs");
    let rt = Runtime::builder()
        .topology(Topology::from_spec("1x2").unwrap())
        .trace(&path)
        .build()
        .unwrap();
    let first = write_then_read(&rt, 3);
    let count = || {
        let trace: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let of = |ph: &str| events(&trace).iter().filter(|e| e["ph"] == ph).count() as u64;
        (of("X"), of("i"))
    };
    assert_eq!(count(), (first.tasks + 1, 1));
    let second = write_then_read(&rt, 2);
    assert_eq!(count(), (first.tasks + second.tasks + 2, 2));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn an_unwritable_trace_fails_build_in_one_line() {
    let path = temp_path("no-such-dir").join("t.json");
    let err = Runtime::builder()
        .topology(Topology::from_spec("1x1").unwrap())
        .trace(&path)
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("cannot write the trace to"), "{msg}");
    assert!(msg.contains("t.json"), "{msg}");
    assert_eq!(msg.lines().count(), 1);
}

/// Counts what the engine reports, and checks the per-worker contract.
#[derive(Default)]
struct Counting {
    workers: AtomicUsize,
    runs_started: AtomicUsize,
    runs_finished: AtomicUsize,
    tasks: AtomicUsize,
    bytes: AtomicUsize,
}

impl Observer for Counting {
    fn attach(&self, engine: &locus::observe::EngineView<'_>) -> Result<(), String> {
        assert_eq!(engine.engine, "threads");
        self.workers
            .store(engine.worker_node.len(), Ordering::Relaxed);
        Ok(())
    }

    fn run_started(&self, _at_ns: u64) {
        self.runs_started.fetch_add(1, Ordering::Relaxed);
    }

    fn task(&self, span: &TaskSpan<'_>) {
        assert!(span.worker < self.workers.load(Ordering::Relaxed));
        assert!(span.end_ns >= span.start_ns);
        self.tasks.fetch_add(1, Ordering::Relaxed);
        self.bytes
            .fetch_add(span.bytes.total() as usize, Ordering::Relaxed);
    }

    fn run_finished(&self, _at_ns: u64) {
        self.runs_finished.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn an_observer_sees_every_task_once_even_with_a_window() {
    let counting = Arc::new(Counting::default());
    // A window of 2: the control program helps run tasks inside its own body, so
    // spans nest on worker 0.
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .config(Config::DsaOpt)
        .window(2)
        .observer(counting.clone())
        .build()
        .unwrap();
    let report = write_then_read(&rt, 16);
    assert_eq!(counting.workers.load(Ordering::Relaxed), 2);
    assert_eq!(counting.runs_started.load(Ordering::Relaxed), 1);
    assert_eq!(counting.runs_finished.load(Ordering::Relaxed), 1);
    assert_eq!(
        counting.tasks.load(Ordering::Relaxed) as u64,
        report.tasks + 1
    );
    let l = &report.locality;
    assert_eq!(
        counting.bytes.load(Ordering::Relaxed) as u64,
        l.read_local_bytes + l.read_remote_bytes + l.write_local_bytes + l.write_remote_bytes
    );
}

#[test]
fn a_recorder_watches_one_runtime_and_returns_write_errors() {
    let recorder = Arc::new(TraceRecorder::new());
    let build = || {
        Runtime::builder()
            .topology(Topology::from_spec("1x1").unwrap())
            .observer(recorder.clone())
            .build()
    };
    let rt = build().unwrap();
    let err = build().unwrap_err();
    assert!(err.to_string().contains("one runtime"), "{err}");
    let report = write_then_read(&rt, 2);
    assert_eq!(recorder.tasks() as u64, report.tasks + 1);
    let mut json = Vec::new();
    recorder.write(&mut json).unwrap();
    let trace: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(events(&trace).iter().filter(|e| e["ph"] == "X").count(), 5);
    let bad = temp_path("missing-dir").join("t.json");
    assert!(recorder.write_file(bad).is_err());
}
