//! Nested tasks: children bind to their parent's domain, the parent's successors see
//! their writes, weak accesses, taskwait, results flowing back to the parent.

use locus::{Config, RegionPolicy, Runtime, Topology};

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

/// Every configuration, with their data models.
const CONFIGS: [Config; 10] = Config::ALL;

#[test]
fn successors_of_a_parent_see_its_childrens_writes() {
    for config in CONFIGS {
        for spec in ["1x1", "2x1"] {
            let rt = runtime(spec, config);
            let a = rt.data::<u64>("a", 1);
            let out = rt.data::<u64>("out", 1);
            rt.run(|s| {
                let a2 = a.clone();
                s.spawn("parent", a.weak_write(), move |ctx, ()| {
                    ctx.scope()
                        .spawn("child", a2.write(), |_, v| v[0] = 42)
                        .unwrap();
                })
                .unwrap();
                s.spawn("use", (a.read(), out.write()), |_, (a, o)| o[0] = a[0])
                    .unwrap();
            })
            .unwrap();
            assert_eq!(rt.fetch(&out).unwrap(), vec![42], "{config} on {spec}");
            assert_eq!(rt.fetch(&a).unwrap(), vec![42], "{config} on {spec}");
        }
    }
}

#[test]
fn children_see_their_parents_strong_write_and_successors_their_last_write() {
    for config in CONFIGS {
        let rt = runtime("2x1", config);
        let x = rt.data::<u64>("x", 4);
        let seen = rt.data::<u64>("seen", 4);
        rt.run(|s| {
            let (x2, seen2) = (x.clone(), seen.clone());
            s.spawn(
                "parent",
                (x.write(), seen.weak_write()),
                move |ctx, (v, ())| {
                    v.fill(1);
                    // Reads the parent's write, once the parent's body has returned.
                    ctx.scope()
                        .spawn("copy", (x2.read(), seen2.write()), |_, (x, s)| {
                            s.copy_from_slice(x)
                        })
                        .unwrap();
                    // Then bumps it: the parent's successors see 2.
                    ctx.scope()
                        .spawn("bump", x2.read_write(), |_, v| {
                            v.iter_mut().for_each(|e| *e += 1)
                        })
                        .unwrap();
                },
            )
            .unwrap();
            s.spawn("after", x.read_write(), |_, v| {
                v.iter_mut().for_each(|e| *e *= 10)
            })
            .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&seen).unwrap(), vec![1; 4], "{config}");
        assert_eq!(rt.fetch(&x).unwrap(), vec![20; 4], "{config}");
    }
}

#[test]
fn a_child_touching_data_its_parent_did_not_declare_is_refused() {
    let rt = runtime("2x1", Config::DsaOpt);
    let a = rt.data::<u64>("a", 1);
    let b = rt.data::<u64>("b", 1);
    let result = std::sync::Mutex::new(None);
    let outcome = rt.run(|s| {
        let (a2, b2) = (a.clone(), b.clone());
        let result = &result;
        let _ = result;
        s.spawn("parent", a.read(), move |ctx, _| {
            let undeclared = ctx.scope().spawn("child", b2.write(), |_, _| {});
            let read_only = ctx.scope().spawn("child2", a2.write(), |_, _| {});
            assert!(undeclared.is_err() && read_only.is_err());
        })
        .unwrap();
        *result.lock().unwrap() = Some(());
    });
    let err = outcome.unwrap_err().error;
    assert!(
        err.to_string()
            .contains("not declared by the parent task `parent`"),
        "{err}"
    );
}

