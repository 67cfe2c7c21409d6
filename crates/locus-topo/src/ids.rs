//! Identifiers of nodes and CPUs inside a [`Topology`](crate::Topology).
//!
//! Both are dense indices (`0..num_nodes`, `0..num_cpus`), never OS numbers: the OS
//! numbers of a host topology are kept beside them ([`Topology::os_cpu`](crate::Topology::os_cpu),
//! [`Topology::os_node`](crate::Topology::os_node)).

use std::fmt;

use serde::Serialize;

/// A NUMA node of a topology, by its index (`0..num_nodes`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The node's index, for indexing per-node vectors.
    #[must_use]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// A CPU of a topology, by its index (`0..num_cpus`), not the OS CPU number.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CpuId(pub u32);

impl CpuId {
    /// The CPU's index, for indexing per-CPU vectors.
    #[must_use]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_index() {
        assert_eq!(NodeId(3).to_string(), "n3");
        assert_eq!(CpuId(12).to_string(), "c12");
        assert_eq!(NodeId(5).index(), 5);
        assert_eq!(CpuId(7).index(), 7);
    }
}
