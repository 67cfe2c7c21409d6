//! Every scheduling policy, observed from outside in the simulator, on synthetic
//! topologies and on the `opteron-64` preset: work-pushing moves ready tasks to their
//! data (Drebes et al., "Scalable task parallelism for NUMA: a uniform abstraction for
//! coordinated scheduling and memory management", Algorithm 1), hierarchical stealing
//! prefers victims of the thief's own node, home-based scheduling keeps tasks in their
//! home's vicinity (Muddukrishna et al., home-based scheduling, section 3.1), affinity
//! hints land on their target (Virouleau et al., "Description, implementation and
//! evaluation of an affinity clause for task directives"), and `node_limit` falls back
//! to the nearest node. The papers are listed in `docs/papers.md`.
//!
//! The simulator is deterministic, so every bound here holds for every run; the bounds
//! leave room for changes of the cost model, not for chance. `scripts/mutants.sh`
//! disables each mechanism in turn and checks that these tests notice.

use std::sync::{Arc, Mutex};

use locus::observe::{Observer, TaskSpan};
use locus::sched::HomeRegions;
use locus::{Affinity, Config, Data, RegionPolicy, Report, Runtime, RuntimeBuilder, Topology};
use locus_sim::Sim;
use locus_topo::NodeId;

/// Elements of a datum whose consumers are worth pushing: 64 KiB, four times the
/// default push threshold.
const BIG: usize = 8 * 1024;

/// Simulated computation of every task, in nanoseconds: a few times its memory time,
/// so that queues stay non-empty while thieves look for work.
const COST_NS: u64 = 200_000;

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

/// A simulated runtime on `spec` under `config`, with an observer; `tweak` adds
/// settings.
fn runtime(
    spec: &str,
    config: Config,
    tweak: impl FnOnce(RuntimeBuilder) -> RuntimeBuilder,
) -> (Runtime, Arc<Placements>) {
    let placements = Arc::new(Placements::default());
    let builder = Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .engine(Sim::new().seed(11))
        .observer(placements.clone());
    let rt = tweak(builder).build().unwrap();
    assert_eq!(rt.engine_name(), "sim");
    (rt, placements)
}