/// A datum made in a task's scope belongs to that task's domain until the task is
/// complete. A handle sent out of the body (here over a channel) to the control program
/// must not let a task bound run-wide reach it meanwhile: under `shm-base` both would
/// write one buffer at once. Once the task is complete, the datum is the run's.
#[test]
fn a_scope_local_datum_is_refused_run_wide_until_its_task_is_complete() {
    for config in [Config::ShmBase, Config::DsaOpt] {
        let rt = runtime("2x1", config);
        let token = rt.data::<u64>("token", 1);
        let (tx, rx) = std::sync::mpsc::channel();
        // The child, so its parent, is not complete before the outsider is spawned.
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let smuggled = std::sync::Mutex::new(None);
        let slot = &smuggled;
        let outcome = rt.run(move |s| {
            s.spawn("parent", token.write(), move |ctx, _| {
                let local = ctx.scope().data::<u64>("local", 64);
                // The child is spawned before the handle leaves: once the outsider is
                // refused the run has failed, and a later spawn would be refused too.
                ctx.scope()
                    .spawn("child", local.write(), move |_, v| {
                        let _ = wait.recv();
                        v.fill(1)
                    })
                    .unwrap();
                tx.send(local.clone()).unwrap();
            })
            .unwrap();
            // The parent runs on the other worker while this one waits.
            let local = rx.recv().unwrap();
            let refused = s.spawn("outsider", local.write(), |_, v| v.fill(2));
            // The failed run may have drained the child unrun, dropping its receiver.
            let _ = go.send(());
            assert!(refused.is_err(), "{config}: the outsider was accepted");
            *slot.lock().unwrap() = Some(local);
        });
        let message = outcome.unwrap_err().error.to_string();
        assert!(
            message.contains("`local` was created in the scope of a task that is not complete"),
            "{config}: {message}"
        );
        // The parent is complete all the same (its child ran, or was drained unrun by
        // the failed run), so the next run may use the datum.
        let local = smuggled
            .into_inner()
            .unwrap()
            .expect("the control program ran");
        rt.run(|s| {
            s.spawn("after", local.read_write(), |_, v| v[0] += 1)
                .unwrap()
        })
        .unwrap();
        let after = rt.fetch(&local).unwrap();
        assert!(
            after[..2] == [1, 0] || after[..2] == [2, 1],
            "{config}: {after:?}"
        );

        // Handed out and used only after the run: it holds what the child wrote.
        let (tx, rx) = std::sync::mpsc::channel();
        let token = rt.data::<u64>("token", 1);
        rt.run(move |s| {
            s.spawn("parent", token.write(), move |ctx, _| {
                let local = ctx.scope().data::<u64>("local", 64);
                tx.send(local.clone()).unwrap();
                ctx.scope()
                    .spawn("child", local.write(), |_, v| v.fill(1))
                    .unwrap();
            })
            .unwrap();
        })
        .unwrap();
        let local = rx.recv().unwrap();
        rt.run(|s| {
            s.spawn("after", local.read_write(), |_, v| v[0] += 1)
                .unwrap()
        })
        .unwrap();
        assert_eq!(rt.fetch(&local).unwrap()[..2], [2, 1], "{config}");
    }
}

#[test]
fn a_write_only_read_parent_refuses_a_writing_child() {
    let rt = runtime("1x1", Config::DsaOpt);
    let a = rt.data::<u64>("a", 1);
    let a2 = a.clone();
    let err = rt
        .run(move |s| {
            s.spawn("parent", a.weak_read(), move |ctx, ()| {
                let _ = ctx.scope().spawn("child", a2.write(), |_, _| {});
            })
            .unwrap();
        })
        .unwrap_err()
        .error;
    assert!(err.to_string().contains("only read by the parent"), "{err}");
}

fn fib_task(ctx: &locus::TaskCtx, n: u64, out: &mut [u64]) {
    if n < 2 {
        out[0] = n;
        return;
    }
    let a = ctx.scope().data::<u64>("a", 1);
    let b = ctx.scope().data::<u64>("b", 1);
    ctx.scope()
        .spawn("fib", a.write(), move |ctx, a| fib_task(ctx, n - 1, a))
        .unwrap();
    ctx.scope()
        .spawn("fib", b.write(), move |ctx, b| fib_task(ctx, n - 2, b))
        .unwrap();
    out[0] = ctx.fetch(&a).unwrap()[0] + ctx.fetch(&b).unwrap()[0];
}

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

#[test]
fn recursive_fibonacci_with_taskwait_on_one_and_two_workers() {
    for (spec, config) in [
        ("1x1", Config::DsaOpt),
        ("2x1", Config::DsaOpt),
        ("1x2", Config::DsaBase),
        ("2x1", Config::ShmBase),
        ("2x1", Config::Home),
    ] {
        let rt = runtime(spec, config);
        let out = rt.data::<u64>("out", 1);
        let finished = rt
            .run(|s| {
                s.spawn("fib", out.write(), |ctx, o| fib_task(ctx, 15, o))
                    .unwrap();
            })
            .unwrap();
        assert_eq!(
            rt.fetch(&out).unwrap(),
            vec![fib_seq(15)],
            "{config} on {spec}"
        );
        // fib(15) spawns 2 * fib(16) - 1 tasks in all.
        assert_eq!(
            finished.report.tasks,
            2 * fib_seq(16) - 1,
            "{config} on {spec}"
        );
        assert_eq!(rt.live_versions(), 1, "only `out` is alive");
    }
}

