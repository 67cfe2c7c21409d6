//! Topology checks: the guest kernel shows the nodes, CPUs, memory and distances that
//! `run.sh` configured in QEMU, and Locus's host topology (`locus_topo::Topology::host`)
//! reads the same and derives its cost factors and distance classes from it.

use locus_topo::{CostOrigin, NodeId, Source, Topology};

use crate::expected::Expected;
use crate::report::Report;
use crate::sysfs;

/// Runs the topology checks.
pub fn run(report: &mut Report) {
    let expected = match Expected::from_env() {
        Ok(expected) => expected,
        Err(e) => {
            report.record("topology.expected", Err(e));
            return;
        }
    };
    report.record("topology.nodes", nodes(&expected));
    report.record("topology.cpus", cpus(&expected));
    report.record("topology.memory", memory(&expected));
    report.record("topology.distances", distances(&expected));
    match Topology::host() {
        Ok(host) => {
            report.record("topology.locus-topo", locus_topo_agrees(&host, &expected));
            report.record(
                "topology.locus-topo-costs",
                locus_topo_costs(&host, &expected),
            );
        }
        Err(e) => report.record("topology.locus-topo", Err(format!("Topology::host: {e}"))),
    }
}

fn nodes(expected: &Expected) -> Result<String, String> {
    let online = sysfs::online_nodes()?;
    let want: Vec<usize> = (0..expected.nodes).collect();
    if online == want {
        Ok(format!(
            "{} nodes online ({})",
            online.len(),
            sysfs::read("online")?
        ))
    } else {
        Err(format!("online nodes {online:?}, expected {want:?}"))
    }
}

fn cpus(expected: &Expected) -> Result<String, String> {
    let mut lists = Vec::new();
    for node in 0..expected.nodes {
        let got = sysfs::cpus_of(node)?;
        let want = expected.cpus_of(node);
        if got != want {
            return Err(format!("node {node} has CPUs {got:?}, expected {want:?}"));
        }
        lists.push(format!(
            "node{node}={}",
            sysfs::read(&format!("node{node}/cpulist"))?
        ));
    }
    Ok(format!(
        "{} CPUs per node: {}",
        expected.cpus_per_node,
        lists.join(" ")
    ))
}

fn memory(expected: &Expected) -> Result<String, String> {
    let configured_kib = expected.node_mib * 1024;
    let mut sizes = Vec::new();
    for node in 0..expected.nodes {
        let kib = sysfs::mem_total_kib(node)?;
        // The kernel keeps some of each node for itself (node 0 most), so MemTotal is
        // below the configured size; more than half of it must be there.
        if kib > configured_kib || kib < configured_kib / 2 {
            return Err(format!(
                "node {node} has MemTotal {kib} KiB, configured {configured_kib} KiB"
            ));
        }
        sizes.push(format!("node{node}={}MiB", kib / 1024));
    }
    Ok(format!("MemTotal {}", sizes.join(" ")))
}

fn distances(expected: &Expected) -> Result<String, String> {
    let mut rows = Vec::new();
    for node in 0..expected.nodes {
        let got = sysfs::distances_of(node)?;
        if got != expected.distances[node] {
            return Err(format!(
                "node {node} distances {got:?}, expected {:?}",
                expected.distances[node]
            ));
        }
        let row: Vec<String> = got.iter().map(u32::to_string).collect();
        rows.push(row.join(","));
    }
    Ok(format!("matrix {}", rows.join(" / ")))
}

