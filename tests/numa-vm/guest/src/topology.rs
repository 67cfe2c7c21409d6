//! Topology checks: the guest kernel shows the nodes, CPUs, memory and distances that
//! `run.sh` configured in QEMU.

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
