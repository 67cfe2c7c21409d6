//! One node's pool: free lists per size class, the chunks behind them, and the
//! node's accounting. Always used under the node's mutex (README, "Refill protocol").

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ptr::NonNull;

use crate::placement::{self, BindMode, PlacementError};

use super::class::{chunk_bytes, class_bytes, slot_stride, slots_per_chunk, NUM_CLASSES};
use super::header::{Header, BIG, HEADER_BYTES, MAGIC};
use super::os;
use super::stats::NodeStats;

/// A chunk mapped from the OS for one size class.
struct Chunk {
    base: NonNull<u8>,
    len: usize,
    class: usize,
}

/// The part of the newest chunk of a class not carved into blocks yet.
#[derive(Clone, Copy)]
struct Frontier {
    chunk: NonNull<u8>,
    /// Next slot to carve.
    next: usize,
    /// Slots of the chunk.
    slots: usize,
}

/// Why a node did not supply a block.
pub(crate) enum Refusal {
    /// The node's `node_limit` would be exceeded.
    Limit,
    /// The OS refused memory (`mmap`) or placement (`mbind`).
    Os(PlacementError),
}

/// A block taken from a node.
pub(crate) struct Taken {
    /// The user pointer (64-byte aligned, header before it).
    pub user: NonNull<u8>,
    /// Bytes of the block (class bytes, or the rounded size of a big block).
    pub capacity: usize,
    /// The header of a block never handed out before (so still zero-filled by the OS),
    /// which the taker writes in front of `user` ([`Taken::write_header`]) once it has
    /// released the node's lock: the first write to a fresh page faults and zeroes it,
    /// which need not happen under the lock (README, "Contention"). `None` for a block
    /// used before, whose header is written already.
    header: Option<Header>,
}

impl Taken {
    /// Writes the header of a fresh block, if it has one to write; returns whether the
    /// block is fresh (never handed out before, so still zero-filled by the OS).
    ///
    /// # Safety
    ///
    /// Called once, by the thread that took the block, before the block is used or
    /// freed.
    pub(crate) unsafe fn write_header(&mut self) -> bool {
        let Some(header) = self.header.take() else {
            return false;
        };
        // SAFETY: the slot (or mapping) was carved for this taker alone under the
        // node's lock; its header lies `HEADER_BYTES` before `user`, 64-byte aligned,
        // and nothing else reads it before the block is freed.
        unsafe { Header::of(self.user).write(header) };
        true
    }
}

/// The size of an x86-64 transparent huge page: chunks this large or larger may be
/// backed by huge pages.
pub(crate) const HUGE_PAGE_BYTES: usize = 2 << 20;

/// The pool of one node.
pub(crate) struct NodePool {
    node: usize,
    bind: bool,
    /// Advise the kernel to back chunks of at least a huge page with huge pages.
    huge_pages: bool,
    limit: Option<u64>,
    /// Per size class, the free blocks, most recently freed last: a stack of their
    /// headers kept here, not threaded through the blocks, so that taking and giving
    /// back touch no block's memory under the lock (README, "Contention").
    free: [Vec<NonNull<Header>>; NUM_CLASSES],
    frontier: [Option<Frontier>; NUM_CLASSES],
    chunks: Vec<Chunk>,
    /// Per size class: bytes of live blocks, their peak since the last peak reset, and
    /// chunks mapped. What [`NodePool::trim`] keeps is decided per class from these.
    class_in_use: [u64; NUM_CLASSES],
    class_peak: [u64; NUM_CLASSES],
    class_chunks: [u64; NUM_CLASSES],
    /// Counters; `fallbacks` lives outside the mutex and is not kept here.
    pub(crate) stats: NodeStats,
    /// Accounting-only pools with first touch: blocks freed on this node, by capacity,
    /// which later allocations of that capacity reuse.
    accounted_free: BTreeMap<usize, u64>,
}

// SAFETY: the raw pointers point into mappings the pool owns (chunks, free blocks);
// nothing else aliases the free blocks and headers, and the pool is only used under
// its mutex, so moving it to another thread is sound.
unsafe impl Send for NodePool {}

