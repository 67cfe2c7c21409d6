//! Every scheduling policy, observed from outside on the `threads` engine: work-pushing
//! moves ready tasks to their data (Drebes et al., "Scalable task parallelism for NUMA:
//! a uniform abstraction for coordinated scheduling and memory management",
//! Algorithm 1), hierarchical stealing prefers victims of the thief's own node,
//! home-based scheduling keeps tasks in their home's vicinity (Muddukrishna et al.,
//! home-based scheduling, section 3.1), affinity hints land on their target (Virouleau
//! et al., "Description, implementation and evaluation of an affinity clause for task
//! directives"), and the builder's memory settings (`node_limit`, pools) do what they
//! say. The papers are listed in `docs/papers.md`.
//!
//! The host has few CPUs and may have one NUMA node, so the topologies here are virtual
//! nodes laid over it ("2x1", "2x2", "3x1"). What a policy decides at activation is
//! exact (push counters, strict hints, a vicinity of one); where a task ends up after
//! stealing depends on the OS's thread scheduling, so those checks are lenient bounds
//! that a run may retry a few times. `scripts/mutants.sh` disables each mechanism in
//! turn and checks that these tests notice.

use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use locus::observe::{Observer, TaskSpan};
use locus::sched::HomeRegions;
use locus::{
    Affinity, Config, Data, Finished, RegionPolicy, Report, Runtime, RuntimeBuilder, StealKind,
    Topology,
};

/// Elements of a datum whose consumers are worth pushing: 64 KiB, four times the
/// default push threshold.
const BIG: usize = 8 * 1024;

