//! Whole-runtime behaviour: dependences, failure, nested scopes, the window, the release
//! of versions and the metrics.

use locus::{Config, Error, Runtime, Topology};

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

#[test]
fn a_chain_of_read_writes_sees_every_previous_write() {
    for config in [Config::Ws, Config::DsaBase, Config::Dfa] {
        let rt = runtime("2x1", config);
        let x = rt.data::<u64>("x", 8);
        rt.run(|s| {
            for k in 0..500u64 {
                s.spawn("step", x.read_write(), move |_, v| {
                    for e in v.iter_mut() {
                        *e = e.wrapping_mul(3).wrapping_add(k);
                    }
                })
                .unwrap();
            }
        })
        .unwrap();
        let want = (0..500u64).fold(0u64, |acc, k| acc.wrapping_mul(3).wrapping_add(k));
        assert_eq!(rt.fetch(&x).unwrap(), vec![want; 8], "{config}");
    }
}

#[test]
fn readers_of_an_old_version_do_not_see_a_later_write() {
    let rt = runtime("2x1", Config::DsaBase);
    let a = rt.data_from("a", &[1u32; 4]).unwrap();
    let seen = rt.data::<u32>("seen", 4);
    rt.run(|s| {
        // Submitted before the write: must read version 1 even if the writer runs first.
        s.spawn("read-old", (a.read(), seen.write()), |_, (a, out)| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            out.copy_from_slice(a);
        })
        .unwrap();
        s.spawn("overwrite", a.write(), |_, a| a.fill(7)).unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&seen).unwrap(), vec![1; 4]);
    assert_eq!(rt.fetch(&a).unwrap(), vec![7; 4]);
}

#[test]
fn a_panicking_task_fails_the_run_and_frees_everything() {
    let rt = runtime("2x1", Config::DsaBase);
    {
        let data: Vec<_> = (0..16)
            .map(|i| rt.data::<u64>(format!("d{i}"), 1024))
            .collect();
        let err = rt
            .run(|s| {
                for round in 0..50 {
                    for (i, d) in data.iter().enumerate() {
                        let r = s.spawn(format!("t{round}.{i}"), d.read_write(), move |_, v| {
                            if round == 10 && i == 3 {
                                panic!("boom at {round}.{i}");
                            }
                            v[0] += 1;
                        });
                        if r.is_err() {
                            // The run stops submitting once it has failed.
                            assert!(s.has_failed());
                            return;
                        }
                    }
                }
            })
            .unwrap_err();
        match err.error() {
            Error::TaskPanicked { task, message } => {
                assert_eq!(task, "t10.3");
                assert_eq!(message, "boom at 10.3");
            }
            other => panic!("unexpected error {other:?}"),
        }
        assert_eq!(
            rt.live_versions(),
            16,
            "only the handles' current versions remain"
        );
    }
    assert_eq!(rt.live_versions(), 0);
    assert_eq!(
        rt.pool_bytes_in_use(),
        0,
        "every buffer went back to its pool"
    );
}

#[test]
fn a_panicking_control_program_is_an_error_too() {
    let rt = runtime("1x2", Config::Ws);
    let err = rt.run(|_| -> () { panic!("root failed") }).unwrap_err();
    assert!(matches!(err.error(), Error::TaskPanicked { task, .. } if task == "root"));
    // The runtime is still usable.
    let f = rt.run(|_| 5).unwrap();
    assert_eq!(f.value, 5);
}

