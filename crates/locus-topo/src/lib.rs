//! NUMA topology model for Locus: nodes, CPUs, cost matrix, sysfs/hwloc backends, specs
//! and presets.
//!
//! A [`Topology`] describes the NUMA nodes of a machine, the CPUs and memory of each
//! node (a node may have memory and no CPUs), groups of CPUs sharing a last-level
//! cache, the raw distance matrix and a cost matrix with separate read and write factors
//! (1.0 is local). It comes from:
//!
//! - the host: [`Topology::host`] reads Linux sysfs ([`SysfsReader`]), restricted to the
//!   CPUs this process may run on; with the cargo feature `hwloc`, `Topology::host_hwloc`
//!   reads the same through hwloc;
//! - a spec: [`Topology::from_spec`] (`host`, `NxC`, `NxC:d,...`, `NxC:@FILE`, a preset
//!   name; see [`spec`] for the grammar);
//! - a preset of a machine from paper 1 or paper 4: [`Topology::preset`] (`opteron-64`,
//!   `sgi-uv2000`, `tilepro64`).
//!
//! A model can be laid over the host's CPUs ([`Topology::laid_over_host`]): its nodes are
//! then *virtual nodes*, workers are pinned to real CPUs and buffers and metrics use the
//! virtual nodes, so every placement decision runs on a one-node machine.
//!
//! "Paper 1" and the other papers cited in this crate are listed in `docs/papers.md`
//! of the repository (paper 1: Drebes et al. 2016, work-pushing and deferred
//! allocation).
//!
//! ```
//! use locus_topo::{NodeId, Topology};
//!
//! let t = Topology::from_spec("opteron-64").unwrap();
//! assert_eq!((t.num_nodes(), t.num_cpus()), (8, 64));
//! assert_eq!(t.read_cost(NodeId(0), NodeId(1)), 1.81); // paper 1, Table 1
//! ```

mod affinity;
mod cpulist;
mod error;
#[cfg(feature = "hwloc")]
mod hwloc;
mod ids;
pub mod memcost;
pub mod preset;
pub mod spec;
mod sysfs;
mod topology;

pub use affinity::allowed_cpus;
pub use error::TopoError;
pub use ids::{CpuId, NodeId};
pub use memcost::{CostSource, MemoryCosts, MigrationModel};
pub use preset::PRESET_NAMES;
pub use sysfs::SysfsReader;
pub use topology::{CostMatrix, CostOrigin, Node, Source, Topology, MAX_CPUS, MAX_NODES};

impl Topology {
    /// The host, read from Linux sysfs under `/`, restricted to the CPUs this process
    /// may run on. A machine without NUMA information is one node.
    pub fn host() -> Result<Topology, TopoError> {
        SysfsReader::new("/")
            .allowed_cpus(Some(allowed_cpus()?))
            .read()
    }

    /// Parses a topology spec: `host`, `NxC`, `NxC:d1,d2,...` (full row-major distance
    /// matrix), `NxC:@FILE` (the matrix from a file) or a preset name. See [`spec`].
    ///
    /// ```
    /// use locus_topo::{NodeId, Topology};
    ///
    /// let t = Topology::from_spec("2x4:10,16,16,10").unwrap();
    /// assert_eq!(t.read_cost(NodeId(0), NodeId(1)), 1.6);
    /// assert!(Topology::from_spec("0x3").is_err());
    /// ```
    pub fn from_spec(spec: &str) -> Result<Topology, TopoError> {
        spec::from_spec(spec)
    }

    /// `nodes` nodes of `cpus_per_node` CPUs, distance 10 local and 20 remote.
    pub fn synthetic(nodes: usize, cpus_per_node: usize) -> Result<Topology, TopoError> {
        spec::synthetic(nodes, cpus_per_node)
    }

    /// A preset by name (`opteron-64`, `sgi-uv2000`, `opteron-16`); see [`preset`].
    pub fn preset(name: &str) -> Result<Topology, TopoError> {
        preset::preset(name)
    }

    /// Lays a model over the host's allowed CPUs ("virtual nodes"): virtual CPU `i` is
    /// pinned to the `i % n`-th of the `n` allowed CPUs (round-robin when there are more
    /// virtual CPUs than real ones), the nodes stay the model's, and a model without
    /// memory sizes gets the host's memory in equal shares. A host topology, or one
    /// already laid over the host, is returned unchanged.
    pub fn laid_over_host(self) -> Result<Topology, TopoError> {
        if self.source() != Source::Synthetic && self.source() != Source::Preset {
            return Ok(self);
        }
        let host = Topology::host()?;
        self.laid_over(&host)
    }

    /// Lays a model over the CPUs of `host` (see [`Topology::laid_over_host`]).
    pub fn laid_over(self, host: &Topology) -> Result<Topology, TopoError> {
        let real: Vec<usize> = (0..host.num_cpus())
            .filter_map(|c| host.os_cpu(CpuId(c as u32)))
            .collect();
        self.with_real_cpus(&real, host.total_memory_bytes())
    }
}
