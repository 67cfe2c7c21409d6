//! The shared mechanism (`locus::engine::Mechanism`), observed from outside in the
//! simulator: new work wakes the sleeping worker nearest to it, and `steal_half`
//! makes a thief take a batch. (That the simulator and the `threads` engine make the
//! same decisions from the same queues is checked inside the crate, `src/queues`.)

use std::sync::{Arc, Mutex};

use locus::observe::{Observer, TaskSpan};
use locus::{Affinity, Config, Report, Runtime, RuntimeBuilder, Topology};
use locus_sim::{Probe, Sim};

/// Simulated computation of every task, in nanoseconds: long enough that every idle
/// worker has gone to sleep when the producer ends.
const COST_NS: u64 = 1_000_000;

/// The worker of every task of the last run, by name.
#[derive(Default)]
struct Workers(Mutex<Vec<(String, usize)>>);

impl Observer for Workers {
    fn run_started(&self, _at_ns: u64) {
        self.0.lock().unwrap().clear();
    }

    fn task(&self, span: &TaskSpan<'_>) {
        self.0
            .lock()
            .unwrap()
            .push((span.name.to_string(), span.worker));
    }
}

/// A producer pinned to the first worker of node `producer_node` (cost [`COST_NS`])
/// and `readers` tasks reading its output, which become ready together when it ends,
/// on its worker (`dsa-base` keeps them there). Returns the report and the nodes of
/// the workers that ran the readers.
fn burst(
    spec: &str,
    producer_node: usize,
    readers: usize,
    tweak: impl FnOnce(RuntimeBuilder) -> RuntimeBuilder,
) -> (Report, Vec<usize>) {
    let workers = Arc::new(Workers::default());
    let builder = Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(Config::DsaBase)
        .engine(Sim::new().seed(3))
        .observer(workers.clone());
    let rt = tweak(builder).build().unwrap();
    let worker_node = rt.worker_nodes().to_vec();
    let producer_worker = (0..rt.workers())
        .find(|&w| worker_node[w] == producer_node)
        .unwrap();
    let data = rt.data::<u64>("d", 64);
    let report = rt
        .run(|s| {
            s.task("producer", data.write())
                .affinity(Affinity::worker(producer_worker).strict())
                .cost(COST_NS)
                .spawn(|_, d| d.fill(1))
                .unwrap();
            for k in 0..readers {
                s.task(format!("reader-{k}"), data.read())
                    .cost(COST_NS)
                    .spawn(|_, d| assert_eq!(d[0], 1))
                    .unwrap();
            }
        })
        .unwrap()
        .report;
    let ran = workers.0.lock().unwrap();
    let readers = ran
        .iter()
        .filter(|(name, _)| name.starts_with("reader-"))
        .map(|&(_, w)| worker_node[w])
        .collect();
    (report, readers)
}

#[test]
fn new_work_wakes_a_sleeper_of_its_own_node() {
    // Four nodes of two workers; the work appears on a worker of node 3 while every
    // other worker sleeps. Its node neighbour is woken, and steals the second reader
    // within the node; waking the lowest-index sleeper instead would have sent a
    // worker of node 0 to steal it remotely.
    let spec = "4x2:10,12,20,20,12,10,20,20,20,20,10,12,20,20,12,10";
    let (report, readers) = burst(spec, 3, 2, |b| b);
    assert_eq!(readers, [3, 3], "{:?}", report.steals);
    assert_eq!(report.steals.remote, 0);
    assert_eq!(report.steals.same_node, 1);
}

#[test]
fn steal_half_takes_half_of_the_victims_deque_at_once() {
    // Two workers; 40 readers become ready on the producer's worker. One at a time,
    // the other worker steals about every other task; with batches, a few steals.
    let steals = |half: bool| {
        let (report, readers) = burst("1x2", 0, 40, |b| b.steal_half(half));
        assert_eq!(readers.len(), 40);
        assert_eq!(
            report.settings.get("steal_half"),
            Some(if half { "true" } else { "false" })
        );
        report.steals.same_node
    };
    let (one, batch) = (steals(false), steals(true));
    assert!(one >= 10, "one task a steal: {one} steals");
    assert!(
        batch <= 3,
        "batches: {batch} steals, one task a steal: {one}"
    );
}

#[test]
fn a_chain_stays_on_the_worker_that_runs_it() {
    // A slow first task releases a chain of read-writes, each made ready by its
    // predecessor's finish: the successor is that worker's next task (hand-over), so the
    // idle worker steals none of them, and none is announced to wake it.
    let workers = Arc::new(Workers::default());
    let probe = Probe::new();
    let rt = Runtime::builder()
        .topology(Topology::from_spec("1x2").unwrap())
        .config(Config::DsaOpt)
        .engine(Sim::new().seed(3).probe(probe.clone()))
        .observer(workers.clone())
        .build()
        .unwrap();
    let x = rt.data::<u64>("x", 1);
    let report = rt
        .run(|s| {
            s.task("gate", x.write())
                .cost(COST_NS)
                .spawn(|_, v| v[0] = 0)
                .unwrap();
            for k in 0..200u64 {
                s.task("step", x.read_write())
                    .cost(1_000)
                    .spawn(move |_, v| v[0] = v[0].wrapping_mul(3).wrapping_add(k))
                    .unwrap();
            }
        })
        .unwrap()
        .report;
    let ran = workers.0.lock().unwrap();
    let gate = ran.iter().find(|(name, _)| name == "gate").unwrap().1;
    let steps: Vec<usize> = ran
        .iter()
        .filter(|(name, _)| name == "step")
        .map(|&(_, w)| w)
        .collect();
    assert_eq!(steps.len(), 200);
    assert!(steps.iter().all(|&w| w == gate), "{steps:?}");
    // The gate itself, queued by the control program, may be stolen.
    assert!(report.steals.same_node <= 1, "{:?}", report.steals);
    let wakeups = probe.summary().wakeups;
    assert!(wakeups <= 2, "{wakeups} wake-ups");
}

#[test]
fn no_wake_up_while_a_worker_searches() {
    // Eight workers: when the run starts, the seven without the control program find no
    // work; four of them search (half the workers), three sleep at once. The control
    // program queues four tasks on its own worker while the four search: they and the
    // control program's worker take them, and nobody is woken for them (only the last
    // searcher to find work may wake a sleeper). Waking a sleeper per task, as before
    // the searchers were counted, would wake the three.
    let probe = Probe::new();
    let workers = Arc::new(Workers::default());
    let rt = Runtime::builder()
        .topology(Topology::from_spec("1x8").unwrap())
        .config(Config::DsaBase)
        .engine(Sim::new().seed(3).probe(probe.clone()))
        .observer(workers.clone())
        .build()
        .unwrap();
    let data: Vec<_> = (0..4)
        .map(|k| rt.data::<u64>(&format!("d{k}"), 1))
        .collect();
    let report = rt
        .run(|s| {
            for d in &data {
                s.task("t", d.write())
                    .cost(COST_NS)
                    .spawn(|_, v| v[0] = 1)
                    .unwrap();
            }
        })
        .unwrap()
        .report;
    let ran = workers.0.lock().unwrap();
    let on: Vec<usize> = ran
        .iter()
        .filter(|(name, _)| name == "t")
        .map(|&(_, w)| w)
        .collect();
    assert_eq!(on.len(), 4);
    assert!(report.steals.same_node >= 3, "{:?}", report.steals);
    let wakeups = probe.summary().wakeups;
    assert!(wakeups <= 1, "{wakeups} wake-ups; tasks ran on {on:?}");
}
