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
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};

use crate::placement::{self, BindMode, PlacementError};
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

/// Page size of the node table.
pub const PAGE: usize = 4096;

/// Virtual page numbers handed to regions that hold no memory, so that interleaving
/// starts on a different node for consecutive regions, as real mappings do.
static NEXT_VIRTUAL_PAGE: AtomicU64 = AtomicU64::new(0);

/// Memory placed by a policy, with the node of every page.
pub struct Region {
    ptr: NonNull<u8>,
    /// Bytes asked for.
    len: usize,
    /// Bytes mapped (`len` rounded up to pages; 0 when nothing is mapped).
    mapped: usize,
    policy: RegionPolicy,
    /// Node of each page, or [`UNTOUCHED`].
    pages: Box<[AtomicU16]>,
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
        }
    }
}

impl std::error::Error for RegionError {}

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
        };
        let first_page = if mapped == 0 {
            NEXT_VIRTUAL_PAGE.fetch_add(page_count as u64, Ordering::Relaxed)
        } else {
            (ptr.as_ptr() as usize / PAGE) as u64
        };
        // The rule's table; real placement below replaces it with the kernel's.
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
        let n = self.pages.get(offset / PAGE)?.load(Ordering::Relaxed);
        (n != UNTOUCHED).then_some(usize::from(n))
    }

    /// Records that a task on `node` touches bytes `offset..offset + len`: pages no task
    /// touched before are placed there (first touch; other policies ignore it). Returns
    /// the number of pages placed by this call.
    pub fn touch(&self, offset: usize, len: usize, node: usize) -> usize {
        if self.policy != RegionPolicy::FirstTouch || len == 0 {
            return 0;
        }
        self.pages[Self::page_range(offset, len, self.pages.len())]
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
        self.pages[Self::page_range(offset, len, self.pages.len())]
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
        for page in Self::page_range(offset, len, self.pages.len()) {
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
                // SAFETY: `page` is a page of this mapping.
                let at = unsafe { self.ptr.as_ptr().add(page * PAGE) };
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
            let page_end = ((at / PAGE) + 1) * PAGE;
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
            let n = usize::from(slot.load(Ordering::Relaxed));
            if n < nodes {
                out[n] += 1;
            }
        }
        out
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.mapped > 0 {
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