#[test]
fn conflicting_declarations_and_foreign_handles_are_errors() {
    let rt = runtime("1x1", Config::DsaBase);
    let other = runtime("1x1", Config::DsaBase);
    let a = rt.data::<u8>("a", 4);
    let b = other.data::<u8>("b", 4);

    let err = rt
        .run(|s| s.spawn("twice", (a.read(), a.write()), |_, _| {}))
        .unwrap_err();
    assert!(err.to_string().contains("`a` is declared twice"), "{err}");
    let err = rt
        .run(|s| s.spawn("foreign", b.read(), |_, _| {}))
        .unwrap_err();
    assert!(matches!(err.error(), Error::ForeignData { data, .. } if data == "b"));
    let err = rt
        .run(|s| s.spawn("range", a.read_range(2..9), |_, _| {}))
        .unwrap_err();
    assert!(err.to_string().contains("out of bounds"), "{err}");
    assert!(matches!(rt.fetch(&b), Err(Error::ForeignData { .. })));
    // Two reads of one datum are fine.
    rt.run(|s| {
        s.spawn("two-reads", (a.read(), a.read_range(1..2)), |_, (x, y)| {
            assert_eq!((x.len(), y.len()), (4, 1));
        })
    })
    .unwrap()
    .value
    .unwrap();
}

#[test]
fn run_inside_a_task_is_refused() {
    let rt = std::sync::Arc::new(runtime("1x2", Config::DsaBase));
    let inner = rt.clone();
    let f = rt
        .run(move |_| matches!(inner.run(|_| ()).unwrap_err().error(), Error::NestedRun))
        .unwrap();
    assert!(f.value);
}

#[test]
fn impossible_configs_and_bad_thread_counts_are_errors() {
    let topo = Topology::from_spec("2x1").unwrap();
    let err = Runtime::builder()
        .topology(topo.clone())
        .config(Config::ShmBase)
        .shared_placement(locus::RegionPolicy::Bind(2))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("node 2 does not exist"), "{err}");
    for config in [Config::PushOut, Config::PushWeighted] {
        let err = Runtime::builder()
            .topology(topo.clone())
            .config(config)
            .allocation(locus::AllocMode::Deferred)
            .build()
            .unwrap_err();
        assert!(
            err.to_string().contains("cannot use deferred allocation"),
            "{err}"
        );
    }
    // Input-only pushing combines with deferred allocation: that is `dsa-opt`.
    Runtime::builder()
        .topology(topo.clone())
        .config(Config::PushIn)
        .allocation(locus::AllocMode::Deferred)
        .build()
        .unwrap();
    let err = Runtime::builder()
        .topology(topo.clone())
        .threads(3)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("3 threads asked"), "{err}");
    assert!(Runtime::builder()
        .topology(topo)
        .threads(0)
        .build()
        .is_err());
}

#[test]
fn nested_scopes_run_a_parallel_control_program() {
    let rt = runtime("2x2", Config::DsaBase);
    let parts: Vec<_> = (0..8)
        .map(|i| rt.data::<u64>(format!("p{i}"), 64))
        .collect();
    let parts2 = parts.clone();
    rt.run(move |s| {
        for (i, p) in parts2.into_iter().enumerate() {
            // Each creator task owns one datum and spawns its chain into its scope.
            s.spawn_control(format!("creator{i}"), (), move |ctx| {
                for k in 0..100u64 {
                    ctx.scope()
                        .spawn("inc", p.read_write(), move |_, v| {
                            for e in v.iter_mut() {
                                *e += k + i as u64;
                            }
                        })
                        .unwrap();
                }
            })
            .unwrap();
        }
    })
    .unwrap();
    for (i, p) in parts.iter().enumerate() {
        let want: u64 = (0..100u64).map(|k| k + i as u64).sum();
        assert_eq!(rt.fetch(p).unwrap(), vec![want; 64]);
    }
}

