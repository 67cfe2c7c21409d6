//! Text rendering of topologies: the full tables of `locus topo` and the compact
//! summaries of `locus demo`; the warning when a topology has more CPUs than the host.

use std::fmt::Write as _;

use locus_topo::{CostOrigin, CpuId, NodeId, Source, Topology};

/// Everything about a topology as readable tables; `free`, when given, is each node's
/// free memory (a "free" column; `None` for a node whose count could not be read).
pub fn full(t: &Topology, free: Option<&[Option<u64>]>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", headline(t));
    if t.source() == Source::VirtualOverHost {
        let _ = writeln!(
            out,
            "virtual nodes laid over the host's CPUs (workers pinned to the OS CPUs below)"
        );
    }
    let _ = writeln!(out, "cost factors: {}", origin(t.costs().origin));
    out.push('\n');

    let host = !t.is_virtual();
    let mut rows = vec![vec![
        "node".to_string(),
        if host { "os node" } else { "" }.to_string(),
        "cpus".to_string(),
        "os cpus".to_string(),
        "memory".to_string(),
    ]];
    if free.is_some() {
        rows[0].push("free".to_string());
    }
    for node in t.nodes() {
        let os_cpus: Vec<usize> = node.cpus.iter().filter_map(|&c| t.os_cpu(c)).collect();
        rows.push(vec![
            node.id.to_string(),
            t.os_node(node.id)
                .map(|n| n.to_string())
                .unwrap_or_default(),
            if node.cpus.is_empty() {
                "(memory only)".to_string()
            } else {
                ranges(node.cpus.iter().map(|c| c.index()))
            },
            if os_cpus.is_empty() {
                "-".to_string()
            } else {
                ranges(os_cpus.iter().copied())
            },
            memory(node.memory_bytes),
        ]);
        if let Some(free) = free {
            let bytes = free.get(node.id.index()).copied().flatten();
            let row = rows.last_mut().expect("a row was just pushed");
            row.push(bytes.map_or_else(|| "-".to_string(), free_memory));
        }
    }
    if !host {
        for row in &mut rows {
            row.remove(1);
        }
    }
    out.push_str(&table(&rows));
    out.push('\n');

    let groups = t.cache_groups();
    let _ = writeln!(
        out,
        "last-level cache groups ({}): {}",
        groups.len(),
        groups
            .iter()
            .map(|g| ranges(g.iter().map(|c| c.index())))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    out.push('\n');

    let n = t.num_nodes();
    let ids: Vec<NodeId> = (0..n as u32).map(NodeId).collect();
    let matrix = |title: &str, cell: &dyn Fn(NodeId, NodeId) -> String| {
        let mut rows = vec![std::iter::once(title.to_string())
            .chain(ids.iter().map(|j| j.to_string()))
            .collect::<Vec<_>>()];
        for &i in &ids {
            rows.push(
                std::iter::once(i.to_string())
                    .chain(ids.iter().map(|&j| cell(i, j)))
                    .collect(),
            );
        }
        table(&rows)
    };
    out.push_str("distance (10 = local)\n");
    out.push_str(&matrix("from\\to", &|i, j| t.distance(i, j).to_string()));
    out.push_str("\nread cost (a CPU on the row's node reads the column's memory; 1.00 = local)\n");
    out.push_str(&matrix("from\\to", &|i, j| {
        format!("{:.2}", t.read_cost(i, j))
    }));
    out.push_str("\nwrite cost (1.00 = local)\n");
    out.push_str(&matrix("from\\to", &|i, j| {
        format!("{:.2}", t.write_cost(i, j))
    }));
    out
}

/// A short summary, a few lines wide, for side-by-side display.
pub fn compact(t: &Topology) -> Vec<String> {
    let mut lines = vec![
        format!("{} ({})", t.name(), source(t.source())),
        format!(
            "{}, {}, {}",
            plural(t.num_nodes(), "node"),
            plural(t.num_cpus(), "CPU"),
            memory(t.total_memory_bytes())
        ),
    ];
    let first = &t.nodes()[0];
    let uniform = t
        .nodes()
        .iter()
        .all(|n| n.cpus.len() == first.cpus.len() && n.memory_bytes == first.memory_bytes);
    if uniform && t.num_nodes() > 1 {
        lines.push(format!(
            "each node: {} CPUs, {}",
            first.cpus.len(),
            memory(first.memory_bytes)
        ));
    } else {
        for node in t.nodes() {
            let os: Vec<usize> = node.cpus.iter().filter_map(|&c| t.os_cpu(c)).collect();
            let os = if os.is_empty() {
                String::new()
            } else {
                format!(" (os {})", ranges(os.into_iter()))
            };
            lines.push(format!(
                "{}: {} CPUs{os}, {}",
                node.id,
                node.cpus.len(),
                memory(node.memory_bytes)
            ));
        }
    }
    lines.push(format!("cache groups: {}", t.cache_groups().len()));
    lines.push(format!("costs: {}", origin(t.costs().origin)));
    lines.push("from n0, read/write (distance):".to_string());
    let classes = t.nodes_by_distance(NodeId(0));
    if classes.is_empty() {
        lines.push("  (no other node)".to_string());
    }
    for class in classes {
        let j = class[0];
        let names: Vec<String> = class.iter().map(NodeId::to_string).collect();
        lines.push(format!(
            "  {} {:.2}/{:.2} ({})",
            names.join(","),
            t.read_cost(NodeId(0), j),
            t.write_cost(NodeId(0), j),
            t.distance(NodeId(0), j)
        ));
    }
    lines
}

/// Two blocks of lines beside each other.
pub fn side_by_side(left: &[String], right: &[String]) -> String {
    let width = left.iter().map(|l| l.chars().count()).max().unwrap_or(0) + 4;
    let mut out = String::new();
    for k in 0..left.len().max(right.len()) {
        let l = left.get(k).map(String::as_str).unwrap_or("");
        let r = right.get(k).map(String::as_str).unwrap_or("");
        let _ = writeln!(out, "{}", format!("{l:<width$}{r}").trim_end());
    }
    out
}

/// What a machine is, in the words every table and figure of `locus bench` uses:
/// `host (1 real node, 2 CPUs)`, `2x1 (2 virtual nodes over 2 real CPUs)` on the
/// threads engine, `opteron-64 (simulated: 8 nodes, 64 CPUs)` in the simulator. Virtual
/// nodes are never called nodes alone: their memory is the host's.
pub fn machine(t: &Topology, simulated: bool) -> String {
    let nodes = t.num_nodes();
    let cpus = plural(t.num_cpus(), "CPU");
    if simulated {
        return format!(
            "{} (simulated: {}, {cpus})",
            t.name(),
            plural(nodes, "node")
        );
    }
    if !t.is_virtual() {
        return format!("{} ({}, {cpus})", t.name(), plural(nodes, "real node"));
    }
    let mut real: Vec<usize> = (0..t.num_cpus() as u32)
        .filter_map(|c| t.os_cpu(CpuId(c)))
        .collect();
    real.sort_unstable();
    real.dedup();
    let real = if real.is_empty() {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        real.len()
    };
    format!(
        "{} ({} over {})",
        t.name(),
        plural(nodes, "virtual node"),
        plural(real, "real CPU")
    )
}

/// Whether times measured on this machine can show locality: only in the simulator or
/// on two or more real nodes. On one real node, or on virtual nodes (whose memory is
/// all the host's), a configuration's time differs from another's by allocation and
/// scheduling cost, not by where its data lives.
pub fn times_show_locality(t: &Topology, simulated: bool) -> bool {
    simulated || (!t.is_virtual() && t.num_nodes() > 1)
}

/// How a topology laid over the host maps its CPUs to real ones, in one line.
pub fn virtual_mapping(t: &Topology) -> String {
    let mut real: Vec<usize> = (0..t.num_cpus() as u32)
        .filter_map(|c| t.os_cpu(CpuId(c)))
        .collect();
    let shown: Vec<String> = (0..t.num_cpus().min(4) as u32)
        .map(|c| {
            let os = t
                .os_cpu(CpuId(c))
                .map_or("-".to_string(), |o| o.to_string());
            format!("c{c}->cpu{os}")
        })
        .collect();
    real.sort_unstable();
    real.dedup();
    format!(
        "{} laid over this host: {} virtual CPUs on {} real CPUs ({}, ...); buffers and metrics use its {} virtual nodes",
        t.name(),
        t.num_cpus(),
        real.len(),
        shown.join(" "),
        t.num_nodes()
    )
}

/// The warning to print when the threads engine would run more workers than this host
/// has CPUs (virtual CPUs then share real ones, and times are not those of the modelled
/// machine); `None` when every worker has a CPU of its own.
pub fn oversubscribed(t: &Topology, threads: Option<usize>) -> Option<String> {
    let workers = threads.unwrap_or(t.num_cpus());
    let real = std::thread::available_parallelism().map_or(1, usize::from);
    (workers > real).then(|| {
        format!(
            "{workers} workers on {real} real CPUs ({}): workers share CPUs, so times measure this host's time-sharing, not the modelled machine; `locus sim` models it",
            t.name()
        )
    })
}

fn headline(t: &Topology) -> String {
    format!(
        "topology {} ({}): {}, {}, {}",
        t.name(),
        source(t.source()),
        plural(t.num_nodes(), "node"),
        plural(t.num_cpus(), "CPU"),
        memory(t.total_memory_bytes())
    )
}

fn source(s: Source) -> &'static str {
    match s {
        Source::Sysfs => "host, sysfs",
        Source::Hwloc => "host, hwloc",
        Source::Synthetic => "synthetic",
        Source::Preset => "preset",
        Source::VirtualOverHost => "virtual over host",
    }
}

