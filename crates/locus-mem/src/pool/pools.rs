//! The set of per-node pools shared by a runtime.

use std::iter;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crossbeam_utils::CachePadded;

use crate::placement::{self, PlacementError};

use super::block::Block;
use super::class::{class_bytes, class_of};
use super::config::PoolConfig;
use super::error::AllocError;
use super::header::{Header, BIG, MAGIC};
use super::node::{NodePool, Refusal, Taken};
use super::os;
use super::stats::NodeStats;

/// What each node shares with other threads: its pool under a mutex, and the counter
/// of fallbacks that other nodes supplied for it. Cache-padded so that two nodes'
/// locks never share a line.
struct NodeSlot {
    pool: Mutex<NodePool>,
    fallbacks: AtomicU64,
}

/// Whether an allocation must read as zeros.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    Unspecified,
    Zeroed,
}

/// One memory pool per node (paper 1, section 3.1). Created once per runtime and
/// shared through an [`Arc`]; every [`Block`] keeps the pools alive.
///
/// ```
/// use locus_mem::pool::{PoolConfig, Pools};
/// let pools = Pools::new(PoolConfig::virtual_nodes(2)).unwrap();
/// let block = pools.alloc(1, 1000).unwrap();
/// assert_eq!((block.node(), block.len(), block.capacity()), (1, 1000, 1024));
/// assert_eq!(pools.bytes_in_use(), 1024);
/// drop(block);
/// assert_eq!(pools.bytes_in_use(), 0);
/// ```
pub struct Pools {
    config: PoolConfig,
    nodes: Box<[CachePadded<NodeSlot>]>,
}

impl std::fmt::Debug for Pools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pools")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Pools {
    /// Creates the pools. No memory is mapped until the first allocation.
    pub fn new(config: PoolConfig) -> Result<Arc<Pools>, AllocError> {
        config.validate()?;
        let nodes = (0..config.nodes)
            .map(|n| {
                CachePadded::new(NodeSlot {
                    pool: Mutex::new(NodePool::new(n, config.bind, config.node_limit)),
                    fallbacks: AtomicU64::new(0),
                })
            })
            .collect();
        Ok(Arc::new(Pools { config, nodes }))
    }

    /// The configuration the pools were made with.
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The pool of `node`, locked. A poisoned lock is taken over: the pool's state is
    /// updated only by code that does not panic half-way.
    fn lock(&self, node: usize) -> MutexGuard<'_, NodePool> {
        self.nodes[node]
            .pool
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A block of at least `bytes` bytes from the pool of `node`, or from the nearest
    /// fallback node that can supply it. Contents are unspecified.
    pub fn alloc(self: &Arc<Self>, node: usize, bytes: usize) -> Result<Block, AllocError> {
        self.alloc_with(node, bytes, Fill::Unspecified)
    }

    /// Like [`Pools::alloc`], with the first `bytes` bytes zeroed. Blocks never used
    /// before are zero already (fresh from the OS) and are not written, so their pages
    /// are still placed by the first task that touches them.
    pub fn alloc_zeroed(self: &Arc<Self>, node: usize, bytes: usize) -> Result<Block, AllocError> {
        self.alloc_with(node, bytes, Fill::Zeroed)
    }

    fn alloc_with(
        self: &Arc<Self>,
        node: usize,
        bytes: usize,
        fill: Fill,
    ) -> Result<Block, AllocError> {
        if node >= self.nodes.len() {
            return Err(AllocError::InvalidNode {
                node,
                nodes: self.nodes.len(),
            });
        }
        if bytes == 0 {
            self.lock(node).stats.allocs += 1;
            return Ok(Block::empty(node));
        }
        let class = class_of(bytes);
        let big_capacity = match class {
            Some(_) => 0,
            None => {
                let page = placement::page_size();
                match bytes.checked_next_multiple_of(page) {
                    Some(c) if c <= isize::MAX as usize - page => c,
                    _ => return Err(AllocError::TooLarge { bytes }),
                }
            }
        };
        // The node itself, then its fallback list, nearest first.
        let order = iter::once(node).chain(self.config.fallback[node].iter().copied());
        let mut os_error: Option<PlacementError> = None;
        for supplier in order {
            let taken = {
                let mut pool = self.lock(supplier);
                match class {
                    Some(c) => pool.take(c),
                    None => pool.take_big(big_capacity),
                }
            };
            match taken {
                Ok(Taken {
                    user,
                    capacity,
                    fresh,
                }) => {
                    let fell_back = supplier != node;
                    if fell_back {
                        self.nodes[node].fallbacks.fetch_add(1, Ordering::Relaxed);
                    }
                    if fill == Fill::Zeroed && !fresh {
                        // SAFETY: the block holds `capacity >= bytes` bytes and was
                        // just taken from a free list, so nothing else refers to it.
                        unsafe { user.as_ptr().write_bytes(0, bytes) };
                    }
                    return Ok(Block::new(
                        self.clone(),
                        user,
                        bytes,
                        capacity,
                        supplier,
                        fell_back,
                    ));
                }
                Err(Refusal::Limit) => {}
                Err(Refusal::Os(e)) => os_error = Some(e),
            }
        }
        Err(AllocError::Exhausted {
            node,
            bytes,
            os: os_error,
        })
    }

    /// Returns the block whose user pointer is `user` to the pool of its node, read
    /// from its header.
    ///
    /// # Safety
    ///
    /// `user` must be the user pointer of a live block of these pools, given back once;
    /// nothing may use the block afterwards.
    pub(crate) unsafe fn free(&self, user: NonNull<u8>) {
        // SAFETY: by the caller's guarantee `user` has a header in front of it.
        let header = unsafe { Header::of(user) };
        // SAFETY: the header was written when the block was taken and only the pool
        // writes it; the block is still live, so nothing else writes it now.
        let (node, class, chunk, map_len) = unsafe {
            let h = header.as_ref();
            debug_assert_eq!(h.magic, MAGIC, "freeing a block without a pool header");
            (h.node as usize, h.class, h.chunk, h.map_len)
        };
        if class == BIG {
            let capacity = map_len - placement::page_size();
            // SAFETY: a big block is a mapping of its own, `map_len` bytes at `chunk`;
            // the block is given back, so nothing uses it any more.
            unsafe { os::unmap(chunk, map_len) };
            self.lock(node).big_returned(capacity, map_len);
        } else {
            let class = class as usize;
            debug_assert!(class_bytes(class) > 0);
            // SAFETY: a live block of class `class` supplied by `node`, given back once.
            unsafe { self.lock(node).give_back(header, class) };
        }
    }

    /// Counters of every node, index = node.
    pub fn stats(&self) -> Vec<NodeStats> {
        (0..self.nodes.len())
            .map(|n| {
                let mut s = self.lock(n).stats;
                s.fallbacks = self.nodes[n].fallbacks.load(Ordering::Relaxed);
                s
            })
            .collect()
    }

    /// Sets every node's peak to its current in-use bytes.
    pub fn reset_peaks(&self) {
        for n in 0..self.nodes.len() {
            let mut pool = self.lock(n);
            pool.stats.peak = pool.stats.in_use;
        }
    }

    /// Bytes in use over all nodes (size-class bytes of live blocks).
    pub fn bytes_in_use(&self) -> u64 {
        (0..self.nodes.len())
            .map(|n| self.lock(n).stats.in_use)
            .sum()
    }

    /// Gives the chunks whose blocks are all free back to the OS, on every node.
    pub fn release_cached(&self) {
        for n in 0..self.nodes.len() {
            self.lock(n).release_cached();
        }
    }
}
