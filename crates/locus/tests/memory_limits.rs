//! Node limits over task buffers and shared data together, and the pools giving cached
//! memory back between runs.

use locus::{Config, Error, RegionPolicy, Runtime, Topology};

const PAGE: u64 = 4096;

fn runtime(config: Config, limit: Option<u64>) -> Runtime {
    let mut b = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .config(config);
    if let Some(limit) = limit {
        b = b.node_limit(limit);
    }
    b.build().unwrap()
}

fn reserved(rt: &Runtime) -> Vec<u64> {
    rt.pools().stats().iter().map(|s| s.reserved).collect()
}

fn in_use(rt: &Runtime) -> Vec<u64> {
    rt.pools().stats().iter().map(|s| s.in_use).collect()
}

#[test]
fn versioned_and_shared_data_share_each_nodes_limit() {
    let limit = 16 * PAGE;
    let rt = runtime(Config::DsaOpt, Some(limit));
    let grid = rt
        .shared::<u8>("grid", limit as usize, RegionPolicy::Bind(0))
        .unwrap();
    assert_eq!(reserved(&rt), vec![limit, 0]);
    // Node 0 is full of shared pages: a buffer asked of it falls back to node 1.
    let v = rt.data_from::<u32>("v", &[1; 256]).unwrap();
    assert_eq!(in_use(&rt), vec![0, 1024]);
    // So does shared data bound to node 0.
    let more = rt
        .shared::<u8>("more", PAGE as usize, RegionPolicy::Bind(0))
        .unwrap();
    assert_eq!(reserved(&rt), vec![limit, PAGE]);
    // What fits nowhere is refused, naming the datum.
    match rt.shared::<u8>("huge", limit as usize, RegionPolicy::Bind(1)) {
        Err(Error::OutOfMemory { task, .. }) => assert_eq!(task, "shared datum `huge`"),
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    assert_eq!(reserved(&rt), vec![limit, PAGE]);
    // Tasks still run within what is left, on both kinds of data.
    rt.run(|s| {
        s.spawn("double", v.read_write(), |_, v| {
            v.iter_mut().for_each(|x| *x *= 2)
        })
        .unwrap();
        s.spawn("fill", grid.write(), |_, g| g.fill(3)).unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&v).unwrap(), vec![2; 256]);
    assert!(rt.fetch(&grid).unwrap().iter().all(|&x| x == 3));
    for s in rt.pools().stats() {
        assert!(s.in_use + s.reserved <= limit, "{s:?}");
    }
    drop((grid, more, v));
    assert_eq!(reserved(&rt), vec![0, 0]);
    assert_eq!(rt.shared_bytes_in_use(), 0);
}

#[test]
fn a_limit_of_zero_refuses_shared_and_versioned_data() {
    // Versioned: the task's buffer fits nowhere.
    let rt = runtime(Config::DsaOpt, Some(0));
    let x = rt.data::<u64>("x", 8);
    let e = rt
        .run(|s| s.spawn("w", x.write(), |_, x| x.fill(1)).unwrap())
        .unwrap_err();
    assert!(matches!(e.error, Error::OutOfMemory { .. }), "{e:?}");
    // Shared, explicitly: refused at creation.
    let e = rt
        .shared::<u64>("s", 8, RegionPolicy::Interleave)
        .unwrap_err();
    assert!(matches!(&e, Error::OutOfMemory { task, .. } if task == "shared datum `s`"));
    assert!(e.to_string().contains("node limit"), "{e}");
    // Shared by the configuration (`shm-base`): every task declaring the datum is
    // refused with the reason.
    let rt = runtime(Config::ShmBase, Some(0));
    let y = rt.data::<u64>("y", 8);
    let e = rt
        .run(|s| s.spawn("w", y.write(), |_, y| y.fill(1)))
        .unwrap_err();
    let message = e.error.to_string();
    assert!(
        message.contains("shared datum `y`") && message.contains("node limit"),
        "{message}"
    );
    assert_eq!(reserved(&rt), vec![0, 0]);
}

#[test]
fn a_run_gives_back_the_cached_memory_its_peak_did_not_need() {
    // One worker, so that every buffer comes from node 0's pool whichever task runs.
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .threads(1)
        .build()
        .unwrap();
    let total = |f: fn(&locus_mem::pool::NodeStats) -> u64| -> u64 {
        rt.pools().stats().iter().map(f).sum()
    };
    // A large run: 32 buffers of 1 MiB alive at once.
    let big: Vec<_> = (0..32)
        .map(|i| rt.data::<u8>(format!("b{i}"), 1 << 20))
        .collect();
    rt.run(|s| {
        for b in &big {
            s.spawn("fill", b.write(), |_, b| b.fill(1)).unwrap();
        }
    })
    .unwrap();
    drop(big);
    assert_eq!(total(|s| s.in_use), 0);
    let after_big = total(|s| s.os_bytes);
    assert!(after_big >= 32 << 20, "{after_big}");

    // Small runs: one 4 KiB buffer each.
    let small_run = || {
        let d = rt.data::<u8>("small", 4096);
        rt.run(|s| s.spawn("fill", d.write(), |_, d| d.fill(2)).unwrap())
            .unwrap();
        assert_eq!(rt.fetch(&d).unwrap(), vec![2; 4096]);
    };
    small_run();
    let stats = rt.pools().stats();
    // Every node keeps less than its peak plus one chunk of the one class it used
    // (about 2 MiB), instead of the 32 MiB of the large run.
    for s in &stats {
        assert!(s.cached < s.peak + (2 << 20) + 4096, "{s:?}");
        assert!(s.os_bytes <= (2 << 20) + 2 * PAGE * 64, "{s:?}");
    }
    assert!(stats.iter().map(|s| s.released_chunks).sum::<u64>() >= 32);
    // More small runs reuse what is kept: nothing is mapped or given back any more.
    small_run();
    let again = rt.pools().stats();
    for (a, s) in again.iter().zip(&stats) {
        assert_eq!((a.chunks, a.released_chunks), (s.chunks, s.released_chunks));
    }
}