/// The tests of this file run one at a time: where a task ends up depends on which
/// workers the OS lets run, and the host has few CPUs.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Takes this file's turn (a test that failed while holding it does not matter).
fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Passes a task body makes over its 64 KiB (about half a millisecond in a debug
/// build): long enough that a worker the OS leaves waiting for a while does not change
/// where most tasks run.
const PASSES: usize = 24;

/// The sum of `x`, computed [`PASSES`] times.
fn sum_slowly(x: &[u64]) -> u64 {
    let mut sum = 0;
    for _ in 0..PASSES {
        sum = std::hint::black_box(x).iter().sum();
    }
    sum
}

/// How long a task of [`generators`] computes: long enough, in debug and release
/// builds alike, that a run outlasts the OS's time slices and every worker sharing a
/// CPU gets turns while there is work.
const GENERATED_TASK_TIME: Duration = Duration::from_millis(1);

/// [`sum_slowly`] again and again for at least `time`.
fn sum_for(x: &[u64], time: Duration) -> u64 {
    let start = Instant::now();
    let mut sum = sum_slowly(x);
    while start.elapsed() < time {
        sum = sum_slowly(x);
    }
    sum
}

/// Where one task ran, as the observer saw it.
#[derive(Clone, Debug)]
struct Ran {
    name: String,
    worker: usize,
    node: usize,
    /// The node holding most of the bytes the task accessed.
    data_node: usize,
}

/// An observer that records where every task of the last run ran.
#[derive(Default)]
struct Placements(Mutex<Vec<Ran>>);

impl Observer for Placements {
    fn run_started(&self, _at_ns: u64) {
        self.0.lock().unwrap().clear();
    }

    fn task(&self, span: &TaskSpan<'_>) {
        self.0.lock().unwrap().push(Ran {
            name: span.name.to_string(),
            worker: span.worker,
            node: span.node,
            data_node: span.bytes.data_node,
        });
    }
}

impl Placements {
    /// The tasks of the last run whose name starts with `prefix`.
    fn named(&self, prefix: &str) -> Vec<Ran> {
        let ran = self.0.lock().unwrap();
        ran.iter()
            .filter(|r| r.name.starts_with(prefix))
            .cloned()
            .collect()
    }
}

/// A runtime on `spec` under `config`, with an observer; `tweak` adds settings.
fn runtime(
    spec: &str,
    config: Config,
    tweak: impl FnOnce(RuntimeBuilder) -> RuntimeBuilder,
) -> (Runtime, Arc<Placements>) {
    let placements = Arc::new(Placements::default());
    let builder = Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .observer(placements.clone());
    (tweak(builder).build().unwrap(), placements)
}

/// The `k`-th worker of `node` (counting round its workers).
fn nth_worker(rt: &Runtime, node: usize, k: usize) -> usize {
    let workers: Vec<usize> = (0..rt.worker_nodes().len())
        .filter(|&w| rt.worker_nodes()[w] == node)
        .collect();
    workers[k % workers.len()]
}

/// A datum of [`BIG`] elements made by [`data_on_nodes`].
#[derive(Clone)]
struct Input {
    data: Data<u64>,
    /// The node of its buffer.
    node: usize,
    /// The sum of its elements.
    sum: u64,
}

/// `count` data of [`BIG`] elements, datum `i` in memory of node `i % nodes`: one run
/// where, for each datum, a control task pinned to the node (strict affinity) submits
/// the producer, itself pinned there. Its buffer is then on that node under immediate
/// allocation (the submitter's node) and deferred allocation (the writer's) alike.
fn data_on_nodes(rt: &Runtime, placements: &Placements, count: usize) -> Vec<Input> {
    let nodes = rt.topology().num_nodes();
    let value = |i: usize, j: usize| (i * BIG + j) as u64;
    let inputs: Vec<Input> = (0..count)
        .map(|i| Input {
            data: rt.data::<u64>(format!("in{i}"), BIG),
            node: i % nodes,
            sum: (0..BIG).map(|j| value(i, j)).sum(),
        })
        .collect();
    rt.run(|s| {
        for (i, input) in inputs.iter().enumerate() {
            let (d, node) = (input.data.clone(), input.node);
            s.task(format!("init-{i}"), ())
                .affinity(Affinity::node(node).strict())
                .spawn_control(move |ctx| {
                    ctx.scope()
                        .task(format!("produce-{node}"), d.write())
                        .affinity(Affinity::node(node).strict())
                        .spawn(move |_, v| {
                            for (j, e) in v.iter_mut().enumerate() {
                                *e = value(i, j);
                            }
                        })
                        .unwrap();
                })
                .unwrap();
        }
    })
    .unwrap();
    let produced = placements.named("produce-");
    assert_eq!(produced.len(), count);
    for p in &produced {
        assert_eq!(p.name, format!("produce-{}", p.data_node), "{p:?}");
        assert_eq!(p.node, p.data_node, "strict affinity: {p:?}");
    }
    inputs
}

/// Consumers spawned by the control program (worker 0, node 0): `rounds` times, one
/// per input, interleaving the nodes; each reads its whole input and writes its sum to
/// a small output of its own (64 bytes, under the push threshold). Consumer names say
/// the node of their input. Checks the sums.
fn consume(rt: &Runtime, inputs: &[Input], rounds: usize) -> Report {
    let outs: Vec<Data<u64>> = (0..rounds * inputs.len())
        .map(|k| rt.data::<u64>(format!("out{k}"), 8))
        .collect();
    let finished = rt
        .run(|s| {
            for r in 0..rounds {
                for (i, input) in inputs.iter().enumerate() {
                    let out = &outs[r * inputs.len() + i];
                    s.spawn(
                        format!("consume-{}", input.node),
                        (input.data.read(), out.write()),
                        |_, (x, o)| o.fill(sum_slowly(x)),
                    )
                    .unwrap();
                }
            }
        })
        .unwrap();
    for (k, out) in outs.iter().enumerate() {
        assert_eq!(
            rt.fetch(out).unwrap(),
            vec![inputs[k % inputs.len()].sum; 8]
        );
    }
    finished.report
}

/// Fraction of the named tasks that ran on the node their name ends with.
fn on_named_node(ran: &[Ran]) -> f64 {
    let hits = ran
        .iter()
        .filter(|r| r.name.rsplit('-').next() == Some(&r.node.to_string()))
        .count();
    hits as f64 / ran.len() as f64
}

/// Runs `attempt` up to `tries` times until it returns `Ok`; panics with the last
/// explanation otherwise. For bounds that depend on how the OS schedules the workers'
/// threads on a shared, oversubscribed host: a disabled policy misses them every time.
fn within_tries(tries: usize, mut attempt: impl FnMut() -> Result<(), String>) {
    let mut last = String::new();
    for _ in 0..tries {
        match attempt() {
            Ok(()) => return,
            Err(why) => last = why,
        }
    }
    panic!("{tries} tries, none met the bound; last: {last}");
}

/// Push counters every pushing run satisfies, whatever the timing: each attempt is
/// transferred or rejected, and every task went through the policy.
fn check_push_counters(report: &Report) {
    let p = &report.pushes;
    assert_eq!(p.attempted, p.transferred + p.rejected, "{p:?}");
    assert_eq!(p.with_preference, report.tasks, "{p:?}");
    assert!(p.started_on_preferred <= p.with_preference, "{p:?}");
}

// ---------------------------------------------------------------------------------
// Work-pushing
// ---------------------------------------------------------------------------------

#[test]
fn input_pushing_sends_consumers_to_their_data_and_raises_locality() {
    let _turn = serial();
    // 2 data per node, 8 rounds: 16 consumers of node-1 data, all activated on node 0.
    let dsa_base = {
        let (rt, obs) = runtime("2x1", Config::DsaBase, |b| b);
        let inputs = data_on_nodes(&rt, &obs, 4);
        let report = consume(&rt, &inputs, 8);
        assert_eq!(report.pushes.attempted, 0);
        report.locality.r_loc_rt
    };
    for config in [Config::PushIn, Config::PushWeighted, Config::DsaOpt] {
        let (rt, obs) = runtime("2x1", config, |b| b);
        let inputs = data_on_nodes(&rt, &obs, 4);
        within_tries(5, || {
            let report = consume(&rt, &inputs, 8);
            // Decided at activation, so exact: every consumer of node-1 data, none of
            // node-0 data (already local).
            assert_eq!(report.pushes.attempted, 16, "{config}: {:?}", report.pushes);
            assert_eq!(report.pushes.rejected, 0, "{config}");
            assert_eq!(report.pushes.kept_local, 0, "{config}");
            check_push_counters(&report);
            // Where they ran depends on stealing at the end of the run.
            let ran = obs.named("consume-");
            let r_loc = report.locality.r_loc_rt;
            let on_node = on_named_node(&ran);
            if r_loc >= 0.65 && r_loc > dsa_base + 0.1 && on_node >= 0.65 {
                Ok(())
            } else {
                Err(format!(
                    "{config}: r_loc_rt {r_loc:.3} (dsa-base {dsa_base:.3}), \
                     {on_node:.2} on the data's node"
                ))
            }
        });
    }
}

#[test]
fn output_pushing_sends_writers_to_their_output() {
    let _turn = serial();
    // Outputs placed on each node (shared data bound there); inputs none.
    for config in [Config::PushOut, Config::PushWeighted] {
        let (rt, obs) = runtime("2x1", config, |b| b);
        let outs: Vec<Data<u64>> = (0..32)
            .map(|k| {
                rt.shared::<u64>(format!("out{k}"), BIG, RegionPolicy::Bind(k % 2))
                    .unwrap()
            })
            .collect();
        within_tries(5, || {
            let report = rt
                .run(|s| {
                    for (k, out) in outs.iter().enumerate() {
                        s.spawn(format!("fill-{}", k % 2), out.write(), move |_, o| {
                            o.fill(k as u64);
                            sum_slowly(o);
                        })
                        .unwrap();
                    }
                })
                .unwrap()
                .report;
            for (k, out) in outs.iter().enumerate() {
                assert!(rt.fetch(out).unwrap().iter().all(|&e| e == k as u64));
            }
            assert_eq!(report.pushes.attempted, 16, "{config}: {:?}", report.pushes);
            check_push_counters(&report);
            let r_loc = report.locality.r_loc_rt;
            let on_node = on_named_node(&obs.named("fill-"));
            if r_loc >= 0.65 && on_node >= 0.65 {
                Ok(())
            } else {
                Err(format!(
                    "{config}: r_loc_rt {r_loc:.3}, {on_node:.2} on node"
                ))
            }
        });
    }
}

#[test]
fn input_pushing_ignores_outputs_and_output_pushing_ignores_inputs() {
    let _turn = serial();
    // Consumers of remote inputs with small local outputs: push-out sees only 64 bytes,
    // under the threshold, and keeps every one.
    let (rt, obs) = runtime("2x1", Config::PushOut, |b| b);
    let inputs = data_on_nodes(&rt, &obs, 4);
    let report = consume(&rt, &inputs, 2);
    assert_eq!(report.pushes.attempted, 0, "{:?}", report.pushes);
    assert_eq!(report.pushes.kept_local, 8);
}

#[test]
fn push_weights_choose_what_the_weighted_heuristic_sees() {
    let _turn = serial();
    // Read weight 0: only the 64-byte outputs count, under the threshold: all kept.
    let (rt, obs) = runtime("2x1", Config::PushWeighted, |b| b.push_weights(0.0, 1.0));
    let inputs = data_on_nodes(&rt, &obs, 4);
    let report = consume(&rt, &inputs, 2);
    assert_eq!(report.pushes.attempted, 0, "{:?}", report.pushes);
    assert_eq!(report.pushes.kept_local, 8);
    assert_eq!(
        report.settings.get("push"),
        Some("weighted (read 0, write 1)")
    );
    // Write weight 0: input-only, every consumer of node-1 data is pushed.
    let (rt, obs) = runtime("2x1", Config::PushWeighted, |b| b.push_weights(1.0, 0.0));
    let inputs = data_on_nodes(&rt, &obs, 4);
    let report = consume(&rt, &inputs, 2);
    assert_eq!(report.pushes.attempted, 4, "{:?}", report.pushes);
    assert_eq!(report.pushes.kept_local, 0);
    // Weights must be finite and non-negative.
    for (r, w) in [(-1.0, 1.0), (1.0, f64::NAN)] {
        let err = Runtime::builder()
            .topology(Topology::from_spec("2x1").unwrap())
            .config(Config::PushWeighted)
            .push_weights(r, w)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("push weights"), "{err}");
    }
}