impl NodePool {
    pub(crate) fn new(node: usize, bind: bool, huge_pages: bool, limit: Option<u64>) -> Self {
        NodePool {
            node,
            bind,
            huge_pages,
            limit,
            free: std::array::from_fn(|_| Vec::new()),
            frontier: [None; NUM_CLASSES],
            chunks: Vec::new(),
            class_in_use: [0; NUM_CLASSES],
            class_peak: [0; NUM_CLASSES],
            class_chunks: [0; NUM_CLASSES],
            accounted_free: BTreeMap::new(),
            stats: NodeStats::default(),
        }
    }

    /// Whether `bytes` more fit under the node's limit, with the blocks in use and the
    /// bytes reserved for memory the pools did not supply (README, "Reservations").
    fn admits(&self, bytes: u64) -> bool {
        self.limit.map_or(true, |limit| {
            self.stats
                .in_use
                .saturating_add(self.stats.reserved)
                .saturating_add(bytes)
                <= limit
        })
    }

    /// Counts `bytes` of memory the pools did not supply (pages of a shared region)
    /// against the node's limit, if they fit (README, "Reservations").
    pub(crate) fn reserve(&mut self, bytes: u64) -> Result<(), Refusal> {
        if !self.admits(bytes) {
            return Err(Refusal::Limit);
        }
        self.stats.reserved += bytes;
        Ok(())
    }

    /// Reserves as many whole `unit`s as fit, up to `max` bytes; returns the bytes
    /// reserved.
    pub(crate) fn reserve_up_to(&mut self, max: u64, unit: u64) -> u64 {
        let room = self.limit.map_or(u64::MAX, |limit| {
            limit.saturating_sub(self.stats.in_use.saturating_add(self.stats.reserved))
        });
        let got = if room >= max {
            max
        } else {
            room / unit.max(1) * unit.max(1)
        };
        self.stats.reserved += got;
        got
    }

    /// Gives back `bytes` reserved by [`NodePool::reserve`].
    pub(crate) fn unreserve(&mut self, bytes: u64) {
        debug_assert!(
            bytes <= self.stats.reserved,
            "unreserving more than reserved"
        );
        self.stats.reserved = self.stats.reserved.saturating_sub(bytes);
    }

    /// Starts a new peak, of the node and of each class, at the bytes in use now.
    pub(crate) fn reset_peaks(&mut self) {
        self.stats.peak = self.stats.in_use;
        self.class_peak = self.class_in_use;
    }

    fn count_alloc(&mut self, bytes: usize) {
        self.stats.in_use += bytes as u64;
        self.stats.peak = self.stats.peak.max(self.stats.in_use);
        self.stats.allocs += 1;
    }

    /// Maps `len` bytes and, when binding, binds them to this node; a chunk of at
    /// least [`HUGE_PAGE_BYTES`] is advised to take huge pages when the pool wants
    /// them (README, "Huge pages").
    fn map_bound(&self, len: usize) -> Result<NonNull<u8>, Refusal> {
        let base = os::map(len).map_err(Refusal::Os)?;
        if self.huge_pages && len >= HUGE_PAGE_BYTES {
            // Advice only: a kernel without transparent huge pages refuses it, and the
            // chunk then has small pages, as without it.
            let _ = placement::madvise_hugepage(base.as_ptr(), len);
        }
        if self.bind {
            if let Err(e) = placement::bind(base.as_ptr(), len, self.node, BindMode::PolicyOnly) {
                // SAFETY: `base`/`len` was mapped just above and nothing has seen it.
                unsafe { os::unmap(base, len) };
                return Err(Refusal::Os(e));
            }
        }
        Ok(base)
    }

    /// Accounts a block of `capacity` bytes that holds no memory (accounting-only
    /// pools).
    pub(crate) fn take_accounted(&mut self, capacity: usize, reused: bool) -> Result<(), Refusal> {
        if !self.admits(capacity as u64) {
            return Err(Refusal::Limit);
        }
        if reused {
            self.stats.reused += 1;
        }
        self.count_alloc(capacity);
        Ok(())
    }

    /// Like [`NodePool::take_accounted`], reusing a block of `capacity` freed on this
    /// node if there is one (first-touch pools); returns whether it did.
    pub(crate) fn take_accounted_reusing(&mut self, capacity: usize) -> Result<bool, Refusal> {
        let free = self.accounted_free.get(&capacity).copied().unwrap_or(0);
        self.take_accounted(capacity, free > 0)?;
        if free > 0 {
            self.accounted_free.insert(capacity, free - 1);
        }
        Ok(free > 0)
    }

