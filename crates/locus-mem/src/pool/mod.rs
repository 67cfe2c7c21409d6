//! Per-node memory pools (paper 1, section 3.1).
//!
//! One pool per node, each a set of free lists of power-of-two size classes
//! ([`class`]), refilled from chunks mapped from the OS and, when binding is enabled,
//! bound to the pool's node. Every block carries its node and size class in a header
//! just before the user pointer (README, "Block header"), so a free from any thread goes
//! back to its own node's pool without a system call or a lookup. See `README.md` beside this file
//! for the header, the refill protocol and the accounting.

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