#[test]
fn the_push_threshold_keeps_small_tasks_local() {
    let _turn = serial();
    // A threshold above the consumers' 64 KiB inputs: nothing is pushed.
    let (rt, obs) = runtime("2x1", Config::PushIn, |b| b.push_threshold(1 << 20));
    let inputs = data_on_nodes(&rt, &obs, 4);
    let report = consume(&rt, &inputs, 2);
    assert_eq!(report.pushes.attempted, 0);
    assert_eq!(report.pushes.kept_local, 8);
}

// ---------------------------------------------------------------------------------
// Deferred allocation
// ---------------------------------------------------------------------------------

#[test]
fn deferred_allocation_places_outputs_where_their_writer_runs() {
    let _turn = serial();
    // Writers of 64 KiB spawned by the control program on node 0, pinned to node 1:
    // deferred allocation puts their outputs on node 1 (local writes), immediate
    // allocation on node 0 (remote writes).
    for (config, remote) in [(Config::Dfa, false), (Config::DsaBase, true)] {
        let (rt, obs) = runtime("2x1", config, |b| b);
        let outs: Vec<Data<u64>> = (0..8).map(|k| rt.data(format!("o{k}"), BIG)).collect();
        let report = rt
            .run(|s| {
                for out in &outs {
                    s.task("write-1", out.write())
                        .affinity(Affinity::node(1).strict())
                        .spawn(|_, o| o.fill(3))
                        .unwrap();
                }
            })
            .unwrap()
            .report;
        let bytes = (8 * BIG * 8) as u64;
        assert!(obs.named("write-").iter().all(|r| r.node == 1));
        let loc = &report.locality;
        if remote {
            assert_eq!((loc.write_local_bytes, loc.write_remote_bytes), (0, bytes));
            assert_eq!(report.memory.peak_bytes_per_node, vec![bytes, 0]);
        } else {
            assert_eq!((loc.write_local_bytes, loc.write_remote_bytes), (bytes, 0));
            assert_eq!(report.memory.peak_bytes_per_node, vec![0, bytes]);
        }
    }
}

