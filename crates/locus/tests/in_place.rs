//! Update in place: a read-write that is the only holder of the version it reads takes
//! over its buffer instead of copying it into a new one (`data::version`, "Update in
//! place"); one with other holders renames. Either way the task copies the previous
//! contents once (into its new buffer, or into a copy kept until its body has run to
//! its end, for a failure to put back), so each allocates one block.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use locus::{Config, Runtime, Topology};

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

const VERSIONED: [Config; 4] = [Config::Ws, Config::DsaBase, Config::Dfa, Config::DsaOpt];
const STEPS: u64 = 100;
const LEN: usize = 1024;

#[test]
fn a_chain_of_read_writes_updates_in_place_with_one_copy_each() {
    for config in VERSIONED {
        // One node: the buffer is always on the executing worker's node.
        let rt = runtime("1x2", config);
        let x = rt.data_from("x", &[1u64; LEN]).unwrap();
        let bytes = (LEN * 8) as u64;
        let f = rt
            .run(|s| {
                for _ in 0..STEPS {
                    s.spawn("step", x.read_write(), |_, v| {
                        v.iter_mut().for_each(|e| *e += 1)
                    })
                    .unwrap();
                }
            })
            .unwrap();
        let r = &f.report;
        // A step either continues the version of the step before it (that step had
        // not finished when it was submitted), or makes one that takes over the
        // buffer of the one it supersedes: in place either way.
        assert_eq!(r.versions.created + r.versions.continued, STEPS, "{config}");
        assert_eq!(r.versions.in_place, r.versions.created, "{config}");
        assert_eq!(r.memory.allocations, STEPS, "{config}: one copy per step");
        assert_eq!(
            r.memory.peak_bytes,
            2 * bytes,
            "{config}: the buffer and one copy at any time"
        );
        assert_eq!(rt.pool_bytes_in_use(), bytes, "{config}");
        assert_eq!(rt.fetch(&x).unwrap(), vec![1 + STEPS; LEN], "{config}");
        assert_eq!(rt.live_versions(), 1, "{config}");
    }
}

#[test]
fn under_immediate_allocation_the_node_does_not_matter() {
    for config in [Config::Ws, Config::DsaBase] {
        let rt = runtime("2x1", config);
        let x = rt.data_from("x", &[0u32; LEN]).unwrap();
        let f = rt
            .run(|s| {
                for k in 0..STEPS as u32 {
                    s.spawn("step", x.read_write(), move |_, v| v[0] += k)
                        .unwrap();
                }
            })
            .unwrap();
        // A step that continued the version of the step before it (data::version,
        // "Chains of read-writes") updates it in place too, wherever it runs.
        let v = &f.report.versions;
        assert_eq!(v.in_place + v.continued, STEPS, "{config}");
        assert_eq!(f.report.memory.allocations, STEPS, "{config}");
        assert_eq!(
            rt.fetch(&x).unwrap()[0],
            (0..STEPS as u32).sum(),
            "{config}"
        );
    }
}

#[test]
fn under_deferred_allocation_a_buffer_on_another_node_is_renamed() {
    for config in [Config::Dfa, Config::DsaOpt] {
        let rt = runtime("2x1", config);
        let x = rt.data_from("x", &[0u32; LEN]).unwrap();
        let f = rt
            .run(|s| {
                for k in 0..STEPS as u32 {
                    s.spawn("step", x.read_write(), move |_, v| v[0] += k)
                        .unwrap();
                }
            })
            .unwrap();
        let r = &f.report;
        // Every step either took the buffer over or made one on its own node, and
        // allocated once either way (the copy, or the new buffer).
        assert!(r.versions.in_place <= STEPS, "{config}");
        assert_eq!(r.memory.allocations, STEPS, "{config}");
        assert_eq!(
            r.locality.write_remote_bytes, 0,
            "{config}: every write local"
        );
        assert_eq!(
            rt.fetch(&x).unwrap()[0],
            (0..STEPS as u32).sum(),
            "{config}"
        );
    }
}