/// Fraction of the tasks that ran on the node their name ends with.
fn on_named_node(ran: &[Ran]) -> f64 {
    let hits = ran
        .iter()
        .filter(|r| r.name.rsplit('-').next() == Some(&r.node.to_string()))
        .count();
    hits as f64 / ran.len() as f64
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

/// `per_node` data of [`BIG`] elements on every node: one run where, for each datum, a
/// control task pinned to the node (strict affinity) submits the producer, itself
/// pinned there, so that its buffer is on that node under immediate allocation (the
/// submitter's node) and deferred allocation (the writer's) alike.
fn data_on_nodes(rt: &Runtime, placements: &Placements, per_node: usize) -> Vec<Input> {
    let nodes = rt.topology().num_nodes();
    let value = |i: usize, j: usize| (i * BIG + j) as u64;
    let inputs: Vec<Input> = (0..per_node * nodes)
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
    assert_eq!(produced.len(), inputs.len());
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
                    s.task(
                        format!("consume-{}", input.node),
                        (input.data.read(), out.write()),
                    )
                    .cost(COST_NS)
                    .spawn(|_, (x, o)| o.fill(x.iter().sum()))
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

/// Push counters every pushing run satisfies: each attempt is transferred or rejected,
/// and every task went through the policy.
fn check_push_counters(report: &Report) {
    let p = &report.pushes;
    assert_eq!(p.attempted, p.transferred + p.rejected, "{p:?}");
    assert_eq!(p.with_preference, report.tasks, "{p:?}");
    assert!(p.started_on_preferred <= p.with_preference, "{p:?}");
}

// ---------------------------------------------------------------------------------
// Work-pushing
// ---------------------------------------------------------------------------------

/// The synthetic topology and the preset every pushing test runs on.
const MACHINES: [&str; 2] = ["4x2", "opteron-64"];

#[test]
fn input_pushing_sends_consumers_to_their_data_and_raises_locality() {
    for spec in MACHINES {
        let (rt, obs) = runtime(spec, Config::DsaBase, |b| b);
        let inputs = data_on_nodes(&rt, &obs, 2);
        let base = consume(&rt, &inputs, 4);
        assert_eq!(base.pushes.attempted, 0);
        assert_eq!(base.pushes.with_preference, 0, "dsa-base has no preference");
        let base_r_loc = base.locality.r_loc_rt;
        assert!(base_r_loc <= 0.3, "{spec}: dsa-base r_loc_rt {base_r_loc}");
        for config in [Config::PushIn, Config::PushWeighted, Config::DsaOpt] {
            let (rt, obs) = runtime(spec, config, |b| b);
            let inputs = data_on_nodes(&rt, &obs, 2);
            let nodes = rt.topology().num_nodes() as u64;
            let report = consume(&rt, &inputs, 4);
            // Every consumer of data on another node than the control program's is
            // pushed, none of those on its node.
            let remote = 2 * 4 * (nodes - 1);
            assert_eq!(report.pushes.attempted, remote, "{spec} {config}");
            assert_eq!(report.pushes.rejected, 0);
            assert_eq!(report.pushes.kept_local, 0);
            check_push_counters(&report);
            // ... and runs there: everything read is local but what the consumers of
            // node 0's data read, which idle workers of other nodes steal while
            // worker 0 runs the control program.
            let ran = obs.named("consume-");
            let r_loc = report.locality.r_loc_rt;
            let on_node = on_named_node(&ran);
            assert!(
                r_loc >= 0.7 && r_loc >= base_r_loc + 0.4,
                "{spec} {config}: r_loc_rt {r_loc} (dsa-base {base_r_loc})"
            );
            assert!(on_node >= 0.7, "{spec} {config}: {on_node}");
            let pushed_home = ran
                .iter()
                .filter(|r| r.data_node != 0 && r.node == r.data_node)
                .count() as u64;
            assert!(pushed_home * 10 >= remote * 6, "{spec} {config}: {ran:?}");
            // The preferred node is the data's node for pushed consumers and the
            // activator's (node 0) for the others: the counter agrees with the observer.
            let on_preferred = ran
                .iter()
                .filter(|r| r.node == r.data_node || (r.data_node == 0 && r.node == 0))
                .count() as u64;
            assert_eq!(report.pushes.started_on_preferred, on_preferred);
        }
    }
}

#[test]
fn output_pushing_sends_writers_to_their_output() {
    for spec in MACHINES {
        let mut base_r_loc = None;
        for config in [Config::DsaBase, Config::PushOut, Config::PushWeighted] {
            let (rt, obs) = runtime(spec, config, |b| b);
            let nodes = rt.topology().num_nodes();
            // Outputs placed on every node (shared data bound there); no inputs.
            let outs: Vec<Data<u64>> = (0..8 * nodes)
                .map(|k| {
                    rt.shared::<u64>(format!("out{k}"), BIG, RegionPolicy::Bind(k % nodes))
                        .unwrap()
                })
                .collect();
            let report = rt
                .run(|s| {
                    for (k, out) in outs.iter().enumerate() {
                        s.task(format!("fill-{}", k % nodes), out.write())
                            .cost(COST_NS)
                            .spawn(move |_, o| o.fill(k as u64))
                            .unwrap();
                    }
                })
                .unwrap()
                .report;
            for (k, out) in outs.iter().enumerate() {
                assert!(rt.fetch(out).unwrap().iter().all(|&e| e == k as u64));
            }
            let r_loc = report.locality.r_loc_rt;
            let Some(base) = base_r_loc else {
                assert_eq!(report.pushes.attempted, 0);
                assert!(r_loc <= 0.3, "{spec}: dsa-base r_loc_rt {r_loc}");
                base_r_loc = Some(r_loc);
                continue;
            };
            let remote = 8 * (nodes as u64 - 1);
            assert_eq!(report.pushes.attempted, remote, "{spec} {config}");
            check_push_counters(&report);
            let on_node = on_named_node(&obs.named("fill-"));
            assert!(
                r_loc >= 0.7 && r_loc >= base + 0.4 && on_node >= 0.7,
                "{spec} {config}: r_loc_rt {r_loc} (dsa-base {base}), {on_node} on node"
            );
        }
    }
}

#[test]
fn each_heuristic_sees_only_its_own_accesses() {
    for spec in MACHINES {
        // Consumers of remote inputs with small outputs on node 0: output-only pushing
        // sees 64 bytes, under the threshold, and keeps every one.
        let (rt, obs) = runtime(spec, Config::PushOut, |b| b);
        let inputs = data_on_nodes(&rt, &obs, 1);
        let report = consume(&rt, &inputs, 2);
        let consumers = 2 * inputs.len() as u64;
        assert_eq!(report.pushes.attempted, 0, "{spec}: {:?}", report.pushes);
        assert_eq!(report.pushes.kept_local, consumers);
        // Weighted with a read weight of 0 is the same; with a write weight of 0 it is
        // input-only pushing.
        let (rt, obs) = runtime(spec, Config::PushWeighted, |b| b.push_weights(0.0, 1.0));
        let inputs = data_on_nodes(&rt, &obs, 1);
        let report = consume(&rt, &inputs, 2);
        assert_eq!(report.pushes.attempted, 0, "{spec}: {:?}", report.pushes);
        assert_eq!(report.pushes.kept_local, consumers);
        let (rt, obs) = runtime(spec, Config::PushWeighted, |b| b.push_weights(1.0, 0.0));
        let inputs = data_on_nodes(&rt, &obs, 1);
        let report = consume(&rt, &inputs, 2);
        assert_eq!(report.pushes.attempted, consumers - 2, "{spec}");
        assert_eq!(report.pushes.kept_local, 0);
        // A threshold above the inputs: nothing is pushed.
        let (rt, obs) = runtime(spec, Config::PushIn, |b| b.push_threshold(1 << 20));
        let inputs = data_on_nodes(&rt, &obs, 1);
        let report = consume(&rt, &inputs, 2);
        assert_eq!(report.pushes.attempted, 0);
        assert_eq!(report.pushes.kept_local, consumers);
    }
}

#[test]
fn weights_decide_between_a_remote_input_and_a_local_output() {
    // Consumers read 64 KiB on node 1 and write 64 KiB on node 0 (immediate allocation
    // by the control program); both cost twice as much from the other node. Weighted
    // pushing follows the heavier side: it pushes when reads weigh more, and keeps the
    // task (its output is local) when writes do.
    for (read, write, pushed) in [(1.0, 0.5, true), (0.5, 1.0, false), (1.0, 1.0, false)] {
        let (rt, obs) = runtime("2x1", Config::PushWeighted, |b| b.push_weights(read, write));
        let inputs: Vec<Input> = data_on_nodes(&rt, &obs, 4)
            .into_iter()
            .filter(|i| i.node == 1)
            .collect();
        let outs: Vec<Data<u64>> = (0..inputs.len())
            .map(|k| rt.data(format!("out{k}"), BIG))
            .collect();
        let report = rt
            .run(|s| {
                for (input, out) in inputs.iter().zip(&outs) {
                    s.task("copy", (input.data.read(), out.write()))
                        .cost(COST_NS)
                        .spawn(|_, (x, o)| o.copy_from_slice(x))
                        .unwrap();
                }
            })
            .unwrap()
            .report;
        let expected = if pushed { inputs.len() as u64 } else { 0 };
        assert_eq!(report.pushes.attempted, expected, "weights {read}, {write}");
        assert_eq!(report.pushes.kept_local, 0, "above the threshold");
        for (input, out) in inputs.iter().zip(&outs) {
            assert_eq!(rt.fetch(out).unwrap(), rt.fetch(&input.data).unwrap());
        }
    }
}

// ---------------------------------------------------------------------------------
// Deferred allocation
// ---------------------------------------------------------------------------------

#[test]
fn deferred_allocation_writes_locally_wherever_the_writer_runs() {
    for spec in MACHINES {
        for (config, deferred) in [(Config::DsaOpt, true), (Config::PushIn, false)] {
            let (rt, obs) = runtime(spec, config, |b| b);
            let inputs = data_on_nodes(&rt, &obs, 1);
            // Consumers with 64 KiB outputs, pushed to their inputs' nodes.
            let outs: Vec<Data<u64>> = (0..inputs.len())
                .map(|k| rt.data(format!("o{k}"), BIG))
                .collect();
            let report = rt
                .run(|s| {
                    for (input, out) in inputs.iter().zip(&outs) {
                        s.task(
                            format!("copy-{}", input.node),
                            (input.data.read(), out.write()),
                        )
                        .cost(COST_NS)
                        .spawn(|_, (x, o)| o.copy_from_slice(x))
                        .unwrap();
                    }
                })
                .unwrap()
                .report;
            let loc = &report.locality;
            let written = (inputs.len() * BIG * 8) as u64;
            assert_eq!(loc.write_local_bytes + loc.write_remote_bytes, written);
            if deferred {
                assert_eq!(loc.write_remote_bytes, 0, "{spec}: {loc:?}");
            } else {
                // Immediate: on the control program's node, so remote for every
                // writer running elsewhere.
                let elsewhere = obs.named("copy-").iter().filter(|r| r.node != 0).count();
                assert!(elsewhere > inputs.len() / 2, "{spec}");
                assert_eq!(
                    loc.write_remote_bytes,
                    (elsewhere * BIG * 8) as u64,
                    "{spec}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Hierarchical stealing
// ---------------------------------------------------------------------------------

/// One generator per node, pinned to the node's last worker, spawns `per_node` tasks
/// that each write 64 KiB; under immediate allocation the outputs are on the
/// generator's node, so a task is local exactly when a worker of that node runs it.
/// The other workers only steal.
fn generators(rt: &Runtime, per_node: usize) -> Report {
    let nodes = rt.topology().num_nodes();
    let outs: Vec<Vec<Data<u64>>> = (0..nodes)
        .map(|n| {
            (0..per_node)
                .map(|k| rt.data(format!("g{n}-{k}"), BIG))
                .collect()
        })
        .collect();
    // The node's last worker: worker 0 runs the root first, and a generator waiting
    // for it would leave its node's workers idle, stealing from other nodes.
    let last_worker = |n: usize| rt.worker_nodes().iter().rposition(|&m| m == n).unwrap();
    let report = rt
        .run(|s| {
            for (n, outs) in outs.iter().enumerate() {
                let outs = outs.clone();
                s.task(format!("gen-{n}"), ())
                    .affinity(Affinity::worker(last_worker(n)).strict())
                    .spawn_control(move |ctx| {
                        for (k, out) in outs.iter().enumerate() {
                            ctx.scope()
                                .task(format!("work-{n}"), out.write())
                                .cost(COST_NS)
                                .spawn(move |_, o| {
                                    for (j, e) in o.iter_mut().enumerate() {
                                        *e = (j * k) as u64;
                                    }
                                })
                                .unwrap();
                        }
                    })
                    .unwrap();
            }
        })
        .unwrap()
        .report;
    for outs in &outs {
        for (k, out) in outs.iter().enumerate() {
            assert_eq!(rt.fetch(out).unwrap()[3], 3 * k as u64);
        }
    }
    report
}

#[test]
fn hierarchical_stealing_prefers_victims_of_the_same_node() {
    for spec in ["2x2", "4x2", "opteron-64"] {
        let (rt, obs) = runtime(spec, Config::DsaBase, |b| b);
        let hier = generators(&rt, 32);
        let hier_on_node = on_named_node(&obs.named("work-"));
        let (rt, obs) = runtime(spec, Config::Ws, |b| b);
        let random = generators(&rt, 32);
        let random_on_node = on_named_node(&obs.named("work-"));
        let (h, r) = (&hier.steals, &random.steals);
        // Thieves find work on their own node nearly every time.
        assert!(h.same_node >= 8 * h.remote.max(1), "{spec}: {h:?}");
        assert!(
            h.same_node + h.remote >= 16,
            "{spec}: stealing happened: {h:?}"
        );
        // Random stealing counts no steal as same-node, and loses locality.
        assert_eq!(r.same_node, 0, "{spec}: {r:?}");
        let (hl, rl) = (hier.locality.r_loc_rt, random.locality.r_loc_rt);
        assert!(hl >= 0.9, "{spec}: hierarchical r_loc_rt {hl}");
        assert!(hl >= rl + 0.2, "{spec}: hierarchical {hl}, random {rl}");
        assert!(hier_on_node >= random_on_node + 0.2, "{spec}");
    }
}

// ---------------------------------------------------------------------------------
// Home-based scheduling
// ---------------------------------------------------------------------------------

#[test]
fn home_runs_every_task_in_its_homes_vicinity() {
    for spec in MACHINES {
        let (rt, _) = runtime(spec, Config::Home, |b| b);
        let per_node = rt.workers() / rt.topology().num_nodes();
        // 1: no stealing; the workers of one node: stealing inside the node only.
        for vicinity in [1, per_node] {
            let (rt, obs) = runtime(spec, Config::Home, |b| b.vicinity(vicinity));
            let inputs = data_on_nodes(&rt, &obs, 2);
            let report = consume(&rt, &inputs, 4);
            let ran = obs.named("consume-");
            assert_eq!(
                on_named_node(&ran),
                1.0,
                "{spec}, vicinity {vicinity}: {ran:?}"
            );
            assert_eq!(report.steals.remote, 0, "{spec}");
            if vicinity == 1 {
                assert_eq!(report.steals.same_node, 0, "{spec}");
            } else {
                assert!(report.steals.same_node > 0, "{spec}: {:?}", report.steals);
            }
            // The home node holds the consumers' inputs; only their 64-byte outputs,
            // on the control program's node, are remote.
            assert!(report.locality.r_loc_rt > 0.99, "{spec}");
        }
        // Full stealing: most tasks still run at home.
        let (rt, obs) = runtime(spec, Config::Home, |b| b);
        let inputs = data_on_nodes(&rt, &obs, 2);
        let report = consume(&rt, &inputs, 4);
        let on_node = on_named_node(&obs.named("consume-"));
        assert!(on_node >= 0.7, "{spec}: {on_node}");
        assert!(report.locality.r_loc_rt >= 0.7, "{spec}");
    }
}

#[test]
fn home_regions_all_makes_every_region_a_home() {
    for (regions, name) in [(HomeRegions::Largest, "largest"), (HomeRegions::All, "all")] {
        let (rt, obs) = runtime("4x2", Config::Home, |b| b.vicinity(1).home_regions(regions));
        // Inputs on node 1 only; outputs on node 0 (the control program's).
        let inputs: Vec<Input> = data_on_nodes(&rt, &obs, 2)
            .into_iter()
            .filter(|i| i.node == 1)
            .collect();
        let report = consume(&rt, &inputs, 8);
        assert_eq!(report.settings.get("home_regions"), Some(name));
        let ran = obs.named("consume-");
        assert_eq!(ran.len(), 16);
        let on_0 = ran.iter().filter(|r| r.node == 0).count();
        let on_1 = ran.iter().filter(|r| r.node == 1).count();
        assert_eq!(on_0 + on_1, 16, "{name}: only homes run them: {ran:?}");
        if regions == HomeRegions::Largest {
            assert_eq!(on_1, 16);
        } else {
            assert!(on_0 > 0, "{name}: {ran:?}");
        }
    }
}

// ---------------------------------------------------------------------------------
// Affinity hints
// ---------------------------------------------------------------------------------

/// Spawns `count` tasks, task `k` with affinity `hint(k)` and named after the node it
/// should run on (`target(k)`). Returns the report.
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
                    .cost(COST_NS)
                    .spawn(move |_, o| o.fill(k as u64))
                    .unwrap();
            }
        })
        .unwrap()
        .report;
    for (k, out) in outs.iter().enumerate() {
        assert_eq!(rt.fetch(out).unwrap()[1], k as u64);
    }
    report
}

#[test]
fn hints_land_on_their_target() {
    for spec in MACHINES {
        let (rt, obs) = runtime(spec, Config::DsaBase, |b| b);
        let nodes = rt.topology().num_nodes();
        let workers = rt.workers();
        let worker_node = rt.worker_nodes().to_vec();
        let inputs = data_on_nodes(&rt, &obs, 1);
        let count = 8 * workers;
        for strict in [false, true] {
            let hint = |a: Affinity| if strict { a.strict() } else { a };
            let kinds: [(&str, Report); 3] = [
                (
                    "node",
                    hinted(
                        &rt,
                        count,
                        |k| hint(Affinity::node(k % nodes)),
                        |k| k % nodes,
                    ),
                ),
                (
                    "worker",
                    hinted(
                        &rt,
                        count,
                        |k| hint(Affinity::worker(k % workers)),
                        |k| worker_node[k % workers],
                    ),
                ),
                (
                    "data",
                    hinted(
                        &rt,
                        count,
                        |k| hint(Affinity::data(&inputs[k % nodes].data)),
                        |k| inputs[k % nodes].node,
                    ),
                ),
            ];
            for (kind, report) in kinds {
                let p = &report.pushes;
                assert_eq!(p.attempted, 0, "hints are not work-pushing");
                assert_eq!(p.with_preference, count as u64);
                let on_target = p.started_on_preferred as f64 / count as f64;
                if strict {
                    assert_eq!(on_target, 1.0, "{spec}, strict {kind} hints");
                } else {
                    assert!(on_target >= 0.8, "{spec}, {kind} hints: {on_target}");
                }
            }
            // The observer agrees with the counters (last kind: data hints).
            let on_node = on_named_node(&obs.named("hinted-"));
            assert!(
                strict && on_node == 1.0 || !strict && on_node >= 0.8,
                "{spec}"
            );
        }
        // Strict worker hints run on exactly that worker.
        hinted(
            &rt,
            count,
            |k| Affinity::worker(k % workers).strict(),
            |k| k % workers,
        );
        let ran = obs.named("hinted-");
        assert!(ran.iter().all(|r| r.name == format!("hinted-{}", r.worker)));
    }
}

// ---------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------

#[test]
fn node_limit_falls_back_to_the_nearest_node() {
    const KIB32: u64 = 32 * 1024;
    for (spec, config) in [
        ("3x1:10,40,20,40,10,40,20,40,10", Config::DsaBase),
        ("opteron-64", Config::Dfa),
    ] {
        let (rt, _) = runtime(spec, config, |b| b.node_limit(2 * KIB32));
        let topo = rt.topology();
        let nearest = (1..topo.num_nodes())
            .min_by_key(|&n| (topo.distance(NodeId(0), NodeId(n as u32)), n))
            .unwrap();
        // Four writers of 32 KiB pinned to node 0: two fit, two go to the nearest node.
        let data: Vec<Data<u64>> = (0..4).map(|k| rt.data(format!("w{k}"), 4096)).collect();
        let report = rt
            .run(|s| {
                for (k, d) in data.iter().enumerate() {
                    s.task("w", d.write())
                        .affinity(Affinity::node(0).strict())
                        .spawn(move |_, v| v.fill(k as u64))
                        .unwrap();
                }
            })
            .unwrap()
            .report;
        for (k, d) in data.iter().enumerate() {
            assert_eq!(rt.fetch(d).unwrap(), vec![k as u64; 4096]);
        }
        assert_eq!(report.memory.fallbacks, 2, "{spec}");
        let mut expected = vec![0; topo.num_nodes()];
        expected[0] = 2 * KIB32;
        expected[nearest] = 2 * KIB32;
        assert_eq!(report.memory.peak_bytes_per_node, expected, "{spec}");
        assert_eq!(rt.pools().stats()[0].fallbacks, 2);
        assert_eq!(rt.pools().config().node_limit, Some(2 * KIB32));
    }
}

#[test]
fn home_spreads_a_burst_of_tasks_over_the_home_nodes_workers() {
    // Each node's consumers, activated one after the other by the control program,
    // go to the least-loaded worker of their home node, so both workers of every node
    // get some (the `threads` engine does, see its policies test).
    let (rt, obs) = runtime("4x2", Config::Home, |b| b.vicinity(1));
    let inputs = data_on_nodes(&rt, &obs, 2);
    consume(&rt, &inputs, 4);
    let workers: std::collections::BTreeSet<usize> =
        obs.named("consume-").iter().map(|r| r.worker).collect();
    assert_eq!(workers.len(), rt.workers(), "workers used: {workers:?}");
}

/// A control program throttled by the window waits inside its body on worker 0; like
/// the `threads` engine's waiting worker, worker 0 keeps taking the tasks only it may
/// run (strict hints) while worker 1 runs its own, so the two halves overlap. Before,
/// worker 0 ran its tasks only once the rest of the machine was idle: the makespan was
/// the sum of both halves.
#[test]
fn a_throttled_control_program_runs_its_workers_strict_tasks_meanwhile() {
    const TASKS: usize = 64;
    const COST_NS: u64 = 100_000;
    let (rt, _) = runtime("2x1", Config::Ws, |b| b.window(4));
    let outs: Vec<Data<u64>> = (0..TASKS).map(|k| rt.data(format!("o{k}"), 1)).collect();
    let report = rt
        .run(|s| {
            for (k, out) in outs.iter().enumerate() {
                s.task("strict", out.write())
                    .cost(COST_NS)
                    .affinity(Affinity::worker(k % 2).strict())
                    .spawn(move |_, o| o[0] = k as u64)
                    .unwrap();
            }
        })
        .unwrap()
        .report;
    for (k, out) in outs.iter().enumerate() {
        assert_eq!(rt.fetch(out).unwrap(), vec![k as u64]);
    }
    let serial_s = (TASKS as u64 * COST_NS) as f64 * 1e-9;
    assert!(
        report.wall_s < 0.75 * serial_s,
        "makespan {:.6} s, the two workers' halves in turn take {serial_s:.6} s",
        report.wall_s
    );
}

#[test]
fn breadth_first_runs_ready_tasks_oldest_first_and_spreads_them_over_every_worker() {
    let tasks = 64;
    let order = |config: Config, spec: &str| {
        let (rt, placements) = runtime(spec, config, |b| b);
        rt.run(|s| {
            for i in 0..tasks {
                s.task(format!("t{i}"), ())
                    .cost(COST_NS)
                    .spawn(|_, ()| {})
                    .unwrap();
            }
        })
        .unwrap();
        placements.named("t")
    };
    let in_order: Vec<String> = (0..tasks).map(|i| format!("t{i}")).collect();
    let names = |ran: &[Ran]| ran.iter().map(|r| r.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&order(Config::Bf, "1x1")), in_order);
    assert_ne!(names(&order(Config::Ws, "1x1")), in_order);
    // On four workers, every worker takes tasks from the global queue.
    let ran = order(Config::Bf, "2x2");
    for w in 0..4 {
        assert!(ran.iter().any(|r| r.worker == w), "worker {w} ran nothing");
    }
}