/// A control task's children are its parent's, so it cannot wait for them, and the
/// error names it and says how to wait; a task of no access spawned with `spawn` is not
/// a control task, so its child on data it did not declare is refused; with a weak
/// access the same program waits.
#[test]
fn a_control_task_cannot_wait_and_is_told_why() {
    let rt = runtime("2x1", Config::DsaOpt);
    let x = rt.data::<u64>("x", 1);
    let waited = std::sync::Arc::new(std::sync::Mutex::new(None));
    let slot = waited.clone();
    rt.run(|s| {
        let x2 = x.clone();
        s.spawn_control("driver", (), move |ctx| {
            ctx.scope()
                .spawn("child", x2.write(), |_, v| v[0] = 1)
                .unwrap();
            *slot.lock().unwrap() = Some(ctx.wait().map_err(|e| e.to_string()));
        })
        .unwrap();
    })
    .unwrap();
    let message = waited.lock().unwrap().take().unwrap().unwrap_err();
    assert!(
        message.contains("task `driver`") && message.contains("control task"),
        "{message}"
    );
    assert!(message.contains("a weak access is enough"), "{message}");
    assert_eq!(rt.fetch(&x).unwrap(), vec![1], "the child ran all the same");

    let failed = rt
        .run(|s| {
            let x2 = x.clone();
            s.spawn("driver", (), move |ctx, ()| {
                let _ = ctx.scope().spawn("child", x2.write(), |_, v| v[0] = 3);
            })
            .unwrap();
        })
        .unwrap_err();
    let message = failed.error.to_string();
    assert!(
        message.contains("`x` is not declared by the parent task `driver`"),
        "{message}"
    );
    assert_eq!(
        rt.fetch(&x).unwrap(),
        vec![1],
        "the refused child did not run"
    );

    rt.run(|s| {
        let x2 = x.clone();
        s.spawn("driver", x.weak_write(), move |ctx, ()| {
            ctx.scope()
                .spawn("child", x2.write(), |_, v| v[0] = 2)
                .unwrap();
            ctx.wait().unwrap();
        })
        .unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&x).unwrap(), vec![2]);
}

#[test]
fn waiting_for_children_that_need_the_parents_output_is_refused() {
    let rt = runtime("1x1", Config::DsaOpt);
    let x = rt.data::<u64>("x", 1);
    let y = rt.data::<u64>("y", 1);
    rt.run(|s| {
        let (x2, y2) = (x.clone(), y.clone());
        s.spawn(
            "parent",
            (x.write(), y.weak_write()),
            move |ctx, (v, ())| {
                v[0] = 1;
                ctx.scope()
                    .spawn("reader", (x2.read(), y2.write()), |_, (x, y)| {
                        y[0] = x[0] + 1
                    })
                    .unwrap();
            },
        )
        .unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&y).unwrap(), vec![2]);

    let waited = std::sync::Arc::new(std::sync::Mutex::new(None));
    let waited2 = waited.clone();
    let outcome = rt.run(|s| {
        let (x2, y2) = (x.clone(), y.clone());
        s.spawn(
            "parent",
            (x.write(), y.weak_write()),
            move |ctx, (v, ())| {
                v[0] = 5;
                ctx.scope()
                    .spawn("reader", (x2.read(), y2.write()), |_, (x, y)| {
                        y[0] = x[0] + 1
                    })
                    .unwrap();
                *waited2.lock().unwrap() = Some(ctx.wait());
            },
        )
        .unwrap();
    });
    outcome.unwrap();
    let err = waited.lock().unwrap().take().unwrap().unwrap_err();
    assert!(err.to_string().contains("declare the access weak"), "{err}");
    assert_eq!(rt.fetch(&y).unwrap(), vec![6]);
}

