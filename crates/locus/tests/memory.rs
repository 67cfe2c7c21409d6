//! The memory API on virtual nodes: cost queries, migrating shared and versioned data
//! now and on next touch, registering a user's vector.

use locus::{Affinity, Error, RegionPolicy, Runtime, Topology};

const PAGE: usize = 4096;

fn runtime(spec: &str) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .build()
        .unwrap()
}

#[test]
fn costs_follow_the_topology() {
    let rt = Runtime::builder()
        .topology(Topology::from_spec("opteron-16").unwrap())
        .threads(4)
        .build()
        .unwrap();
    // Paper 2, Table 3: 83 ns local, 98 ns neighbour, 117 ns opposite, per line.
    assert!((rt.read_cost(64, 0, 0).unwrap() - 83.0).abs() < 1e-9);
    assert!((rt.read_cost(640, 1, 0).unwrap() - 10.0 * 83.0 * 1.18).abs() < 1e-6);
    assert!((rt.write_cost(64, 2, 0).unwrap() - 142.0 * 1.46).abs() < 1e-6);
    // MaMI: 120 us + 11 us per page.
    assert_eq!(rt.migration_cost(2 * PAGE as u64), 142_000.0);
    assert_eq!(rt.migration_cost(0), 0.0);
    for bad in [rt.read_cost(1, 4, 0), rt.write_cost(1, 0, 9)] {
        assert!(matches!(bad, Err(Error::Config(m)) if m.contains("does not exist")));
    }
}

#[test]
fn migrate_moves_every_page_of_a_shared_datum_and_keeps_its_contents() {
    let rt = runtime("4x1");
    let v = rt
        .shared_from::<u64>(
            "v",
            &(0..8 * 512).collect::<Vec<u64>>(),
            RegionPolicy::Interleave,
        )
        .unwrap();
    assert_eq!(rt.bytes_per_node(&v).unwrap(), vec![2 * PAGE as u64; 4]);
    let moved = rt.migrate(&v, 2).unwrap();
    assert_eq!((moved.pages, moved.bytes), (6, 6 * PAGE as u64));
    assert_eq!(
        rt.bytes_per_node(&v).unwrap(),
        vec![0, 0, 8 * PAGE as u64, 0]
    );
    assert_eq!(rt.node_of(&v).unwrap(), Some(2));
    assert_eq!(rt.migrate(&v, 2).unwrap().pages, 0, "nothing left to move");
    // By range: elements 0..600 are on pages 0 and 1.
    assert_eq!(rt.migrate_range(&v, 0..600, 1).unwrap().pages, 2);
    assert_eq!(
        rt.bytes_per_node(&v).unwrap(),
        vec![0, 2 * PAGE as u64, 6 * PAGE as u64, 0]
    );
    assert_eq!(rt.migrated().now.pages, 8);
    assert_eq!(rt.fetch(&v).unwrap(), (0..8 * 512).collect::<Vec<u64>>());
    // Tasks see the datum where it now is: a strict task on node 2 reads it locally.
    let f = rt
        .run(|s| {
            s.task("sum", v.read_range(1024..8 * 512))
                .affinity(Affinity::node(2).strict())
                .spawn(|_, x| assert_eq!(x[0], 1024))
                .unwrap();
        })
        .unwrap();
    assert_eq!(f.report.locality.read_remote_bytes, 0);
    assert!(f.report.locality.read_local_bytes > 0);
}

#[test]
fn next_touch_moves_pages_to_their_first_declared_toucher() {
    let rt = runtime("4x1");
    let v = rt
        .shared::<u64>("v", 8 * 512, RegionPolicy::Bind(0))
        .unwrap();
    assert_eq!(rt.migrate_on_next_touch(&v).unwrap(), 8);
    // Armed pages stay where they are until touched.
    assert_eq!(
        rt.bytes_per_node(&v).unwrap(),
        vec![8 * PAGE as u64, 0, 0, 0]
    );
    rt.run(|s| {
        // Pages 0-3 to node 3, pages 4-5 to node 1; 6-7 are not touched.
        s.task("first", v.read_range(0..4 * 512))
            .affinity(Affinity::node(3).strict())
            .spawn(|_, _| {})
            .unwrap();
        s.task("second", v.read_range(4 * 512..6 * 512))
            .affinity(Affinity::node(1).strict())
            .spawn(|_, _| {})
            .unwrap();
    })
    .unwrap();
    let p = PAGE as u64;
    assert_eq!(rt.bytes_per_node(&v).unwrap(), vec![2 * p, 2 * p, 0, 4 * p]);
    assert_eq!(rt.migrated().next_touch.pages, 6);
    // Touched pages are disarmed: a later toucher elsewhere moves nothing, and the
    // untouched pages still move on their first touch.
    rt.run(|s| {
        s.task("later", v.read())
            .affinity(Affinity::node(2).strict())
            .spawn(|_, _| {})
            .unwrap();
    })
    .unwrap();
    assert_eq!(rt.bytes_per_node(&v).unwrap(), vec![0, 2 * p, 2 * p, 4 * p]);
    assert_eq!(rt.migrated().next_touch.pages, 8);
}

