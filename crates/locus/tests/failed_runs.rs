//! What a failed run leaves behind: versioned data keep their last complete version,
//! whether the task that failed renamed or updated them in place (which depends on
//! where it ran); shared data written in place by a task that failed are poisoned
//! until written whole.

use locus::{AllocMode, Config, Error, RegionPolicy, Runtime, Topology};

fn runtime(config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .config(config)
        .build()
        .unwrap()
}

const VERSIONED: [Config; 4] = [Config::DsaBase, Config::Dfa, Config::DsaOpt, Config::Ws];

#[test]
fn a_skipped_writer_leaves_the_last_complete_version() {
    for config in VERSIONED {
        let rt = runtime(config);
        let x = rt.data_from("x", &[1u64, 2, 3, 4]).unwrap();
        let y = rt.data::<u64>("y", 4);
        let outcome = rt.run(|s| {
            s.spawn("fails", y.write(), |_, _| panic!("injected"))
                .unwrap();
            // Waits for `fails`, so it is skipped once the run has failed.
            let _ = s.spawn("overwrite", (y.read(), x.write()), |_, (_, x)| x.fill(9));
        });
        assert!(outcome.is_err(), "{config}");
        assert_eq!(rt.fetch(&x).unwrap(), vec![1, 2, 3, 4], "{config}");
        // The next run binds to the same contents.
        let z = rt.data::<u64>("z", 4);
        rt.run(|s| {
            s.spawn("copy", (x.read(), z.write()), |_, (x, z)| {
                z.copy_from_slice(x)
            })
            .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&z).unwrap(), vec![1, 2, 3, 4], "{config}");
    }
}

#[test]
fn a_partial_write_of_a_task_that_panicked_is_not_published() {
    for config in VERSIONED {
        let rt = runtime(config);
        let x = rt.data_from("x", &[5u64; 8]).unwrap();
        let seen = rt.data::<u64>("seen", 8);
        let outcome = rt.run(|s| {
            s.spawn("step", x.read_write(), |_, v| v.fill(6)).unwrap();
            // A reader of `step`'s version, still pending when `partial` starts: the
            // version has another holder, so `partial` renames instead of updating
            // in place.
            s.spawn("hold", (x.read(), seen.write()), |_, (x, seen)| {
                seen.copy_from_slice(x)
            })
            .unwrap();
            s.spawn("partial", x.read_write(), |_, v| {
                v[0] = 99;
                panic!("after a partial write");
            })
            .unwrap();
            let _ = s.spawn("after", x.read_write(), |_, v| v.fill(7));
        });
        let err = outcome.unwrap_err();
        assert!(err.error.to_string().contains("after a partial write"));
        // `step` completed; `partial` did not, and `after` never ran (whether `hold`
        // finished before `partial` started, which then updated in place, or not).
        assert_eq!(rt.fetch(&x).unwrap(), vec![6; 8], "{config}");
    }
}

/// A read-write that fails after writing part of the datum, run where it updates in
/// place (one worker, or immediate allocation) and where it may rename (two nodes
/// under deferred allocation), many times over: the datum keeps the contents of the
/// last task that completed, never poisoned (it used to be poisoned when the task ran
/// in place, and keep its contents when it renamed).
#[test]
fn a_read_write_that_fails_leaves_the_last_complete_version_wherever_it_ran() {
    for spec in ["1x1", "2x1", "1x2"] {
        for config in VERSIONED {
            let mut in_place = 0;
            for round in 0..6u64 {
                let rt = Runtime::builder()
                    .topology(Topology::from_spec(spec).unwrap())
                    .config(config)
                    .build()
                    .unwrap();
                let x = rt.data_from("x", &[5u64; 64]).unwrap();
                let outcome = rt.run(|s| {
                    s.spawn("step", x.read_write(), move |_, v| v.fill(6 + round))
                        .unwrap();
                    s.spawn("partial", x.read_write(), |_, v| {
                        v[..32].fill(99);
                        panic!("after a partial write");
                    })
                    .unwrap();
                });
                let err = outcome.unwrap_err();
                assert!(err.error.to_string().contains("after a partial write"));
                // Updated in place: taking over the buffer of the version it
                // supersedes, or continuing `step`'s version (`partial`, submitted
                // before `step` finished).
                in_place += err.report.versions.in_place + err.report.versions.continued;
                assert_eq!(
                    rt.fetch(&x).unwrap(),
                    vec![6 + round; 64],
                    "{spec} {config}"
                );
                // Readable and writable by the next run, as any datum.
                rt.run(|s| s.spawn("bump", x.read_write(), |_, v| v[0] += 1).unwrap())
                    .unwrap();
                assert_eq!(rt.fetch(&x).unwrap()[0], 7 + round, "{spec} {config}");
                drop(x);
                assert_eq!(rt.pool_bytes_in_use(), 0, "{spec} {config}");
            }
            if spec == "1x1" || config.alloc_mode() == AllocMode::Immediate {
                // Both tasks updated in place in every round.
                assert_eq!(in_place, 2 * 6, "{spec} {config}");
            }
        }
    }
}