    /// Gives back the accounting of a block that holds no memory; with `keep`, the
    /// block stays in this node's pool for reuse (first-touch pools).
    pub(crate) fn release_accounted(&mut self, capacity: usize, keep: bool) {
        self.stats.in_use -= capacity as u64;
        if keep {
            *self.accounted_free.entry(capacity).or_insert(0) += 1;
        }
    }

    /// Takes a block of `class`: from the free list, else carved from the newest
    /// chunk, else from a new chunk (README, "Refill protocol").
    pub(crate) fn take(&mut self, class: usize) -> Result<Taken, Refusal> {
        let bytes = class_bytes(class);
        if !self.admits(bytes as u64) {
            return Err(Refusal::Limit);
        }
        let (header, carved) = if let Some(h) = self.free[class].pop() {
            self.stats.reused += 1;
            (h, None)
        } else {
            if self.frontier[class].is_none() {
                let len = chunk_bytes(class, placement::page_size());
                let base = self.map_bound(len)?;
                self.chunks.push(Chunk { base, len, class });
                self.class_chunks[class] += 1;
                self.stats.chunks += 1;
                self.stats.os_bytes += len as u64;
                self.stats.cached += (slots_per_chunk(class) * bytes) as u64;
                self.frontier[class] = Some(Frontier {
                    chunk: base,
                    next: 0,
                    slots: slots_per_chunk(class),
                });
            }
            let f = self.frontier[class].as_mut().expect("refilled above");
            // SAFETY: `next < slots`, so the slot lies inside the chunk, which holds
            // `slots * stride` bytes.
            let h: NonNull<Header> = unsafe { f.chunk.add(f.next * slot_stride(class)).cast() };
            let chunk = f.chunk;
            f.next += 1;
            if f.next == f.slots {
                self.frontier[class] = None;
            }
            // The slot was never carved, so nothing else refers to it; its header (64-byte
            // aligned: chunk page-aligned, stride a multiple of 64) is written by the
            // taker, outside the lock.
            let carved = Header {
                magic: MAGIC,
                node: self.node as u32,
                class: class as u32,
                _reserved: 0,
                chunk,
                map_len: 0,
            };
            (h, Some(carved))
        };
        self.stats.cached -= bytes as u64;
        self.count_alloc(bytes);
        self.class_in_use[class] += bytes as u64;
        self.class_peak[class] = self.class_peak[class].max(self.class_in_use[class]);
        Ok(Taken {
            // SAFETY: `header` is the header of a slot.
            user: unsafe { Header::user(header) },
            capacity: bytes,
            header: carved,
        })
    }

    /// Maps a big block of `capacity` bytes (a multiple of the page size) on its own,
    /// with one page in front holding the header.
    pub(crate) fn take_big(&mut self, capacity: usize) -> Result<Taken, Refusal> {
        if !self.admits(capacity as u64) {
            return Err(Refusal::Limit);
        }
        let page = placement::page_size();
        let len = capacity + page;
        let base = self.map_bound(len)?;
        // SAFETY: the header goes at the end of the first page, HEADER_BYTES before
        // the page-aligned user pointer (so 64-byte aligned), inside the fresh mapping;
        // the taker writes it (`Taken::write_header`).
        let h: NonNull<Header> = unsafe { base.add(page - HEADER_BYTES).cast() };
        self.stats.big_blocks += 1;
        self.stats.os_bytes += len as u64;
        self.count_alloc(capacity);
        Ok(Taken {
            // SAFETY: `h` is the header of the big block.
            user: unsafe { Header::user(h) },
            capacity,
            header: Some(Header {
                magic: MAGIC,
                node: self.node as u32,
                class: BIG,
                _reserved: 0,
                chunk: base,
                map_len: len,
            }),
        })
    }

    /// Puts a block of `class` back in its free list.
    ///
    /// # Safety
    ///
    /// `header` must be the header of a live block this node supplied from a free
    /// list class (not big), given back once; nothing may use the block afterwards.
    pub(crate) unsafe fn give_back(&mut self, header: NonNull<Header>, class: usize) {
        let bytes = class_bytes(class) as u64;
        self.free[class].push(header);
        self.stats.in_use -= bytes;
        self.stats.cached += bytes;
        self.class_in_use[class] -= bytes;
    }