#[test]
fn versioned_data_migrates_by_renaming() {
    let rt = runtime("4x1");
    let values: Vec<u32> = (0..3000).collect();
    let v = rt.data_from("v", &values).unwrap();
    let home = rt.node_of(&v).unwrap().unwrap();
    let target = (home + 1) % 4;
    let moved = rt.migrate(&v, target).unwrap();
    assert_eq!(moved.pages, 3);
    assert_eq!(rt.node_of(&v).unwrap(), Some(target));
    assert_eq!(rt.fetch(&v).unwrap(), values);
    assert_eq!(rt.migrate(&v, target).unwrap().pages, 0);
    assert!(rt.migrate_range(&v, 0..10, home).is_err());
    let err = rt.migrate_on_next_touch(&v).unwrap_err();
    assert!(err.to_string().contains("versioned"), "{err}");
    // Never written: nothing to move.
    let empty = rt.data::<u32>("empty", 100);
    assert_eq!(rt.migrate(&empty, 1).unwrap().pages, 0);
}

#[test]
fn a_registered_vector_is_not_copied_and_keeps_its_pages() {
    let rt = runtime("4x1");
    let values: Vec<u64> = (0..10_000).collect();
    let at = values.as_ptr() as usize;
    let data = rt.register("user", values).unwrap();
    // On virtual nodes the pages count on worker 0's node, where they were made.
    let home = rt.worker_nodes()[0];
    let per_node = rt.bytes_per_node(&data).unwrap();
    assert!(per_node[home] >= 80_000 && per_node.iter().sum::<u64>() == per_node[home]);
    rt.run(|s| {
        s.task("bump", data.read_write())
            .affinity(Affinity::node((home + 1) % 4).strict())
            .spawn(move |_, x| {
                assert_eq!(x.as_ptr() as usize, at, "the vector's own memory");
                x[9_999] += 1;
            })
            .unwrap();
    })
    .unwrap();
    assert_eq!(
        rt.bytes_per_node(&data).unwrap(),
        per_node,
        "a touch does not move its pages"
    );
    let back = rt.fetch(&data).unwrap();
    assert_eq!((back[0], back[9_999]), (0, 10_000));
    // A registered datum migrates like any shared one.
    assert!(rt.migrate(&data, (home + 2) % 4).unwrap().pages >= 20);
    drop(data);
    assert_eq!(rt.shared_bytes_in_use(), 0);
}

#[test]
fn bad_requests_are_errors() {
    let rt = std::sync::Arc::new(runtime("4x1"));
    let other = runtime("4x1");
    let v = rt.shared::<u8>("v", PAGE, RegionPolicy::Bind(0)).unwrap();
    let foreign = other
        .shared::<u8>("f", PAGE, RegionPolicy::Bind(0))
        .unwrap();
    assert!(matches!(rt.migrate(&v, 4), Err(Error::Config(m)) if m.contains("node 4")));
    assert!(matches!(
        rt.migrate(&foreign, 1),
        Err(Error::ForeignData { .. })
    ));
    assert!(matches!(
        rt.migrate_on_next_touch(&foreign),
        Err(Error::ForeignData { .. })
    ));
    assert!(rt.migrate_range(&v, 0..PAGE + 1, 1).is_err());
    // From inside a task.
    let (rt_ref, v2) = (rt.clone(), v.clone());
    rt.run(|s| {
        s.spawn("inside", (), move |_, ()| {
            let e = rt_ref.migrate(&v2, 1).unwrap_err();
            assert!(matches!(e, Error::Declaration { .. }), "{e}");
        })
        .unwrap();
    })
    .unwrap();
    // While another thread runs a program on the runtime.
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let rt = &rt;
        scope.spawn(move || {
            rt.run(|s| {
                s.spawn("hold", (), move |_, ()| {
                    started_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                })
                .unwrap();
            })
            .unwrap();
        });
        started_rx.recv().unwrap();
        let e = rt.migrate(&v, 1).unwrap_err();
        assert!(e.to_string().contains("run is in progress"), "{e}");
        release_tx.send(()).unwrap();
    });
    assert_eq!(rt.migrate(&v, 1).unwrap().pages, 1);
}

