//! Shared data: one buffer per datum, placed by a policy and updated in place
//! (`shm-base`, `Runtime::shared`): dependences without renaming, placement, metrics and
//! release.

use std::time::Duration;

use locus::{Affinity, Config, Error, RegionPolicy, Runtime, Topology};

const PAGE: usize = 4096;

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

/// Readers submitted before a writer see the contents before it, though they share the
/// writer's buffer: the writer waits for them (write after read), and for the previous
/// writer (write after write).
#[test]
fn writers_wait_for_earlier_readers_and_writers() {
    for spec in ["2x1", "4x1", "1x2"] {
        let rt = runtime(spec, Config::ShmBase);
        let x = rt.data::<u64>("x", 16);
        let rounds = 60;
        let readers = 4;
        let seen: Vec<_> = (0..rounds * readers)
            .map(|i| rt.data::<u64>(format!("seen{i}"), 1))
            .collect();
        rt.run(|s| {
            for r in 0..rounds {
                for k in 0..readers {
                    let out = &seen[r * readers + k];
                    s.spawn("read", (x.read(), out.write()), move |_, (x, out)| {
                        if k == 0 {
                            // A slow reader: a writer that did not wait would overtake it.
                            std::thread::sleep(Duration::from_micros(200));
                        }
                        assert!(x.iter().all(|&e| e == x[0]), "torn read");
                        out[0] = x[0];
                    })
                    .unwrap();
                }
                // Half the rounds overwrite without reading: ordering must still hold.
                if r % 2 == 0 {
                    s.spawn("bump", x.read_write(), |_, x| {
                        x.iter_mut().for_each(|e| *e += 1)
                    })
                    .unwrap();
                } else {
                    let value = r as u64 + 1;
                    s.spawn("set", x.write(), move |_, x| x.fill(value))
                        .unwrap();
                }
            }
        })
        .unwrap();
        let mut want = 0u64;
        for r in 0..rounds {
            for k in 0..readers {
                assert_eq!(
                    rt.fetch(&seen[r * readers + k]).unwrap(),
                    vec![want],
                    "{spec} round {r}"
                );
            }
            want = if r % 2 == 0 { want + 1 } else { r as u64 + 1 };
        }
        assert_eq!(rt.fetch(&x).unwrap(), vec![want; 16], "{spec}");
    }
}

/// Under `shm-base` every datum is shared, and a write updates its one buffer: no
/// version gets a buffer of its own and the pools stay unused.
#[test]
fn shm_base_updates_in_place_without_pool_memory() {
    let rt = runtime("2x1", Config::ShmBase);
    let x = rt.data_from("x", &[1u32; 1000]).unwrap();
    let r = rt
        .run(|s| {
            for _ in 0..20 {
                s.spawn("double", x.read_write(), |_, x| {
                    x.iter_mut().for_each(|e| *e *= 2)
                })
                .unwrap();
            }
        })
        .unwrap()
        .report;
    assert_eq!(rt.fetch(&x).unwrap(), vec![1 << 20; 1000]);
    assert_eq!(r.memory.allocations, 0);
    assert_eq!(r.memory.shared_peak_bytes, PAGE as u64);
    assert_eq!(r.settings.get("data"), Some("shared, interleave"));
}

/// Interleaved pages alternate between the nodes of a virtual `2x1` topology, so a
/// task writing a 64-page datum writes half its bytes locally, wherever it runs; the
/// metrics split one access by page.
#[test]
fn interleaved_accesses_count_by_page() {
    let rt = runtime("2x1", Config::ShmBase);
    let pages = 64;
    let x = rt.data::<u8>("x", pages * PAGE);
    let r = rt
        .run(|s| {
            s.spawn("fill", x.write(), |_, x| x.fill(3)).unwrap();
            s.spawn("sum", x.read_range(0..4 * PAGE), |_, x| {
                assert_eq!(
                    x.iter().map(|&b| u64::from(b)).sum::<u64>(),
                    3 * 4 * PAGE as u64
                )
            })
            .unwrap();
        })
        .unwrap()
        .report;
    let l = &r.locality;
    assert_eq!(l.write_local_bytes, (pages / 2 * PAGE) as u64);
    assert_eq!(l.write_remote_bytes, (pages / 2 * PAGE) as u64);
    assert_eq!(l.read_local_bytes + l.read_remote_bytes, (4 * PAGE) as u64);
    assert_eq!(l.read_local_bytes, (2 * PAGE) as u64);
    assert_eq!(
        r.memory.peak_bytes_per_node,
        vec![(pages / 2 * PAGE) as u64; 2]
    );
}