/// A read-write that renames (a reader of the version it reads is still pending when
/// it starts) fails the same way as one updating in place.
#[test]
fn a_renaming_read_write_that_fails_leaves_the_same_contents() {
    for config in VERSIONED {
        let rt = Runtime::builder()
            .topology(Topology::from_spec("1x2").unwrap())
            .config(config)
            .build()
            .unwrap();
        let x = rt.data_from("x", &[5u64; 8]).unwrap();
        let gate = rt.data::<u64>("gate", 1);
        let seen = rt.data::<u64>("seen", 8);
        let err = rt
            .run(|s| {
                s.spawn("slow", gate.write(), |_, g| {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                    g[0] = 1;
                })
                .unwrap();
                s.spawn("step", x.read_write(), |_, v| v.fill(6)).unwrap();
                // Holds `step`'s version until `slow` is done, long after `partial`.
                s.spawn(
                    "hold",
                    (gate.read(), x.read(), seen.write()),
                    |_, (_, x, o)| o.copy_from_slice(x),
                )
                .unwrap();
                s.spawn("partial", x.read_write(), |_, v| {
                    v.fill(99);
                    panic!("renamed");
                })
                .unwrap();
            })
            .unwrap_err();
        assert!(err.error.to_string().contains("renamed"));
        // `step` alone updated in place: `partial` renamed.
        assert_eq!(err.report.versions.in_place, 1, "{config}");
        assert_eq!(rt.fetch(&x).unwrap(), vec![6; 8], "{config}");
    }
}

/// Shared data are updated in place with no copy: a task that fails while declaring a
/// write of them poisons them, whatever it wrote, until a task writes them whole.
#[test]
fn a_failed_writer_of_shared_data_poisons_them_even_if_it_wrote_nothing() {
    for spec in ["1x1", "2x1"] {
        let rt = Runtime::builder()
            .topology(Topology::from_spec(spec).unwrap())
            .config(Config::ShmBase)
            .build()
            .unwrap();
        let g = rt
            .shared_from("grid", &[1u64; 64], RegionPolicy::Interleave)
            .unwrap();
        let err = rt
            .run(|s| {
                s.spawn("check", g.read_write(), |_, _| panic!("refused"))
                    .unwrap()
            })
            .unwrap_err();
        assert!(err.error.to_string().contains("refused"));
        match rt.fetch(&g) {
            Err(Error::Poisoned { data, task }) => {
                assert_eq!((&*data, &*task), ("grid", "check"), "{spec}")
            }
            other => panic!("{spec}: expected Poisoned, got {other:?}"),
        }
    }
}

#[test]
fn a_read_write_that_never_ran_after_taking_over_keeps_the_contents() {
    // One worker: `step` updates in place. The second task takes over `step`'s buffer
    // too, then its other buffer cannot be made: its body never runs, and the datum
    // keeps `step`'s contents, not poisoned.
    for config in VERSIONED {
        let rt = Runtime::builder()
            .topology(Topology::from_spec("1x1").unwrap())
            .config(config)
            .node_limit(16 * 4096)
            .build()
            .unwrap();
        let x = rt.data_from("x", &[5u64; 8]).unwrap();
        let huge = rt.data::<u8>("huge", 32 * 4096);
        let outcome = rt.run(|s| {
            s.spawn("step", x.read_write(), |_, v| v.fill(6)).unwrap();
            let _ = s.spawn("never", (x.read_write(), huge.read_write()), |_, (v, _)| {
                v.fill(7)
            });
        });
        let err = outcome.unwrap_err();
        assert!(matches!(err.error, Error::OutOfMemory { .. }), "{config}");
        assert_eq!(err.report.versions.in_place, 2, "{config}");
        assert_eq!(rt.fetch(&x).unwrap(), vec![6; 8], "{config}");
        assert_eq!(rt.live_versions(), 2, "{config}");
    }
}

