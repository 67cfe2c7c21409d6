//! Per-node memory pools (paper 1, section 3.1).
//!
//! One pool per node, each a set of free lists of power-of-two size classes
//! ([`class`]), refilled from chunks mapped from the OS and, when binding is enabled,
//! bound to the pool's node. Every block carries its node and size class in a header
//! just before the user pointer (README, "Block header"), so a free from any thread goes
//! back to its own node's pool without a system call or a lookup. See `README.md` beside this file
//! for the header, the refill protocol and the accounting.
//!
//! Freed blocks are cached in their lists for reuse. [`Pools::trim`] bounds that cache:
//! per node and size class it unmaps the chunks with no live block beyond what the
//! class's peak since the last [`Pools::reset_peaks`] needs, so a runtime, which resets
//! the peaks when a run starts and trims when it ends, holds between runs about what the
//! last run needed, not the most it ever used (README, "Giving memory back"). Memory the
//! pools do not supply can be counted against a node's limit with [`Pools::reserve`]
//! (README, "Reservations").

mod block;
pub mod class;
mod config;
mod error;
mod header;
mod node;
pub(crate) mod os;
mod pools;
mod stats;

pub use block::Block;
pub use config::PoolConfig;
pub use error::AllocError;
pub use pools::Pools;
pub use stats::NodeStats;

/// The alignment of every block's memory, in bytes (big blocks are page-aligned).
pub const BLOCK_ALIGN: usize = header::HEADER_BYTES;