#[test]
fn the_window_bounds_unfinished_tasks() {
    let rt = Runtime::builder()
        .topology(Topology::from_spec("1x2").unwrap())
        .window(8)
        .build()
        .unwrap();
    let in_flight = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let data: Vec<_> = (0..64)
        .map(|i| rt.data::<u64>(format!("d{i}"), 1))
        .collect();
    let f = rt
        .run(|s| {
            for round in 0..20 {
                for d in &data {
                    let (inf, pk) = (in_flight.clone(), peak.clone());
                    // Submission-side count: incremented before submitting.
                    let now = inf.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    pk.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                    s.spawn("t", d.read_write(), move |_, v| {
                        v[0] += round;
                        inf.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    })
                    .unwrap();
                }
            }
        })
        .unwrap();
    assert_eq!(f.report.tasks, 64 * 20);
    // At most `window` tasks were unfinished when the next one was counted.
    assert!(peak.load(std::sync::atomic::Ordering::SeqCst) <= 9);
    let want: u64 = (0..20).sum();
    for d in &data {
        assert_eq!(rt.fetch(d).unwrap(), vec![want]);
    }
}

#[test]
fn a_long_chain_keeps_few_versions_alive() {
    // Deferred allocation: a version exists as soon as its writer is submitted, but the
    // window bounds how many writers are pending, and superseded versions are freed as
    // soon as their last reader finishes.
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .config(Config::Dfa)
        .window(4)
        .build()
        .unwrap();
    let x = rt.data::<u64>("x", 1024);
    let y = rt.data::<u64>("y", 1024);
    let f = rt
        .run(|s| {
            for _ in 0..2000 {
                s.spawn("fwd", (x.read(), y.write()), |_, (a, b)| {
                    for (o, i) in b.iter_mut().zip(a) {
                        *o = i + 1;
                    }
                })
                .unwrap();
                s.spawn("back", (y.read(), x.write()), |_, (a, b)| {
                    b.copy_from_slice(a)
                })
                .unwrap();
            }
        })
        .unwrap();
    assert_eq!(rt.fetch(&x).unwrap(), vec![2000; 1024]);
    assert!(
        f.report.versions.peak_live <= 12,
        "peak live versions {} for a chain of 4000 versions",
        f.report.versions.peak_live
    );
    assert_eq!(f.report.versions.created, 4000);
    // Blocks were reused: far fewer fresh blocks than versions.
    assert!(f.report.memory.reused >= 3900, "{:?}", f.report.memory);
}

#[test]
fn bytes_counted_equal_bytes_declared() {
    let rt = runtime("2x1", Config::DsaBase);
    let a = rt.data_from("a", &[1u32; 1000]).unwrap();
    let b = rt.data::<u32>("b", 1000);
    let c = rt.data::<u32>("c", 10);
    let f = rt
        .run(|s| {
            s.spawn("copy", (a.read(), b.write()), |_, (x, y)| {
                y.copy_from_slice(x)
            })
            .unwrap();
            s.spawn(
                "part",
                (b.read_range(100..110), c.read_write()),
                |_, (x, y)| y.copy_from_slice(x),
            )
            .unwrap();
        })
        .unwrap();
    let l = &f.report.locality;
    // copy: reads 4000, writes 4000; part: reads 40 of b and 40 of c, writes 40.
    assert_eq!(l.read_local_bytes + l.read_remote_bytes, 4000 + 40 + 40);
    assert_eq!(l.write_local_bytes + l.write_remote_bytes, 4000 + 40);
    let traffic: u64 = f.report.traffic.iter().flatten().sum();
    assert_eq!(traffic, 4000 + 40 + 40 + 4000 + 40);
    assert_eq!(f.report.tasks, 2);
    assert_eq!(
        f.report.workers.iter().map(|w| w.tasks).sum::<u64>(),
        2 + 1,
        "tasks + root"
    );
}

#[test]
fn deferred_allocation_makes_every_write_local() {
    let rt = runtime("2x1", Config::Dfa);
    let data: Vec<_> = (0..32)
        .map(|i| rt.data::<u64>(format!("d{i}"), 512))
        .collect();
    let f = rt
        .run(|s| {
            for round in 0..30u64 {
                for d in &data {
                    s.spawn("w", d.read_write(), move |_, v| {
                        for e in v.iter_mut() {
                            *e = e.wrapping_mul(31).wrapping_add(round);
                        }
                    })
                    .unwrap();
                }
            }
        })
        .unwrap();
    assert_eq!(f.report.locality.write_remote_bytes, 0);
    assert!(f.report.locality.write_local_bytes > 0);
}