// ---------------------------------------------------------------------------------
// Hierarchical stealing
// ---------------------------------------------------------------------------------

/// One generator per node, pinned to the node's first worker, spawns `per_node` tasks
/// that each write 64 KiB; under immediate allocation the outputs are on the
/// generator's node, so a task is local exactly when a worker of that node runs it.
/// The other workers only steal.
///
/// Every node should have work from the start, or its thieves find nothing on their
/// own node and rightly steal from the others. So the generators start spawning
/// together (a barrier), and node `n`'s generator is its `n`-th worker: over a host
/// of two CPUs, where a topology of two nodes of two workers puts each node's first
/// worker on the same real CPU, the generators then run on different CPUs, each
/// beside the other node's thief, instead of taking turns on one CPU while the thieves
/// steal whichever has spawned.
fn generators(rt: &Runtime, per_node: usize) -> Finished<()> {
    let nodes = rt.topology().num_nodes();
    let start = Arc::new(Barrier::new(nodes));
    let outs: Vec<Vec<Data<u64>>> = (0..nodes)
        .map(|n| {
            (0..per_node)
                .map(|k| rt.data(format!("g{n}-{k}"), BIG))
                .collect()
        })
        .collect();
    let f = rt
        .run(|s| {
            for (n, outs) in outs.iter().enumerate() {
                let outs = outs.clone();
                let start = Arc::clone(&start);
                s.task(format!("gen-{n}"), ())
                    .affinity(Affinity::worker(nth_worker(rt, n, n)).strict())
                    .spawn_control(move |ctx| {
                        start.wait();
                        for (k, out) in outs.iter().enumerate() {
                            ctx.scope()
                                .spawn(format!("work-{n}"), out.write(), move |_, o| {
                                    for (j, e) in o.iter_mut().enumerate() {
                                        *e = (j * k) as u64;
                                    }
                                    sum_for(o, GENERATED_TASK_TIME);
                                })
                                .unwrap();
                        }
                    })
                    .unwrap();
            }
        })
        .unwrap();
    for outs in &outs {
        for (k, out) in outs.iter().enumerate() {
            assert_eq!(rt.fetch(out).unwrap()[3], 3 * k as u64);
        }
    }
    f
}

#[test]
fn hierarchical_stealing_prefers_victims_of_the_same_node() {
    let _turn = serial();
    // Two nodes of two workers over the host's CPUs: each node has a generator and a
    // thief. A thief tries its own node's generator first.
    let (rt, obs) = runtime("2x2", Config::DsaBase, |b| b);
    assert_eq!(rt.worker_nodes(), &[0, 1, 0, 1]);
    within_tries(5, || {
        let report = generators(&rt, 32).report;
        let steals = &report.steals;
        let r_loc = report.locality.r_loc_rt;
        let on_node = on_named_node(&obs.named("work-"));
        if steals.same_node > steals.remote && r_loc >= 0.65 && on_node >= 0.65 {
            Ok(())
        } else {
            Err(format!(
                "steals {steals:?}, r_loc_rt {r_loc:.3}, {on_node:.2} on the data's node"
            ))
        }
    });
    assert_eq!(
        Runtime::builder()
            .topology(Topology::from_spec("2x2").unwrap())
            .config(Config::Ws)
            .build()
            .unwrap()
            .run(|_| ())
            .unwrap()
            .report
            .settings
            .get("steal"),
        Some("random")
    );
}

