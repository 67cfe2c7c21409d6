//! The sysfs backend on the fixture trees under `tests/fixtures/` (see its README).

use std::path::PathBuf;

use locus_topo::{CostOrigin, CpuId, NodeId, Source, SysfsReader, TopoError};

const GIB: u64 = 1 << 30;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn cpus(ids: &[u32]) -> Vec<CpuId> {
    ids.iter().map(|&c| CpuId(c)).collect()
}

#[test]
fn four_nodes_with_a_memory_only_node() {
    let t = SysfsReader::new(fixture("four-node")).read().unwrap();
    assert_eq!(t.source(), Source::Sysfs);
    assert!(!t.is_virtual());
    assert_eq!((t.num_nodes(), t.num_cpus()), (4, 12));
    let os_nodes: Vec<Option<u32>> = (0..4).map(|n| t.os_node(NodeId(n))).collect();
    assert_eq!(os_nodes, [Some(0), Some(1), Some(2), Some(4)]);

    let nodes = t.nodes();
    assert_eq!(nodes[0].cpus, cpus(&[0, 1, 2, 3]));
    assert_eq!(nodes[1].cpus, cpus(&[4, 5, 6, 7]));
    assert_eq!(nodes[2].cpus, cpus(&[8, 9, 10, 11]));
    assert!(nodes[3].cpus.is_empty(), "node 4 has memory only");
    let memory: Vec<u64> = nodes.iter().map(|n| n.memory_bytes).collect();
    assert_eq!(memory, [8 * GIB, 8 * GIB, 4 * GIB, 16 * GIB]);

    // Node 2's CPUs are OS CPUs 8, 9, 12, 13.
    let os: Vec<Option<usize>> = (8..12).map(|c| t.os_cpu(CpuId(c))).collect();
    assert_eq!(os, [Some(8), Some(9), Some(12), Some(13)]);
    assert_eq!(t.node_of_cpu(CpuId(10)), NodeId(2));

    assert_eq!(
        t.distances(),
        [
            vec![10, 16, 22, 20],
            vec![16, 10, 22, 20],
            vec![22, 22, 10, 28],
            vec![20, 20, 28, 10]
        ]
    );
    assert_eq!(
        t.nodes_by_distance(NodeId(0)),
        [vec![NodeId(1)], vec![NodeId(3)], vec![NodeId(2)]]
    );

    // L3 groups 0-1, 2-3, 4-7; node 2 has no cache information: one group.
    assert_eq!(
        t.cache_groups(),
        [
            cpus(&[0, 1]),
            cpus(&[2, 3]),
            cpus(&[4, 5, 6, 7]),
            cpus(&[8, 9, 10, 11])
        ]
    );
}

#[test]
fn hmat_latencies_scale_distance_ratios() {
    let t = SysfsReader::new(fixture("four-node")).read().unwrap();
    assert_eq!(t.costs().origin, CostOrigin::Hmat);
    let (n0, n1, n3) = (NodeId(0), NodeId(1), NodeId(3));
    assert_eq!(t.read_cost(n0, n0), 1.0);
    assert_eq!(t.read_cost(n0, n1), 1.6); // DRAM to DRAM: distance ratio
    assert_eq!(t.write_cost(n0, n1), 1.6);
    // Node 4 (index 3): distance ratio 2.0, read latency 250 vs 100, write 360 vs 120;
    // access1 wins over access0.
    assert_eq!(t.read_cost(n0, n3), 5.0);
    assert_eq!(t.write_cost(n0, n3), 6.0);
}

#[test]
fn allowed_cpus_restrict_the_nodes() {
    let t = SysfsReader::new(fixture("four-node"))
        .allowed_cpus(Some(vec![13, 0, 1, 8]))
        .read()
        .unwrap();
    assert_eq!((t.num_nodes(), t.num_cpus()), (4, 4));
    assert_eq!(t.nodes()[0].cpus, cpus(&[0, 1]));
    assert!(t.nodes()[1].cpus.is_empty());
    assert_eq!(t.nodes()[2].cpus, cpus(&[2, 3]));
    assert_eq!(t.os_cpu(CpuId(3)), Some(13));
    assert_eq!(t.cache_groups(), [cpus(&[0, 1]), cpus(&[2, 3])]);

    let none = SysfsReader::new(fixture("four-node"))
        .allowed_cpus(Some(vec![100]))
        .read();
    assert!(matches!(none, Err(TopoError::NoAllowedCpus)));
}

#[test]
fn one_node() {
    let t = SysfsReader::new(fixture("one-node")).read().unwrap();
    assert_eq!((t.num_nodes(), t.num_cpus()), (1, 2));
    assert_eq!(t.nodes()[0].memory_bytes, 2 * GIB);
    assert_eq!(t.distance(NodeId(0), NodeId(0)), 10);
    assert_eq!(t.read_cost(NodeId(0), NodeId(0)), 1.0);
    assert_eq!(t.costs().origin, CostOrigin::DistanceRatio);
    assert_eq!(t.cache_groups(), [cpus(&[0, 1])]);
    assert!(t.nodes_by_distance(NodeId(0)).is_empty());
}

#[test]
fn no_numa_information_is_one_node() {
    let t = SysfsReader::new(fixture("no-numa")).read().unwrap();
    assert_eq!((t.num_nodes(), t.num_cpus()), (1, 4));
    assert_eq!(t.nodes()[0].memory_bytes, 4 * GIB);
    assert_eq!(t.os_node(NodeId(0)), Some(0));
    assert_eq!(t.os_cpu(CpuId(3)), Some(3));
    assert_eq!(t.cache_groups(), [cpus(&[0, 1, 2, 3])]);
}

#[test]
fn an_empty_tree_is_an_error_not_a_panic() {
    let err = SysfsReader::new(fixture("does-not-exist"))
        .read()
        .unwrap_err();
    assert!(err.to_string().contains("cannot read"), "{err}");
}

#[test]
fn the_host_can_be_read() {
    let t = locus_topo::Topology::host().unwrap();
    assert!(t.num_nodes() >= 1);
    assert_eq!(t.num_cpus(), locus_topo::allowed_cpus().unwrap().len());
    for c in 0..t.num_cpus() {
        assert!(t.os_cpu(CpuId(c as u32)).is_some());
    }
}

#[test]
fn free_memory_per_node_and_in_total() {
    let four = SysfsReader::new(fixture("four-node"));
    // Nodes by their kernel numbers (0, 1, 2 and 4).
    assert_eq!(four.free_memory(0).unwrap(), 1 << 20);
    assert_eq!(four.free_memory(2).unwrap(), 2 << 20);
    assert_eq!(four.free_memory(4).unwrap(), 1 << 20);
    assert_eq!(four.total_free_memory().unwrap(), 5 << 20);
    assert!(matches!(four.free_memory(3), Err(TopoError::Io { .. })));

    // A machine without NUMA information: node 0 is the machine.
    let flat = SysfsReader::new(fixture("no-numa"));
    assert_eq!(flat.free_memory(0).unwrap(), GIB);
    assert_eq!(flat.total_free_memory().unwrap(), GIB);
    let err = flat.free_memory(1).unwrap_err();
    assert!(matches!(err, TopoError::Io { .. }), "{err}");
    assert!(err.to_string().contains("node1"), "{err}");

    // A meminfo without MemFree: an error naming the file.
    let err = SysfsReader::new(fixture("one-node"))
        .free_memory(0)
        .unwrap_err();
    assert!(matches!(err, TopoError::Parse { .. }), "{err}");
    assert!(err.to_string().contains("MemFree"), "{err}");
}