/// A successor made ready by a finishing task runs next on the same worker, unseen by
/// the idle ones (mechanism module doc, "Hand-over"): a chain released at once by a
/// slow first task stays on one worker instead of crossing to the other at every step.
#[test]
fn a_chain_stays_on_the_worker_that_runs_it() {
    for config in [Config::Ws, Config::DsaOpt, Config::Dfa] {
        let rt = runtime("1x2", config);
        let x = rt.data::<u64>("x", 1);
        let f = rt
            .run(|s| {
                // The chain is all submitted before its first task ends.
                s.spawn("gate", x.write(), |_, v| {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    v[0] = 0;
                })
                .unwrap();
                for k in 0..1000u64 {
                    s.spawn("step", x.read_write(), move |_, v| {
                        v[0] = v[0].wrapping_mul(3).wrapping_add(k)
                    })
                    .unwrap();
                }
            })
            .unwrap();
        let want = (0..1000u64).fold(0u64, |acc, k| acc.wrapping_mul(3).wrapping_add(k));
        assert_eq!(rt.fetch(&x).unwrap(), vec![want], "{config}");
        let steals = f.report.steals.same_node + f.report.steals.remote;
        // The gate may be stolen, and the root; none of the 1,000 steps is.
        assert!(steals <= 2, "{config}: {steals} steals");
    }
}

#[test]
fn a_vicinity_of_one_never_steals() {
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x2").unwrap())
        .config(Config::Home)
        .vicinity(1)
        .build()
        .unwrap();
    let data: Vec<_> = (0..8)
        .map(|i| rt.data::<u64>(format!("d{i}"), 4096))
        .collect();
    let f = rt
        .run(|s| {
            for round in 0..20u64 {
                for d in &data {
                    s.spawn("w", d.read_write(), move |_, v| v[0] += round)
                        .unwrap();
                }
            }
        })
        .unwrap();
    assert_eq!(f.report.steals.same_node + f.report.steals.remote, 0);
    assert_eq!(f.report.tasks, 160);
    for d in &data {
        assert_eq!(rt.fetch(d).unwrap()[0], (0..20).sum::<u64>());
    }
}

#[test]
fn strict_affinity_to_a_node_without_workers_fails_the_run() {
    // Two nodes, one worker: node 1 has no worker.
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .threads(1)
        .build()
        .unwrap();
    let err = rt
        .run(|s| {
            s.task("pinned", ())
                .affinity(locus::Affinity::node(1).strict())
                .spawn(|_, ()| {})
        })
        .unwrap_err();
    assert!(err.to_string().contains("no workers"), "{err}");
}

#[test]
fn run_waits_for_work_pending_when_the_control_program_returns() {
    let rt = runtime("2x1", Config::DsaBase);
    let d = rt.data::<u64>("d", 1);
    let f = rt
        .run(|s| {
            for _ in 0..4 {
                s.spawn("slow", d.read_write(), |_, v| {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    v[0] += 1;
                })
                .unwrap();
            }
            // The control program returns at once; the run is not over until the
            // four tasks are.
        })
        .unwrap();
    assert_eq!(f.report.tasks, 4);
    assert_eq!(rt.fetch(&d).unwrap(), vec![4]);
}

#[test]
fn handles_outlive_their_runtime_and_shutdown_does_not_hang() {
    let (d, versions) = {
        let rt = runtime("4x1", Config::Dfa);
        let d = rt.data_from("d", &[3u8; 100]).unwrap();
        rt.run(|s| s.spawn("w", d.read_write(), |_, v| v[0] = 9).unwrap())
            .unwrap();
        (d, rt.live_versions())
        // The runtime is dropped here: its workers stop and are joined.
    };
    assert_eq!(versions, 1);
    assert_eq!(d.len(), 100);
    drop(d);
}
