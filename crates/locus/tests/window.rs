//! The submission window bounds memory and never deadlocks, whatever the nesting: only
//! the run's root waits for room (see `RuntimeBuilder::window`).

use locus::{Config, Runtime, Topology};

mod common;
use common::within;

#[test]
fn a_writer_spawning_readers_of_its_output_finishes_under_a_small_window() {
    within(60, || {
        for config in [Config::DsaBase, Config::DsaOpt, Config::ShmBase] {
            for window in [1, 2, 4] {
                let rt = Runtime::builder()
                    .topology(Topology::from_spec("2x1").unwrap())
                    .config(config)
                    .window(window)
                    .build()
                    .unwrap();
                let x = rt.data::<u64>("x", 4);
                let outs: Vec<_> = (0..3).map(|i| rt.data::<u64>(format!("o{i}"), 4)).collect();
                let (x2, outs2) = (x.clone(), outs.clone());
                let weak: Vec<_> = outs.iter().map(|o| o.weak_write()).collect();
                rt.run(move |s| {
                    s.spawn("parent", (x2.write(), weak), move |ctx, (v, _)| {
                        v.fill(5);
                        // The children wait for the parent's output: a parent waiting
                        // for window room here would wait for ever.
                        for o in &outs2 {
                            ctx.scope()
                                .spawn("child", (x2.read(), o.write()), |_, (x, o)| {
                                    o.copy_from_slice(x)
                                })
                                .unwrap();
                        }
                    })
                    .unwrap();
                })
                .unwrap();
                for o in &outs {
                    assert_eq!(
                        rt.fetch(o).unwrap(),
                        vec![5; 4],
                        "{config}, window {window}"
                    );
                }
            }
        }
    });
}

#[test]
fn recursive_spawning_finishes_under_a_window_of_one() {
    within(60, || {
        let rt = Runtime::builder()
            .topology(Topology::from_spec("2x1").unwrap())
            .window(1)
            .build()
            .unwrap();
        let leaves = rt.data::<u64>("leaves", 64);
        fn split(ctx: &locus::TaskCtx, leaves: locus::Data<u64>, lo: usize, hi: usize) {
            if hi - lo == 1 {
                ctx.scope()
                    .spawn("leaf", leaves.read_write(), move |_, v| v[lo] += 1)
                    .unwrap();
                return;
            }
            let mid = (lo + hi) / 2;
            for (a, b) in [(lo, mid), (mid, hi)] {
                let leaves = leaves.clone();
                ctx.scope()
                    .spawn_control("split", (), move |ctx| split(ctx, leaves, a, b))
                    .unwrap();
            }
        }
        let l = leaves.clone();
        rt.run(move |s| {
            s.spawn_control("split", (), move |ctx| split(ctx, l, 0, 64))
                .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&leaves).unwrap(), vec![1; 64]);
    });
}

/// Tasks that declare nothing take the submission's lean path: they still wait for the
/// window, count in the report, join their parent's domain, and are refused once the
/// run has failed.
#[test]
fn tasks_declaring_nothing_keep_the_window_the_counts_and_the_refusals() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    within(60, || {
        for threads in [1, 2] {
            let window = 3;
            let rt = Runtime::builder()
                .threads(threads)
                .window(window)
                .build()
                .unwrap();
            let done = Arc::new(AtomicU64::new(0));
            let (spawned, d) = (200u64, done.clone());
            let finished = rt
                .run(move |s| {
                    for i in 0..spawned {
                        let body_done = d.clone();
                        s.spawn("free", (), move |ctx, ()| {
                            // Its children go to its own domain and complete before it.
                            let inner = Arc::new(AtomicU64::new(0));
                            let c = inner.clone();
                            ctx.scope()
                                .spawn("child", (), move |_, ()| {
                                    c.fetch_add(1, Ordering::SeqCst);
                                })
                                .unwrap();
                            ctx.wait().unwrap();
                            assert_eq!(inner.load(Ordering::SeqCst), 1);
                            body_done.fetch_add(1, Ordering::SeqCst);
                        })
                        .unwrap();
                        // The root waits for room: at most `window` tasks besides
                        // itself are unfinished once a spawn returns.
                        let unfinished = i + 1 - d.load(Ordering::SeqCst);
                        assert!(unfinished <= window as u64, "{unfinished} tasks out");
                    }
                })
                .unwrap();
            assert_eq!(done.load(Ordering::SeqCst), spawned);
            assert_eq!(finished.report.tasks, 2 * spawned, "every task counted");

            // A child that panics fails the run; its sibling spawned after it is
            // refused.
            let late = Arc::new(std::sync::Mutex::new(None));
            let slot = late.clone();
            let refused = rt.run(move |s| {
                s.spawn("parent", (), move |ctx, ()| {
                    ctx.scope()
                        .spawn("fails", (), |_, ()| panic!("boom"))
                        .unwrap();
                    let _ = ctx.wait();
                    *slot.lock().unwrap() = Some(ctx.scope().spawn("late", (), |_, ()| {}));
                })
                .unwrap();
            });
            assert!(matches!(
                refused.unwrap_err().error(),
                locus::Error::TaskPanicked { .. }
            ));
            let late = late.lock().unwrap().take().expect("the parent ran");
            assert!(
                matches!(late, Err(locus::Error::RunFailed { .. })),
                "{late:?}"
            );
        }
    });
}

#[test]
fn a_root_over_the_window_lets_six_tasks_finish_before_it_submits_again() {
    // One worker: the root's thread runs every task, so what ran before each
    // submission is exactly what the root's helping ran.
    let rt = Runtime::builder()
        .topology(Topology::from_spec("1x1").unwrap())
        .window(16)
        .build()
        .unwrap();
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut seen = Vec::new();
    let f = rt
        .run(|s| {
            for _ in 0..64 {
                seen.push(ran.load(std::sync::atomic::Ordering::Relaxed));
                let ran = ran.clone();
                s.spawn("t", (), move |_, ()| {
                    ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                })
                .unwrap();
            }
        })
        .unwrap();
    assert_eq!(f.report.tasks, 64);
    // The first 16 submissions find room; the 17th finds the window full, and its
    // submitter runs tasks until six have room; then it submits six before the
    // window is full again.
    assert!(seen[..17].iter().all(|&n| n == 0), "{seen:?}");
    let steps: Vec<usize> = seen.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(steps[16..].iter().all(|&d| d == 0 || d == 6), "{seen:?}");
    assert_eq!(
        steps[16..].iter().filter(|&&d| d == 6).count(),
        (64 - 17) / 6 + 1,
        "{seen:?}"
    );
}
