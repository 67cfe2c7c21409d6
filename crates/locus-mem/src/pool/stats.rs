//! Accounting of one node's pool (README, "Accounting").

/// Counters of one node's pool. Byte counts are size-class bytes (what
/// [`super::Block::capacity`] reports), not requested bytes, and do not include the
/// 64-byte headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Bytes of the live blocks this node supplied.
    pub in_use: u64,
    /// Bytes of blocks ready for reuse: in free lists, or in chunks not carved yet.
    pub cached: u64,
    /// Highest `in_use` since the pools were created or [`super::Pools::reset_peaks`].
    pub peak: u64,
    /// Chunks currently mapped from the OS for the free lists of this node.
    pub chunks: u64,
    /// Chunks given back to the OS so far by [`super::Pools::trim`] and
    /// [`super::Pools::release_cached`].
    pub released_chunks: u64,
    /// Bytes counted against the node's limit for memory the pools did not supply
    /// (pages of shared regions), through [`super::Pools::reserve`]. Not in `in_use`.
    pub reserved: u64,
    /// Allocations asked of this node that a fallback node supplied (counted here, at
    /// the node that could not supply them).
    pub fallbacks: u64,
    /// Allocations this node supplied (including zero-byte blocks and blocks supplied
    /// as a fallback for another node).
    pub allocs: u64,
    /// Of `allocs`, those served from a free list (a block used before).
    pub reused: u64,
    /// Fresh blocks placed on this node by their first writer
    /// ([`super::Pools::first_touch`]), counted at the node they moved to.
    pub first_touched: u64,
    /// Live big blocks (above the largest class), each mapped on its own.
    pub big_blocks: u64,
    /// Bytes currently mapped from the OS for this node: chunks and big blocks,
    /// headers included.
    pub os_bytes: u64,
}
