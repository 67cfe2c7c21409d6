//! Errors of the pools.

use crate::placement::PlacementError;

/// Why a pool could not supply a block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// The [`super::PoolConfig`] is inconsistent.
    #[error("invalid pool configuration: {0}")]
    Config(String),
    /// The node index is not one of the pools' nodes.
    #[error("node {node} does not exist (the pools have {nodes} nodes)")]
    InvalidNode {
        /// The node asked for.
        node: usize,
        /// Number of nodes of the pools.
        nodes: usize,
    },
    /// The request is larger than any mapping can be.
    #[error("a block of {bytes} bytes is too large")]
    TooLarge {
        /// Bytes asked for.
        bytes: usize,
    },
    /// Neither the node nor any node of its fallback list could supply the block: each
    /// was at its `node_limit`, or the OS refused memory (`os` is the last refusal).
    #[error("no node could supply {bytes} bytes asked of node {node} (node limits reached or the OS refused memory)")]
    Exhausted {
        /// The node asked for.
        node: usize,
        /// Bytes asked for.
        bytes: usize,
        /// The last error of the OS (`mmap` or `mbind`), if any node failed that way.
        #[source]
        os: Option<PlacementError>,
    },
    /// [`super::Pools::reserve_on`]: the bytes do not fit under the node's
    /// `node_limit`.
    #[error("node {node} has no room for {bytes} more bytes under its limit")]
    NodeFull {
        /// The node asked for.
        node: usize,
        /// Bytes asked for.
        bytes: u64,
    },
}