#[test]
fn random_stealing_counts_every_steal_as_remote() {
    let _turn = serial();
    // `ws` ignores the topology: its one class of victims is not the thief's node.
    let (rt, _) = runtime("2x2", Config::Ws, |b| b);
    let report = generators(&rt, 16).report;
    assert_eq!(report.steals.same_node, 0, "{:?}", report.steals);
}

#[test]
fn the_steal_order_is_same_node_then_nodes_by_distance() {
    let _turn = serial();
    // The pure policy: node 0 near node 1, far from nodes 2 and 3.
    let topo = Topology::from_spec("4x2:10,12,20,20,12,10,20,20,20,20,10,12,20,20,12,10").unwrap();
    let worker_node = [0, 0, 1, 1, 2, 2, 3, 3];
    for me in 0..8 {
        let plan = locus::sched::StealPlan::build(StealKind::Hierarchical, me, &worker_node, &topo);
        for random in 0..16 {
            let order: Vec<(usize, usize)> = plan.victims(random).collect();
            assert_eq!(order.len(), 7);
            // Same node first, then the near node's two workers, then the far four.
            assert_eq!(worker_node[order[0].1], worker_node[me], "{me}: {order:?}");
            assert!(plan.is_same_node(order[0].0));
            let near = worker_node[me] ^ 1;
            assert!(order[1..3].iter().all(|&(_, w)| worker_node[w] == near));
            assert!(order[3..].iter().all(|&(c, w)| {
                !plan.is_same_node(c) && worker_node[w] / 2 != worker_node[me] / 2
            }));
        }
        let random = locus::sched::StealPlan::build(StealKind::Random, me, &worker_node, &topo);
        assert_eq!(random.classes().len(), 1);
        assert!(!random.is_same_node(0));
    }
}

// ---------------------------------------------------------------------------------
// Home-based scheduling
// ---------------------------------------------------------------------------------

#[test]
fn home_with_a_vicinity_of_one_runs_every_task_at_its_home() {
    let _turn = serial();
    for spec in ["2x1", "2x2"] {
        let (rt, obs) = runtime(spec, Config::Home, |b| b.vicinity(1));
        let inputs = data_on_nodes(&rt, &obs, 4);
        let report = consume(&rt, &inputs, 4);
        let ran = obs.named("consume-");
        assert_eq!(ran.len(), 16);
        // The home is the node of the largest region, the 64 KiB input; with no
        // stealing, exactly.
        assert_eq!(on_named_node(&ran), 1.0, "{spec}: {ran:?}");
        assert_eq!(report.steals.same_node + report.steals.remote, 0);
        assert_eq!(report.settings.get("steal"), Some("vicinity of 1 workers"));
        assert_eq!(report.settings.get("home_regions"), Some("largest"));
        // Both workers of a node share its consumers (the least loaded one is chosen).
        if spec == "2x2" {
            let workers: std::collections::BTreeSet<usize> = ran.iter().map(|r| r.worker).collect();
            assert!(workers.len() >= 3, "{workers:?}");
        }
    }
}

#[test]
fn home_regions_all_makes_every_region_a_home() {
    let _turn = serial();
    // The consumers' small outputs are on node 0 (immediate allocation by the control
    // program): with all regions deciding, node 0 is a home too, and the first
    // consumer goes to the least-loaded home worker, ties to the lowest index: worker 0.
    let (rt, obs) = runtime("2x1", Config::Home, |b| {
        b.vicinity(1).home_regions(HomeRegions::All)
    });
    let remote: Vec<Input> = data_on_nodes(&rt, &obs, 4)
        .into_iter()
        .filter(|i| i.node == 1)
        .collect();
    let report = consume(&rt, &remote, 4);
    assert_eq!(report.settings.get("home_regions"), Some("all"));
    let ran = obs.named("consume-");
    assert_eq!(ran.len(), 8);
    assert!(ran.iter().any(|r| r.node == 0), "{ran:?}");
}

#[test]
fn home_with_full_stealing_runs_most_tasks_at_home() {
    let _turn = serial();
    let (rt, obs) = runtime("2x1", Config::Home, |b| b);
    let inputs = data_on_nodes(&rt, &obs, 4);
    within_tries(5, || {
        let report = consume(&rt, &inputs, 8);
        let on_node = on_named_node(&obs.named("consume-"));
        let r_loc = report.locality.r_loc_rt;
        if on_node >= 0.65 && r_loc >= 0.65 {
            Ok(())
        } else {
            Err(format!("{on_node:.2} at home, r_loc_rt {r_loc:.3}"))
        }
    });
}

// ---------------------------------------------------------------------------------
// Affinity hints
// ---------------------------------------------------------------------------------

