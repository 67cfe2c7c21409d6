//! Shared regions: memory placed by a policy the user chooses, updated in place by the
//! tasks that use it (`docs/architecture.md`, "Shared data").
//!
//! A [`Region`] is one anonymous mapping whose pages are placed by a [`RegionPolicy`]:
//! interleaved over the nodes, bound to one node, cut into one contiguous block per node,
//! or left to the first touch. The region keeps the node of every page in a table, so
//! that the runtime can count the bytes a task reads and writes by node exactly as it
//! does for task-private buffers:
//!
//! - on real NUMA nodes the policy is applied with `mbind`, the pages are faulted in,
//!   and the table is read back from the kernel (`move_pages`); first-touch pages are
//!   recorded when a task first touches them ([`Region::touch`]), on the node of the
//!   pinned worker, which is where the kernel places them;
//! - on virtual nodes (and in the simulator, where a region holds no memory) the table
//!   follows the kernel's rules: interleaving places the page of virtual page number
//!   `p` on the `p mod n`-th node, binding on the node, blocks in address order.
//!
//! Pages are 4 KiB: transparent huge pages are disabled on the mapping
//! (`madvise(MADV_NOHUGEPAGE)`) so that interleaving has page granularity.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};

use crate::placement::{self, BindMode, PageStatus, PlacementError};
use crate::pool::os;

/// How the pages of a [`Region`] are placed. Nodes are indices into
/// [`RegionConfig::nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegionPolicy {
    /// Round-robin over all nodes, page by page (`MPOL_INTERLEAVE`).
    Interleave,
    /// Every page on this node (`MPOL_BIND`).
    Bind(usize),
    /// One contiguous block of pages per node, in node order (block `i` of `n` holds
    /// pages `i * pages / n ..`).
    Blocked,
    /// Each page on the node of the first task that touches it.
    FirstTouch,
}

impl RegionPolicy {
    /// The policy's name in reports: `interleave`, `bind:N`, `blocked`, `first-touch`.
    pub fn name(self) -> String {
        match self {
            RegionPolicy::Interleave => "interleave".into(),
            RegionPolicy::Bind(n) => format!("bind:{n}"),
            RegionPolicy::Blocked => "blocked".into(),
            RegionPolicy::FirstTouch => "first-touch".into(),
        }
    }
}

/// The machine a region is placed on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionConfig {
    /// The OS node of each node, when the nodes are real and placement calls are made;
    /// `None` for virtual nodes (no placement call, the table follows the rules).
    pub os_nodes: Option<Vec<usize>>,
    /// Number of nodes.
    pub nodes: usize,
    /// The region holds no memory (a simulation of a machine larger than the host):
    /// its pointer is dangling and must never be read or written.
    pub accounting_only: bool,
}

/// A page that no task has touched yet (first-touch regions).
const UNTOUCHED: u16 = u16::MAX;

/// Bit set in a placed page's entry while it is armed for migration on next touch
/// ([`Region::arm_next_touch`]); the other bits keep its node.
const ARMED: u16 = 1 << 15;

/// The node of a page-table entry, `None` for an untouched page.
fn decode(entry: u16) -> Option<usize> {
    (entry != UNTOUCHED).then_some(usize::from(entry & !ARMED))
}

/// Page size of the node table.
pub const PAGE: usize = 4096;

/// Page numbers handed to regions in the order they are created, so that interleaving
/// starts on a different node for consecutive regions, as real mappings do, and the
/// rule's table does not depend on where the mapping landed (addresses change from run
/// to run; a simulated run must not).
static NEXT_REGION_PAGE: AtomicU64 = AtomicU64::new(0);

/// Memory placed by a policy, with the node of every page.
pub struct Region {
    ptr: NonNull<u8>,
    /// Bytes asked for.
    len: usize,
    /// Bytes mapped (`len` rounded up to pages; 0 when nothing is mapped).
    mapped: usize,
    policy: RegionPolicy,
    /// Node of each page, or [`UNTOUCHED`]; [`ARMED`] set while armed for next touch.
    pages: Box<[AtomicU16]>,
    /// Offset of the region's first byte in its first page: 0 for a mapping, the
    /// address modulo the page size for registered memory.
    head: usize,
    /// Pages armed for migration on next touch.
    armed: AtomicUsize,
    /// How registered memory is given back, instead of unmapping it.
    free: Option<Box<dyn FnOnce() + Send>>,
}

// SAFETY: the region owns its mapping; the pointer is only an address. Access to the
// memory is synchronised by its users (the runtime's dependences), and the page table is
// atomic.
unsafe impl Send for Region {}
// SAFETY: as for `Send`; `&Region` gives no access to the memory by itself.
unsafe impl Sync for Region {}

