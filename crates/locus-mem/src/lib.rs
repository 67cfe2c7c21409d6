//! NUMA placement primitives and per-node memory pools for Locus.
//!
//! - [`placement`]: bind, interleave, query and migrate ranges of memory over the Linux
//!   memory-policy system calls, and pin threads to CPUs.
//! - [`pool`]: one memory pool per node with power-of-two size classes (paper 1,
//!   section 3.1; the papers are listed in `docs/papers.md`); the runtime allocates every task buffer from them.
//! - [`probe`]: the host's migration cost (`a + b x pages`) and a STREAM triad.
//! - [`region`]: shared regions placed by a policy (interleave, bind, blocked, first
//!   touch), with the node of every page.
//!
//! Nodes are plain `usize` indices here; the runtime maps its topology onto them.
//! Linux only.

pub mod placement;
pub mod pool;
pub mod probe;
pub mod region;