/// Spawns `count` tasks, task `k` with affinity `hint(k)` and named after the node it
/// should run on (`target(k)`); each does a little work. Returns the report.
fn hinted(
    rt: &Runtime,
    count: usize,
    hint: impl Fn(usize) -> Affinity + Sync,
    target: impl Fn(usize) -> usize + Sync,
) -> Report {
    let outs: Vec<Data<u64>> = (0..count).map(|k| rt.data(format!("h{k}"), BIG)).collect();
    let report = rt
        .run(|s| {
            for (k, out) in outs.iter().enumerate() {
                s.task(format!("hinted-{}", target(k)), out.write())
                    .affinity(hint(k))
                    .spawn(move |_, o| {
                        for (j, e) in o.iter_mut().enumerate() {
                            *e = (j as u64).wrapping_mul(k as u64 + 1).rotate_left(7);
                        }
                        sum_slowly(o);
                    })
                    .unwrap();
            }
        })
        .unwrap()
        .report;
    for (k, out) in outs.iter().enumerate() {
        assert_eq!(rt.fetch(out).unwrap()[1], (k as u64 + 1).rotate_left(7));
    }
    report
}

#[test]
fn strict_hints_always_land_on_their_target() {
    let _turn = serial();
    let (rt, obs) = runtime("2x2", Config::DsaBase, |b| b);
    let nodes = rt.worker_nodes().to_vec();
    hinted(&rt, 32, |k| Affinity::node(k % 2).strict(), |k| k % 2);
    assert_eq!(on_named_node(&obs.named("hinted-")), 1.0);
    // Worker hints, wrapping modulo the number of workers.
    let report = hinted(
        &rt,
        32,
        |k| Affinity::worker(k + 4).strict(),
        |k| nodes[k % 4],
    );
    let ran = obs.named("hinted-");
    assert_eq!(on_named_node(&ran), 1.0);
    for w in 0..4 {
        assert_eq!(report.workers[w].tasks, 8 + u64::from(w == 0), "root on 0");
    }
    // Node hints wrap modulo the number of nodes.
    hinted(&rt, 16, |k| Affinity::node(k + 2).strict(), |k| k % 2);
    assert_eq!(on_named_node(&obs.named("hinted-")), 1.0);
}

#[test]
fn non_strict_hints_mostly_land_on_their_target() {
    let _turn = serial();
    let (rt, obs) = runtime("2x1", Config::DsaBase, |b| b);
    type Hint = fn(usize) -> Affinity;
    let hints: [(&str, Hint); 2] = [
        ("node", |k| Affinity::node(k % 2)),
        ("worker", |k| Affinity::worker(k % 2)),
    ];
    for (what, hint) in hints {
        within_tries(5, || {
            let report = hinted(&rt, 64, hint, |k| k % 2);
            let on_node = on_named_node(&obs.named("hinted-"));
            let p = &report.pushes;
            // Hints are not work-pushing; every hinted task has a preferred node.
            assert_eq!(p.attempted, 0);
            assert_eq!(p.with_preference, 64);
            let counted = p.started_on_preferred as f64 / 64.0;
            assert!((counted - on_node).abs() < 1e-9, "{p:?} vs {on_node}");
            if on_node >= 0.65 {
                Ok(())
            } else {
                Err(format!("{what} hints: {on_node:.2} on target"))
            }
        });
    }
}

#[test]
fn data_hints_follow_the_datum_to_its_node() {
    let _turn = serial();
    let (rt, obs) = runtime("2x1", Config::DsaBase, |b| b);
    let inputs = data_on_nodes(&rt, &obs, 2);
    within_tries(5, || {
        hinted(&rt, 64, |k| Affinity::data(&inputs[k % 2].data), |k| k % 2);
        let on_node = on_named_node(&obs.named("hinted-"));
        if on_node >= 0.65 {
            Ok(())
        } else {
            Err(format!("{on_node:.2} on the datum's node"))
        }
    });
    hinted(
        &rt,
        16,
        |k| Affinity::data(&inputs[k % 2].data).strict(),
        |k| k % 2,
    );
    assert_eq!(on_named_node(&obs.named("hinted-")), 1.0);
}

// ---------------------------------------------------------------------------------
// Memory settings and handles
// ---------------------------------------------------------------------------------

/// Four writers of 32 KiB data, spawned by the control program on node 0 (immediate
/// allocation on node 0). Returns the report.
fn four_writers(rt: &Runtime) -> Report {
    let data: Vec<Data<u64>> = (0..4).map(|k| rt.data(format!("w{k}"), 4096)).collect();
    let report = rt
        .run(|s| {
            for (k, d) in data.iter().enumerate() {
                s.spawn("w", d.write(), move |_, v| v.fill(k as u64))
                    .unwrap();
            }
        })
        .unwrap()
        .report;
    for (k, d) in data.iter().enumerate() {
        assert_eq!(rt.fetch(d).unwrap(), vec![k as u64; 4096]);
    }
    report
}