#[test]
fn a_read_write_with_a_pending_reader_renames() {
    for config in VERSIONED {
        let rt = runtime("1x2", config);
        let x = rt.data_from("x", &[1u64; LEN]).unwrap();
        let seen = rt.data::<u64>("seen", LEN);
        let bumped = Arc::new(AtomicBool::new(false));
        let (b1, b2) = (bumped.clone(), bumped.clone());
        let f = rt
            .run(|s| {
                // Holds the initial version until `bump` has started (or a while has
                // passed): `bump` is then not its only holder.
                s.spawn("read", (x.read(), seen.write()), move |_, (x, seen)| {
                    for _ in 0..10_000_000 {
                        if b1.load(Ordering::Acquire) {
                            break;
                        }
                        std::thread::yield_now();
                    }
                    seen.copy_from_slice(x);
                })
                .unwrap();
                s.spawn("bump", x.read_write(), move |_, v| {
                    b2.store(true, Ordering::Release);
                    v.iter_mut().for_each(|e| *e += 1)
                })
                .unwrap();
            })
            .unwrap();
        let r = &f.report;
        assert!(bumped.load(Ordering::Acquire));
        // `read` waited for `bump` to start, so `bump` copied into a new buffer.
        assert_eq!(r.versions.in_place, 0, "{config}");
        assert_eq!(
            r.memory.allocations, 2,
            "{config}: `seen` and `bump`'s copy"
        );
        assert_eq!(rt.fetch(&seen).unwrap(), vec![1; LEN], "{config}");
        assert_eq!(rt.fetch(&x).unwrap(), vec![2; LEN], "{config}");
    }
}

#[test]
fn nested_tasks_and_partitions_update_in_place() {
    for config in VERSIONED {
        let rt = runtime("1x2", config);
        let x = rt.data_from("x", &[0u64; LEN]).unwrap();
        let parts = rt.partition(&x, locus::Partition::blocks(LEN / 4)).unwrap();
        let f = rt
            .run(|s| {
                for (i, p) in parts.iter().enumerate() {
                    let p2 = p.clone();
                    s.spawn("parent", p.weak_read_write(), move |ctx, ()| {
                        for _ in 0..10 {
                            ctx.scope()
                                .spawn("child", p2.read_write(), move |_, v| {
                                    v.iter_mut().for_each(|e| *e += i as u64 + 1)
                                })
                                .unwrap();
                        }
                    })
                    .unwrap();
                }
            })
            .unwrap();
        // Each part's first child reads the version its parent holds too; the nine
        // after it update in place.
        assert_eq!(f.report.versions.in_place, 4 * 9, "{config}");
        let got = rt.fetch(&x).unwrap();
        for (i, chunk) in got.chunks(LEN / 4).enumerate() {
            assert!(chunk.iter().all(|&e| e == 10 * (i as u64 + 1)), "{config}");
        }
    }
}

/// A part updated in place by a task that fails keeps its contents (it used to be
/// poisoned), and so does a segment that a failed read-write of the whole, through a
/// gathered copy, would have written back (it used to poison the whole datum).
#[test]
fn parts_and_gathered_views_of_a_task_that_panicked_keep_their_contents() {
    for config in VERSIONED {
        for round in 0..4u64 {
            let rt = runtime("1x1", config);
            let x = rt.data_from("x", &[round; LEN]).unwrap();
            let parts = rt.partition(&x, locus::Partition::blocks(LEN / 2)).unwrap();
            let err = rt
                .run(|s| {
                    s.spawn("partial", parts[0].read_write(), |_, v| {
                        v[0] = 7;
                        panic!("half-way");
                    })
                    .unwrap();
                })
                .unwrap_err();
            assert_eq!(err.report.versions.in_place, 1, "{config}");
            assert_eq!(rt.fetch(&x).unwrap(), vec![round; LEN], "{config}");
            // The whole covers both segments: its view is gathered.
            let err = rt
                .run(|s| {
                    s.spawn("step", parts[1].read_write(), |_, v| v.fill(9))
                        .unwrap();
                    s.spawn("whole", x.read_write(), |_, v| {
                        v.fill(7);
                        panic!("gathered");
                    })
                    .unwrap();
                })
                .unwrap_err();
            assert!(err.error.to_string().contains("gathered"), "{config}");
            let whole = rt.fetch(&x).unwrap();
            assert_eq!((whole[0], whole[LEN - 1]), (round, 9), "{config}");
            // Both parts are readable and writable as before.
            for part in &parts {
                rt.run(|s| {
                    s.spawn("bump", part.read_write(), |_, v| v[0] += 1)
                        .unwrap()
                })
                .unwrap();
            }
            let whole = rt.fetch(&x).unwrap();
            assert_eq!((whole[0], whole[LEN / 2]), (round + 1, 10), "{config}");
        }
    }
}