#[test]
fn versions_of_a_failed_run_are_all_released() {
    let rt = runtime(Config::DsaOpt);
    {
        let x = rt.data_from("x", &[1u64; 1024]).unwrap();
        let _ = rt.run(|s| {
            for k in 0..20u64 {
                s.spawn("step", x.read_write(), move |_, v| {
                    assert!(k != 10, "injected");
                    v[0] += 1;
                })
                .ok();
            }
        });
        // The last complete version, whether `step` 10 updated in place or not.
        assert_eq!(rt.fetch(&x).unwrap()[0], 11);
    }
    assert_eq!(rt.live_versions(), 0);
    assert_eq!(rt.pool_bytes_in_use(), 0);
}

#[test]
fn shared_data_written_by_a_task_that_panicked_are_poisoned_until_written_whole() {
    let rt = runtime(Config::DsaOpt);
    let g = rt
        .shared_from("grid", &[1u64; 512], RegionPolicy::Interleave)
        .unwrap();
    let outcome = rt.run(|s| {
        s.spawn("partial", g.read_write(), |_, v| {
            v[..10].fill(2);
            panic!("half-way");
        })
        .unwrap();
    });
    assert!(outcome.is_err());
    match rt.fetch(&g) {
        Err(Error::Poisoned { data, task }) => assert_eq!((&*data, &*task), ("grid", "partial")),
        other => panic!("expected Poisoned, got {other:?}"),
    }
    // Reading it is refused; writing it whole heals it.
    let refused = rt.run(|s| s.spawn("read", g.read(), |_, _| {}));
    assert!(refused
        .unwrap_err()
        .error
        .to_string()
        .contains("partly written"));
    rt.run(|s| s.spawn("heal", g.write(), |_, v| v.fill(3)).unwrap())
        .unwrap();
    assert_eq!(rt.fetch(&g).unwrap(), vec![3; 512]);
}

#[test]
fn shared_data_whose_writer_was_skipped_keep_their_contents() {
    let rt = runtime(Config::ShmBase);
    let x = rt.data_from("x", &[4u64; 64]).unwrap();
    let y = rt.data::<u64>("y", 64);
    let outcome = rt.run(|s| {
        s.spawn("fails", y.write(), |_, _| panic!("injected"))
            .unwrap();
        let _ = s.spawn("skipped", (y.read(), x.write()), |_, (_, x)| x.fill(0));
    });
    assert!(outcome.is_err());
    assert_eq!(rt.fetch(&x).unwrap(), vec![4; 64]);
}

fn add_but_panic_on_seven(a: &mut u64, b: &u64) {
    if *b >= 7 {
        panic!("combine panicked");
    }
    *a += b;
}

/// A reduction combined by `fetch` (no run closes it) whose combining function panics:
/// the error comes back from `fetch` (the panic used to escape it). The combination
/// fails as a combining task of a run does: a versioned datum keeps its contents from
/// before the reduction, a shared one, combined in place, is poisoned.
#[test]
fn a_combining_function_that_panics_in_fetch_fails_as_a_task_would() {
    for config in [Config::DsaOpt, Config::ShmBase] {
        let rt = runtime(config);
        let d = rt.data_from("d", &[1u64; 4]).unwrap();
        rt.run(|s| {
            s.spawn("reduce", d.reduce(0, add_but_panic_on_seven), |_, v| {
                v[0] += 7
            })
            .unwrap()
        })
        .unwrap();
        match rt.fetch(&d) {
            Err(Error::TaskPanicked { task, message }) => {
                assert_eq!(
                    (task.as_str(), message.as_str()),
                    ("reduce(d)", "combine panicked")
                )
            }
            other => panic!("{config}: {other:?}"),
        }
        if config == Config::ShmBase {
            assert!(
                matches!(rt.fetch(&d), Err(Error::Poisoned { .. })),
                "{config}: {:?}",
                rt.fetch(&d)
            );
        } else {
            assert_eq!(rt.fetch(&d).unwrap(), vec![1; 4], "{config}");
        }
        // A whole write makes it readable again.
        rt.run(|s| s.spawn("rewrite", d.write(), |_, v| v.fill(2)).unwrap())
            .unwrap();
        assert_eq!(rt.fetch(&d).unwrap(), vec![2; 4], "{config}");
    }
}

