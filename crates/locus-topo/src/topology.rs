//! [`Topology`]: nodes, their CPUs and memory, cache groups and the cost matrix.
//!
//! Every constructor ends in [`Topology::build`], which validates the parts once, so
//! the accessors can index without checks and never panic on a topology that exists.

use std::cmp::Ordering;

use serde::{Serialize, Serializer};

use crate::error::TopoError;
use crate::ids::{CpuId, NodeId};
use crate::memcost::MemoryCosts;

/// Largest number of nodes a topology may have.
pub const MAX_NODES: usize = 1024;
/// Largest number of CPUs a topology may have.
pub const MAX_CPUS: usize = 1 << 16;

/// One NUMA node: its CPUs (possibly none, for a memory-only node) and its memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Node {
    /// The node's index.
    pub id: NodeId,
    /// The node's CPUs, ascending.
    pub cpus: Vec<CpuId>,
    /// Memory attached to the node, in bytes (0 when unknown, as for a pure model).
    pub memory_bytes: u64,
}

/// Where a topology comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The host, read from Linux sysfs.
    Sysfs,
    /// The host, read through hwloc (cargo feature `hwloc`).
    Hwloc,
    /// A synthetic spec (`NxC`, `NxC:d,...`).
    Synthetic,
    /// A named preset of a published machine.
    Preset,
    /// A synthetic spec or preset laid over the host's CPUs (virtual nodes).
    VirtualOverHost,
}

/// Where the read and write cost factors come from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CostOrigin {
    /// `distance(i, j) / distance(i, i)`, the same for reads and writes.
    DistanceRatio,
    /// Distance ratios scaled by the firmware's HMAT read and write latencies.
    Hmat,
    /// Factors measured on a real machine (the presets of paper 1, Tables 1-2).
    Measured,
    /// Factors derived from the vendor's published latencies, partly estimated (the
    /// `tilepro64` preset).
    Documented,
}

/// The relative cost for a CPU on node `i` to read, and to write, memory on node `j`.
///
/// 1.0 is a local access; `read[i][j]` is the factor for node `i` reading node `j`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CostMatrix {
    /// Read factors, row = accessing node, column = memory node.
    pub read: Vec<Vec<f64>>,
    /// Write factors, row = accessing node, column = memory node.
    pub write: Vec<Vec<f64>>,
    /// Where the factors come from.
    pub origin: CostOrigin,
}

impl CostMatrix {
    /// Factors derived from distances: `distance(i, j) / distance(i, i)` for reads and writes.
    #[must_use]
    pub fn from_distances(distances: &[Vec<u32>]) -> CostMatrix {
        let ratios: Vec<Vec<f64>> = distances
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let local = f64::from(row.get(i).copied().unwrap_or(1).max(1));
                row.iter().map(|&d| f64::from(d) / local).collect()
            })
            .collect();
        CostMatrix {
            read: ratios.clone(),
            write: ratios,
            origin: CostOrigin::DistanceRatio,
        }
    }
}

/// A machine model: NUMA nodes with their CPUs and memory, cache groups, distances and
/// read/write cost factors.
///
/// Nodes and CPUs are numbered densely from 0 ([`NodeId`], [`CpuId`]); the CPUs of a
/// node are consecutive. Build one from the host ([`Topology::host`]), a spec
/// ([`Topology::from_spec`]) or a preset ([`Topology::preset`]).
///
/// ```
/// use locus_topo::{NodeId, Topology};
///
/// let t = Topology::from_spec("4x2").unwrap();
/// assert_eq!((t.num_nodes(), t.num_cpus()), (4, 8));
/// assert_eq!(t.distance(NodeId(0), NodeId(1)), 20);
/// assert_eq!(t.read_cost(NodeId(0), NodeId(1)), 2.0);
/// ```
#[derive(Clone, Debug)]
pub struct Topology {
    name: String,
    source: Source,
    nodes: Vec<Node>,
    cpu_node: Vec<NodeId>,
    os_cpus: Option<Vec<usize>>,
    os_nodes: Option<Vec<u32>>,
    cache_groups: Vec<Vec<CpuId>>,
    distances: Vec<Vec<u32>>,
    costs: CostMatrix,
    memory_costs: MemoryCosts,
}

