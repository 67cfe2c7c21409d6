//! Recorded graphs: random graphs replayed N times against N sequential executions,
//! rotation across replays, placement settings, and every invalidation case.

use locus::{Config, Data, Error, Partition, ReplayPlacement, Runtime, Topology};
use locus_mem::region::RegionPolicy;
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

const LEN: usize = 6;

/// One access of a random task: datum, mode (0 read, 1 write, 2 read-write), and for a
/// read its element range.
#[derive(Clone, Debug)]
struct Access {
    datum: usize,
    mode: u8,
    range: std::ops::Range<usize>,
}

/// A random program: data (some shared) and tasks, each touching distinct data.
#[derive(Clone, Debug)]
struct Program {
    shared: Vec<bool>,
    tasks: Vec<Vec<Access>>,
}

fn program(seed: u64) -> Program {
    let mut rng = SmallRng::seed_from_u64(seed);
    let data = rng.random_range(1..6);
    let shared = (0..data).map(|_| rng.random_bool(0.25)).collect();
    let tasks = (0..rng.random_range(1..24))
        .map(|_| {
            let mut ids: Vec<usize> = (0..data).collect();
            let count = rng.random_range(1..=data.min(3));
            (0..count)
                .map(|_| {
                    let datum = ids.swap_remove(rng.random_range(0..ids.len()));
                    let mode = rng.random_range(0..3u8);
                    let start = rng.random_range(0..LEN);
                    let end = rng.random_range(start..=LEN);
                    Access {
                        datum,
                        mode,
                        range: if mode == 0 { start..end } else { 0..LEN },
                    }
                })
                .collect()
        })
        .collect();
    Program { shared, tasks }
}

/// What task `task` does in iteration `iteration`: every written element becomes a
/// mix of the sum of what it read, its old value (read-writes), its index, the task
/// and the iteration. Writes only see reads: a write's old contents are unspecified.
fn mix(sum: u64, old: u64, task: usize, iteration: u64, i: usize) -> u64 {
    sum.wrapping_mul(31)
        .wrapping_add(old.wrapping_mul(7))
        .wrapping_add((task as u64 + 1) * 1000 + iteration * 17 + i as u64)
        % 1_000_003
}

fn initial(d: usize) -> Vec<u64> {
    (0..LEN).map(|i| (d * 10 + i) as u64).collect()
}

/// `iterations` sequential executions of the program from the initial contents.
fn sequential(p: &Program, first: u64, iterations: u64, data: &mut [Vec<u64>]) {
    for it in first..first + iterations {
        for (t, accesses) in p.tasks.iter().enumerate() {
            let sum: u64 = accesses
                .iter()
                .filter(|a| a.mode != 1)
                .map(|a| {
                    let r = if a.mode == 0 { a.range.clone() } else { 0..LEN };
                    data[a.datum][r].iter().sum::<u64>()
                })
                .sum();
            for a in accesses.iter().filter(|a| a.mode != 0) {
                for (i, x) in data[a.datum].iter_mut().enumerate() {
                    let old = if a.mode == 2 { *x } else { 0 };
                    *x = mix(sum, old, t, it, i);
                }
            }
        }
    }
}

fn record(rt: &Runtime, p: &Program, data: &[Data<u64>]) -> locus::Graph {
    rt.record("random", |r| {
        for (t, accesses) in p.tasks.iter().enumerate() {
            let reads: Vec<_> = accesses
                .iter()
                .filter(|a| a.mode == 0)
                .map(|a| data[a.datum].read_range(a.range.clone()))
                .collect();
            let rws: Vec<_> = accesses
                .iter()
                .filter(|a| a.mode == 2)
                .map(|a| data[a.datum].read_write())
                .collect();
            let writes: Vec<_> = accesses
                .iter()
                .filter(|a| a.mode == 1)
                .map(|a| data[a.datum].write())
                .collect();
            r.spawn(
                format!("t{t}"),
                (reads, rws, writes),
                move |it, (reads, rws, writes)| {
                    let sum = reads.iter().map(|v| v.iter().sum::<u64>()).sum::<u64>()
                        + rws.iter().map(|v| v.iter().sum::<u64>()).sum::<u64>();
                    for v in rws {
                        for (i, x) in v.iter_mut().enumerate() {
                            *x = mix(sum, *x, t, it.index(), i);
                        }
                    }
                    for v in writes {
                        for (i, x) in v.iter_mut().enumerate() {
                            *x = mix(sum, 0, t, it.index(), i);
                        }
                    }
                },
            )?;
        }
        Ok(())
    })
    .unwrap()
}