/// A value that panics when dropped.
struct Loud;

impl Drop for Loud {
    fn drop(&mut self) {
        panic!("dropped");
    }
}

/// A panic whose payload panics again when dropped fails the run like any panic; it
/// used to unwind out of the worker, which aborted the process.
#[test]
fn a_panic_payload_that_panics_when_dropped_fails_only_the_run() {
    let rt = runtime(Config::DsaOpt);
    let x = rt.data::<u64>("x", 1);
    let err = rt
        .run(|s| {
            s.spawn("t", x.write(), |_, _| std::panic::panic_any(Loud))
                .unwrap()
        })
        .unwrap_err()
        .error;
    assert!(matches!(err, Error::TaskPanicked { .. }), "{err:?}");
    // The runtime still runs.
    rt.run(|s| s.spawn("again", x.write(), |_, v| v[0] = 1).unwrap())
        .unwrap();
    assert_eq!(rt.fetch(&x).unwrap(), vec![1]);
}

/// An observer is the user's code: a panic in it fails the run, instead of unwinding
/// through a worker (which aborted the process).
#[test]
fn an_observer_that_panics_fails_the_run() {
    struct Panics;
    impl locus::observe::Observer for Panics {
        fn task(&self, _: &locus::observe::TaskSpan<'_>) {
            panic!("observer panicked");
        }
    }
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .observer(std::sync::Arc::new(Panics))
        .build()
        .unwrap();
    let x = rt.data::<u64>("x", 8);
    let err = rt
        .run(|s| {
            for _ in 0..4 {
                s.spawn("t", x.read_write(), |_, v| v[0] += 1).unwrap();
            }
        })
        .unwrap_err()
        .error;
    match err {
        Error::ObserverPanicked { call, message } => {
            assert_eq!((call, message.as_str()), ("task", "observer panicked"))
        }
        other => panic!("{other:?}"),
    }
    // The root is observed too: the run may fail before any task writes `x`.
    assert!(rt.pool_bytes_in_use() <= 8 * 8, "at most `x`'s buffer");
}

/// The control program's value is dropped by a failed run; a value whose drop panics
/// leaves the run's error as it was, instead of unwinding out of `run`.
#[test]
fn a_failed_runs_value_that_panics_when_dropped_leaves_the_error() {
    let rt = runtime(Config::DsaOpt);
    let x = rt.data::<u64>("x", 1);
    let outcome = rt.run(|s| {
        s.spawn("fails", x.write(), |_, _| panic!("injected"))
            .unwrap();
        Loud
    });
    match outcome.map(|f| std::mem::forget(f.value)) {
        Err(e) => assert!(matches!(e.error, Error::TaskPanicked { .. }), "{e}"),
        Ok(()) => panic!("the run failed"),
    }
}

/// A gathered view of shared data (the whole, covering several segments) is a copy,
/// scattered only once the body returns: a task that fails with it poisons nothing
/// (it used to poison every segment); a part, written in place, is poisoned alone.
#[test]
fn a_failed_gathered_view_of_shared_data_poisons_nothing() {
    let rt = runtime(Config::ShmBase);
    let g = rt
        .shared_from("grid", &[1u64; 64], RegionPolicy::Interleave)
        .unwrap();
    let parts = rt.partition(&g, locus::Partition::blocks(32)).unwrap();
    let err = rt
        .run(|s| {
            s.spawn("whole", g.read_write(), |_, v| {
                v.fill(7);
                panic!("gathered");
            })
            .unwrap()
        })
        .unwrap_err();
    assert!(err.error.to_string().contains("gathered"));
    assert_eq!(rt.fetch(&g).unwrap(), vec![1; 64]);
    let err = rt
        .run(|s| {
            s.spawn("part", parts[1].read_write(), |_, _| panic!("in place"))
                .unwrap()
        })
        .unwrap_err();
    assert!(err.error.to_string().contains("in place"));
    rt.run(|s| s.spawn("other", parts[0].read(), |_, _| {}).unwrap())
        .unwrap();
    match rt.fetch(&g) {
        Err(Error::Poisoned { task, .. }) => assert_eq!(task, "part"),
        other => panic!("expected Poisoned, got {other:?}"),
    }
}