/// A datum bound to node 1 is local to tasks there and remote from node 0; blocked
/// placement puts each half on its node; first touch places pages where a task first
/// touches them.
#[test]
fn explicit_placements_decide_where_bytes_are() {
    for config in [Config::DsaBase, Config::Dfa, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let len = 8 * PAGE;
        let bound = rt
            .shared::<u8>("bound", len, RegionPolicy::Bind(1))
            .unwrap();
        let blocked = rt
            .shared::<u8>("blocked", len, RegionPolicy::Blocked)
            .unwrap();
        let touched = rt
            .shared::<u8>("touched", len, RegionPolicy::FirstTouch)
            .unwrap();
        let on = |node| Affinity::node(node).strict();
        let r = rt
            .run(|s| {
                s.task("w1", bound.write())
                    .affinity(on(1))
                    .spawn(|_, b| b.fill(1))
                    .unwrap();
                s.task("w0", bound.read_write())
                    .affinity(on(0))
                    .spawn(|_, b| b[0] = 2)
                    .unwrap();
                s.task("blocked", blocked.write())
                    .affinity(on(0))
                    .spawn(|_, b| b.fill(5))
                    .unwrap();
                s.task("touch", touched.write())
                    .affinity(on(1))
                    .spawn(|_, b| b.fill(9))
                    .unwrap();
                s.task("again", touched.write())
                    .affinity(on(0))
                    .spawn(|_, b| b[1] = 8)
                    .unwrap();
            })
            .unwrap()
            .report;
        let l = &r.locality;
        // bound: 8 pages local (w1), 8 remote read and 8 remote written (w0);
        // blocked: 4 local, 4 remote; touched: 8 local (first touch), then 8 remote.
        assert_eq!(
            l.write_local_bytes,
            (8 + 4 + 8) as u64 * PAGE as u64,
            "{config}"
        );
        assert_eq!(
            l.write_remote_bytes,
            (8 + 4 + 8) as u64 * PAGE as u64,
            "{config}"
        );
        assert_eq!(
            (l.read_local_bytes, l.read_remote_bytes),
            (0, len as u64),
            "{config}"
        );
        let b = rt.fetch(&bound).unwrap();
        assert_eq!((b[0], b[1]), (2, 1));
        let t = rt.fetch(&touched).unwrap();
        assert_eq!((t[0], t[1]), (9, 8));
    }
}

#[test]
fn bad_placements_and_panics_are_errors_and_free_everything() {
    let rt = runtime("2x1", Config::ShmBase);
    let err = rt.shared::<u8>("x", 10, RegionPolicy::Bind(2)).unwrap_err();
    assert!(err.to_string().contains("node 2 does not exist"), "{err}");
    {
        let x = rt.data::<u64>("x", 100_000);
        let y = rt
            .shared::<u64>("y", 1000, RegionPolicy::FirstTouch)
            .unwrap();
        assert!(rt.shared_bytes_in_use() > 0);
        let err = rt
            .run(|s| {
                s.spawn("touch", y.write(), |_, y| y.fill(1)).unwrap();
                for i in 0..20 {
                    s.spawn("work", (y.read(), x.read_write()), move |_, (_, x)| {
                        if i == 7 {
                            panic!("boom");
                        }
                        x[0] += 1;
                    })
                    .unwrap_or(());
                }
            })
            .unwrap_err();
        assert!(matches!(err.error, Error::TaskPanicked { .. }), "{err}");
    }
    assert_eq!(rt.shared_bytes_in_use(), 0);
    assert_eq!(rt.live_versions(), 0);
    assert_eq!(rt.pool_bytes_in_use(), 0);
}

/// Writes of shared data update it in place: the report counts no new version, where
/// the same program on versioned data counts one per write (a new version, or the
/// continuation of the version the write before it made).
#[test]
fn in_place_writes_create_no_versions() {
    for (config, want) in [(locus::Config::ShmBase, 0), (locus::Config::DsaOpt, 10)] {
        let rt = locus::Runtime::builder()
            .topology(locus::Topology::from_spec("2x1").unwrap())
            .config(config)
            .build()
            .unwrap();
        let x = rt.data::<u64>("x", 64);
        let report = rt
            .run(|s| {
                for _ in 0..10 {
                    s.spawn("bump", x.read_write(), |_, v| v[0] += 1).unwrap();
                }
            })
            .unwrap()
            .report;
        let v = &report.versions;
        assert_eq!(v.created + v.continued, want, "{config}");
        assert_eq!(rt.fetch(&x).unwrap()[0], 10, "{config}");
    }
}