#[test]
fn node_limit_sends_allocations_to_the_nearest_node_with_room() {
    let _turn = serial();
    const KIB32: u64 = 32 * 1024;
    // No limit: all on node 0.
    let (rt, _) = runtime("2x1", Config::DsaBase, |b| b);
    let report = four_writers(&rt);
    assert_eq!(report.memory.fallbacks, 0);
    assert_eq!(report.memory.peak_bytes_per_node, vec![4 * KIB32, 0]);
    assert_eq!(rt.pools().config().node_limit, None);
    // 64 KiB per node: two fit on node 0, two fall back to node 1.
    let (rt, _) = runtime("2x1", Config::DsaBase, |b| b.node_limit(2 * KIB32));
    assert_eq!(rt.pools().config().node_limit, Some(2 * KIB32));
    let report = four_writers(&rt);
    assert_eq!(report.memory.fallbacks, 2);
    assert_eq!(
        report.memory.peak_bytes_per_node,
        vec![2 * KIB32, 2 * KIB32]
    );
    assert_eq!(
        rt.pools().stats()[0].fallbacks,
        2,
        "counted at the asking node"
    );
    // Three nodes, node 2 nearer to node 0 than node 1 is: the fallback is node 2.
    let (rt, _) = runtime("3x1:10,40,20,40,10,40,20,40,10", Config::DsaBase, |b| {
        b.node_limit(2 * KIB32)
    });
    let report = four_writers(&rt);
    assert_eq!(report.memory.fallbacks, 2);
    assert_eq!(
        report.memory.peak_bytes_per_node,
        vec![2 * KIB32, 0, 2 * KIB32]
    );
    // Nothing fits anywhere: the run fails with an out-of-memory error, not a panic.
    let (rt, _) = runtime("2x1", Config::DsaBase, |b| b.node_limit(1024));
    let d = rt.data::<u64>("too-big", 4096);
    let err = rt
        .run(|s| s.spawn("w", d.write(), |_, v| v.fill(1)))
        .unwrap_err();
    assert!(
        matches!(err.error, locus::Error::OutOfMemory { .. }),
        "{err}"
    );
}

#[test]
fn pools_show_where_the_buffers_are() {
    let _turn = serial();
    let (rt, _) = runtime("2x1", Config::Dfa, |b| b);
    assert_eq!(rt.pools().nodes(), 2);
    let x = rt.data_from("x", &[5u64; 4096]).unwrap();
    assert_eq!(x.bytes(), 32 * 1024);
    let stats = rt.pools().stats();
    assert_eq!((stats[0].in_use, stats[1].in_use), (32 * 1024, 0));
    // Deferred allocation: the writer, pinned to node 1, gets its output there.
    let y = rt.data::<u64>("y", 4096);
    assert_eq!(rt.pools().bytes_in_use(), 32 * 1024, "y has no buffer yet");
    let report = rt
        .run(|s| {
            s.task("double", (x.read(), y.write()))
                .affinity(Affinity::node(1).strict())
                .spawn(|_, (x, y)| {
                    for (o, i) in y.iter_mut().zip(x) {
                        *o = 2 * i;
                    }
                })
        })
        .unwrap()
        .report;
    let stats = rt.pools().stats();
    assert_eq!((stats[0].in_use, stats[1].in_use), (32 * 1024, 32 * 1024));
    assert_eq!(rt.pool_bytes_in_use(), 64 * 1024);
    assert_eq!(report.memory.in_use_bytes, 64 * 1024);
    assert_eq!(rt.fetch(&y).unwrap(), vec![10; 4096]);
    // Dropping the handle gives the buffer back.
    drop(y);
    assert_eq!(rt.pools().stats()[1].in_use, 0);
}

#[test]
fn shared_from_places_a_copy_by_policy() {
    let _turn = serial();
    let (rt, obs) = runtime("2x1", Config::DsaBase, |b| b);
    let values: Vec<u32> = (0..2048).collect();
    let bound = rt
        .shared_from("bound", &values, RegionPolicy::Bind(1))
        .unwrap();
    assert_eq!(bound.bytes(), 8192);
    assert_eq!(rt.fetch(&bound).unwrap(), values);
    assert_eq!(rt.shared_bytes_in_use(), 8192);
    // A reader pinned to node 1 reads locally, one pinned to node 0 remotely.
    let sums: Vec<Data<u64>> = (0..2).map(|n| rt.data(format!("s{n}"), 1)).collect();
    let report = rt
        .run(|s| {
            for (n, sum) in sums.iter().enumerate() {
                s.task(format!("sum-{n}"), (bound.read(), sum.write()))
                    .affinity(Affinity::node(n).strict())
                    .spawn(|_, (b, s)| s[0] = b.iter().map(|&v| u64::from(v)).sum())
                    .unwrap();
            }
        })
        .unwrap()
        .report;
    for sum in &sums {
        assert_eq!(rt.fetch(sum).unwrap(), vec![2047 * 2048 / 2]);
    }
    // Node 1 read the bound copy locally, node 0 remotely; both wrote their 8-byte sum
    // on node 0 (immediate allocation by the control program).
    assert_eq!(report.traffic, vec![vec![8, 8192], vec![8, 8192]]);
    assert!(obs.named("sum-").iter().all(|r| r.data_node == 1));
    // A bad node is an error.
    assert!(rt
        .shared_from("bad", &values, RegionPolicy::Bind(2))
        .is_err());
}

