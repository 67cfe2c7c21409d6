//! Both host backends describe the same machine (only with the `hwloc` feature).
#![cfg(feature = "hwloc")]

use locus_topo::{CostOrigin, Source, Topology};

#[test]
fn sysfs_and_hwloc_agree_on_the_host() {
    let sysfs = Topology::host().unwrap();
    let hwloc = Topology::host_hwloc().unwrap();
    assert_eq!(sysfs.source(), Source::Sysfs);
    assert_eq!(hwloc.source(), Source::Hwloc);
    assert_eq!(sysfs.num_nodes(), hwloc.num_nodes());
    assert_eq!(sysfs.num_cpus(), hwloc.num_cpus());
    for (a, b) in sysfs.nodes().iter().zip(hwloc.nodes()) {
        assert_eq!(a.id, b.id);
        assert_eq!(a.cpus, b.cpus, "CPUs of {}", a.id);
        // The kernel may grow or shrink memory between the two reads (ballooning);
        // the sizes must agree within 5%.
        let (x, y) = (a.memory_bytes as f64, b.memory_bytes as f64);
        assert!(
            (x - y).abs() <= 0.05 * x.max(y),
            "memory of {}: {x} vs {y}",
            a.id
        );
    }
    for c in 0..sysfs.num_cpus() as u32 {
        let c = locus_topo::CpuId(c);
        assert_eq!(sysfs.os_cpu(c), hwloc.os_cpu(c));
    }
    for n in 0..sysfs.num_nodes() as u32 {
        let n = locus_topo::NodeId(n);
        assert_eq!(sysfs.os_node(n), hwloc.os_node(n));
    }
    assert_eq!(sysfs.distances(), hwloc.distances());
    assert_eq!(sysfs.cache_groups(), hwloc.cache_groups());
    if sysfs.costs().origin == CostOrigin::DistanceRatio {
        assert_eq!(sysfs.costs().read, hwloc.costs().read);
        assert_eq!(sysfs.costs().write, hwloc.costs().write);
    }
}