/// The unvalidated parts of a topology, as backends and parsers produce them.
#[derive(Clone, Debug)]
pub(crate) struct Parts {
    pub name: String,
    pub source: Source,
    /// Per node, labels of its CPUs: OS CPU numbers when `pinned`, else any unique numbers.
    pub node_cpus: Vec<Vec<usize>>,
    /// Whether the CPU labels are OS CPU numbers that workers can be pinned to.
    pub pinned: bool,
    pub memory: Vec<u64>,
    pub os_nodes: Option<Vec<u32>>,
    /// Groups of CPU labels sharing a last-level cache; `None`: one group per node.
    pub cache_groups: Option<Vec<Vec<usize>>>,
    pub distances: Vec<Vec<u32>>,
    /// Measured or HMAT factors; `None`: distance ratios.
    pub costs: Option<CostMatrix>,
}

impl Topology {
    /// Validates `parts` and builds the topology.
    pub(crate) fn build(parts: Parts) -> Result<Topology, TopoError> {
        let n = parts.node_cpus.len();
        if n == 0 {
            return Err(TopoError::NoNodes);
        }
        if n > MAX_NODES {
            return Err(TopoError::TooLarge {
                what: "the number of nodes",
                value: n,
                limit: MAX_NODES,
            });
        }
        validate_distances(&parts.distances, n)?;
        let total: usize = parts.node_cpus.iter().map(Vec::len).sum();
        if total == 0 {
            return Err(TopoError::NoCpus);
        }
        if total > MAX_CPUS {
            return Err(TopoError::TooLarge {
                what: "the number of CPUs",
                value: total,
                limit: MAX_CPUS,
            });
        }
        if parts.memory.len() != n {
            return Err(TopoError::InconsistentCpus(format!(
                "{} nodes but {} memory sizes",
                n,
                parts.memory.len()
            )));
        }
        if let Some(os_nodes) = &parts.os_nodes {
            if os_nodes.len() != n {
                return Err(TopoError::InconsistentCpus(format!(
                    "{} nodes but {} OS node numbers",
                    n,
                    os_nodes.len()
                )));
            }
        }

        // Number CPUs node by node, each node's labels ascending.
        let mut labels: Vec<(usize, CpuId)> = Vec::with_capacity(total);
        let mut nodes = Vec::with_capacity(n);
        let mut cpu_node = Vec::with_capacity(total);
        let mut os_cpus = Vec::with_capacity(total);
        for (i, cpus) in parts.node_cpus.iter().enumerate() {
            let mut sorted = cpus.clone();
            sorted.sort_unstable();
            let mut ids = Vec::with_capacity(sorted.len());
            for label in sorted {
                let id = CpuId(cpu_node.len() as u32);
                cpu_node.push(NodeId(i as u32));
                os_cpus.push(label);
                labels.push((label, id));
                ids.push(id);
            }
            nodes.push(Node {
                id: NodeId(i as u32),
                cpus: ids,
                memory_bytes: parts.memory[i],
            });
        }
        labels.sort_unstable();
        if let Some(w) = labels.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(TopoError::InconsistentCpus(format!(
                "CPU {} belongs to two nodes",
                w[0].0
            )));
        }
        let lookup = |label: usize| -> Option<CpuId> {
            labels
                .binary_search_by(|(l, _)| l.cmp(&label))
                .ok()
                .map(|k| labels[k].1)
        };

        // Cache groups: each CPU in exactly one group, groups never span nodes.
        let mut group_of: Vec<Option<usize>> = vec![None; total];
        let mut groups: Vec<Vec<CpuId>> = Vec::new();
        for group in parts.cache_groups.iter().flatten() {
            // Split the group by node, keeping only CPUs of this topology.
            let mut by_node: Vec<(NodeId, Vec<CpuId>)> = Vec::new();
            for &label in group {
                let Some(cpu) = lookup(label) else { continue };
                if group_of[cpu.index()].is_some() {
                    continue;
                }
                let node = cpu_node[cpu.index()];
                match by_node.iter_mut().find(|(nd, _)| *nd == node) {
                    Some((_, cpus)) => cpus.push(cpu),
                    None => by_node.push((node, vec![cpu])),
                }
            }
            for (_, mut cpus) in by_node {
                cpus.sort_unstable();
                cpus.dedup();
                for &c in &cpus {
                    group_of[c.index()] = Some(groups.len());
                }
                groups.push(cpus);
            }
        }
        for node in &nodes {
            let rest: Vec<CpuId> = node
                .cpus
                .iter()
                .copied()
                .filter(|c| group_of[c.index()].is_none())
                .collect();
            if !rest.is_empty() {
                groups.push(rest);
            }
        }
        groups.sort_unstable_by_key(|g| g[0]);