fn origin(o: CostOrigin) -> &'static str {
    match o {
        CostOrigin::DistanceRatio => "distance ratios",
        CostOrigin::Hmat => "distance ratios scaled by HMAT latencies",
        CostOrigin::Measured => "measured (paper 1, Tables 1-2)",
        CostOrigin::Documented => "from Tilera's published latencies, partly estimated",
    }
}

/// `1 node`, `8 nodes`.
pub fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `0-3,8,10-11`.
/// A duration as minutes and seconds: `4m05s`.
pub fn clock(d: std::time::Duration) -> String {
    let s = d.as_secs();
    format!("{}m{:02}s", s / 60, s % 60)
}

fn ranges(items: impl Iterator<Item = usize>) -> String {
    let mut v: Vec<usize> = items.collect();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut k = 0;
    while k < v.len() {
        let start = v[k];
        while k + 1 < v.len() && v[k + 1] == v[k] + 1 {
            k += 1;
        }
        parts.push(if v[k] == start {
            start.to_string()
        } else {
            format!("{start}-{}", v[k])
        });
        k += 1;
    }
    parts.join(",")
}

fn memory(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    match bytes {
        0 => "memory unknown".to_string(),
        b if b as f64 >= GIB => format!("{:.1} GiB", b as f64 / GIB),
        b => format!("{:.0} MiB", b as f64 / MIB),
    }
}