fn check(seed: u64) {
    let p = program(seed);
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed);
    let config = [Config::DsaOpt, Config::DsaBase, Config::Ws, Config::Dfa][rng.random_range(0..4)];
    let placement = if rng.random_bool(0.5) {
        ReplayPlacement::Strict
    } else {
        ReplayPlacement::Stealable
    };
    let rt = runtime(["2x1", "1x2"][rng.random_range(0..2)], config);
    let data: Vec<Data<u64>> = p
        .shared
        .iter()
        .enumerate()
        .map(|(d, &shared)| {
            if shared {
                rt.shared_from(format!("d{d}"), &initial(d), RegionPolicy::Interleave)
                    .unwrap()
            } else {
                rt.data_from(format!("d{d}"), &initial(d)).unwrap()
            }
        })
        .collect();
    let mut graph = record(&rt, &p, &data);
    graph.set_placement(placement);
    let mut want: Vec<Vec<u64>> = (0..data.len()).map(initial).collect();
    // Two replays: rotation across them as within one.
    let (n1, n2) = (rng.random_range(0..4u64), rng.random_range(1..4u64));
    let report = rt.replay(&mut graph, n1).unwrap();
    assert_eq!(report.tasks, n1 * p.tasks.len() as u64);
    sequential(&p, 0, n1, &mut want);
    for (d, x) in data.iter().enumerate() {
        assert_eq!(
            rt.fetch(x).unwrap(),
            want[d],
            "after {n1}: datum {d}, {p:?}"
        );
    }
    rt.replay(&mut graph, n2).unwrap();
    sequential(&p, n1, n2, &mut want);
    for (d, x) in data.iter().enumerate() {
        assert_eq!(
            rt.fetch(x).unwrap(),
            want[d],
            "after {n1}+{n2}: datum {d}, {p:?}"
        );
    }
    assert_eq!(graph.replayed(), n1 + n2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn random_graphs_replayed_n_times_match_n_sequential_executions(seed in any::<u64>()) {
        check(seed);
    }
}

#[test]
fn fixed_seeds() {
    for seed in 0..8 {
        check(seed);
    }
}

/// A two-step stencil-like graph over `a` (read) and `b` (written), then back.
fn ping_pong(rt: &Runtime, a: &Data<f64>, b: &Data<f64>) -> locus::Graph {
    rt.record("ping-pong", |r| {
        r.spawn("to-b", (a.read(), b.write()), |_, (a, b)| {
            b.iter_mut().zip(a).for_each(|(b, a)| *b = a + 1.0)
        })?;
        r.spawn("to-a", (b.read(), a.write()), |_, (b, a)| {
            a.iter_mut().zip(b).for_each(|(a, b)| *a = b * 2.0)
        })
    })
    .unwrap()
}

