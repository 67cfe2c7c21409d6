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
/// of fallbacks that other nodes supplied for it. Each node's slot is an allocation of
/// its own, cache-padded, and every live block holds an `Arc` of its node's slot (not of
/// the whole [`Pools`]): allocating and freeing on different nodes then share no cache
/// line, not even a reference count (README, "Contention").
pub(crate) struct NodeSlot {
    pub(crate) node: usize,
    pool: Mutex<NodePool>,
    fallbacks: AtomicU64,
}

/// The shared handle of one node's slot.
pub(crate) type NodeRef = Arc<CachePadded<NodeSlot>>;

impl NodeSlot {
    /// The node's pool, locked. A poisoned lock is taken over: the pool's state is
    /// updated only by code that does not panic half-way.
    fn lock(&self) -> MutexGuard<'_, NodePool> {
        self.pool
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Gives back the accounting of a block of an accounting-only pool; with `keep`,
    /// the block stays in this node's pool for reuse (first-touch pools).
    pub(crate) fn release_accounted(&self, capacity: usize, keep: bool) {
        self.lock().release_accounted(capacity, keep);
    }

    /// Returns the block whose user pointer is `user` to this node's pool; its size
    /// class is read from its header.
    ///
    /// # Safety
    ///
    /// `user` must be the user pointer of a live block this node supplied, given back
    /// once; nothing may use the block afterwards.
    pub(crate) unsafe fn free(&self, user: NonNull<u8>) {
        // SAFETY: by the caller's guarantee `user` has a header in front of it.
        let header = unsafe { Header::of(user) };
        // SAFETY: the header was written when the block was taken and only the pool
        // writes it; the block is still live, so nothing else writes it now.
        let (class, chunk, map_len) = unsafe {
            let h = header.as_ref();
            debug_assert_eq!(h.magic, MAGIC, "freeing a block without a pool header");
            debug_assert_eq!(h.node as usize, self.node, "block of another node");
            (h.class, h.chunk, h.map_len)
        };
        if class == BIG {
            let capacity = map_len - placement::page_size();
            // SAFETY: a big block is a mapping of its own, `map_len` bytes at `chunk`;
            // the block is given back, so nothing uses it any more.
            unsafe { os::unmap(chunk, map_len) };
            self.lock().big_returned(capacity, map_len);
        } else {
            // SAFETY: a live block of class `class` supplied by this node, given back
            // once.
            unsafe { self.lock().give_back(header, class as usize) };
        }
    }
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
    nodes: Box<[NodeRef]>,
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
                Arc::new(CachePadded::new(NodeSlot {
                    node: n,
                    pool: Mutex::new(NodePool::new(
                        n,
                        config.bind,
                        config.huge_pages,
                        config.node_limit,
                    )),
                    fallbacks: AtomicU64::new(0),
                }))
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