/// A chain of read-writes continues one version (`data::version`, "Chains of
/// read-writes"): each step runs after the one before it, in submission order, on any
/// worker, and a reader between two steps sees the step before it. The steps do not
/// commute (`x = 3x + k`), so an order other than submission's changes the result.
#[test]
fn a_chain_continuing_one_version_runs_in_submission_order() {
    const N: u64 = 2000;
    let step = |x: u64, k: u64| x.wrapping_mul(3).wrapping_add(k);
    for spec in ["1x2", "2x1", "1x1"] {
        for config in VERSIONED {
            let rt = runtime(spec, config);
            let x = rt.data_from("x", &[1u64; 16]).unwrap();
            let seen = rt.data::<u64>("seen", 1);
            let f = rt
                .run(|s| {
                    for k in 0..N {
                        s.spawn("step", x.read_write(), move |_, v| {
                            v.iter_mut().for_each(|e| *e = step(*e, k))
                        })
                        .unwrap();
                        if k == N / 2 {
                            // Ends one chain: the next step makes a version.
                            s.spawn("look", (x.read(), seen.write()), |_, (x, s)| s[0] = x[15])
                                .unwrap();
                        }
                    }
                })
                .unwrap();
            let want = (0..N).fold(1u64, step);
            let half = (0..=N / 2).fold(1u64, step);
            assert_eq!(rt.fetch(&x).unwrap(), vec![want; 16], "{spec} {config}");
            assert_eq!(rt.fetch(&seen).unwrap(), vec![half], "{spec} {config}");
            let v = &f.report.versions;
            // Every step made a version or continued one; `look` made one of `seen`.
            assert_eq!(v.created + v.continued, N + 1, "{spec} {config}");
            assert!(v.created >= 3, "{spec} {config}: the reader ends a chain");
            if spec == "1x1" {
                // One worker runs nothing until the root submitted everything: every
                // step but the first of each chain continues.
                assert_eq!(v.continued, N - 2, "{spec} {config}");
            }
            assert_eq!(rt.live_versions(), 2, "{spec} {config}");
        }
    }
}

/// Read-writes of one datum submitted at once from several workers (two control
/// tasks spawning into the run's scope, and the root) take their turns one after the
/// other: none is lost, none runs twice, and every version is freed.
#[test]
fn read_writes_submitted_from_several_workers_take_their_turns() {
    const EACH: u64 = 3000;
    for config in VERSIONED {
        let rt = runtime("1x2", config);
        let x = rt.data::<u64>("x", 4);
        let f = rt
            .run(|s| {
                for _ in 0..2 {
                    let x = x.clone();
                    s.spawn_control("submitter", (), move |ctx| {
                        for _ in 0..EACH {
                            ctx.scope()
                                .spawn("bump", x.read_write(), |_, v| v[0] += 1)
                                .unwrap();
                        }
                    })
                    .unwrap();
                }
                for _ in 0..EACH {
                    s.spawn("bump", x.read_write(), |_, v| v[1] += 1).unwrap();
                }
            })
            .unwrap();
        assert_eq!(
            rt.fetch(&x).unwrap(),
            vec![2 * EACH, EACH, 0, 0],
            "{config}"
        );
        assert_eq!(f.report.tasks, 3 * EACH + 2, "{config}");
        let v = &f.report.versions;
        assert_eq!(v.created + v.continued, 3 * EACH, "{config}");
        // The current version alone is left: one buffer.
        assert_eq!(rt.live_versions(), 1, "{config}");
        assert_eq!(rt.pool_bytes_in_use(), 64, "{config}: one smallest block");
    }
}