/// `Topology::host` sees the nodes, CPUs, memory and distances that sysfs shows.
fn locus_topo_agrees(host: &Topology, expected: &Expected) -> Result<String, String> {
    if host.source() != Source::Sysfs || host.is_virtual() {
        return Err(format!(
            "source {:?}, virtual {}: expected the sysfs host",
            host.source(),
            host.is_virtual()
        ));
    }
    let cpus = expected.nodes * expected.cpus_per_node;
    if host.num_nodes() != expected.nodes || host.num_cpus() != cpus {
        return Err(format!(
            "{} nodes and {} CPUs, expected {} and {cpus}",
            host.num_nodes(),
            host.num_cpus(),
            expected.nodes
        ));
    }
    for (index, node) in host.nodes().iter().enumerate() {
        if node.id != NodeId(index as u32) || host.os_node(node.id) != Some(index as u32) {
            return Err(format!(
                "node {index} has id {} and OS node {:?}",
                node.id,
                host.os_node(node.id)
            ));
        }
        let os_cpus: Vec<Option<usize>> = node.cpus.iter().map(|&c| host.os_cpu(c)).collect();
        let sysfs_cpus: Vec<Option<usize>> = sysfs::cpus_of(index)?.into_iter().map(Some).collect();
        if os_cpus != sysfs_cpus {
            return Err(format!(
                "node {index}: locus-topo has OS CPUs {os_cpus:?}, sysfs {sysfs_cpus:?}"
            ));
        }
        if let Some(&cpu) = node.cpus.first() {
            if host.node_of_cpu(cpu) != node.id {
                return Err(format!("node_of_cpu({cpu}) is {}", host.node_of_cpu(cpu)));
            }
        }
        let sysfs_bytes = sysfs::mem_total_kib(index)? * 1024;
        if node.memory_bytes != sysfs_bytes {
            return Err(format!(
                "node {index}: locus-topo has {} B of memory, sysfs MemTotal {sysfs_bytes} B",
                node.memory_bytes
            ));
        }
    }
    for i in 0..expected.nodes {
        for j in 0..expected.nodes {
            let got = host.distance(NodeId(i as u32), NodeId(j as u32));
            if got != expected.distances[i][j] {
                return Err(format!(
                    "distance({i}, {j}) is {got}, expected {}",
                    expected.distances[i][j]
                ));
            }
        }
    }
    Ok(format!(
        "Topology::host: {} nodes, {} CPUs, OS CPUs, memory and all {} distances as in sysfs",
        host.num_nodes(),
        host.num_cpus(),
        expected.nodes * expected.nodes
    ))
}

/// Without HMAT the cost factors are distance ratios, and the distance classes seen
/// from each node follow the configured matrix.
fn locus_topo_costs(host: &Topology, expected: &Expected) -> Result<String, String> {
    if host.costs().origin != CostOrigin::DistanceRatio {
        return Err(format!(
            "cost origin {:?}, expected distance ratios (the guest has no HMAT)",
            host.costs().origin
        ));
    }
    let n = expected.nodes;
    let node = |i: usize| NodeId(i as u32);
    for i in 0..n {
        for j in 0..n {
            let want = f64::from(expected.distances[i][j]) / f64::from(expected.distances[i][i]);
            let (read, write) = (
                host.read_cost(node(i), node(j)),
                host.write_cost(node(i), node(j)),
            );
            if (read - want).abs() > 1e-9 || (write - want).abs() > 1e-9 {
                return Err(format!(
                    "cost({i}, {j}) read {read} write {write}, expected {want}"
                ));
            }
        }
        // The other nodes grouped by distance from `i`, nearest class first.
        let mut by_distance: Vec<(u32, usize)> = (0..n)
            .filter(|&j| j != i)
            .map(|j| (expected.distances[i][j], j))
            .collect();
        by_distance.sort();
        let mut want: Vec<Vec<NodeId>> = Vec::new();
        let mut last = None;
        for (d, j) in by_distance {
            if last != Some(d) {
                want.push(Vec::new());
                last = Some(d);
            }
            want.last_mut()
                .expect("a class was just pushed")
                .push(node(j));
        }
        let got = host.nodes_by_distance(node(i));
        if got != want {
            return Err(format!(
                "nodes_by_distance({i}) is {got:?}, expected {want:?}"
            ));
        }
    }
    let row: Vec<String> = (0..n)
        .map(|j| format!("{}", host.read_cost(node(0), node(j))))
        .collect();
    let classes: Vec<String> = host
        .nodes_by_distance(node(0))
        .iter()
        .map(|class| {
            class
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    Ok(format!(
        "read/write costs are distance ratios (node 0: {}), steal order from node 0: {}",
        row.join(" "),
        classes.join(" < ")
    ))
}