#[test]
fn a_panic_in_a_child_fails_the_run_and_frees_everything() {
    for config in CONFIGS {
        let rt = runtime("2x1", config);
        {
            let x = rt.data_from("x", &[1u64; 256]).unwrap();
            let x2 = x.clone();
            let err = rt
                .run(move |s| {
                    s.spawn("parent", x2.weak_read_write(), move |ctx, ()| {
                        for k in 0..8 {
                            ctx.scope()
                                .spawn("child", x2.read_write(), move |_, v| {
                                    assert!(k != 3, "child {k} fails");
                                    v[0] += 1;
                                })
                                .ok();
                        }
                    })
                    .unwrap();
                })
                .unwrap_err()
                .error;
            assert!(err.to_string().contains("child 3 fails"), "{config}: {err}");
            // Versioned data keep their last complete version (children 0-2),
            // whether the failed child updated it in place or not.
            if config != Config::ShmBase {
                assert_eq!(rt.fetch(&x).unwrap()[0], 4, "{config}");
            }
        }
        assert_eq!(rt.live_versions(), 0, "{config}");
        assert_eq!(rt.pool_bytes_in_use(), 0, "{config}");
        assert_eq!(rt.shared_bytes_in_use(), 0, "{config}");
    }
}

#[test]
fn shared_data_are_updated_in_place_by_children() {
    let rt = runtime("2x1", Config::DsaOpt);
    let g = rt
        .shared_from("grid", &[0u64; 64], RegionPolicy::Interleave)
        .unwrap();
    let total = rt.data::<u64>("total", 1);
    rt.run(|s| {
        let g2 = g.clone();
        s.spawn("parent", g.weak_read_write(), move |ctx, ()| {
            for k in 0..4u64 {
                ctx.scope()
                    .spawn("fill", g2.read_write(), move |_, v| {
                        v.iter_mut().for_each(|e| *e += k)
                    })
                    .unwrap();
            }
        })
        .unwrap();
        s.spawn("sum", (g.read(), total.write()), |_, (g, t)| {
            t[0] = g.iter().sum()
        })
        .unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&total).unwrap(), vec![64 * 6]);
}

#[test]
fn a_two_level_blocked_stencil_verifies() {
    // Outer tasks per band, inner tasks per block: each inner task averages its block
    // with its left neighbour's previous values.
    let (bands, per_band, len, iterations) = (4usize, 4usize, 64usize, 5);
    let blocks = bands * per_band;
    for config in CONFIGS {
        let rt = runtime("2x1", config);
        let data: Vec<_> = (0..blocks)
            .map(|b| rt.data_from(format!("b{b}"), &vec![b as u64; len]).unwrap())
            .collect();
        rt.run(|s| {
            for _ in 0..iterations {
                for band in 0..bands {
                    let range = band * per_band..(band + 1) * per_band;
                    let left = range.start.checked_sub(1);
                    let mut weak: Vec<_> =
                        range.clone().map(|b| data[b].weak_read_write()).collect();
                    if let Some(l) = left {
                        weak.push(data[l].weak_read());
                    }
                    let data = data.clone();
                    s.spawn("band", weak, move |ctx, _| {
                        for b in range.clone().rev() {
                            let l = if b == 0 {
                                None
                            } else {
                                Some(data[b - 1].read())
                            };
                            ctx.scope()
                                .spawn(
                                    "block",
                                    (data[b].read_write(), l.into_iter().collect::<Vec<_>>()),
                                    move |_, (v, l)| {
                                        let add = l.first().map_or(0, |l| l[len - 1]);
                                        v.iter_mut()
                                            .for_each(|e| *e = e.wrapping_mul(3).wrapping_add(add));
                                    },
                                )
                                .unwrap();
                        }
                    })
                    .unwrap();
                }
            }
        })
        .unwrap();
        // Sequential reference, in the program's order: bands left to right, blocks of
        // a band right to left.
        let mut want: Vec<Vec<u64>> = (0..blocks).map(|b| vec![b as u64; len]).collect();
        for _ in 0..iterations {
            for band in 0..bands {
                for b in (band * per_band..(band + 1) * per_band).rev() {
                    let add = if b == 0 { 0 } else { want[b - 1][len - 1] };
                    want[b]
                        .iter_mut()
                        .for_each(|e| *e = e.wrapping_mul(3).wrapping_add(add));
                }
            }
        }
        for b in 0..blocks {
            assert_eq!(rt.fetch(&data[b]).unwrap(), want[b], "{config}: block {b}");
        }
    }
}
