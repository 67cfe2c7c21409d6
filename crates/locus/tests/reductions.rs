//! Reductions: reducing tasks never wait for each other nor for the previous writer,
//! accumulate into private copies on their own nodes, and the next access sees the
//! previous contents combined with every contribution.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locus::{Affinity, Config, Partition, Runtime, Topology};

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

fn add_u64(a: &mut u64, b: &u64) {
    *a = a.wrapping_add(*b);
}

fn add_f64(a: &mut f64, b: &f64) {
    *a += b;
}

const CONFIGS: [Config; 5] = [
    Config::Ws,
    Config::DsaBase,
    Config::Dfa,
    Config::DsaOpt,
    Config::ShmBase,
];

/// Integer sums are bitwise equal to the sequential sum, on 1, 2 and 4 nodes.
#[test]
fn integer_sums_equal_the_sequential_sum_on_1_2_and_4_nodes() {
    for spec in ["1x1", "2x1", "4x1"] {
        for config in CONFIGS {
            let rt = runtime(spec, config);
            let total = rt.data_from("total", &[7u64, 1 << 63, 0]).unwrap();
            let seen = rt.data::<u64>("seen", 3);
            rt.run(|s| {
                for k in 0..200u64 {
                    s.spawn("add", total.reduce(0, add_u64), move |_, t| {
                        t[0] = t[0].wrapping_add(k * k);
                        t[1] = t[1].wrapping_add(1 << 62);
                        t[2] = t[2].wrapping_add(1);
                    })
                    .unwrap();
                }
                s.spawn("read", (total.read(), seen.write()), |_, (t, o)| {
                    o.copy_from_slice(t)
                })
                .unwrap();
            })
            .unwrap();
            let squares = (0..200u64).map(|k| k * k).sum::<u64>();
            let want = vec![7 + squares, (1u64 << 63).wrapping_add(200u64 << 62), 200];
            assert_eq!(rt.fetch(&seen).unwrap(), want, "{config} on {spec}");
            assert_eq!(rt.fetch(&total).unwrap(), want, "{config} on {spec}");
        }
    }
}

/// Floating-point sums: exact when every partial sum is representable (integers below
/// 2^53), whatever the order; within 1e-12 relative error of the sequential sum
/// otherwise (the combination order depends on which copy each task took).
#[test]
fn floating_point_sums_are_exact_on_integers_and_within_tolerance_otherwise() {
    for spec in ["1x1", "2x1", "4x1"] {
        for config in [Config::DsaBase, Config::Dfa, Config::ShmBase] {
            let rt = runtime(spec, config);
            let sums = rt.data::<f64>("sums", 2);
            rt.run(|s| {
                for k in 0..300u32 {
                    s.spawn("add", sums.reduce(0.0, add_f64), move |_, t| {
                        t[0] += f64::from(k);
                        t[1] += 1.0 / f64::from(k + 1);
                    })
                    .unwrap();
                }
            })
            .unwrap();
            let got = rt.fetch(&sums).unwrap();
            assert_eq!(
                got[0].to_bits(),
                (0..300u32).map(f64::from).sum::<f64>().to_bits()
            );
            let harmonic: f64 = (1..=300u32).map(|k| 1.0 / f64::from(k)).sum();
            assert!(
                ((got[1] - harmonic) / harmonic).abs() < 1e-12,
                "{config} on {spec}"
            );
        }
    }
}

/// Each node holds its own private copy while the group is open: with one worker per
/// node and every reducer pinned, one copy per node, in that node's pool; the fetch
/// combines them and frees them.
#[test]
fn private_copies_live_on_their_reducers_nodes() {
    const LEN: usize = 8192;
    for (spec, nodes) in [("2x1", 2), ("4x1", 4)] {
        let rt = runtime(spec, Config::Dfa);
        let total = rt.data::<u64>("total", LEN);
        let finished = rt
            .run(|s| {
                for k in 0..4 * nodes {
                    s.task("add", total.reduce(0, add_u64))
                        .affinity(Affinity::node(k % nodes).strict())
                        .spawn(move |ctx, t| {
                            assert_eq!(ctx.node(), k % nodes);
                            t.iter_mut().for_each(|x| *x += k as u64);
                        })
                        .unwrap();
                }
            })
            .unwrap();
        // Every byte a reducer touched was on its own node.
        let loc = &finished.report.locality;
        assert_eq!(loc.read_remote_bytes + loc.write_remote_bytes, 0, "{spec}");
        assert_eq!(loc.read_local_bytes, (4 * nodes * LEN * 8) as u64, "{spec}");
        let in_use: Vec<u64> = rt.pools().stats().iter().map(|n| n.in_use).collect();
        assert_eq!(
            in_use,
            vec![(LEN * 8) as u64; nodes],
            "{spec}: one copy per node"
        );
        let want = (0..4 * nodes as u64).sum::<u64>();
        assert_eq!(rt.fetch(&total).unwrap(), vec![want; LEN], "{spec}");
        // The combination (on node 0) is the datum's one buffer now.
        let in_use: u64 = rt.pools().stats().iter().map(|n| n.in_use).sum();
        assert_eq!(in_use, (LEN * 8) as u64, "{spec}");
    }
}