#[test]
fn replays_continue_where_the_last_left_and_keep_their_buffers() {
    let rt = runtime("2x1", Config::DsaOpt);
    let a = rt.data_from("a", &[1.0f64; 4]).unwrap();
    let b = rt.data::<f64>("b", 4);
    let mut g = ping_pong(&rt, &a, &b);
    rt.replay(&mut g, 1).unwrap();
    assert_eq!(rt.fetch(&a).unwrap(), vec![4.0; 4]);
    let live = rt.live_versions();
    let in_use = rt.pool_bytes_in_use();
    let report = rt.replay(&mut g, 3).unwrap();
    // 4 -> 10 -> 22 -> 46
    assert_eq!(rt.fetch(&a).unwrap(), vec![46.0; 4]);
    assert_eq!(rt.fetch(&b).unwrap(), vec![23.0; 4]);
    // No version or buffer made per replay.
    assert_eq!(rt.live_versions(), live);
    assert_eq!(rt.pool_bytes_in_use(), in_use);
    assert_eq!(report.tasks, 6);
    let setting = |k: &str| {
        report
            .settings
            .0
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(setting("replay").as_deref(), Some("ping-pong"));
    assert_eq!(setting("replayed_iterations").as_deref(), Some("3"));
    // Every byte counted: 2 tasks x (32 read + 32 written) x 3 iterations.
    let loc = &report.locality;
    let all = loc.read_local_bytes
        + loc.read_remote_bytes
        + loc.write_local_bytes
        + loc.write_remote_bytes;
    assert_eq!(all, 3 * 2 * 64);
    // A dynamic run reads what the replay left.
    let sum = rt.data::<f64>("sum", 1);
    rt.run(|s| {
        s.spawn("sum", (a.read(), sum.write()), |_, (a, s)| {
            s[0] = a.iter().sum()
        })
        .unwrap()
    })
    .unwrap();
    assert_eq!(rt.fetch(&sum).unwrap(), vec![184.0]);
    // ... which does not invalidate the graph: reading is not writing.
    rt.replay(&mut g, 1).unwrap();
    assert_eq!(rt.fetch(&a).unwrap(), vec![94.0; 4]);
}

#[test]
fn the_runtime_sets_the_placement_of_the_graphs_it_records() {
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .replay_placement(ReplayPlacement::Strict)
        .build()
        .unwrap();
    let x = rt.data::<u64>("x", 1);
    let mut g = rt
        .record("one", |r| r.spawn("t", x.read_write(), |_, v| v[0] += 1))
        .unwrap();
    assert_eq!(g.placement(), ReplayPlacement::Strict);
    let report = rt.replay(&mut g, 2).unwrap();
    let placement = report
        .settings
        .0
        .iter()
        .find(|(k, _)| k == "replay_placement");
    assert_eq!(placement.map(|(_, v)| v.as_str()), Some("strict"));
    let plain = runtime("2x1", Config::DsaOpt);
    let g = plain.record("none", |_| Ok(())).unwrap();
    assert_eq!(g.placement(), ReplayPlacement::Stealable);
}

#[test]
fn strict_placement_keeps_every_task_on_its_home_worker() {
    let rt = runtime("2x1", Config::DsaOpt);
    let out = rt.data::<u64>("out", 8);
    let ran_on = rt.data::<u64>("ran-on", 8);
    let mut g = rt
        .record("where", |r| {
            for k in 0..8 {
                r.spawn(
                    format!("t{k}"),
                    (out.read_write(), ran_on.read_write()),
                    move |it, (o, w)| {
                        o[k] += 1;
                        w[k] = it.worker() as u64;
                    },
                )?;
            }
            Ok(())
        })
        .unwrap();
    g.set_placement(ReplayPlacement::Strict);
    rt.replay(&mut g, 5).unwrap();
    let homes = g.homes();
    assert_eq!(homes.len(), 8);
    let ran: Vec<usize> = rt
        .fetch(&ran_on)
        .unwrap()
        .iter()
        .map(|&w| w as usize)
        .collect();
    assert_eq!(ran, homes);
    assert_eq!(rt.fetch(&out).unwrap(), vec![5; 8]);
}

/// Iterations a replay spread over its workers, from its report.
fn spread_iterations(report: &locus::Report) -> u64 {
    report
        .settings
        .get("replay_spread_iterations")
        .expect("a replay reports its spread iterations")
        .parse()
        .unwrap()
}

/// Records `tasks` independent tasks, each writing, after `body`, the worker it ran
/// on into the element of the iteration of its own datum; returns the graph and the
/// data.
fn where_they_ran(
    rt: &Runtime,
    tasks: usize,
    iterations: usize,
    body: fn(),
) -> (locus::Graph, Vec<Data<u64>>) {
    let ran_on: Vec<Data<u64>> = (0..tasks)
        .map(|k| rt.data::<u64>(format!("ran-on{k}"), iterations))
        .collect();
    let g = rt
        .record("where", |r| {
            for (k, d) in ran_on.iter().enumerate() {
                r.spawn(format!("t{k}"), d.read_write(), move |it, w| {
                    body();
                    w[it.index() as usize] = it.worker() as u64;
                })?;
            }
            Ok(())
        })
        .unwrap();
    (g, ran_on)
}

/// Per iteration, the worker each task ran on.
fn ran_on(rt: &Runtime, data: &[Data<u64>], iterations: usize) -> Vec<Vec<u64>> {
    let per_task: Vec<Vec<u64>> = data.iter().map(|d| rt.fetch(d).unwrap()).collect();
    (0..iterations)
        .map(|i| per_task.iter().map(|t| t[i]).collect())
        .collect()
}

#[test]
fn iterations_shorter_than_a_wake_up_run_on_one_worker_under_stealable_placement() {
    let rt = runtime("1x2", Config::DsaOpt);
    let (tasks, iterations) = (8, 1000);
    let (mut g, data) = where_they_ran(&rt, tasks, iterations, || {});
    let report = rt.replay(&mut g, iterations as u64).unwrap();
    assert_eq!(report.tasks, (tasks * iterations) as u64);
    // The first iteration runs alone, and so do the next ones once one took less than
    // a wake-up; every 64th runs alone in any case. A descheduled worker can make a
    // measured iteration long, but not most of them.
    let spread = spread_iterations(&report);
    assert!(spread <= iterations as u64 / 2, "{spread} spread");
    let alone = ran_on(&rt, &data, iterations)
        .iter()
        .filter(|it| it.iter().all(|&w| w == it[0]))
        .count();
    assert!(alone >= iterations / 2, "{alone} iterations ran alone");
}

#[test]
fn long_iterations_are_spread_over_the_workers_under_stealable_placement() {
    let rt = runtime("1x2", Config::DsaOpt);
    let (tasks, iterations) = (4, 8);
    let (mut g, data) = where_they_ran(&rt, tasks, iterations, || {
        std::thread::sleep(std::time::Duration::from_millis(2))
    });
    let report = rt.replay(&mut g, iterations as u64).unwrap();
    // The first iteration runs alone and takes 8 ms: every other is spread.
    assert_eq!(spread_iterations(&report), iterations as u64 - 1);
    let ran = ran_on(&rt, &data, iterations);
    assert!(ran[0].iter().all(|&w| w == ran[0][0]), "{ran:?}");
    // The second worker, woken for its tasks, runs some of them.
    let all: Vec<u64> = ran.concat();
    assert!(all.contains(&0) && all.contains(&1), "{ran:?}");
}

#[test]
fn strict_placement_spreads_every_iteration() {
    let rt = runtime("1x2", Config::DsaOpt);
    let (mut g, data) = where_they_ran(&rt, 4, 50, || {});
    g.set_placement(ReplayPlacement::Strict);
    let report = rt.replay(&mut g, 50).unwrap();
    assert_eq!(spread_iterations(&report), 50);
    let homes: Vec<u64> = g.homes().iter().map(|&w| w as u64).collect();
    assert!(homes.contains(&0) && homes.contains(&1), "{homes:?}");
    for it in ran_on(&rt, &data, 50) {
        assert_eq!(it, homes);
    }
}

fn replay_error(rt: &Runtime, g: &mut locus::Graph) -> String {
    match rt.replay(g, 1) {
        Ok(_) => panic!("the replay should have failed"),
        Err(e) => match e.error {
            Error::Replay { graph, message } => {
                assert_eq!(graph, g.name());
                message
            }
            other => panic!("not a replay error: {other}"),
        },
    }
}

#[test]
fn a_datum_written_outside_the_graph_invalidates_it() {
    let rt = runtime("2x1", Config::DsaOpt);
    let a = rt.data_from("a", &[1.0f64; 4]).unwrap();
    let b = rt.data::<f64>("b", 4);
    let mut g = ping_pong(&rt, &a, &b);
    rt.replay(&mut g, 2).unwrap();
    rt.run(|s| s.spawn("poke", b.write(), |_, b| b.fill(0.0)).unwrap())
        .unwrap();
    let message = replay_error(&rt, &mut g);
    assert!(
        message.contains("`b` was written outside the graph"),
        "{message}"
    );
    // And for good: record again.
    let message = replay_error(&rt, &mut g);
    assert!(message.contains("record the graph again"), "{message}");
    // Written before the first replay counts too.
    let mut g = ping_pong(&rt, &a, &b);
    rt.run(|s| s.spawn("poke", a.write(), |_, a| a.fill(0.0)).unwrap())
        .unwrap();
    assert!(replay_error(&rt, &mut g).contains("`a` was written outside the graph"));
}

#[test]
fn a_freed_datum_invalidates_the_graph() {
    let rt = runtime("2x1", Config::DsaOpt);
    let a = rt.data_from("a", &[1.0f64; 4]).unwrap();
    let b = rt.data::<f64>("b", 4);
    let mut g = ping_pong(&rt, &a, &b);
    rt.replay(&mut g, 1).unwrap();
    drop(b);
    let message = replay_error(&rt, &mut g);
    assert!(message.contains("`b` was freed"), "{message}");
}

#[test]
fn a_partitioned_datum_invalidates_the_graph() {
    let rt = runtime("2x1", Config::DsaOpt);
    let a = rt.data_from("a", &[1.0f64; 4]).unwrap();
    let b = rt.data::<f64>("b", 4);
    let mut g = ping_pong(&rt, &a, &b);
    rt.replay(&mut g, 1).unwrap();
    let _parts = rt.partition(&a, Partition::blocks(2)).unwrap();
    let message = replay_error(&rt, &mut g);
    assert!(message.contains("`a` was partitioned"), "{message}");
}

#[test]
fn a_panic_fails_the_replay_with_the_task_name_and_keeps_the_last_complete_iteration() {
    let rt = runtime("2x1", Config::DsaOpt);
    let x = rt.data_from("x", &[0u64; 4]).unwrap();
    let shared = rt
        .shared_from("s", &[0u64; 4], RegionPolicy::Interleave)
        .unwrap();
    let mut g = rt
        .record("fails", |r| {
            r.spawn("count", x.read_write(), |_, x| {
                x.iter_mut().for_each(|v| *v += 1)
            })?;
            r.spawn("boom", (x.read(), shared.read_write()), |it, (x, s)| {
                s[0] = x[0];
                if it.index() == 3 {
                    panic!("iteration three");
                }
            })
        })
        .unwrap();
    rt.replay(&mut g, 2).unwrap();
    let versions = rt.live_versions();
    let err = rt.replay(&mut g, 5).unwrap_err();
    match &err.error {
        Error::TaskPanicked { task, message } => {
            assert_eq!(task, "boom");
            assert_eq!(message, "iteration three");
        }
        other => panic!("{other}"),
    }
    assert_eq!(g.replayed(), 3);
    // Iterations 0, 1 and 2 are complete; 3 is not.
    assert_eq!(rt.fetch(&x).unwrap(), vec![3; 4]);
    // The shared datum the panicking task wrote in place is poisoned.
    assert!(matches!(rt.fetch(&shared), Err(Error::Poisoned { .. })));
    // The graph let its buffers go: only the current version of `x` remains of them.
    assert!(
        rt.live_versions() < versions,
        "{} < {versions}",
        rt.live_versions()
    );
    let message = replay_error(&rt, &mut g);
    assert!(message.contains("iteration 3 failed"), "{message}");
    assert!(message.contains("boom"), "{message}");
}

#[test]
fn what_cannot_be_recorded_is_refused() {
    let rt = runtime("2x1", Config::DsaOpt);
    let a = rt.data_from("a", &[1u64; 4]).unwrap();
    let whole = rt.data_from("whole", &[1u64; 4]).unwrap();
    let parts = rt.partition(&whole, Partition::blocks(2)).unwrap();
    let other = runtime("1x1", Config::DsaOpt);
    let foreign = other.data::<u64>("foreign", 4);
    let refusal = |f: &dyn Fn(&locus::Recorder) -> Result<(), Error>| {
        rt.record("bad", f).unwrap_err().to_string()
    };
    assert!(refusal(&|r| r.spawn("w", a.weak_write(), |_, ()| ())).contains("weak"));
    assert!(
        refusal(&|r| r.spawn("p", parts.iter().next().unwrap().read(), |_, _| ()))
            .contains("partitioned")
    );
    assert!(refusal(&|r| r.spawn("f", foreign.read(), |_, _| ())).contains("another runtime"));
    assert!(refusal(&|r| r.spawn("r", a.read_range(2..9), |_, _| ())).contains("out of bounds"));
    assert!(refusal(&|r| r.spawn("t", (a.read(), a.write()), |_, _| ())).contains("twice"));
    // The first refusal fails the recording even if the program goes on.
    let e = rt
        .record("bad", |r| {
            let _ = r.spawn("w", a.weak_write(), |_, ()| ());
            r.spawn("ok", a.read(), |_, _| ())
        })
        .unwrap_err();
    assert!(e.to_string().contains("weak"), "{e}");
    // A graph of another runtime is refused.
    let mut g = rt
        .record("mine", |r| r.spawn("ok", a.read(), |_, _| ()))
        .unwrap();
    assert!(other.replay(&mut g, 1).is_err());
}

#[test]
fn iteration_indices_count_every_replayed_iteration() {
    let rt = runtime("1x2", Config::DsaOpt);
    let log = rt.data_from("log", &[0u64; 8]).unwrap();
    let mut g = rt
        .record("log", |r| {
            r.spawn("log", log.read_write(), |it, l| {
                l[it.index() as usize] = it.index() + 1
            })
        })
        .unwrap();
    rt.replay(&mut g, 3).unwrap();
    rt.replay(&mut g, 0).unwrap();
    rt.replay(&mut g, 2).unwrap();
    assert_eq!(rt.fetch(&log).unwrap(), vec![1, 2, 3, 4, 5, 0, 0, 0]);
    // An empty graph replays trivially.
    let mut empty = rt.record("empty", |_| Ok(())).unwrap();
    assert_eq!(rt.replay(&mut empty, 4).unwrap().tasks, 0);
    assert_eq!(empty.replayed(), 4);
}

/// Two sweeps over `blocks` blocks of `len` elements, from a first set (initialised)
/// to a second and back, recorded under strict placement: the task of block `k` reads
/// it whole and `halos(src, dst, k)`, and writes its next version. Gives both sets
/// (whose handles keep the data alive) and the graph.
fn strict_sweeps(
    rt: &Runtime,
    blocks: usize,
    len: usize,
    halos: impl Fn(&[Data<f64>], &[Data<f64>], usize) -> Vec<locus::Read<f64>>,
) -> ([Vec<Data<f64>>; 2], locus::Graph) {
    let a: Vec<Data<f64>> = (0..blocks)
        .map(|b| rt.data_from(format!("a{b}"), &vec![b as f64; len]).unwrap())
        .collect();
    let b: Vec<Data<f64>> = (0..blocks).map(|k| rt.data(format!("b{k}"), len)).collect();
    let mut g = rt
        .record("sweep", |r| {
            for (src, dst) in [(&a, &b), (&b, &a)] {
                for k in 0..blocks {
                    r.spawn(
                        "sweep",
                        (src[k].read(), halos(src, dst, k), dst[k].write()),
                        |_, (mid, halos, out)| {
                            let around: f64 = halos.iter().map(|v| v[0]).sum();
                            for (o, m) in out.iter_mut().zip(mid) {
                                *o = (m + around) / 5.0;
                            }
                        },
                    )?;
                }
            }
            Ok(())
        })
        .unwrap();
    g.set_placement(ReplayPlacement::Strict);
    ([a, b], g)
}

#[test]
fn placement_follows_the_data_flow_and_spreads_over_the_nodes() {
    // A 1-D three-point sweep over 8 blocks, back and forth between two sets: every
    // task reads its block and its neighbours' (whole, for simplicity).
    let rt = runtime("2x1", Config::DsaOpt);
    let blocks: usize = 8;
    let ([a, _b], mut g) = strict_sweeps(&rt, blocks, 512, |src, _, k| {
        [k.wrapping_sub(1), k + 1]
            .into_iter()
            .filter(|&n| n < blocks)
            .map(|n| src[n].read_range(0..1))
            .collect()
    });
    let report = rt.replay(&mut g, 4).unwrap();
    let homes = g.homes();
    let nodes: Vec<usize> = homes.iter().map(|&w| rt.worker_nodes()[w]).collect();
    // Both nodes get half the tasks, and each block's two tasks the same node.
    assert_eq!(nodes.iter().filter(|&&n| n == 0).count(), blocks);
    for k in 0..blocks {
        assert_eq!(nodes[k], nodes[blocks + k], "block {k}: {nodes:?}");
    }
    // Only halos cross nodes: most bytes are local.
    assert!(report.locality.r_loc_rt > 0.9, "{:?}", report.locality);
    assert_eq!(rt.node_of(&a[0]).unwrap(), Some(nodes[0]));
}

#[test]
fn blocks_not_placed_yet_go_to_the_node_of_their_neighbours() {
    // A 1-D three-point sweep over 16 blocks never written before (no buffer, no node
    // yet), back and forth between two sets, each task reading one element of each
    // neighbour: the neighbours of a block share its node, four nodes taking four
    // consecutive blocks each, rather than blocks dealt out node after node.
    let rt = runtime("4x1", Config::DsaOpt);
    let blocks: usize = 16;
    let a: Vec<Data<f64>> = (0..blocks).map(|k| rt.data(format!("a{k}"), 256)).collect();
    let b: Vec<Data<f64>> = (0..blocks).map(|k| rt.data(format!("b{k}"), 256)).collect();
    let mut g = rt
        .record("sweep", |r| {
            for (src, dst) in [(&a, &b), (&b, &a)] {
                for k in 0..blocks {
                    let halos: Vec<_> = [k.wrapping_sub(1), k + 1]
                        .into_iter()
                        .filter(|&n| n < blocks)
                        .map(|n| src[n].read_range(0..1))
                        .collect();
                    r.spawn(
                        "sweep",
                        (src[k].read(), halos, dst[k].write()),
                        |_, (mid, halos, out)| {
                            let around: f64 = halos.iter().map(|v| v[0]).sum();
                            for (o, m) in out.iter_mut().zip(mid) {
                                *o = (m + around) / 3.0;
                            }
                        },
                    )?;
                }
            }
            Ok(())
        })
        .unwrap();
    rt.replay(&mut g, 2).unwrap();
    let homes = g.homes();
    let nodes: Vec<usize> = homes.iter().map(|&w| rt.worker_nodes()[w]).collect();
    for k in 0..blocks {
        assert_eq!(nodes[k], nodes[blocks + k], "block {k}: {nodes:?}");
    }
    for n in 0..4 {
        assert_eq!(
            nodes[..blocks].iter().filter(|&&m| m == n).count(),
            4,
            "{nodes:?}"
        );
    }
    let changes = nodes[..blocks].windows(2).filter(|w| w[0] != w[1]).count();
    assert_eq!(changes, 3, "{nodes:?}");
}

#[test]
fn a_wavefront_keeps_each_block_on_one_node_and_spreads_its_diagonals_over_the_workers() {
    // A 2-D Gauss-Seidel sweep over 6 x 6 blocks, back and forth between two sets: a
    // block reads itself whole, its upper and left neighbours already swept (one
    // element) and its lower and right ones not yet (one element). Diagonals of blocks
    // run at once.
    let rt = runtime("2x2", Config::DsaOpt);
    let side: usize = 6;
    let blocks = side * side;
    let (_sets, mut g) = strict_sweeps(&rt, blocks, 256, |src, dst, k| {
        let (i, j) = (k / side, k % side);
        let mut halos = Vec::new();
        if i > 0 {
            halos.push(dst[k - side].read_range(0..1));
        }
        if j > 0 {
            halos.push(dst[k - 1].read_range(0..1));
        }
        if i + 1 < side {
            halos.push(src[k + side].read_range(0..1));
        }
        if j + 1 < side {
            halos.push(src[k + 1].read_range(0..1));
        }
        halos
    });
    let report = rt.replay(&mut g, 4).unwrap();
    let homes = g.homes();
    let node = |t: usize| rt.worker_nodes()[homes[t]];
    for k in 0..blocks {
        assert_eq!(node(k), node(blocks + k), "block {k}: {homes:?}");
    }
    // The tasks that may run at once (a diagonal of the first sweep, and the diagonal
    // two before it of the second) spread over both nodes when they are more than a
    // node's two workers, and a node's go to its workers in turn.
    let diagonal = |d: usize| (0..blocks).filter(move |k| k / side + k % side == d);
    for d in 1..2 * side - 2 {
        let at_once: Vec<usize> = diagonal(d)
            .chain(
                d.checked_sub(2)
                    .into_iter()
                    .flat_map(diagonal)
                    .map(|k| blocks + k),
            )
            .collect();
        let on = |n: usize| at_once.iter().filter(|&&k| node(k) == n).count();
        assert!(
            at_once.len() <= 2 || (on(0) > 0 && on(1) > 0),
            "diagonal {d}: {homes:?} {:?}",
            rt.worker_nodes()
        );
        for n in 0..2 {
            let mine: Vec<usize> = at_once.iter().copied().filter(|&k| node(k) == n).collect();
            let per_worker = |w: usize| mine.iter().filter(|&&k| homes[k] == w).count();
            let counts: Vec<usize> = (0..4)
                .filter(|&w| rt.worker_nodes()[w] == n)
                .map(per_worker)
                .collect();
            let spread = counts.iter().max().unwrap() - counts.iter().min().unwrap();
            assert!(spread <= 1, "diagonal {d} on node {n}: {counts:?}");
        }
    }
    assert!(report.locality.r_loc_rt > 0.95, "{:?}", report.locality);
}

/// Counts the tasks an observer sees, by name.
#[derive(Default)]
struct Seen(std::sync::Mutex<Vec<(String, u64, u64, u64)>>);

impl locus::observe::Observer for Seen {
    fn task(&self, span: &locus::observe::TaskSpan<'_>) {
        let bytes = span.bytes.total();
        self.0
            .lock()
            .unwrap()
            .push((span.name.to_string(), span.start_ns, span.end_ns, bytes));
    }
}

/// A runtime of topology `spec` and replay placement `placement`, with an observer
/// that keeps every task's span.
fn observed(spec: &str, placement: ReplayPlacement) -> (std::sync::Arc<Seen>, Runtime) {
    let seen = std::sync::Arc::new(Seen::default());
    let rt = Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .replay_placement(placement)
        .observer(seen.clone())
        .build()
        .unwrap();
    (seen, rt)
}

#[test]
fn replayed_tasks_reach_the_observer_on_the_engines_clock() {
    let (seen, rt) = observed("2x1", ReplayPlacement::Stealable);
    let a = rt.data_from("a", &[1.0f64; 4]).unwrap();
    let b = rt.data::<f64>("b", 4);
    let mut g = ping_pong(&rt, &a, &b);
    rt.run(|s| s.spawn("before", a.read(), |_, _| ()).unwrap())
        .unwrap();
    rt.replay(&mut g, 3).unwrap();
    let seen = seen.0.lock().unwrap();
    let before = seen.iter().find(|s| s.0 == "before").unwrap().2;
    let replayed: Vec<_> = seen
        .iter()
        .filter(|s| s.0 == "to-b" || s.0 == "to-a")
        .collect();
    assert_eq!(replayed.len(), 6, "{seen:?}");
    for (_, start, end, bytes) in replayed {
        // After the earlier run's task, in order, with their bytes.
        assert!(*start >= before && end >= start, "{seen:?}");
        assert_eq!(*bytes, 64);
    }
}

/// A replay of one iteration under stealable placement runs it alone on the worker that
/// starts it: it wakes no other worker for a driver that would take nothing. Under
/// strict placement, and for more iterations, every other worker drives.
#[test]
fn a_stealable_replay_of_one_iteration_starts_no_driver() {
    for (placement, iterations, drivers) in [
        (ReplayPlacement::Stealable, 1, 0),
        (ReplayPlacement::Stealable, 2, 1),
        (ReplayPlacement::Strict, 1, 1),
    ] {
        let (seen, rt) = observed("1x2", placement);
        let a = rt.data_from("a", &[1.0f64; 4]).unwrap();
        let b = rt.data::<f64>("b", 4);
        let mut g = ping_pong(&rt, &a, &b);
        for _ in 0..3 {
            rt.replay(&mut g, iterations).unwrap();
        }
        let seen = seen.0.lock().unwrap();
        let started = seen.iter().filter(|s| s.0 == "replay-driver").count();
        assert_eq!(
            started,
            3 * drivers,
            "{placement:?}, {iterations}: {seen:?}"
        );
        let replayed = seen
            .iter()
            .filter(|s| s.0 == "to-b" || s.0 == "to-a")
            .count();
        assert_eq!(replayed as u64, 3 * 2 * iterations, "{placement:?}");
    }
}

#[test]
fn a_replay_from_inside_a_task_is_refused_and_changes_nothing() {
    let rt = std::sync::Arc::new(runtime("2x1", Config::DsaOpt));
    let a = rt.data_from("a", &[1.0f64; 4]).unwrap();
    let b = rt.data::<f64>("b", 4);
    let g = std::sync::Arc::new(std::sync::Mutex::new(ping_pong(&rt, &a, &b)));
    let (rt2, g2) = (rt.clone(), g.clone());
    let refused = std::sync::Arc::new(std::sync::Mutex::new(None));
    let out = refused.clone();
    rt.run(move |s| {
        s.spawn("nested", (), move |_, ()| {
            let e = rt2.replay(&mut g2.lock().unwrap(), 1).unwrap_err();
            *out.lock().unwrap() = Some(e.error.to_string());
        })
        .unwrap();
    })
    .unwrap();
    let message = refused.lock().unwrap().take().unwrap();
    assert!(message.contains("inside a task"), "{message}");
    // The graph is still good.
    rt.replay(&mut g.lock().unwrap(), 1).unwrap();
    assert_eq!(rt.fetch(&a).unwrap(), vec![4.0; 4]);
}