/// Free memory: as [`memory`], but 0 is none free, not unknown.
fn free_memory(bytes: u64) -> String {
    match bytes {
        0 => "0 MiB".to_string(),
        b => memory(b),
    }
}

/// Left-aligned first column, right-aligned others, two spaces apart.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let w = widths[c];
            if c == 0 {
                let _ = write!(line, "{cell:<w$}");
            } else {
                let _ = write!(line, "  {cell:>w$}");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ranges() {
        assert_eq!(ranges([0, 1, 2, 3, 8, 10, 11].into_iter()), "0-3,8,10-11");
        assert_eq!(ranges(std::iter::empty()), "");
    }

    #[test]
    fn more_workers_than_cpus_is_named() {
        let t = Topology::from_spec("1x1").unwrap();
        assert_eq!(oversubscribed(&t, None), None);
        let w = oversubscribed(&t, Some(100_000)).unwrap();
        assert!(w.starts_with("100000 workers on "), "{w}");
    }

    #[test]
    fn memory_sizes() {
        assert_eq!(memory(0), "memory unknown");
        assert_eq!(memory(8 << 30), "8.0 GiB");
        assert_eq!(memory(512 << 20), "512 MiB");
        assert_eq!(free_memory(0), "0 MiB");
        assert_eq!(free_memory(3 << 29), "1.5 GiB");
    }
}