    /// Accounts a big block of `capacity` bytes mapped as `map_len` bytes, which the
    /// caller has unmapped.
    pub(crate) fn big_returned(&mut self, capacity: usize, map_len: usize) {
        self.stats.in_use -= capacity as u64;
        self.stats.big_blocks -= 1;
        self.stats.os_bytes -= map_len as u64;
    }

    /// Unmaps every chunk whose blocks are all free (README, "Giving memory back").
    pub(crate) fn release_cached(&mut self) {
        for class in 0..NUM_CLASSES {
            self.release_idle(class, 0);
        }
    }

    /// Unmaps the idle chunks of each class beyond what the class's peak since the last
    /// peak reset needs on top of its blocks in use now (README, "Giving memory back").
    pub(crate) fn trim(&mut self) {
        for class in 0..NUM_CLASSES {
            let need = self.class_peak[class].saturating_sub(self.class_in_use[class]);
            self.release_idle(class, need);
        }
    }

    /// Bytes of `class` ready for reuse: free-list blocks and uncarved slots.
    fn class_cached(&self, class: usize) -> u64 {
        let per_chunk = (slots_per_chunk(class) * class_bytes(class)) as u64;
        self.class_chunks[class] * per_chunk - self.class_in_use[class]
    }

    /// Unmaps idle chunks of `class` (chunks with no live block), coldest first, as long
    /// as the class still caches at least `keep` bytes afterwards.
    fn release_idle(&mut self, class: usize, keep: u64) {
        let per_chunk = (slots_per_chunk(class) * class_bytes(class)) as u64;
        let mut cached = self.class_cached(class);
        // The common case, and the only cost of a trim in a steady state: no chunk can go.
        if cached < keep.saturating_add(per_chunk) {
            return;
        }
        // 1. Count the free slots of each chunk of the class, and the order in which its
        //    chunks first appear: the frontier, then the free list from its head (the
        //    most recently freed, likely cached, blocks come first).
        let mut free_slots: HashMap<NonNull<u8>, usize> = HashMap::new();
        let mut order: Vec<NonNull<u8>> = Vec::new();
        if let Some(f) = self.frontier[class] {
            free_slots.insert(f.chunk, f.slots - f.next);
            order.push(f.chunk);
        }
        for h in self.free[class].iter().rev() {
            // SAFETY: free-list headers are owned by the pool and initialised.
            let h = unsafe { h.as_ref() };
            let count = free_slots.entry(h.chunk).or_insert_with(|| {
                order.push(h.chunk);
                0
            });
            *count += 1;
        }
        // 2. The idle chunks to unmap, coldest (last to appear) first.
        let slots = slots_per_chunk(class);
        let mut idle: HashSet<NonNull<u8>> = HashSet::new();
        for chunk in order.iter().rev() {
            if cached < keep.saturating_add(per_chunk) {
                break;
            }
            if free_slots[chunk] == slots {
                idle.insert(*chunk);
                cached -= per_chunk;
            }
        }
        if idle.is_empty() {
            return;
        }
        // 3. Take their blocks out of the free list, keeping the order of the rest (and
        // giving back the list's own memory once it is mostly unused).
        let free = &mut self.free[class];
        // SAFETY: as in step 1.
        free.retain(|h| !idle.contains(&unsafe { h.as_ref() }.chunk));
        if free.len() < free.capacity() / 4 {
            free.shrink_to_fit();
        }
        if self.frontier[class].is_some_and(|f| idle.contains(&f.chunk)) {
            self.frontier[class] = None;
        }
        // 4. Unmap them.
        let stats = &mut self.stats;
        let class_chunks = &mut self.class_chunks[class];
        self.chunks.retain(|c| {
            if c.class != class || !idle.contains(&c.base) {
                return true;
            }
            // SAFETY: the chunk is a mapping of this pool with no live block and no
            // block left in a free list or frontier.
            unsafe { os::unmap(c.base, c.len) };
            *class_chunks -= 1;
            stats.chunks -= 1;
            stats.released_chunks += 1;
            stats.os_bytes -= c.len as u64;
            stats.cached -= per_chunk;
            false
        });
    }
}

impl Drop for NodePool {
    fn drop(&mut self) {
        // The pools are dropped only when no block is alive (each block holds them).
        for c in self.chunks.drain(..) {
            // SAFETY: the chunk is a mapping of this pool and no block of it is alive.
            unsafe { os::unmap(c.base, c.len) };
        }
    }
}
