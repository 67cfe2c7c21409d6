//! Virtual nodes: models laid over real CPUs.

use std::path::PathBuf;

use locus_topo::{CpuId, NodeId, Source, SysfsReader, Topology};

fn one_node_host() -> Topology {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/one-node");
    SysfsReader::new(root).read().unwrap()
}

#[test]
fn more_virtual_cpus_than_real_ones_go_round_robin() {
    let host = one_node_host();
    let t = Topology::from_spec("4x2")
        .unwrap()
        .laid_over(&host)
        .unwrap();
    assert_eq!(t.source(), Source::VirtualOverHost);
    assert!(t.is_virtual());
    assert_eq!((t.num_nodes(), t.num_cpus()), (4, 8));
    let pinned: Vec<Option<usize>> = (0..8).map(|c| t.os_cpu(CpuId(c))).collect();
    assert_eq!(
        pinned,
        [0, 1, 0, 1, 0, 1, 0, 1].map(Some),
        "virtual CPU i runs on real CPU i % 2"
    );
    // Nodes, distances and costs stay the model's.
    assert_eq!(t.node_of_cpu(CpuId(5)), NodeId(2));
    assert_eq!(t.distance(NodeId(0), NodeId(3)), 20);
    assert_eq!(t.os_node(NodeId(0)), None);
    // The host's 2 GiB are shared among the virtual nodes.
    assert!(t.nodes().iter().all(|n| n.memory_bytes == (2u64 << 30) / 4));
}

#[test]
fn presets_keep_their_factors_over_the_host() {
    let t = Topology::preset("sgi-uv2000")
        .unwrap()
        .laid_over(&one_node_host())
        .unwrap();
    assert_eq!(t.num_cpus(), 192);
    assert_eq!(t.read_cost(NodeId(0), NodeId(23)), 7.48);
    assert_eq!(t.os_cpu(CpuId(191)), Some(1));
    // Preset memory sizes are kept.
    assert_eq!(t.total_memory_bytes(), 756 << 30);
}

#[test]
fn laid_over_the_real_host() {
    let host_cpus = locus_topo::allowed_cpus().unwrap();
    let t = Topology::from_spec("2x3")
        .unwrap()
        .laid_over_host()
        .unwrap();
    for c in 0..6 {
        let real = t.os_cpu(CpuId(c)).unwrap();
        assert_eq!(real, host_cpus[c as usize % host_cpus.len()]);
    }
    // Laying over twice, or laying the host over itself, changes nothing.
    let again = t.clone().laid_over_host().unwrap();
    assert_eq!(again.os_cpu(CpuId(5)), t.os_cpu(CpuId(5)));
    let host = Topology::host().unwrap();
    assert!(!host.clone().laid_over_host().unwrap().is_virtual());
}

#[test]
fn pure_models_are_not_pinned() {
    let t = Topology::preset("opteron-64").unwrap();
    assert!(t.is_virtual());
    assert_eq!(t.os_cpu(CpuId(0)), None);
}