/// Why a region could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionError {
    /// A node index outside the configuration.
    NoSuchNode {
        /// The node asked for.
        node: usize,
        /// Number of nodes.
        nodes: usize,
    },
    /// The OS refused the mapping or the placement.
    Os(PlacementError),
    /// The size cannot be mapped, or its table of page nodes cannot be allocated.
    TooLarge {
        /// The size asked for, in bytes.
        len: usize,
    },
    /// The size is more than this machine could ever hold, refused before anything is
    /// mapped or allocated: more than its memory (RAM and swap,
    /// [`placement::machine_memory`]), or, for a region that holds no memory
    /// ([`RegionConfig::accounting_only`]), a table of page nodes (2 bytes a page) of
    /// more than a quarter of it.
    MoreThanMemory {
        /// The size asked for, in bytes.
        len: usize,
        /// The machine's memory, in bytes.
        memory: u64,
        /// Whether the region holds no memory: only its table counts.
        accounting_only: bool,
    },
}

impl std::fmt::Display for RegionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegionError::NoSuchNode { node, nodes } => {
                write!(f, "node {node} does not exist (the machine has {nodes})")
            }
            RegionError::Os(e) => write!(f, "{e}"),
            RegionError::TooLarge { len } => {
                write!(f, "{len} bytes cannot be mapped on this machine")
            }
            RegionError::MoreThanMemory {
                len,
                memory,
                accounting_only: false,
            } => write!(
                f,
                "{len} bytes are more than this machine's memory ({memory} bytes of RAM \
                 and swap)"
            ),
            RegionError::MoreThanMemory {
                len,
                memory,
                accounting_only: true,
            } => write!(
                f,
                "{len} bytes need a table of {} bytes for the nodes of their pages, more \
                 than a quarter of this machine's memory ({memory} bytes of RAM and swap)",
                len.div_ceil(PAGE).saturating_mul(2)
            ),
        }
    }
}

impl std::error::Error for RegionError {}

/// `Err` if a region of `len` bytes is more than a machine of `memory` bytes could
/// ever hold ([`RegionError::MoreThanMemory`]): checked before the table of page nodes
/// is allocated and the mapping made, so that an impossible size fails at once instead
/// of after filling a table and faulting pages in.
fn check_memory(len: usize, accounting_only: bool, memory: Option<u64>) -> Result<(), RegionError> {
    let Some(memory) = memory else {
        return Ok(());
    };
    let needed = if accounting_only {
        // The table: 2 bytes a page, within a quarter of the memory.
        (len.div_ceil(PAGE) as u64)
            .saturating_mul(2)
            .saturating_mul(4)
    } else {
        len as u64
    };
    if needed > memory {
        return Err(RegionError::MoreThanMemory {
            len,
            memory,
            accounting_only,
        });
    }
    Ok(())
}

impl Region {
    /// Maps a zero-filled region of `len` bytes placed by `policy`.
    ///
    /// ```
    /// use locus_mem::region::{Region, RegionConfig, RegionPolicy};
    /// let config = RegionConfig { os_nodes: None, nodes: 4, accounting_only: false };
    /// let r = Region::new(64 * 4096, RegionPolicy::Interleave, &config).unwrap();
    /// let mut per_node = [0usize; 4];
    /// r.bytes_by_node(0, r.len(), |node, bytes| per_node[node.unwrap()] += bytes);
    /// assert_eq!(per_node, [16 * 4096; 4]);
    /// ```
    pub fn new(
        len: usize,
        policy: RegionPolicy,
        config: &RegionConfig,
    ) -> Result<Self, RegionError> {
        Self::new_admitted(len, policy, config, |_| Ok(()))
    }

    /// Like [`Region::new`], with a say for the caller before any page exists: once the
    /// region is mapped and its table follows the policy's rule, `admit` gets the pages
    /// the rule puts on each node (none for first touch). If it refuses, the region is
    /// unmapped, untouched, and its error returned; else the pages are placed. On real
    /// nodes the kernel's table, read back afterwards, can differ from the rule's where a
    /// node could not take its pages. The runtime admits a region against its per-node
    /// limits this way.
    ///
    /// ```
    /// use locus_mem::region::{Region, RegionConfig, RegionError, RegionPolicy};
    /// let config = RegionConfig { os_nodes: None, nodes: 2, accounting_only: false };
    /// let refused = Region::new_admitted(8 * 4096, RegionPolicy::Interleave, &config, |pages| {
    ///     assert_eq!(pages, &[4, 4]);
    ///     Err(RegionError::TooLarge { len: 8 * 4096 })
    /// });
    /// assert!(refused.is_err());
    /// ```
    pub fn new_admitted<E: From<RegionError>>(
        len: usize,
        policy: RegionPolicy,
        config: &RegionConfig,
        admit: impl FnOnce(&[u64]) -> Result<(), E>,
    ) -> Result<Self, E> {
        let nodes = config.nodes.max(1);
        if let RegionPolicy::Bind(node) = policy {
            if node >= nodes {
                return Err(RegionError::NoSuchNode { node, nodes }.into());
            }
        }
        let page_count = len.div_ceil(PAGE);
        check_memory(len, config.accounting_only, placement::machine_memory())?;
        let too_large = || RegionError::TooLarge { len };
        // A mapping's size must fit in `isize` (and so its last page's address).
        let mapped = page_count
            .checked_mul(PAGE)
            .filter(|&m| m <= isize::MAX as usize)
            .ok_or_else(too_large)?;
        let mut pages = Vec::new();
        pages
            .try_reserve_exact(page_count)
            .map_err(|_| too_large())?;
        pages.extend((0..page_count).map(|_| AtomicU16::new(UNTOUCHED)));
        let (ptr, mapped) = if config.accounting_only || mapped == 0 {
            (NonNull::dangling(), 0)
        } else {
            (os::map(mapped).map_err(RegionError::Os)?, mapped)
        };
        let region = Region {
            ptr,
            len,
            mapped,
            policy,
            pages: pages.into_boxed_slice(),
            head: 0,
            armed: AtomicUsize::new(0),
            free: None,
        };
        // The rule's table; real placement below replaces it with the kernel's.
        let first_page = NEXT_REGION_PAGE.fetch_add(page_count as u64, Ordering::Relaxed);
        for (i, slot) in region.pages.iter().enumerate() {
            let node = match policy {
                RegionPolicy::Interleave => Some(((first_page + i as u64) % nodes as u64) as usize),
                RegionPolicy::Bind(node) => Some(node),
                RegionPolicy::Blocked => Some(i * nodes / page_count),
                RegionPolicy::FirstTouch => None,
            };
            slot.store(node.map_or(UNTOUCHED, |n| n as u16), Ordering::Relaxed);
        }
        admit(&region.pages_per_node(nodes))?;
        if let (Some(os_nodes), true) = (&config.os_nodes, mapped > 0) {
            region.place(os_nodes).map_err(RegionError::Os)?;
        }
        Ok(region)
    }

