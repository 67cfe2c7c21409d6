//! The optional host backend over hwloc (cargo feature `hwloc`).
//!
//! It reads the same things as the sysfs backend, through hwloc: NUMA nodes (by OS
//! index), their memory, the PUs of each node, the OS-provided latency matrix
//! (`NUMALatency`) and last-level cache groups, restricted to the CPUs this process may
//! run on. A PU belongs to the NUMA node with the smallest CPU set containing it (ties:
//! the lowest OS index), so a memory-only node attached to a package keeps no CPUs, as
//! in sysfs. Cost factors are distance ratios; HMAT latencies are read by the sysfs
//! backend only.

use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::distance::DistancesKind;
use hwlocality::object::types::ObjectType;
use hwlocality::object::TopologyObject;

use crate::error::TopoError;
use crate::topology::{Parts, Source, Topology};

fn cpus_of(obj: &TopologyObject) -> Vec<usize> {
    obj.cpuset()
        .map(|set| set.iter_set().map(usize::from).collect())
        .unwrap_or_default()
}

impl Topology {
    /// The host, read through hwloc, restricted to the CPUs this process may run on.
    /// It must describe the same machine as [`Topology::host`].
    pub fn host_hwloc() -> Result<Topology, TopoError> {
        let allowed = crate::allowed_cpus()?;
        let hw = hwlocality::Topology::new().map_err(|e| TopoError::Hwloc(e.to_string()))?;

        let mut numa: Vec<&TopologyObject> = hw.objects_with_type(ObjectType::NUMANode).collect();
        numa.sort_by_key(|o| o.os_index());
        let os_nodes: Vec<u32> = numa
            .iter()
            .map(|o| o.os_index().unwrap_or(0) as u32)
            .collect();
        let node_sets: Vec<Vec<usize>> = numa.iter().map(|o| cpus_of(o)).collect();

        // Each allowed PU goes to the smallest node CPU set containing it.
        let mut node_cpus: Vec<Vec<usize>> = vec![Vec::new(); numa.len()];
        for pu in hw.objects_with_type(ObjectType::PU) {
            let Some(os) = pu.os_index() else { continue };
            if allowed.binary_search(&os).is_err() {
                continue;
            }
            let home = (0..numa.len())
                .filter(|&i| node_sets[i].binary_search(&os).is_ok())
                .min_by_key(|&i| (node_sets[i].len(), os_nodes[i]));
            if let Some(i) = home {
                node_cpus[i].push(os);
            }
        }
        if node_cpus.iter().all(Vec::is_empty) {
            return Err(TopoError::NoAllowedCpus);
        }

        let memory: Vec<u64> = numa
            .iter()
            .map(|o| match o.attributes() {
                Some(ObjectAttributes::NUMANode(attr)) => {
                    attr.local_memory().map_or(0, |m| m.get())
                }
                _ => 0,
            })
            .collect();

        let n = numa.len();
        let mut distances: Vec<Vec<u32>> = (0..n)
            .map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect())
            .collect();
        let matrices = hw
            .distances_with_type(Some(DistancesKind::MEANS_LATENCY), ObjectType::NUMANode)
            .map_err(|e| TopoError::Hwloc(e.to_string()))?;
        if let Some(matrix) = matrices.first() {
            let index: Vec<Option<usize>> = matrix
                .objects()
                .map(|o| {
                    let os = o?.os_index()? as u32;
                    os_nodes.iter().position(|&x| x == os)
                })
                .collect();
            for ((a, b), d) in matrix.enumerate_distances() {
                if let (Some(Some(i)), Some(Some(j))) = (index.get(a), index.get(b)) {
                    distances[*i][*j] = u32::try_from(d).unwrap_or(u32::MAX);
                }
            }
        }

        // Last-level cache: the highest data or unified cache above each PU.
        let mut cache_groups: Vec<Vec<usize>> = Vec::new();
        for pu in hw.objects_with_type(ObjectType::PU) {
            let llc = pu
                .ancestors()
                .filter(|a| a.object_type().is_cpu_data_cache())
                .last();
            if let Some(cache) = llc {
                let group = cpus_of(cache);
                if !cache_groups.contains(&group) {
                    cache_groups.push(group);
                }
            }
        }

        Topology::build(Parts {
            name: "host".to_string(),
            source: Source::Hwloc,
            node_cpus,
            pinned: true,
            memory,
            os_nodes: Some(os_nodes),
            cache_groups: Some(cache_groups),
            distances,
            costs: None,
        })
    }
}