#[test]
fn scope_data_makes_temporaries_inside_a_run() {
    let _turn = serial();
    for config in [Config::Dfa, Config::ShmBase] {
        let (rt, _) = runtime("2x1", config, |b| b);
        let out = rt.data::<u64>("out", 1);
        assert_eq!(out.bytes(), 8);
        let f = rt
            .run(|s| {
                let tmp = s.data::<u32>("tmp", 1000);
                s.spawn("fill", tmp.write(), |_, t| {
                    for (i, e) in t.iter_mut().enumerate() {
                        *e = i as u32;
                    }
                })
                .unwrap();
                s.spawn("sum", (tmp.read(), out.write()), |_, (t, o)| {
                    o[0] = t.iter().map(|&v| u64::from(v)).sum();
                })
                .unwrap();
                (tmp.len(), tmp.bytes(), tmp.name().to_string())
            })
            .unwrap();
        assert_eq!(f.value, (1000, 4000, "tmp".to_string()));
        assert_eq!(rt.fetch(&out).unwrap(), vec![999 * 1000 / 2]);
        let loc = &f.report.locality;
        assert_eq!(
            loc.read_local_bytes + loc.read_remote_bytes,
            4000,
            "{config}"
        );
        assert_eq!(loc.write_local_bytes + loc.write_remote_bytes, 4008);
        if config == Config::ShmBase {
            // Shared, one page each for `tmp` and `out`; the pools hold nothing.
            assert_eq!(f.report.memory.shared_peak_bytes, 8192);
            assert_eq!(f.report.memory.allocations, 0);
        } else {
            assert_eq!(f.report.memory.shared_peak_bytes, 0);
            assert_eq!(f.report.memory.allocations, 2);
            // The temporary went back to its pool when its last reader finished.
            assert_eq!(rt.pool_bytes_in_use(), 64, "out's smallest block only");
        }
    }
}

/// Runs `tasks` independent tasks submitted by the root; their names in the order
/// they ran (on one worker, the order the observer saw them end), and the report.
fn run_order(rt: &Runtime, placements: &Placements, tasks: usize) -> (Vec<String>, Report) {
    let finished = rt
        .run(|s| {
            for i in 0..tasks {
                s.spawn(format!("t{i}"), (), |_, ()| {}).unwrap();
            }
        })
        .unwrap();
    let order = placements.named("t").into_iter().map(|r| r.name).collect();
    (order, finished.report)
}

#[test]
fn breadth_first_runs_ready_tasks_oldest_first_from_one_global_queue() {
    let _turn = serial();
    let tasks = 200;
    let in_order: Vec<String> = (0..tasks).map(|i| format!("t{i}")).collect();
    let (rt, placements) = runtime("1x1", Config::Bf, |b| b);
    let (order, report) = run_order(&rt, &placements, tasks);
    assert_eq!(order, in_order);
    assert_eq!(report.settings.get("ready_queue"), Some("global fifo"));
    // Work-stealing's own deque runs the newest first: the order above is the global
    // queue's doing.
    let (rt, placements) = runtime("1x1", Config::Ws, |b| b);
    assert_ne!(run_order(&rt, &placements, tasks).0, in_order);
}

#[test]
fn huge_pages_are_a_setting_of_the_pools_and_the_report_says_so() {
    // Its 8 MiB copies would slow the timing-bound tests beside it.
    let _turn = serial();
    // Versions of 8 MiB, each in a chunk of at least 2 MiB: advised when asked.
    for on in [false, true] {
        let rt = Runtime::builder()
            .topology(Topology::from_spec("1x2").unwrap())
            .huge_pages(on)
            .build()
            .unwrap();
        let d = rt.data_from("big", &vec![1u64; 1 << 20]).unwrap();
        let finished = rt
            .run(|s| {
                for _ in 0..3 {
                    s.spawn("inc", d.read_write(), |_, x| {
                        x.iter_mut().for_each(|v| *v += 1)
                    })
                    .unwrap();
                }
            })
            .unwrap();
        assert!(rt.fetch(&d).unwrap().iter().all(|&v| v == 4));
        let setting = finished.report.settings.get("huge_pages");
        assert_eq!(
            setting,
            on.then_some("true"),
            "{:?}",
            finished.report.settings
        );
    }
}