        let costs = match parts.costs {
            Some(costs) => {
                validate_factors(&costs.read, n, "read")?;
                validate_factors(&costs.write, n, "write")?;
                costs
            }
            None => CostMatrix::from_distances(&parts.distances),
        };

        Ok(Topology {
            name: parts.name,
            source: parts.source,
            nodes,
            cpu_node,
            os_cpus: parts.pinned.then_some(os_cpus),
            os_nodes: parts.os_nodes,
            cache_groups: groups,
            distances: parts.distances,
            costs,
            memory_costs: MemoryCosts::default(),
        })
    }

    /// The topology's name: `host`, the spec it was parsed from, or the preset name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the topology comes from.
    #[must_use]
    pub fn source(&self) -> Source {
        self.source
    }

    /// Number of nodes, including memory-only nodes.
    #[must_use]
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Number of CPUs.
    #[must_use]
    pub fn num_cpus(&self) -> usize {
        self.cpu_node.len()
    }

    /// The nodes, indexed by [`NodeId::index`].
    #[must_use]
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node of a CPU. A CPU outside the topology is folded onto
    /// `cpu % num_cpus` rather than panicking.
    #[must_use]
    pub fn node_of_cpu(&self, cpu: CpuId) -> NodeId {
        self.cpu_node[cpu.index() % self.cpu_node.len()]
    }

    /// The OS CPU number a worker for `cpu` should be pinned to: the CPU itself for a
    /// host topology, the mapped real CPU for one [laid over the host](Topology::laid_over_host),
    /// `None` for a pure model (a synthetic spec or preset) or a CPU outside the topology.
    #[must_use]
    pub fn os_cpu(&self, cpu: CpuId) -> Option<usize> {
        self.os_cpus.as_ref()?.get(cpu.index()).copied()
    }

    /// The OS (kernel) number of a node, for memory binding; `None` when the nodes are
    /// not the host's real nodes.
    #[must_use]
    pub fn os_node(&self, node: NodeId) -> Option<u32> {
        self.os_nodes.as_ref()?.get(node.index()).copied()
    }

    /// `true` when the nodes are not the host's real nodes (a synthetic spec or preset,
    /// laid over the host or not); memory must then not be bound to them.
    #[must_use]
    pub fn is_virtual(&self) -> bool {
        !matches!(self.source, Source::Sysfs | Source::Hwloc)
    }

    /// The raw distance between two nodes (ACPI SLIT style: 10 is local).
    ///
    /// # Panics
    /// If a node is outside the topology.
    #[must_use]
    pub fn distance(&self, from: NodeId, to: NodeId) -> u32 {
        self.distances[from.index()][to.index()]
    }

    /// The full distance matrix, row = from, column = to.
    #[must_use]
    pub fn distances(&self) -> &[Vec<u32>] {
        &self.distances
    }

    /// The cost for a CPU on `from` to read memory on `to`, 1.0 for a local read.
    ///
    /// # Panics
    /// If a node is outside the topology.
    #[must_use]
    pub fn read_cost(&self, from: NodeId, to: NodeId) -> f64 {
        self.costs.read[from.index()][to.index()]
    }

    /// The cost for a CPU on `from` to write memory on `to`, 1.0 for a local write.
    ///
    /// # Panics
    /// If a node is outside the topology.
    #[must_use]
    pub fn write_cost(&self, from: NodeId, to: NodeId) -> f64 {
        self.costs.write[from.index()][to.index()]
    }

    /// The read and write cost factors.
    #[must_use]
    pub fn costs(&self) -> &CostMatrix {
        &self.costs
    }

    /// Absolute memory costs: local latencies and the migration model
    /// ([`MemoryCosts`]).
    #[must_use]
    pub fn memory_costs(&self) -> &MemoryCosts {
        &self.memory_costs
    }

    /// The topology with other absolute memory costs (measured ones, for example).
    #[must_use]
    pub fn with_memory_costs(mut self, costs: MemoryCosts) -> Topology {
        self.memory_costs = costs;
        self
    }

    /// The cost in nanoseconds for a CPU of `from` to read `bytes` bytes of `data`'s
    /// memory: one miss per 64-byte line at the local read latency times the read
    /// factor (see [`MemoryCosts`] for what this bounds).
    ///
    /// ```
    /// use locus_topo::{NodeId, Topology};
    /// let t = Topology::preset("opteron-16").unwrap();
    /// // 64 KiB from the opposite node: 1024 lines of 83 ns x 1.41.
    /// let ns = t.read_cost_ns(64 << 10, NodeId(0), NodeId(2));
    /// assert!((ns - 1024.0 * 83.0 * 1.41).abs() < 1e-6);
    /// ```
    ///
    /// # Panics
    /// If a node is outside the topology.
    #[must_use]
    pub fn read_cost_ns(&self, bytes: u64, data: NodeId, from: NodeId) -> f64 {
        MemoryCosts::access_ns(
            bytes,
            self.memory_costs.local_read_ns,
            self.read_cost(from, data),
        )
    }

    /// The cost in nanoseconds for a CPU of `from` to write `bytes` bytes of `data`'s
    /// memory, as [`read_cost_ns`](Self::read_cost_ns) with the write latency and factor.
    ///
    /// # Panics
    /// If a node is outside the topology.
    #[must_use]
    pub fn write_cost_ns(&self, bytes: u64, data: NodeId, from: NodeId) -> f64 {
        MemoryCosts::access_ns(
            bytes,
            self.memory_costs.local_write_ns,
            self.write_cost(from, data),
        )
    }

    /// The cost in nanoseconds of migrating `bytes` bytes in one call, by the
    /// topology's [`MigrationModel`](crate::MigrationModel).
    #[must_use]
    pub fn migration_cost_ns(&self, bytes: u64) -> f64 {
        self.memory_costs.migration.cost_ns(bytes)
    }

    /// Groups of CPUs sharing a last-level cache, ordered by their first CPU. Every CPU
    /// is in exactly one group and a group never spans two nodes.
    #[must_use]
    pub fn cache_groups(&self) -> &[Vec<CpuId>] {
        &self.cache_groups
    }

    /// The other nodes in classes of equal distance and cost, nearest first; `from`
    /// itself is excluded. This is the order in which hierarchical work-stealing visits
    /// remote nodes.
    ///
    /// ```
    /// use locus_topo::{NodeId, Topology};
    ///
    /// let t = Topology::preset("opteron-64").unwrap();
    /// let classes = t.nodes_by_distance(NodeId(0));
    /// let sizes: Vec<usize> = classes.iter().map(Vec::len).collect();
    /// assert_eq!(sizes, [1, 3, 3]); // on-package, off-package 1 hop, 2 hops
    /// ```
    #[must_use]
    pub fn nodes_by_distance(&self, from: NodeId) -> Vec<Vec<NodeId>> {
        let i = from.index();
        if i >= self.nodes.len() {
            return Vec::new();
        }
        let key = |j: usize| {
            (
                self.distances[i][j],
                self.costs.read[i][j],
                self.costs.write[i][j],
            )
        };
        let mut others: Vec<usize> = (0..self.nodes.len()).filter(|&j| j != i).collect();
        others.sort_by(|&a, &b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0)
                .then(ka.1.total_cmp(&kb.1))
                .then(ka.2.total_cmp(&kb.2))
                .then(a.cmp(&b))
        });
        let mut classes: Vec<Vec<NodeId>> = Vec::new();
        let mut last = None;
        for j in others {
            let k = key(j);
            let same = last.is_some_and(|l: (u32, f64, f64)| {
                l.0 == k.0 && l.1.total_cmp(&k.1) == Ordering::Equal && l.2 == k.2
            });
            match classes.last_mut() {
                Some(class) if same => class.push(NodeId(j as u32)),
                _ => classes.push(vec![NodeId(j as u32)]),
            }
            last = Some(k);
        }
        classes
    }

    /// Total memory over all nodes, in bytes.
    #[must_use]
    pub fn total_memory_bytes(&self) -> u64 {
        self.nodes.iter().map(|n| n.memory_bytes).sum()
    }

    /// Turns a model into virtual nodes over explicit real CPUs: virtual CPU `i` is
    /// pinned to `real[i % real.len()]` (round-robin), and each node gets an equal
    /// share of `memory_bytes` when the model has no memory sizes.
    pub(crate) fn with_real_cpus(
        mut self,
        real: &[usize],
        memory_bytes: u64,
    ) -> Result<Topology, TopoError> {
        if real.is_empty() {
            return Err(TopoError::NoAllowedCpus);
        }
        self.os_cpus = Some((0..self.num_cpus()).map(|i| real[i % real.len()]).collect());
        self.os_nodes = None;
        self.source = Source::VirtualOverHost;
        if self.total_memory_bytes() == 0 {
            let share = memory_bytes / self.nodes.len() as u64;
            for node in &mut self.nodes {
                node.memory_bytes = share;
            }
        }
        Ok(self)
    }
}