#[test]
fn concurrent_touchers_move_each_armed_page_once() {
    let rt = runtime("4x1");
    let v = rt
        .shared::<u64>("v", 64 * 512, RegionPolicy::Bind(0))
        .unwrap();
    assert_eq!(rt.migrate_on_next_touch(&v).unwrap(), 64);
    rt.run(|s| {
        for t in 0..24 {
            // Overlapping ranges from nodes 1, 2 and 3, all reading at once.
            let start = (t * 512 * 5) % (48 * 512);
            s.task("reader", v.read_range(start..start + 16 * 512))
                .affinity(Affinity::node(1 + t % 3).strict())
                .spawn(|_, _| {})
                .unwrap();
        }
        s.task("rest", v.read())
            .affinity(Affinity::node(3).strict())
            .spawn(|_, _| {})
            .unwrap();
    })
    .unwrap();
    let per_node = rt.bytes_per_node(&v).unwrap();
    assert_eq!(per_node[0], 0, "{per_node:?}");
    assert_eq!(per_node.iter().sum::<u64>(), 64 * PAGE as u64);
    assert_eq!(rt.migrated().next_touch.pages, 64);
    assert_eq!(rt.shared_bytes_in_use(), 64 * PAGE as u64);
}

/// Partitioned data live in segments and an open reduction in private copies: moving
/// "the" buffer of either would move nothing meaningful, so both are refused.
#[test]
fn partitioned_data_and_open_reductions_are_not_migrated() {
    let rt = locus::Runtime::builder()
        .topology(locus::Topology::from_spec("2x1").unwrap())
        .build()
        .unwrap();
    let whole = rt.data_from("whole", &[1u64; 64]).unwrap();
    let parts = rt.partition(&whole, locus::Partition::blocks(16)).unwrap();
    for (what, data) in [("whole", &whole), ("part", parts.get(0).unwrap())] {
        let err = rt.migrate(data, 1).unwrap_err().to_string();
        assert!(err.contains("partitioned"), "{what}: {err}");
    }
    let total = rt.data_from("total", &[0u64]).unwrap();
    rt.run(|s| {
        s.spawn("add", total.reduce(0, |a, b| *a += b), |_, t| t[0] += 5)
            .unwrap();
    })
    .unwrap();
    let err = rt.migrate(&total, 1).unwrap_err().to_string();
    assert!(err.contains("reduction in progress"), "{err}");
    assert_eq!(rt.fetch(&total).unwrap(), vec![5]);
    rt.migrate(&total, 1).unwrap();
    assert_eq!(rt.node_of(&total).unwrap(), Some(1));
}

#[test]
fn free_memory_under_a_node_limit_is_the_limit_minus_what_locus_holds() {
    const LIMIT: u64 = 1 << 20;
    let rt = Runtime::builder()
        .topology(Topology::from_spec("4x1").unwrap())
        .node_limit(LIMIT)
        .build()
        .unwrap();
    assert_eq!(rt.free_memory(0).unwrap(), LIMIT);
    // Shared data: its pages where they are placed.
    let v = rt
        .shared::<u64>("v", 8 * 512, RegionPolicy::Interleave)
        .unwrap();
    for node in 0..4 {
        assert_eq!(rt.free_memory(node).unwrap(), LIMIT - 2 * PAGE as u64);
    }
    rt.migrate(&v, 3).unwrap();
    assert_eq!(rt.free_memory(3).unwrap(), LIMIT - 8 * PAGE as u64);
    assert_eq!(rt.free_memory(1).unwrap(), LIMIT);
    // A versioned datum: its pool block, on the node it is migrated to.
    let x = rt.data_from::<u8>("x", &[7; 3 * PAGE]).unwrap();
    rt.migrate(&x, 1).unwrap();
    let block = rt.pools().stats()[1].in_use;
    assert!(block >= 3 * PAGE as u64, "{block}");
    assert_eq!(rt.free_memory(1).unwrap(), LIMIT - block);
    drop((v, x));
    assert_eq!(rt.free_memory(3).unwrap(), LIMIT);
    assert_eq!(rt.free_memory(1).unwrap(), LIMIT);
    assert!(
        matches!(rt.free_memory(4), Err(Error::Config(m)) if m.contains("node 4 does not exist"))
    );
}

#[test]
fn free_memory_without_a_limit_is_a_share_of_the_host() {
    let rt = runtime("4x1");
    let share = rt.topology().nodes()[2].memory_bytes;
    let free = rt.free_memory(2).unwrap();
    assert!(free > 0 && free <= share, "{free} of {share}");
    // Never more than the node's memory minus what Locus holds there.
    let v = rt
        .shared::<u8>("v", 64 * PAGE, RegionPolicy::Bind(2))
        .unwrap();
    assert!(rt.free_memory(2).unwrap() <= share - 64 * PAGE as u64);
    drop(v);
    assert!(rt.free_memory(9).is_err());
}

#[test]
fn free_memory_of_the_host_nodes_is_the_kernels() {
    let rt = Runtime::builder().threads(1).build().unwrap();
    for node in 0..rt.topology().num_nodes() {
        let free = rt.free_memory(node).unwrap();
        let size = rt.topology().nodes()[node].memory_bytes;
        assert!(free <= size, "node {node}: {free} free of {size}");
    }
    let nodes = rt.topology().num_nodes();
    assert!(rt.free_memory(nodes).is_err());
}