    /// The pool of `node`, locked.
    fn lock(&self, node: usize) -> MutexGuard<'_, NodePool> {
        self.nodes[node].lock()
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
        self.check_node(node)?;
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
        if self.config.accounting_only {
            let capacity = class.map_or(big_capacity, class_bytes);
            let first_touch = self.config.first_touch;
            for supplier in order {
                // Without first touch, whether a real pool would have had a freed block
                // of this size is not tracked: an accounting-only pool counts no reuse.
                // With it, a block freed on the supplier is reused where it is.
                let taken = if first_touch {
                    self.lock(supplier).take_accounted_reusing(capacity)
                } else {
                    self.lock(supplier)
                        .take_accounted(capacity, false)
                        .map(|()| false)
                };
                if let Ok(reused) = taken {
                    let fell_back = supplier != node;
                    if fell_back {
                        self.nodes[node].fallbacks.fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(Block::accounted(
                        self.nodes[supplier].clone(),
                        bytes,
                        capacity,
                        supplier,
                        fell_back,
                        first_touch,
                        first_touch && !reused,
                    ));
                }
            }
            return Err(AllocError::Exhausted {
                node,
                bytes,
                os: None,
            });
        }
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
                Ok(mut taken) => {
                    // SAFETY: this thread just took the block, under the lock released
                    // above; nothing has used it yet.
                    let fresh = unsafe { taken.write_header() };
                    let Taken { user, capacity, .. } = taken;
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
                        self.nodes[supplier].clone(),
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

    /// First touch (paper 1, section 3.1): a fresh block of a first-touch pool
    /// ([`PoolConfig::first_touch`]) that its first writer, on `node`, is about to
    /// write is placed on `node`, or on the nearest node with room (the fallback order
    /// of `node`); its bytes move there from the node that supplied it. Returns the
    /// node it was placed on, or `None` when the block was placed already (recycled,
    /// touched before, or from a pool without first touch).
    ///
    /// ```
    /// use locus_mem::pool::{PoolConfig, Pools};
    /// let pools = Pools::new(PoolConfig {
    ///     first_touch: true,
    ///     ..PoolConfig::accounting_only(2)
    /// })
    /// .unwrap();
    /// let block = pools.alloc(0, 4096).unwrap();
    /// assert_eq!(pools.first_touch(&block, 1), Some(1));
    /// assert_eq!(block.node(), 1);
    /// assert_eq!(pools.first_touch(&block, 0), None); // placed already
    /// ```
    pub fn first_touch(&self, block: &Block, node: usize) -> Option<usize> {
        if !block.is_unplaced() || node >= self.nodes.len() {
            return None;
        }
        let capacity = block.capacity();
        let supplier = block.supplier();
        let order = iter::once(node).chain(self.config.fallback[node].iter().copied());
        for to in order {
            if to == supplier {
                // The supplier is the nearest node with room: the block stays.
                block.place(self.nodes[to].clone());
                return Some(to);
            }
            let mut pool = self.lock(to);
            if pool.take_accounted(capacity, false).is_ok() {
                // `take_accounted` counted an allocation: the block was counted once,
                // by its supplier.
                pool.stats.allocs -= 1;
                pool.stats.first_touched += 1;
                drop(pool);
                self.lock(supplier).release_accounted(capacity, false);
                block.place(self.nodes[to].clone());
                return Some(to);
            }
        }
        // No node has room: the block stays where it was supplied.
        block.place(self.nodes[supplier].clone());
        Some(supplier)
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

    /// Sets every node's peak to its current in-use bytes (and the peak of each size
    /// class, which [`Pools::trim`] goes by).
    pub fn reset_peaks(&self) {
        for n in 0..self.nodes.len() {
            self.lock(n).reset_peaks();
        }
    }

    /// Counts `bytes` of memory the pools did not supply (the pages of a shared region
    /// placed on `node`) against `node`'s limit, so that pool blocks and that memory
    /// together stay within [`PoolConfig::node_limit`]. Without fallback: if the bytes
    /// do not fit, nothing is counted and the result is [`AllocError::NodeFull`]. Give
    /// them back with [`Pools::unreserve`] (README, "Reservations").
    pub fn reserve_on(&self, node: usize, bytes: u64) -> Result<(), AllocError> {
        self.check_node(node)?;
        self.lock(node)
            .reserve(bytes)
            .map_err(|_| AllocError::NodeFull { node, bytes })
    }

    /// Like [`Pools::reserve_on`], falling back as allocations do: if `node` has no
    /// room, the nearest node of its fallback list that has takes the bytes, and a
    /// fallback is counted at `node`. Returns the node that took them, or
    /// [`AllocError::Exhausted`] if none could.
    pub fn reserve(&self, node: usize, bytes: u64) -> Result<usize, AllocError> {
        self.check_node(node)?;
        let order = iter::once(node).chain(self.config.fallback[node].iter().copied());
        for supplier in order {
            if self.lock(supplier).reserve(bytes).is_ok() {
                if supplier != node {
                    self.nodes[node].fallbacks.fetch_add(1, Ordering::Relaxed);
                }
                return Ok(supplier);
            }
        }
        Err(AllocError::Exhausted {
            node,
            bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
            os: None,
        })
    }

    /// Reserves on `node` as many whole `unit`s of bytes as fit under its limit, up to
    /// `max` bytes (all of them if they fit), and returns the bytes reserved; 0 for a
    /// node out of range. For memory that may be spread over several nodes.
    pub fn reserve_up_to(&self, node: usize, max: u64, unit: u64) -> u64 {
        if node >= self.nodes.len() {
            return 0;
        }
        self.lock(node).reserve_up_to(max, unit)
    }

    /// Gives back `bytes` that [`Pools::reserve`], [`Pools::reserve_on`] or
    /// [`Pools::reserve_up_to`] counted on
    /// `node` (the node they returned or were given). A node out of range is ignored.
    pub fn unreserve(&self, node: usize, bytes: u64) {
        if node < self.nodes.len() {
            self.lock(node).unreserve(bytes);
        }
    }

    fn check_node(&self, node: usize) -> Result<(), AllocError> {
        if node >= self.nodes.len() {
            return Err(AllocError::InvalidNode {
                node,
                nodes: self.nodes.len(),
            });
        }
        Ok(())
    }

    /// Bytes in use over all nodes (size-class bytes of live blocks).
    pub fn bytes_in_use(&self) -> u64 {
        (0..self.nodes.len())
            .map(|n| self.lock(n).stats.in_use)
            .sum()
    }

    /// Bytes in use on `node` (size-class bytes of live blocks); 0 for a node out of
    /// range. One lock, no allocation: cheap enough to sample after every task.
    pub fn bytes_in_use_on(&self, node: usize) -> u64 {
        if node >= self.nodes.len() {
            return 0;
        }
        self.lock(node).stats.in_use
    }

    /// Gives the chunks whose blocks are all free back to the OS, on every node.
    pub fn release_cached(&self) {
        for n in 0..self.nodes.len() {
            self.lock(n).release_cached();
        }
    }

    /// Gives back to the OS the cached memory that the peak since the last
    /// [`Pools::reset_peaks`] does not need (README, "Giving memory back"): on every
    /// node and for every size class, chunks with no live block are unmapped, coldest
    /// first, as long as the class keeps at least its peak bytes in use minus its bytes
    /// in use now ready for reuse. A class whose cache is already within a chunk of that
    /// is not walked, so a trim after a run like the previous one makes no system call
    /// and takes a few loads per class. The runtime trims at the end of every run.
    ///
    /// ```
    /// use locus_mem::pool::{PoolConfig, Pools};
    /// let pools = Pools::new(PoolConfig::virtual_nodes(1))?;
    /// let big: Vec<_> = (0..8).map(|_| pools.alloc(0, 1 << 20)).collect::<Result<_, _>>()?;
    /// drop(big);
    /// pools.reset_peaks(); // a new, smaller phase begins
    /// let small = pools.alloc(0, 1 << 20)?;
    /// drop(small);
    /// pools.trim();
    /// // One 1 MiB block was needed since the reset: one chunk of that class is kept.
    /// assert_eq!(pools.stats()[0].chunks, 1);
    /// # Ok::<(), locus_mem::pool::AllocError>(())
    /// ```
    pub fn trim(&self) {
        if self.config.accounting_only {
            return;
        }
        for n in 0..self.nodes.len() {
            self.lock(n).trim();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::class::{class_bytes, MAX_CLASS_BYTES, NUM_CLASSES};

    fn virtual_pools(nodes: usize) -> Arc<Pools> {
        Pools::new(PoolConfig::virtual_nodes(nodes)).unwrap()
    }

    fn fill(b: &Block, byte: u8) {
        // SAFETY: the test owns the block, which holds `len` bytes.
        unsafe { b.as_mut_ptr().write_bytes(byte, b.len()) };
    }

    fn bytes(b: &Block) -> &[u8] {
        // SAFETY: the test owns the block, which holds `len` initialised bytes (filled
        // or zeroed).
        unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) }
    }

    #[test]
    fn first_touch_places_fresh_blocks_and_recycled_ones_stay() {
        let config = |first_touch| PoolConfig {
            first_touch,
            ..PoolConfig::accounting_only(3).with_node_limit(8192)
        };
        let pools = Pools::new(config(true)).unwrap();
        // A fresh block supplied by node 0, first written on node 2: its bytes move.
        let a = pools.alloc(0, 4096).unwrap();
        assert!(a.is_unplaced());
        assert_eq!(pools.first_touch(&a, 2), Some(2));
        assert!(!a.is_unplaced());
        assert_eq!(a.node(), 2);
        let stats = pools.stats();
        assert_eq!((stats[0].in_use, stats[2].in_use), (0, 4096));
        assert_eq!(stats[2].first_touched, 1);
        // Freed, it returns to node 2, whose next allocation of its size reuses it
        // where it is: placed, not fresh.
        drop(a);
        assert_eq!(pools.stats()[2].in_use, 0);
        let b = pools.alloc(2, 4096).unwrap();
        assert!(!b.is_unplaced());
        assert_eq!(pools.first_touch(&b, 1), None);
        assert_eq!((b.node(), pools.stats()[2].reused), (2, 1));
        // Node 0 has no freed block: its allocation is fresh again. Node 1 full: the
        // first touch places it on the nearest node with room.
        let full = [pools.alloc(1, 4096).unwrap(), pools.alloc(1, 4096).unwrap()];
        let c = pools.alloc(0, 4096).unwrap();
        assert!(c.is_unplaced());
        assert_eq!(pools.first_touch(&c, 1), Some(0));
        assert_eq!(c.node(), 0);
        drop(full);
        // Without first touch, nothing is fresh and nothing moves.
        let plain = Pools::new(config(false)).unwrap();
        let d = plain.alloc(0, 4096).unwrap();
        assert!(!d.is_unplaced());
        assert_eq!(plain.first_touch(&d, 2), None);
        assert_eq!(d.node(), 0);
    }

    #[test]
    fn pools_and_blocks_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Pools>();
        check::<Arc<Pools>>();
        check::<Block>();
    }

    #[test]
    fn accounting_only_pools_count_without_memory() {
        let pools = Pools::new(PoolConfig::accounting_only(2).with_node_limit(1 << 40)).unwrap();
        // Far more than the host has: nothing is mapped.
        let huge: Vec<Block> = (0..64).map(|_| pools.alloc(1, 8 << 30).unwrap()).collect();
        let small = pools.alloc(0, 100).unwrap();
        let stats = pools.stats();
        assert_eq!(stats[1].in_use, 64 * (8 << 30));
        assert_eq!(stats[0].in_use, 128);
        assert_eq!(stats[0].chunks + stats[1].chunks, 0);
        assert_eq!((small.node(), small.len(), small.capacity()), (0, 100, 128));
        drop(huge);
        drop(small);
        assert_eq!(pools.bytes_in_use(), 0);
        assert_eq!(pools.stats()[1].peak, 64 * (8 << 30));
        // Limits and fallback work as for real pools.
        let limited = Pools::new(PoolConfig::accounting_only(2).with_node_limit(1024)).unwrap();
        let a = limited.alloc(0, 1024).unwrap();
        let b = limited.alloc(0, 1024).unwrap();
        assert_eq!((a.node(), b.node(), b.fell_back()), (0, 1, true));
        assert!(limited.alloc(0, 1024).is_err());
    }

    #[test]
    fn blocks_outlive_their_pools() {
        let pools = virtual_pools(2);
        let small = pools.alloc(1, 100).unwrap();
        let big = pools.alloc(0, MAX_CLASS_BYTES + 1).unwrap();
        drop(pools);
        fill(&small, 3);
        assert!(bytes(&small).iter().all(|&x| x == 3));
        // Freed into a node whose pools handle is gone; the last block unmaps it.
        std::thread::spawn(move || drop((small, big)))
            .join()
            .unwrap();
    }

    #[test]
    fn alloc_reports_node_len_capacity_and_alignment() {
        let pools = virtual_pools(3);
        for (i, &len) in [1usize, 63, 64, 65, 1000, 4096, 100_000, MAX_CLASS_BYTES]
            .iter()
            .enumerate()
        {
            let node = i % 3;
            let b = pools.alloc(node, len).unwrap();
            assert_eq!(b.node(), node);
            assert_eq!(b.len(), len);
            assert_eq!(b.capacity(), class_bytes(class_of(len).unwrap()));
            assert_eq!(b.as_ptr() as usize % 64, 0);
            assert!(!b.fell_back());
            fill(&b, 0x5A);
            assert!(bytes(&b).iter().all(|&x| x == 0x5A));
            assert_eq!(pools.stats()[node].in_use, b.capacity() as u64);
        }
        assert_eq!(pools.bytes_in_use(), 0);
        let s = pools.stats();
        assert_eq!(s.iter().map(|s| s.allocs).sum::<u64>(), 8);
        assert!(s.iter().all(|s| s.peak > 0 && s.chunks > 0));
    }

    #[test]
    fn zero_byte_blocks_are_aligned_and_free() {
        let pools = virtual_pools(2);
        let b = pools.alloc(1, 0).unwrap();
        assert_eq!((b.len(), b.capacity(), b.node()), (0, 0, 1));
        assert!(b.is_empty());
        assert_eq!(b.as_ptr() as usize % 64, 0);
        assert!(!b.as_ptr().is_null());
        let z = pools.alloc_zeroed(0, 0).unwrap();
        assert_eq!(pools.bytes_in_use(), 0);
        assert_eq!(pools.stats()[1].allocs, 1);
        assert_eq!(pools.stats()[0].chunks, 0);
        drop((b, z));
        assert_eq!(pools.bytes_in_use(), 0);
    }

    #[test]
    fn freed_blocks_are_reused_and_zeroed_on_request() {
        let pools = virtual_pools(1);
        let a = pools.alloc(0, 3000).unwrap();
        let fresh = pools.alloc_zeroed(0, 3000).unwrap();
        assert!(bytes(&fresh).iter().all(|&x| x == 0));
        fill(&a, 0xFF);
        let addr = a.as_ptr();
        drop(a);
        let s = pools.stats()[0];
        assert_eq!((s.in_use, s.reused), (4096, 0));
        let again = pools.alloc_zeroed(0, 2500).unwrap();
        assert_eq!(
            again.as_ptr(),
            addr,
            "the freed block is at the head of its list"
        );
        assert!(bytes(&again).iter().all(|&x| x == 0));
        let s = pools.stats()[0];
        assert_eq!((s.allocs, s.reused, s.in_use), (3, 1, 8192));
        drop((again, fresh));
        let s = pools.stats()[0];
        assert_eq!(s.in_use, 0);
        assert_eq!(s.peak, 8192);
        assert_eq!(
            s.cached,
            s.chunks * (crate::pool::class::slots_per_chunk(6) as u64) * 4096
        );
    }

    #[test]
    fn every_class_round_trips() {
        let pools = virtual_pools(1);
        let blocks: Vec<Block> = (0..NUM_CLASSES)
            .map(|c| pools.alloc(0, class_bytes(c)).unwrap())
            .collect();
        for (c, b) in blocks.iter().enumerate() {
            assert_eq!(b.capacity(), class_bytes(c));
            // First and last byte are writable.
            // SAFETY: both offsets are inside the block.
            unsafe {
                b.as_mut_ptr().write(c as u8);
                b.as_mut_ptr().add(b.len() - 1).write(c as u8);
            }
        }
        assert_eq!(pools.stats()[0].chunks, NUM_CLASSES as u64);
        drop(blocks);
        assert_eq!(pools.bytes_in_use(), 0);
    }

    #[test]
    fn a_block_freed_on_another_thread_returns_to_its_node() {
        let pools = virtual_pools(2);
        let b = std::thread::spawn({
            let pools = pools.clone();
            move || pools.alloc(1, 10_000).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(b.node(), 1);
        let before = pools.stats();
        assert_eq!(before[1].in_use, 16384);
        std::thread::spawn(move || drop(b)).join().unwrap();
        let after = pools.stats();
        assert_eq!(after[1].in_use, 0);
        assert_eq!(after[1].cached, before[1].cached + 16384);
        assert_eq!(after[0], before[0]);
        // The next allocation on node 1 reuses it; node 0 gets a chunk of its own.
        let again = pools.alloc(1, 16384).unwrap();
        assert_eq!(pools.stats()[1].reused, 1);
        let other = pools.alloc(0, 16384).unwrap();
        assert_eq!(pools.stats()[0].reused, 0);
        drop((again, other));
    }

    #[test]
    fn node_limit_falls_back_nearest_first_then_fails() {
        let mut config = PoolConfig::virtual_nodes(3).with_node_limit(8192);
        config.fallback[0] = vec![2, 1];
        let pools = Pools::new(config).unwrap();
        let mut live = Vec::new();
        for expect in [0, 0, 2, 2, 1, 1] {
            let b = pools.alloc(0, 4096).unwrap();
            assert_eq!(b.node(), expect);
            assert_eq!(b.fell_back(), expect != 0);
            live.push(b);
        }
        let e = pools.alloc(0, 1).unwrap_err();
        assert!(
            matches!(
                e,
                AllocError::Exhausted {
                    node: 0,
                    bytes: 1,
                    os: None
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("no node could supply"));
        let s = pools.stats();
        assert_eq!(
            s.iter().map(|s| s.fallbacks).collect::<Vec<_>>(),
            vec![4, 0, 0]
        );
        assert_eq!(
            s.iter().map(|s| s.in_use).collect::<Vec<_>>(),
            vec![8192; 3]
        );
        // A smaller block still fits nowhere: limits count class bytes.
        drop(live.remove(2));
        assert_eq!(pools.alloc(0, 100).unwrap().node(), 2);
        drop(live);
        assert_eq!(pools.bytes_in_use(), 0);
        // Big blocks respect the limit too.
        assert!(matches!(
            pools.alloc(1, MAX_CLASS_BYTES + 1),
            Err(AllocError::Exhausted { node: 1, .. })
        ));
    }

    #[test]
    fn big_blocks_are_mapped_on_their_own() {
        let pools = virtual_pools(2);
        let page = placement::page_size();
        let len = MAX_CLASS_BYTES + 1;
        let b = pools.alloc_zeroed(1, len).unwrap();
        assert_eq!(b.capacity(), len.next_multiple_of(page));
        assert_eq!(b.as_ptr() as usize % page, 0);
        // SAFETY: both offsets are inside the block.
        unsafe {
            assert_eq!(b.as_ptr().read(), 0);
            b.as_mut_ptr().add(len - 1).write(7);
        }
        let s = pools.stats()[1];
        assert_eq!(
            (s.big_blocks, s.in_use, s.chunks),
            (1, b.capacity() as u64, 0)
        );
        assert_eq!(s.os_bytes, (b.capacity() + page) as u64);
        drop(b);
        let s = pools.stats()[1];
        assert_eq!((s.big_blocks, s.in_use, s.os_bytes, s.cached), (0, 0, 0, 0));
        assert_eq!(s.peak, (len.next_multiple_of(page)) as u64);
        assert!(matches!(
            pools.alloc(0, usize::MAX - 10),
            Err(AllocError::TooLarge { .. })
        ));
    }

    /// The `VmFlags` of the mapping that holds `addr`, from `/proc/self/smaps`.
    fn vm_flags(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'));
            if let Some((lo, hi)) = range {
                if let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = (lo..hi).contains(&addr);
                    continue;
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return Some(flags.to_string());
                }
            }
        }
        None
    }

    #[test]
    fn huge_page_pools_advise_their_chunks_and_blocks_work() {
        for huge_pages in [false, true] {
            let pools = Pools::new(PoolConfig {
                huge_pages,
                ..PoolConfig::virtual_nodes(1)
            })
            .unwrap();
            let len = 8 << 20;
            let b = pools.alloc_zeroed(0, len).unwrap();
            // SAFETY: both offsets are inside the block.
            unsafe {
                assert_eq!(b.as_ptr().read(), 0);
                assert_eq!(b.as_ptr().add(len - 1).read(), 0);
                b.as_mut_ptr().add(len - 1).write(7);
            }
            let thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists();
            if thp {
                let flags = vm_flags(b.as_ptr() as usize).expect("the block's mapping in smaps");
                // `hg`: the mapping was advised MADV_HUGEPAGE.
                let advised = flags.split_whitespace().any(|f| f == "hg");
                assert_eq!(advised, huge_pages, "VmFlags:{flags}");
            }
        }
    }

    #[test]
    fn invalid_node_and_config_are_errors() {
        let pools = virtual_pools(2);
        assert_eq!(
            pools.alloc(2, 8).unwrap_err(),
            AllocError::InvalidNode { node: 2, nodes: 2 }
        );
        let mut bad = PoolConfig::virtual_nodes(2);
        bad.fallback = vec![];
        assert!(matches!(Pools::new(bad), Err(AllocError::Config(_))));
    }

    #[test]
    fn peaks_reset_to_current_use() {
        let pools = virtual_pools(2);
        let a = pools.alloc(0, 1 << 20).unwrap();
        let b = pools.alloc(0, 1 << 20).unwrap();
        drop(b);
        assert_eq!(pools.stats()[0].peak, 2 << 20);
        pools.reset_peaks();
        assert_eq!(pools.stats()[0].peak, 1 << 20);
        assert_eq!(pools.stats()[1].peak, 0);
        drop(a);
        pools.reset_peaks();
        assert_eq!(pools.stats()[0].peak, 0);
    }

    #[test]
    fn release_cached_unmaps_idle_chunks_only() {
        let pools = virtual_pools(1);
        let keep = pools.alloc(0, 100).unwrap();
        let small: Vec<Block> = (0..10).map(|_| pools.alloc(0, 100).unwrap()).collect();
        let large: Vec<Block> = (0..3).map(|_| pools.alloc(0, 1 << 20).unwrap()).collect();
        assert_eq!(pools.stats()[0].chunks, 4);
        drop((small, large));
        pools.release_cached();
        let s = pools.stats()[0];
        // The 128-byte chunk still holds `keep`; the three 1 MiB chunks are gone.
        assert_eq!(s.chunks, 1);
        assert_eq!(s.in_use, 128);
        let per_chunk = crate::pool::class::slots_per_chunk(1) as u64 * 128;
        assert_eq!(s.cached, per_chunk - 128);
        // Blocks of the kept chunk are still reused.
        let again = pools.alloc(0, 100).unwrap();
        assert_eq!(pools.stats()[0].reused, 1);
        drop((again, keep));
        pools.release_cached();
        let s = pools.stats()[0];
        assert_eq!((s.chunks, s.cached, s.os_bytes, s.in_use), (0, 0, 0, 0));
        // The pools still work afterwards.
        let b = pools.alloc(0, 1 << 20).unwrap();
        assert_eq!(pools.stats()[0].chunks, 1);
        drop(b);
    }

    #[test]
    fn trim_keeps_what_the_peak_since_the_reset_needs() {
        use crate::pool::class::{chunk_bytes, slots_per_chunk};
        let pools = virtual_pools(1);
        let page = placement::page_size();
        let (mib, small) = (class_of(1 << 20).unwrap(), class_of(4096).unwrap());
        assert_eq!(slots_per_chunk(mib), 1);
        // A large phase: 16 blocks of 1 MiB and 2000 of 4 KiB; one small block stays.
        let keep = pools.alloc(0, 4096).unwrap();
        let large: Vec<Block> = (0..16).map(|_| pools.alloc(0, 1 << 20).unwrap()).collect();
        let many: Vec<Block> = (0..2000).map(|_| pools.alloc(0, 4096).unwrap()).collect();
        drop((large, many));
        let before = pools.stats()[0];
        let small_chunks = 2001u64.div_ceil(slots_per_chunk(small) as u64);
        assert_eq!(before.chunks, 16 + small_chunks);
        // Trimmed against its own peak, the phase keeps everything it used.
        pools.trim();
        assert_eq!(pools.stats()[0], before);

        // A small phase: two 1 MiB blocks at once, no 4 KiB block.
        pools.reset_peaks();
        for _ in 0..3 {
            let pair = (
                pools.alloc(0, 1 << 20).unwrap(),
                pools.alloc(0, 1 << 20).unwrap(),
            );
            drop(pair);
        }
        pools.trim();
        let s = pools.stats()[0];
        // Two 1 MiB chunks for the phase's peak, and the chunk holding `keep`.
        assert_eq!(s.chunks, 3, "{s:?}");
        assert_eq!(s.released_chunks, 14 + small_chunks - 1);
        assert_eq!(
            s.cached,
            (2 << 20) + (slots_per_chunk(small) as u64 - 1) * 4096,
            "{s:?}"
        );
        assert_eq!(
            s.os_bytes,
            2 * chunk_bytes(mib, page) as u64 + chunk_bytes(small, page) as u64
        );
        assert_eq!(s.in_use, 4096);

        // The same small phase again maps nothing new and trims nothing: no churn.
        pools.reset_peaks();
        let pair = (
            pools.alloc(0, 1 << 20).unwrap(),
            pools.alloc(0, 1 << 20).unwrap(),
        );
        drop(pair);
        pools.trim();
        let again = pools.stats()[0];
        assert_eq!(
            (again.chunks, again.released_chunks),
            (3, s.released_chunks)
        );
        assert_eq!(again.reused, s.reused + 2);

        // Nothing needed since the reset: only the chunk with a live block stays.
        pools.reset_peaks();
        pools.trim();
        assert_eq!(pools.stats()[0].chunks, 1);
        drop(keep);
        pools.trim();
        // `keep` counts in the class's peak since the reset until the next one.
        assert_eq!(pools.stats()[0].chunks, 1);
        pools.reset_peaks();
        pools.trim();
        let s = pools.stats()[0];
        assert_eq!((s.chunks, s.cached, s.os_bytes), (0, 0, 0));
    }

    #[test]
    fn reservations_count_against_the_limit() {
        let pools = Pools::new(PoolConfig::virtual_nodes(2).with_node_limit(8192)).unwrap();
        pools.reserve_on(0, 8192).unwrap();
        assert_eq!(
            pools.reserve_on(0, 1).unwrap_err(),
            AllocError::NodeFull { node: 0, bytes: 1 }
        );
        // Pool blocks and reservations share the limit.
        let b = pools.alloc(0, 4096).unwrap();
        assert_eq!((b.node(), b.fell_back()), (1, true));
        // A reservation falls back like a block, and counts a fallback at its node.
        assert_eq!(pools.reserve(0, 4096).unwrap(), 1);
        assert!(matches!(
            pools.reserve(0, 1),
            Err(AllocError::Exhausted {
                node: 0,
                bytes: 1,
                os: None
            })
        ));
        let s = pools.stats();
        assert_eq!((s[0].reserved, s[1].reserved), (8192, 4096));
        assert_eq!((s[0].in_use, s[1].in_use), (0, 4096));
        assert_eq!(s[0].fallbacks, 2);
        pools.unreserve(0, 8192);
        // Up to a limit, in whole units.
        assert_eq!(pools.reserve_up_to(0, 1 << 20, 3000), 6000);
        assert_eq!(pools.reserve_up_to(0, 1 << 20, 3000), 0);
        pools.unreserve(0, 6000);
        assert_eq!(pools.reserve_up_to(0, 100, 3000), 100);
        pools.unreserve(0, 100);
        assert_eq!(pools.alloc(0, 4096).unwrap().node(), 0);
        pools.unreserve(1, 4096);
        assert_eq!(pools.stats()[1].reserved, 0);
        assert!(matches!(
            pools.reserve_on(2, 1),
            Err(AllocError::InvalidNode { node: 2, nodes: 2 })
        ));
    }

    #[test]
    fn bound_pools_place_blocks_on_their_node() {
        if !placement::numa_available() {
            return;
        }
        let pools = Pools::new(PoolConfig::new(1)).unwrap();
        assert!(pools.config().bind);
        let b = pools.alloc(0, 1 << 20).unwrap();
        fill(&b, 1);
        let pages = placement::query_nodes(b.as_ptr(), b.len()).unwrap();
        assert!(pages.iter().all(|p| p.node() == Some(0)), "{pages:?}");
    }

    #[test]
    fn a_node_the_kernel_refuses_falls_back() {
        if !placement::numa_available() {
            return;
        }
        // Two nodes bound on a machine that may have fewer: binding to a missing node
        // fails with EINVAL, and the block comes from the fallback node.
        let missing = placement::online_nodes();
        let nodes = missing + 1;
        let mut config = PoolConfig::new(nodes);
        config.bind = true;
        let pools = Pools::new(config.clone()).unwrap();
        let b = pools.alloc(missing, 5000).unwrap();
        assert!(b.fell_back());
        assert_eq!(b.node(), missing - 1);
        assert_eq!(pools.stats()[missing].fallbacks, 1);
        assert_eq!(pools.stats()[missing].chunks, 0);
        drop(b);
        config.fallback[missing].clear();
        let pools = Pools::new(config).unwrap();
        match pools.alloc(missing, 5000).unwrap_err() {
            AllocError::Exhausted { os: Some(e), .. } => {
                assert_eq!((e.call, e.errno), ("mbind", libc::EINVAL));
            }
            e => panic!("unexpected {e:?}"),
        }
    }
}