#[allow(clippy::needless_range_loop)] // d[i][j] against d[j][i] reads best with indices
fn validate_distances(d: &[Vec<u32>], n: usize) -> Result<(), TopoError> {
    if d.len() != n {
        return Err(TopoError::NotSquare {
            nodes: n,
            expected: n * n,
            got: d.iter().map(Vec::len).sum(),
        });
    }
    if let Some(row) = d.iter().find(|row| row.len() != n) {
        return Err(TopoError::NotSquare {
            nodes: n,
            expected: n,
            got: row.len(),
        });
    }
    for i in 0..n {
        for j in 0..n {
            if d[i][j] == 0 {
                return Err(TopoError::ZeroDistance { from: i, to: j });
            }
            if d[i][j] != d[j][i] {
                return Err(TopoError::Asymmetric {
                    from: i,
                    to: j,
                    forward: d[i][j],
                    backward: d[j][i],
                });
            }
            if d[i][j] < d[i][i] {
                return Err(TopoError::LocalNotSmallest {
                    node: i,
                    local: d[i][i],
                    other: j,
                    distance: d[i][j],
                });
            }
        }
    }
    Ok(())
}

fn validate_factors(f: &[Vec<f64>], n: usize, kind: &'static str) -> Result<(), TopoError> {
    if f.len() != n || f.iter().any(|row| row.len() != n) {
        return Err(TopoError::NotSquare {
            nodes: n,
            expected: n * n,
            got: f.iter().map(Vec::len).sum(),
        });
    }
    for (i, row) in f.iter().enumerate() {
        for (j, &value) in row.iter().enumerate() {
            if !(value.is_finite() && value > 0.0) {
                return Err(TopoError::BadFactor {
                    kind,
                    from: i,
                    to: j,
                    value,
                });
            }
        }
    }
    Ok(())
}

