//! Configuration of the pools.

use crate::placement;

use super::error::AllocError;

/// How to build the per-node [`super::Pools`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Number of nodes (one pool each); at least 1.
    pub nodes: usize,
    /// For each node, the other nodes to try when it cannot supply memory, nearest
    /// first. `fallback.len() == nodes`; a list may be empty (no fallback).
    pub fallback: Vec<Vec<usize>>,
    /// Bind each chunk to its node with `mbind`. Only for real nodes, and only useful
    /// when [`placement::numa_available`]; with virtual nodes no binding call is made.
    pub bind: bool,
    /// Most bytes in use (size-class bytes) per node; a node at its limit makes
    /// allocations fall back.
    pub node_limit: Option<u64>,
    /// Blocks are accounted (sizes, nodes, limits, fallbacks, peaks) but hold no
    /// memory: their pointer is dangling and must never be read or written. For
    /// simulations of machines larger than the host.
    pub accounting_only: bool,
    /// Fresh blocks (never used) are placed by their first writer, as an operating
    /// system's first-touch policy places fresh pages: [`super::Pools::first_touch`]
    /// moves such a block to the writer's node (or the nearest with room), and a freed
    /// block returns to the pool of the node it was placed on, whose later
    /// allocations of its size reuse it where it is (paper 1, section 3.1). Honoured
    /// by accounting-only pools; real pools bind their chunks to their node.
    pub first_touch: bool,
    /// Advise the kernel to back chunks of 2 MiB or more with transparent huge pages
    /// (`madvise(MADV_HUGEPAGE)`): fewer page faults and TLB misses on large versions.
    /// A chunk is bound to one node as a whole, so huge pages never mix nodes. Off by
    /// default (README, "Huge pages", has the measurements); the kernel may still
    /// refuse (`/sys/kernel/mm/transparent_hugepage`).
    pub huge_pages: bool,
}

impl PoolConfig {
    /// Pools for `nodes` real nodes: bound when NUMA is available and the machine has
    /// that many nodes, fallback by index distance (`i-1, i+1, i-2, ...`), no limit.
    pub fn new(nodes: usize) -> Self {
        PoolConfig {
            nodes,
            fallback: fallback_by_index(nodes),
            bind: placement::numa_available() && nodes <= placement::online_nodes(),
            node_limit: None,
            accounting_only: false,
            first_touch: false,
            huge_pages: false,
        }
    }

    /// Pools for `nodes` virtual nodes (laid over a machine with fewer): like
    /// [`PoolConfig::new`] but never bound.
    pub fn virtual_nodes(nodes: usize) -> Self {
        PoolConfig {
            bind: false,
            ..PoolConfig::new(nodes)
        }
    }

    /// Pools that only account for `nodes` nodes: blocks hold no memory.
    pub fn accounting_only(nodes: usize) -> Self {
        PoolConfig {
            bind: false,
            accounting_only: true,
            ..PoolConfig::new(nodes)
        }
    }

    /// The same configuration with a per-node limit of in-use bytes.
    pub fn with_node_limit(mut self, limit: u64) -> Self {
        self.node_limit = Some(limit);
        self
    }

    /// Checks that the fallback lists name existing nodes other than their own, once.
    pub(crate) fn validate(&self) -> Result<(), AllocError> {
        if self.nodes == 0 {
            return Err(AllocError::Config("at least one node is needed".into()));
        }
        if self.bind && self.nodes > placement::MAX_NODES {
            return Err(AllocError::Config(format!(
                "cannot bind more than {} nodes",
                placement::MAX_NODES
            )));
        }
        if self.fallback.len() != self.nodes {
            return Err(AllocError::Config(format!(
                "{} fallback lists for {} nodes",
                self.fallback.len(),
                self.nodes
            )));
        }
        for (node, list) in self.fallback.iter().enumerate() {
            let mut seen = vec![false; self.nodes];
            for &other in list {
                if other >= self.nodes || other == node || seen[other] {
                    return Err(AllocError::Config(format!(
                        "fallback list of node {node} names node {other}: out of range, itself, or twice"
                    )));
                }
                seen[other] = true;
            }
        }
        Ok(())
    }
}

/// For each node, the others ordered by index distance, lower index first on ties.
fn fallback_by_index(nodes: usize) -> Vec<Vec<usize>> {
    (0..nodes)
        .map(|i| {
            let mut others: Vec<usize> = (0..nodes).filter(|&j| j != i).collect();
            others.sort_by_key(|&j| (i.abs_diff(j), j));
            others
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_is_nearest_index_first() {
        let c = PoolConfig::virtual_nodes(4);
        assert_eq!(c.fallback[0], vec![1, 2, 3]);
        assert_eq!(c.fallback[2], vec![1, 3, 0]);
        assert!(!c.bind);
        assert_eq!(c.node_limit, None);
        c.validate().unwrap();
        assert_eq!(PoolConfig::new(1).fallback, vec![Vec::<usize>::new()]);
    }

    #[test]
    fn invalid_configs_are_rejected() {
        let mut c = PoolConfig::virtual_nodes(2);
        c.fallback[0] = vec![0];
        assert!(matches!(c.validate(), Err(AllocError::Config(_))));
        c.fallback[0] = vec![2];
        assert!(c.validate().is_err());
        c.fallback[0] = vec![1, 1];
        assert!(c.validate().is_err());
        c.fallback.pop();
        assert!(c.validate().is_err());
        assert!(PoolConfig::virtual_nodes(0).validate().is_err());
    }
}
