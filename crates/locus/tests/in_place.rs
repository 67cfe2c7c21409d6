//! Update in place: a read-write that is the only holder of the version it reads takes
//! over its buffer instead of copying it into a new one (`data::version`, "Update in
//! place"); one with other holders renames.

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
fn a_chain_of_read_writes_updates_in_place_without_allocating() {
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
        assert_eq!(r.versions.created, STEPS, "{config}");
        assert_eq!(r.versions.in_place, STEPS, "{config}");
        assert_eq!(r.memory.allocations, 0, "{config}: no buffer made");
        assert_eq!(
            r.memory.peak_bytes, bytes,
            "{config}: one buffer at any time"
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
        assert_eq!(f.report.versions.in_place, STEPS, "{config}");
        assert_eq!(f.report.memory.allocations, 0, "{config}");
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
        // Every step either took the buffer over or made one on its own node.
        assert_eq!(
            r.versions.in_place + r.memory.allocations,
            STEPS,
            "{config}"
        );
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

#[test]
fn a_part_updated_in_place_by_a_task_that_panicked_is_poisoned() {
    for config in VERSIONED {
        let rt = runtime("1x1", config);
        let x = rt.data_from("x", &[1u64; LEN]).unwrap();
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
        // The other part reads as before; the poisoned one is refused, through the
        // part and through the whole.
        rt.run(|s| s.spawn("other", parts[1].read(), |_, _| {}).unwrap())
            .unwrap();
        for refused in [
            rt.run(|s| s.spawn("part", parts[0].read(), |_, _| {})),
            rt.run(|s| s.spawn("whole", x.read(), |_, _| {})),
        ] {
            let err = refused.unwrap_err().error;
            assert!(
                err.to_string().contains("partly written"),
                "{config}: {err}"
            );
        }
        assert!(
            matches!(rt.fetch(&x), Err(locus::Error::Poisoned { .. })),
            "{config}"
        );
        // Writing the part whole heals it.
        rt.run(|s| s.spawn("heal", parts[0].write(), |_, v| v.fill(3)).unwrap())
            .unwrap();
        let whole = rt.fetch(&x).unwrap();
        assert_eq!((whole[0], whole[LEN - 1]), (3, 1), "{config}");
    }
}