/// The first reducer holds its worker until the second has run: a dependence between
/// them would hang the run (it gives up after a minute and fails it instead). The
/// same for the writer before them.
#[test]
fn reducers_wait_neither_for_each_other_nor_for_the_previous_writer() {
    for config in [Config::DsaBase, Config::Dfa, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let total = rt.data::<u64>("total", 1);
        let out = rt.data::<u64>("out", 1);
        let wait_for = |flag: Arc<AtomicBool>| {
            let give_up = Instant::now() + Duration::from_secs(60);
            while !flag.load(Ordering::Acquire) {
                assert!(Instant::now() < give_up, "a reducer waited");
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        let second = Arc::new(AtomicBool::new(false));
        rt.run(|s| {
            let (flag, wait) = (second.clone(), wait_for);
            s.spawn("write", total.write(), move |_, t| {
                wait(flag);
                t[0] = 1000;
            })
            .unwrap();
            let (flag, wait) = (second.clone(), wait_for);
            s.spawn("first", total.reduce(0, add_u64), move |_, t| {
                wait(flag);
                t[0] += 1;
            })
            .unwrap();
            let flag = second.clone();
            s.spawn("second", total.reduce(0, add_u64), move |_, t| {
                t[0] += 2;
                flag.store(true, Ordering::Release);
            })
            .unwrap();
            s.spawn("read", (total.read(), out.write()), |_, (t, o)| o[0] = t[0])
                .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&out).unwrap(), vec![1003], "{config}");
    }
}

fn max_u64(a: &mut u64, b: &u64) {
    *a = (*a).max(*b);
}

/// Groups close at the next other access: reads see the sum so far, writes replace
/// it, and a reduction with another function starts a group of its own.
#[test]
fn each_other_access_closes_the_group_in_submission_order() {
    for config in CONFIGS {
        let rt = runtime("2x1", config);
        let x = rt.data_from("x", &[1u64]).unwrap();
        let seen = rt.data::<u64>("seen", 4);
        rt.run(|s| {
            let spawn_adds = |n: u64| {
                for k in 1..=n {
                    s.spawn("add", x.reduce(0, add_u64), move |_, v| v[0] += k)
                        .unwrap();
                }
            };
            spawn_adds(4); // 1 + 10
            s.spawn("r0", (x.read(), seen.read_write()), |_, (x, o)| o[0] = x[0])
                .unwrap();
            spawn_adds(3); // 11 + 6
            s.spawn("r1", (x.read(), seen.read_write()), |_, (x, o)| o[1] = x[0])
                .unwrap();
            for k in [5u64, 40, 9] {
                s.spawn("max", x.reduce(0, max_u64), move |_, v| v[0] = v[0].max(k))
                    .unwrap();
            }
            spawn_adds(2); // max(17, 40) + 3
            s.spawn("r2", (x.read(), seen.read_write()), |_, (x, o)| o[2] = x[0])
                .unwrap();
            s.spawn("w", x.write(), |_, v| v[0] = 100).unwrap();
            spawn_adds(1);
            s.spawn("r3", (x.read(), seen.read_write()), |_, (x, o)| o[3] = x[0])
                .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&seen).unwrap(), vec![11, 17, 43, 101], "{config}");
        assert_eq!(rt.fetch(&x).unwrap(), vec![101], "{config}");
    }
}

/// A group left open by a run is combined by the next run's reader.
#[test]
fn a_group_left_open_by_a_run_is_combined_by_the_next_runs_reader() {
    let rt = runtime("2x1", Config::Dfa);
    let x = rt.data::<u64>("x", 2);
    let out = rt.data::<u64>("out", 2);
    rt.run(|s| {
        for _ in 0..5 {
            s.spawn("add", x.reduce(0, add_u64), |_, v| v[1] += 2)
                .unwrap();
        }
    })
    .unwrap();
    rt.run(|s| {
        s.spawn("read", (x.read(), out.write()), |_, (x, o)| {
            o.copy_from_slice(x)
        })
        .unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&out).unwrap(), vec![0, 10]);
}

/// A reducer that panics fails the run and its group is discarded: the datum keeps
/// its contents from before the group.
#[test]
fn a_failed_reducer_discards_the_group() {
    for config in [Config::DsaBase, Config::Dfa, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let x = rt.data_from("x", &[5u64]).unwrap();
        let outcome = rt.run(|s| {
            for k in 0..6u64 {
                s.spawn("add", x.reduce(0, add_u64), move |_, v| {
                    assert!(k != 3, "reducer 3 fails");
                    v[0] += 1;
                })
                .unwrap();
            }
        });
        assert!(outcome.is_err(), "{config}");
        assert_eq!(rt.fetch(&x).unwrap(), vec![5], "{config}");
    }
}

/// Misuse is refused: a reduction and another access of the same datum in one task,
/// a reduction into several stored segments, a child reducing into its parent's data.
#[test]
fn misuse_of_reductions_is_refused() {
    let refused = |f: &(dyn Fn(&Runtime) -> Result<(), locus::Error> + Sync)| {
        let rt = runtime("2x1", Config::Dfa);
        f(&rt).unwrap_err().to_string()
    };
    let m = refused(&|rt| {
        let x = rt.data::<u64>("x", 2);
        let mut r = Ok(());
        let _ = rt.run(|s| r = s.spawn("t", (x.reduce(0, add_u64), x.read()), |_, _| {}));
        r
    });
    assert!(m.contains("declared twice"), "{m}");
    let m = refused(&|rt| {
        let v = rt.data::<u64>("v", 8);
        rt.partition(&v, Partition::blocks(4))?;
        let mut r = Ok(());
        let _ = rt.run(|s| r = s.spawn("t", v.reduce(0, add_u64), |_, _| {}));
        r
    });
    assert!(m.contains("several stored segments"), "{m}");
    let m = refused(&|rt| {
        let x = rt.data::<u64>("x", 2);
        let r = std::sync::Mutex::new(Ok(()));
        let _ = rt.run(|s| {
            let x2 = x.clone();
            let r = &r;
            let (tx, rx) = std::sync::mpsc::channel();
            s.spawn("parent", x.weak_read_write(), move |ctx, ()| {
                tx.send(ctx.scope().spawn("child", x2.reduce(0, add_u64), |_, _| {}))
                    .unwrap();
            })
            .unwrap();
            *r.lock().unwrap() = rx.recv().unwrap();
        });
        r.into_inner().unwrap()
    });
    assert!(m.contains("cannot reduce"), "{m}");
}

/// A dot product over a partitioned vector: each task reads a part of both vectors and
/// reduces into one scalar.
#[test]
fn a_dot_product_over_parts_reduces_into_one_scalar() {
    for spec in ["1x1", "2x1", "4x1"] {
        for config in CONFIGS {
            let rt = runtime(spec, config);
            let n = 4096u64;
            let xs: Vec<u64> = (0..n).collect();
            let ys: Vec<u64> = (0..n).map(|i| 3 * i + 1).collect();
            let x = rt.data_from("x", &xs).unwrap();
            let y = rt.data_from("y", &ys).unwrap();
            let px = rt.partition(&x, Partition::blocks(256)).unwrap();
            let py = rt.partition(&y, Partition::blocks(256)).unwrap();
            let dot = rt.data::<u64>("dot", 1);
            rt.run(|s| {
                for (a, b) in px.iter().zip(&py) {
                    s.spawn(
                        "dot",
                        (a.read(), b.read(), dot.reduce(0, add_u64)),
                        |_, (a, b, d)| {
                            d[0] += a.iter().zip(b).map(|(a, b)| a * b).sum::<u64>();
                        },
                    )
                    .unwrap();
                }
            })
            .unwrap();
            let want: u64 = xs.iter().zip(&ys).map(|(a, b)| a * b).sum();
            assert_eq!(rt.fetch(&dot).unwrap(), vec![want], "{config} on {spec}");
        }
    }
}

/// A reduction left open on a part is combined before a later partition splits the
/// part, so that no contribution is lost.
#[test]
fn a_partition_splitting_a_reduced_part_keeps_its_contributions() {
    for config in [Config::DsaBase, Config::Dfa, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let v = rt.data_from("v", &[1u64; 8]).unwrap();
        let halves = rt.partition(&v, Partition::blocks(4)).unwrap();
        rt.run(|s| {
            for k in 0..3u64 {
                s.spawn("add", halves[0].reduce(0, add_u64), move |_, h| {
                    h.iter_mut().for_each(|x| *x += k + 1)
                })
                .unwrap();
            }
        })
        .unwrap();
        let quarters = rt.partition(&v, Partition::blocks(2)).unwrap();
        assert_eq!(rt.fetch(&quarters[1]).unwrap(), vec![7, 7], "{config}");
        assert_eq!(
            rt.fetch(&v).unwrap(),
            vec![7, 7, 7, 7, 1, 1, 1, 1],
            "{config}"
        );
    }
}