/// The JSON shape of a topology.
#[derive(Serialize)]
struct TopologyView<'a> {
    name: &'a str,
    source: Source,
    #[serde(rename = "virtual")]
    is_virtual: bool,
    num_nodes: usize,
    num_cpus: usize,
    memory_bytes: u64,
    nodes: &'a [Node],
    os_cpus: Option<&'a [usize]>,
    os_nodes: Option<&'a [u32]>,
    cache_groups: &'a [Vec<CpuId>],
    distances: &'a [Vec<u32>],
    read_cost: &'a [Vec<f64>],
    write_cost: &'a [Vec<f64>],
    cost_origin: CostOrigin,
    memory_costs: &'a MemoryCosts,
}

impl Serialize for Topology {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        TopologyView {
            name: &self.name,
            source: self.source,
            is_virtual: self.is_virtual(),
            num_nodes: self.num_nodes(),
            num_cpus: self.num_cpus(),
            memory_bytes: self.total_memory_bytes(),
            nodes: &self.nodes,
            os_cpus: self.os_cpus.as_deref(),
            os_nodes: self.os_nodes.as_deref(),
            cache_groups: &self.cache_groups,
            distances: &self.distances,
            read_cost: &self.costs.read,
            write_cost: &self.costs.write,
            cost_origin: self.costs.origin,
            memory_costs: &self.memory_costs,
        }
        .serialize(serializer)
    }
}