    /// Applies the policy on real nodes, faults the pages in (but for first touch), and
    /// reads their nodes back from the kernel.
    fn place(&self, os_nodes: &[usize]) -> Result<(), PlacementError> {
        let base = self.ptr.as_ptr().cast_const();
        // Interleaving at page granularity needs small pages; failing to ask is harmless.
        let _ = placement::madvise_nohugepage(base, self.mapped);
        match self.policy {
            RegionPolicy::Interleave => placement::interleave(base, self.mapped, os_nodes)?,
            RegionPolicy::Bind(node) => {
                placement::bind(base, self.mapped, os_nodes[node], BindMode::PolicyOnly)?
            }
            RegionPolicy::Blocked => {
                let pages = self.pages.len();
                for (i, &os_node) in os_nodes.iter().enumerate() {
                    let (first, end) =
                        (i * pages / os_nodes.len(), (i + 1) * pages / os_nodes.len());
                    if end > first {
                        // SAFETY: `first..end` are pages of this mapping.
                        let at = unsafe { base.add(first * PAGE) };
                        placement::bind(at, (end - first) * PAGE, os_node, BindMode::PolicyOnly)?;
                    }
                }
            }
            RegionPolicy::FirstTouch => return Ok(()),
        }
        for i in 0..self.pages.len() {
            // SAFETY: page `i` is inside the mapping, which nothing else uses yet; writing
            // a zero over the zero-filled page faults it in under the policy.
            unsafe { self.ptr.as_ptr().add(i * PAGE).write_volatile(0) };
        }
        let status = placement::query_nodes(base, self.mapped)?;
        for (slot, page) in self.pages.iter().zip(status) {
            if let Some(os_node) = page.node() {
                if let Some(node) = os_nodes.iter().position(|&n| n == os_node) {
                    slot.store(node as u16, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }

    /// Start of the region. Dangling (never to be dereferenced) when the region holds no
    /// memory.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the region holds no memory (accounting only).
    pub fn is_accounted_only(&self) -> bool {
        self.mapped == 0 && self.len > 0
    }

    /// The placement policy.
    pub fn policy(&self) -> RegionPolicy {
        self.policy
    }

    /// The node of the page holding byte `offset`, if it is placed yet.
    pub fn node_of(&self, offset: usize) -> Option<usize> {
        decode(
            self.pages
                .get((self.head + offset) / PAGE)?
                .load(Ordering::Relaxed),
        )
    }

    /// Records that a task on `node` touches bytes `offset..offset + len`: pages no task
    /// touched before are placed there (first touch; other policies ignore it). Returns
    /// the number of pages placed by this call.
    pub fn touch(&self, offset: usize, len: usize, node: usize) -> usize {
        if self.policy != RegionPolicy::FirstTouch || len == 0 {
            return 0;
        }
        self.pages[Self::page_range(self.head + offset, len, self.pages.len())]
            .iter()
            .filter(|slot| {
                slot.compare_exchange(UNTOUCHED, node as u16, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            })
            .count()
    }

    /// Pages within `offset..offset + len` that no task has touched yet (first-touch
    /// regions; 0 under other policies).
    pub fn untouched_pages(&self, offset: usize, len: usize) -> usize {
        if self.policy != RegionPolicy::FirstTouch || len == 0 {
            return 0;
        }
        self.pages[Self::page_range(self.head + offset, len, self.pages.len())]
            .iter()
            .filter(|slot| slot.load(Ordering::Relaxed) == UNTOUCHED)
            .count()
    }

    /// Like [`Region::touch`], but the pages no task touched before go where `plan`
    /// says, in address order: the first `plan[0].1` of them on node `plan[0].0`, the
    /// next `plan[1].1` on `plan[1].0`, and so on; pages beyond the plan go to `node`.
    /// On real nodes (`os_nodes`, the OS node of each node, as in [`RegionConfig`]),
    /// pages planned on another node than `node` are bound there (`mbind`) before
    /// `node`'s task writes them, so its first touch faults them on the planned node.
    /// Returns the pages placed on each node, indexed by node (`plan`'s nodes must be
    /// below `nodes`).
    pub fn touch_planned(
        &self,
        offset: usize,
        len: usize,
        node: usize,
        plan: &[(usize, usize)],
        os_nodes: Option<&[usize]>,
        nodes: usize,
    ) -> Vec<u64> {
        let mut placed = vec![0u64; nodes.max(node + 1)];
        if self.policy != RegionPolicy::FirstTouch || len == 0 {
            return placed;
        }
        let mut plan = plan.iter().copied().filter(|&(_, pages)| pages > 0);
        let mut current = plan.next();
        for page in Self::page_range(self.head + offset, len, self.pages.len()) {
            let target = current.map_or(node, |(target, _)| target);
            let slot = &self.pages[page];
            if slot
                .compare_exchange(
                    UNTOUCHED,
                    target as u16,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_err()
            {
                // Touched before: not ours to place.
                continue;
            }
            if let Some((_, left)) = &mut current {
                *left -= 1;
                if *left == 0 {
                    current = plan.next();
                }
            }
            placed[target] += 1;
            if let (Some(os_nodes), true) = (os_nodes, target != node && self.mapped > 0) {
                let at = self.page_addr(page);
                // A refusal leaves the page to first touch on `node`: the table is then
                // off by that page, which is harmless to the program.
                let _ = placement::bind(at, PAGE, os_nodes[target], BindMode::PolicyOnly);
            }
        }
        placed
    }

    /// The pages holding bytes `offset..offset + len`, within `pages`.
    fn page_range(offset: usize, len: usize, pages: usize) -> std::ops::Range<usize> {
        (offset / PAGE).min(pages)..offset.saturating_add(len).div_ceil(PAGE).min(pages)
    }

    /// Calls `f(node, bytes)` for each run of pages on one node within
    /// `offset..offset + len`, in address order; `node` is `None` for pages not placed
    /// yet.
    pub fn bytes_by_node(
        &self,
        offset: usize,
        len: usize,
        mut f: impl FnMut(Option<usize>, usize),
    ) {
        let end = offset + len;
        let mut at = offset;
        let mut run: Option<(Option<usize>, usize)> = None;
        while at < end {
            let page_end = ((self.head + at) / PAGE + 1) * PAGE - self.head;
            let chunk = page_end.min(end) - at;
            let node = self.node_of(at);
            match &mut run {
                Some((n, bytes)) if *n == node => *bytes += chunk,
                _ => {
                    if let Some((n, bytes)) = run.take() {
                        f(n, bytes);
                    }
                    run = Some((node, chunk));
                }
            }
            at += chunk;
        }
        if let Some((n, bytes)) = run {
            f(n, bytes);
        }
    }

    /// Bytes of the region on each of `nodes` nodes (pages not placed yet are not
    /// counted).
    pub fn bytes_per_node(&self, nodes: usize) -> Vec<u64> {
        let mut out = vec![0; nodes];
        self.bytes_by_node(0, self.len, |node, bytes| {
            if let Some(n) = node.filter(|&n| n < nodes) {
                out[n] += bytes as u64;
            }
        });
        out
    }

    /// Pages of the region on each of `nodes` nodes (pages not placed yet are not
    /// counted).
    pub fn pages_per_node(&self, nodes: usize) -> Vec<u64> {
        let mut out = vec![0; nodes];
        for slot in self.pages.iter() {
            if let Some(n) = decode(slot.load(Ordering::Relaxed)).filter(|&n| n < nodes) {
                out[n] += 1;
            }
        }
        out
    }
}

/// Registering memory, migrating it now and on next touch (Broquedis et al., "Dynamic
/// Task and Data Placement over NUMA Architectures: An OpenMP Runtime Perspective",
/// MaMI's Table 2: `mami_register`, `mami_migrate_on_node`,
/// `mami_migrate_on_next_touch`).
///
/// Migration moves pages that exist: a page of a first-touch region that no task has
/// touched holds no memory, and stays to be placed by its first touch. On real nodes
/// pages are moved with `move_pages` and the table is read back from the kernel's
/// status; on virtual nodes (and without memory) the table alone changes.
impl Region {
    /// Makes a region of memory the caller allocated: `len` bytes at `ptr`, given back
    /// by `free` when the region is dropped. Nothing is copied or placed: on real nodes
    /// (`config.os_nodes`) the node of every present page is read from the kernel
    /// (`move_pages`) and pages never touched are left to first touch; on virtual nodes
    /// every page is taken to be on `home`. The region's policy is first touch.
    ///
    /// # Safety
    ///
    /// `ptr..ptr + len` is memory that stays valid, and that nothing but the users of
    /// the region reads or writes, until `free` is called (by the region's drop);
    /// `home < config.nodes`.
    pub unsafe fn register(
        ptr: NonNull<u8>,
        len: usize,
        free: Box<dyn FnOnce() + Send>,
        home: usize,
        config: &RegionConfig,
    ) -> Result<Self, RegionError> {
        let head = ptr.as_ptr() as usize % PAGE;
        let page_count = if len == 0 {
            0
        } else {
            (head + len).div_ceil(PAGE)
        };
        let mut pages = Vec::new();
        if pages.try_reserve_exact(page_count).is_err() {
            free();
            return Err(RegionError::TooLarge { len });
        }
        let home = home.min(config.nodes.saturating_sub(1));
        pages.extend((0..page_count).map(|_| AtomicU16::new(home as u16)));
        let region = Region {
            ptr,
            len,
            mapped: page_count * PAGE,
            policy: RegionPolicy::FirstTouch,
            pages: pages.into_boxed_slice(),
            head,
            armed: AtomicUsize::new(0),
            free: Some(free),
        };
        if let (Some(os_nodes), true) = (&config.os_nodes, page_count > 0) {
            let status = placement::query_nodes(region.page_addr(0), page_count * PAGE)
                .map_err(RegionError::Os)?;
            for (slot, page) in region.pages.iter().zip(status) {
                let node = match page {
                    PageStatus::Node(os) => os_nodes.iter().position(|&n| n == os),
                    _ => None,
                };
                slot.store(node.map_or(UNTOUCHED, |n| n as u16), Ordering::Relaxed);
            }
        }
        Ok(region)
    }

    /// The address of page `page` (the page's start, before the region's first byte
    /// for page 0 of registered memory).
    fn page_addr(&self, page: usize) -> *const u8 {
        (self.ptr.as_ptr() as usize - self.head + page * PAGE) as *const u8
    }

    /// Moves the placed pages holding `offset..offset + len` to `node` now
    /// (`mami_migrate_on_node`), disarming any armed for next touch. On real nodes
    /// (`os_nodes`, as in [`RegionConfig`]) the pages are moved with `move_pages` and
    /// the table follows the kernel's status. Returns the pages moved off each node,
    /// indexed by node (`nodes` entries at least).
    pub fn migrate(
        &self,
        offset: usize,
        len: usize,
        node: usize,
        os_nodes: Option<&[usize]>,
        nodes: usize,
    ) -> Result<Vec<u64>, PlacementError> {
        let mut moved = vec![0u64; nodes.max(node + 1)];
        let range = Self::page_range(self.head + offset, len, self.pages.len());
        if range.is_empty() {
            return Ok(moved);
        }
        let kernel = match (os_nodes, self.mapped > 0) {
            (Some(os_nodes), true) => Some((
                os_nodes,
                placement::migrate(
                    self.page_addr(range.start),
                    range.len() * PAGE,
                    os_nodes[node],
                )?,
            )),
            _ => None,
        };
        for (k, page) in range.enumerate() {
            let slot = &self.pages[page];
            let old = slot.load(Ordering::Relaxed);
            let Some(was) = decode(old) else { continue };
            let now = match &kernel {
                Some((os_nodes, status)) => match status[k] {
                    PageStatus::Node(os) => os_nodes.iter().position(|&n| n == os),
                    _ => None,
                },
                None => Some(node),
            };
            let Some(now) = now else { continue };
            if slot
                .compare_exchange(old, now as u16, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                if old & ARMED != 0 {
                    self.armed.fetch_sub(1, Ordering::Relaxed);
                }
                if now != was {
                    moved[was] += 1;
                }
            }
        }
        Ok(moved)
    }

    /// Arms the placed pages holding `offset..offset + len` for migration on next
    /// touch (`mami_migrate_on_next_touch`): the first [`take_armed`](Self::take_armed)
    /// that covers a page moves it to the toucher's node. Returns the pages armed by
    /// this call.
    pub fn arm_next_touch(&self, offset: usize, len: usize) -> usize {
        let mut armed = 0;
        for slot in &self.pages[Self::page_range(self.head + offset, len, self.pages.len())] {
            if slot
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                    (v != UNTOUCHED && v & ARMED == 0).then_some(v | ARMED)
                })
                .is_ok()
            {
                armed += 1;
            }
        }
        self.armed.fetch_add(armed, Ordering::Relaxed);
        armed
    }

    /// Placed pages within `offset..offset + len` that are not on `node`: the pages
    /// [`migrate`](Self::migrate) to `node` would move.
    pub fn placed_elsewhere(&self, offset: usize, len: usize, node: usize) -> usize {
        self.pages[Self::page_range(self.head + offset, len, self.pages.len())]
            .iter()
            .filter_map(|slot| decode(slot.load(Ordering::Relaxed)))
            .filter(|&n| n != node)
            .count()
    }

    /// Pages armed for migration on next touch, in the whole region.
    pub fn armed_pages(&self) -> usize {
        self.armed.load(Ordering::Relaxed)
    }

    /// Armed pages within `offset..offset + len` that are not on `node`: the pages a
    /// touch from `node` would move.
    pub fn armed_elsewhere(&self, offset: usize, len: usize, node: usize) -> usize {
        if self.armed_pages() == 0 {
            return 0;
        }
        self.pages[Self::page_range(self.head + offset, len, self.pages.len())]
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .filter(|&v| v != UNTOUCHED && v & ARMED != 0 && decode(v) != Some(node))
            .count()
    }

    /// A task on `node` touches `offset..offset + len`: the armed pages there are
    /// disarmed, and up to `budget` of those on other nodes move to `node` (with
    /// `move_pages` on real nodes, the table then following the kernel's status); the
    /// others stay where they are. Returns the pages moved off each node, indexed by
    /// node (`nodes` entries at least).
    pub fn take_armed(
        &self,
        offset: usize,
        len: usize,
        node: usize,
        mut budget: usize,
        os_nodes: Option<&[usize]>,
        nodes: usize,
    ) -> Vec<u64> {
        let mut moved = vec![0u64; nodes.max(node + 1)];
        if self.armed_pages() == 0 || len == 0 {
            return moved;
        }
        let mut taken: Vec<(usize, usize)> = Vec::new();
        for page in Self::page_range(self.head + offset, len, self.pages.len()) {
            let slot = &self.pages[page];
            let v = slot.load(Ordering::Relaxed);
            if v == UNTOUCHED || v & ARMED == 0 {
                continue;
            }
            let was = usize::from(v & !ARMED);
            let to = if was != node && budget > 0 { node } else { was };
            if slot
                .compare_exchange(v, to as u16, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                // Another toucher took it first.
                continue;
            }
            self.armed.fetch_sub(1, Ordering::Relaxed);
            if to != was {
                budget -= 1;
                moved[was] += 1;
                taken.push((page, was));
            }
        }
        if let (Some(os_nodes), true, false) = (os_nodes, self.mapped > 0, taken.is_empty()) {
            for &(page, was) in &taken {
                // One call per page: armed pages are seldom contiguous once touchers
                // have taken parts of a range, and a refusal costs one page only.
                let now = match placement::migrate(self.page_addr(page), PAGE, os_nodes[node]) {
                    Ok(status) => status.first().and_then(|s| s.node()),
                    Err(_) => None,
                };
                let now = now.and_then(|os| os_nodes.iter().position(|&n| n == os));
                if now != Some(node) {
                    // The kernel did not move it: the table says where it is.
                    self.pages[page].store(now.unwrap_or(was) as u16, Ordering::Relaxed);
                    moved[was] -= 1;
                }
            }
        }
        moved
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if let Some(free) = self.free.take() {
            free();
        } else if self.mapped > 0 {
            // SAFETY: `ptr`/`mapped` is the mapping made in `new`, unmapped only here;
            // the region is being dropped, so nothing uses the memory any more.
            unsafe { os::unmap(self.ptr, self.mapped) };
        }
    }
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("len", &self.len)
            .field("policy", &self.policy)
            .field("accounted_only", &self.is_accounted_only())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn virtual_nodes(nodes: usize) -> RegionConfig {
        RegionConfig {
            os_nodes: None,
            nodes,
            accounting_only: false,
        }
    }

    /// Sizes past the machine's memory (or, holding no memory, a page table past a
    /// quarter of it) are refused before the table is allocated or anything mapped:
    /// 1 PiB used to grow the table toward the OOM killer; 2^60 bytes is past any.
    #[test]
    fn sizes_no_machine_here_holds_are_refused_at_once() {
        let gib = 1u64 << 30;
        assert_eq!(check_memory(1 << 30, false, Some(gib)), Ok(()));
        assert_eq!(
            check_memory((1 << 30) + 1, false, Some(gib)),
            Err(RegionError::MoreThanMemory {
                len: (1 << 30) + 1,
                memory: gib,
                accounting_only: false
            })
        );
        // Holding no memory: 2 bytes a page, within a quarter of the memory.
        assert_eq!(check_memory(1 << 39, true, Some(gib)), Ok(()));
        assert!(check_memory((1 << 39) + 1, true, Some(gib)).is_err());
        assert_eq!(check_memory(usize::MAX, false, None), Ok(()));
        let memory = placement::machine_memory().expect("sysinfo gives the memory");
        for accounting_only in [false, true] {
            let config = RegionConfig {
                accounting_only,
                ..virtual_nodes(2)
            };
            for policy in [RegionPolicy::Interleave, RegionPolicy::FirstTouch] {
                let start = std::time::Instant::now();
                let e = Region::new(1 << 60, policy, &config).err().unwrap();
                assert!(start.elapsed() < std::time::Duration::from_secs(2));
                assert!(
                    matches!(e, RegionError::MoreThanMemory { memory: m, .. } if m == memory),
                    "{e}"
                );
                let shown = e.to_string();
                assert!(
                    shown.contains("more than") && shown.contains("memory"),
                    "{shown}"
                );
                assert_eq!(shown.contains("table"), accounting_only, "{shown}");
            }
        }
    }

    #[test]
    fn interleave_alternates_pages() {
        let r = Region::new(8 * PAGE, RegionPolicy::Interleave, &virtual_nodes(2)).unwrap();
        let nodes: Vec<_> = (0..8).map(|p| r.node_of(p * PAGE).unwrap()).collect();
        for w in nodes.windows(2) {
            assert_ne!(w[0], w[1], "{nodes:?}");
        }
        assert_eq!(r.bytes_per_node(2), vec![4 * PAGE as u64; 2]);
    }

    #[test]
    fn blocked_and_bind() {
        let r = Region::new(10 * PAGE, RegionPolicy::Blocked, &virtual_nodes(2)).unwrap();
        assert_eq!(r.bytes_per_node(2), vec![5 * PAGE as u64; 2]);
        assert_eq!((r.node_of(0), r.node_of(9 * PAGE)), (Some(0), Some(1)));
        let r = Region::new(3 * PAGE + 10, RegionPolicy::Bind(1), &virtual_nodes(2)).unwrap();
        assert_eq!(r.bytes_per_node(2), vec![0, 3 * PAGE as u64 + 10]);
        let e = Region::new(PAGE, RegionPolicy::Bind(2), &virtual_nodes(2)).unwrap_err();
        assert_eq!(e, RegionError::NoSuchNode { node: 2, nodes: 2 });
    }

    #[test]
    fn first_touch_places_on_touch() {
        let r = Region::new(4 * PAGE, RegionPolicy::FirstTouch, &virtual_nodes(4)).unwrap();
        assert_eq!(r.node_of(0), None);
        assert_eq!(r.touch(PAGE + 1, PAGE, 3), 2);
        assert_eq!(r.touch(0, 3 * PAGE, 1), 1);
        assert_eq!(r.pages_per_node(4), vec![0, 1, 0, 2]);
        let mut runs = Vec::new();
        r.bytes_by_node(0, 4 * PAGE, |n, b| runs.push((n, b)));
        assert_eq!(
            runs,
            vec![(Some(1), PAGE), (Some(3), 2 * PAGE), (None, PAGE)]
        );
    }

    #[test]
    fn planned_touch_places_untouched_pages_by_the_plan() {
        let r = Region::new(6 * PAGE, RegionPolicy::FirstTouch, &virtual_nodes(3)).unwrap();
        assert_eq!(r.touch(PAGE, 1, 0), 1);
        assert_eq!(r.untouched_pages(0, 4 * PAGE), 3);
        // Pages 0, 2, 3 are untouched: one planned on node 2, then node 1, the rest on
        // the toucher's node.
        let placed = r.touch_planned(0, 4 * PAGE, 0, &[(2, 1), (1, 1)], None, 3);
        assert_eq!(placed, vec![1, 1, 1]);
        let nodes: Vec<_> = (0..6).map(|p| r.node_of(p * PAGE)).collect();
        assert_eq!(nodes, vec![Some(2), Some(0), Some(1), Some(0), None, None]);
        assert_eq!(r.untouched_pages(0, 6 * PAGE), 2);
        assert_eq!(r.touch_planned(0, 6 * PAGE, 1, &[], None, 3), vec![0, 2, 0]);
        let bound = Region::new(PAGE, RegionPolicy::Bind(0), &virtual_nodes(2)).unwrap();
        assert_eq!(bound.untouched_pages(0, PAGE), 0);
    }

    #[test]
    fn admission_sees_the_rule_and_can_refuse() {
        let config = virtual_nodes(2);
        let mut seen = Vec::new();
        let r = Region::new_admitted(10 * PAGE, RegionPolicy::Blocked, &config, |p| {
            seen = p.to_vec();
            Ok::<(), RegionError>(())
        })
        .unwrap();
        assert_eq!(seen, vec![5, 5]);
        assert_eq!(r.pages_per_node(2), vec![5, 5]);
        let e = Region::new_admitted(PAGE, RegionPolicy::Bind(1), &config, |p| {
            assert_eq!(p, &[0, 1]);
            Err(RegionError::TooLarge { len: 1 })
        })
        .unwrap_err();
        assert_eq!(e, RegionError::TooLarge { len: 1 });
    }

    #[test]
    fn byte_runs_split_at_pages() {
        let r = Region::new(4 * PAGE, RegionPolicy::Interleave, &virtual_nodes(2)).unwrap();
        let mut total = 0;
        let mut runs = 0;
        r.bytes_by_node(100, 2 * PAGE, |_, b| {
            total += b;
            runs += 1;
        });
        assert_eq!((total, runs), (2 * PAGE, 3));
    }

    #[test]
    fn memory_is_zeroed_and_writable() {
        let r = Region::new(3 * PAGE, RegionPolicy::Interleave, &virtual_nodes(2)).unwrap();
        // SAFETY: the region holds 3 pages, used by this test only.
        let bytes = unsafe { std::slice::from_raw_parts_mut(r.as_ptr(), r.len()) };
        assert!(bytes.iter().all(|&b| b == 0));
        bytes[PAGE + 7] = 9;
        assert_eq!(bytes[PAGE + 7], 9);
    }

    #[test]
    fn migrate_moves_placed_pages_and_counts_them_by_source() {
        let r = Region::new(8 * PAGE, RegionPolicy::Blocked, &virtual_nodes(4)).unwrap();
        assert_eq!(r.pages_per_node(4), vec![2; 4]);
        // Pages 1..=4 (bytes PAGE + 1 .. 5 * PAGE): one of node 0, two of node 1, one of
        // node 2.
        let moved = r.migrate(PAGE + 1, 4 * PAGE - 1, 3, None, 4).unwrap();
        assert_eq!(moved, vec![1, 2, 1, 0]);
        assert_eq!(r.pages_per_node(4), vec![1, 0, 1, 6]);
        assert_eq!(r.migrate(0, r.len(), 3, None, 4).unwrap(), vec![1, 0, 1, 0]);
        assert_eq!(r.pages_per_node(4), vec![0, 0, 0, 8]);
        // Untouched first-touch pages hold no memory and stay to their first touch.
        let f = Region::new(2 * PAGE, RegionPolicy::FirstTouch, &virtual_nodes(2)).unwrap();
        f.touch(0, 1, 0);
        assert_eq!(f.migrate(0, f.len(), 1, None, 2).unwrap(), vec![1, 0]);
        assert_eq!((f.node_of(0), f.node_of(PAGE)), (Some(1), None));
    }

    #[test]
    fn next_touch_moves_armed_pages_to_the_first_toucher() {
        let r = Region::new(6 * PAGE, RegionPolicy::Bind(0), &virtual_nodes(3)).unwrap();
        assert_eq!(r.arm_next_touch(0, r.len()), 6);
        assert_eq!(r.arm_next_touch(0, r.len()), 0, "armed once");
        // Armed pages keep their node until touched.
        assert_eq!(r.pages_per_node(3), vec![6, 0, 0]);
        assert_eq!(r.armed_elsewhere(0, 2 * PAGE, 2), 2);
        assert_eq!(
            r.take_armed(0, 2 * PAGE, 2, usize::MAX, None, 3),
            vec![2, 0, 0]
        );
        // A second toucher finds them disarmed.
        assert_eq!(
            r.take_armed(0, 2 * PAGE, 1, usize::MAX, None, 3),
            vec![0; 3]
        );
        // A budget of one: one page moves, the others stay, all are disarmed.
        assert_eq!(
            r.take_armed(2 * PAGE, 3 * PAGE, 1, 1, None, 3),
            vec![1, 0, 0]
        );
        assert_eq!(r.armed_pages(), 1);
        // A toucher on the page's own node disarms it without moving it.
        assert_eq!(
            r.take_armed(5 * PAGE, 1, 0, usize::MAX, None, 3),
            vec![0; 3]
        );
        assert_eq!(r.armed_pages(), 0);
        let nodes: Vec<_> = (0..6).map(|p| r.node_of(p * PAGE).unwrap()).collect();
        assert_eq!(nodes, vec![2, 2, 1, 0, 0, 0]);
        // Migrating now disarms.
        r.arm_next_touch(0, PAGE);
        r.migrate(0, PAGE, 0, None, 3).unwrap();
        assert_eq!(r.armed_pages(), 0);
    }

    #[test]
    fn registered_memory_is_not_copied_and_is_given_back() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let mut v: Vec<u64> = (0..3000).collect();
        let ptr = NonNull::new(v.as_mut_ptr().cast::<u8>()).unwrap();
        let len = std::mem::size_of_val(&v[..]);
        let freed = Arc::new(AtomicBool::new(false));
        let flag = freed.clone();
        let free = Box::new(move || {
            drop(v);
            flag.store(true, Ordering::Relaxed);
        });
        // SAFETY: the Vec's memory is valid until `free` drops it, and only `r` uses it.
        let r = unsafe { Region::register(ptr, len, free, 1, &virtual_nodes(2)) }.unwrap();
        assert_eq!(r.as_ptr(), ptr.as_ptr());
        let head = ptr.as_ptr() as usize % PAGE;
        let pages = (head + len).div_ceil(PAGE);
        assert_eq!(r.pages_per_node(2), vec![0, pages as u64]);
        let mut total = 0;
        r.bytes_by_node(0, len, |node, bytes| {
            assert_eq!(node, Some(1));
            total += bytes;
        });
        assert_eq!(total, len);
        // Byte 0 is on the region's first page, the last byte on its last.
        assert_eq!(r.migrate(0, 1, 0, None, 2).unwrap(), vec![0, 1]);
        assert_eq!(r.node_of(0), Some(0));
        assert_eq!(r.node_of(len - 1), Some(1));
        // SAFETY: `r` holds `len` bytes of the Vec, which nothing else uses.
        let back = unsafe { std::slice::from_raw_parts(r.as_ptr().cast::<u64>(), 3000) };
        assert_eq!(back[2999], 2999);
        drop(r);
        assert!(freed.load(Ordering::Relaxed));
    }

    #[test]
    fn accounting_only_holds_no_memory() {
        let config = RegionConfig {
            accounting_only: true,
            ..virtual_nodes(3)
        };
        let r = Region::new(6 * PAGE, RegionPolicy::Interleave, &config).unwrap();
        assert!(r.is_accounted_only());
        assert_eq!(r.bytes_per_node(3), vec![2 * PAGE as u64; 3]);
    }
}
