//! Shared data: one buffer per datum, placed by a policy and updated in place (the SHM
//! model, config `shm-base`; `docs/architecture.md`, "Shared data").
//!
//! A shared datum keeps the same dependences as a versioned one (readers follow the last
//! writer submitted before them), plus the ones renaming removes: a writer also waits for
//! the previous writer to finish (write after write) and for every reader of the
//! previous contents to finish (write after read). Every version of a shared datum
//! names the same [`SharedBuffer`], a [`Region`] placed by its [`RegionPolicy`] when the
//! datum is created; tasks never allocate.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use locus_mem::pool::Pools;
use locus_mem::region::{Region, RegionConfig, RegionError, RegionPolicy, PAGE};

use super::access::{Binding, Mode};
use super::lock_mutex;
use super::version::{Version, Waiters};
use crate::error::Error;
use crate::graph::{Completion, Waiting};

/// Where shared data goes on a runtime, and how much of it is alive.
///
/// Node limits ([`RuntimeBuilder::node_limit`](crate::RuntimeBuilder::node_limit)):
/// the pages of every shared datum are reserved in the runtime's pools
/// ([`Pools::reserve`]) on the node that holds them, so that task buffers and shared data
/// together stay within each node's limit. A datum that does not fit is placed as a pool
/// block would be, or refused with [`Error::OutOfMemory`] naming it:
///
/// - bound to a node: on that node if it has room for all the pages, else on the nearest
///   node that has (the pools' fallback order); refused if none has;
/// - interleaved or blocked: the policy spreads the pages over every node, so each node
///   must have room for its share; refused otherwise;
/// - first touch: the pages are reserved when the datum is created (node 0 first, then
///   its nearest nodes, as much as each has room for), and refused if all nodes
///   together have no room for them. A task's first touch then moves the reservation of
///   the pages it places to its own node if that node has room, or else places them on
///   the nearest node that still holds reserved pages of the datum (bound there with
///   `mbind` on real nodes), so a first touch never exceeds a limit and never fails.
pub(crate) struct SharedSetup {
    /// The machine regions are placed on.
    pub(crate) config: RegionConfig,
    /// The policy of data created by [`Runtime::data`](crate::Runtime::data) and
    /// [`Scope::data`](crate::Scope::data) when the configuration's data model is
    /// shared; `None` when new data are versioned.
    pub(crate) default_policy: Option<RegionPolicy>,
    /// The runtime's pools, which hold the node limits the pages are reserved against.
    pools: Arc<Pools>,
    live: Vec<AtomicU64>,
    peak: Vec<AtomicU64>,
    /// Pages moved by explicit migrations, by migrations on next touch, and by the
    /// `auto` migration setting.
    pub(crate) migrated: [AtomicU64; 3],
}

/// Why a region was not made: the region's own error, or a node limit.
enum Refused {
    Region(RegionError),
    Limit(String),
}

impl From<RegionError> for Refused {
    fn from(e: RegionError) -> Self {
        Refused::Region(e)
    }
}

impl SharedSetup {
    pub(crate) fn new(
        config: RegionConfig,
        default_policy: Option<RegionPolicy>,
        pools: Arc<Pools>,
    ) -> Self {
        let nodes = config.nodes;
        SharedSetup {
            config,
            default_policy,
            pools,
            live: (0..nodes).map(|_| AtomicU64::new(0)).collect(),
            peak: (0..nodes).map(|_| AtomicU64::new(0)).collect(),
            migrated: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
        }
    }

    /// Nodes to try for `node`, nearest first: itself, its fallback list, then any other
    /// node.
    fn nearest_first(&self, node: usize) -> Vec<usize> {
        let nodes = self.config.nodes;
        let mut order = vec![node];
        let fallback = self.pools.config().fallback.get(node);
        order.extend(
            fallback
                .into_iter()
                .flatten()
                .copied()
                .filter(|&n| n < nodes),
        );
        order.extend(
            (0..nodes)
                .filter(|n| !order.contains(n))
                .collect::<Vec<_>>(),
        );
        order
    }

    /// Reserves the pages of a datum of `bytes` against the node limits and maps it:
    /// returns the region and the pages reserved on each node (for first touch, not
    /// placed yet). See [`SharedSetup`] for what happens at a limit.
    fn admit(&self, bytes: usize, policy: RegionPolicy) -> Result<(Region, Vec<u64>), Refused> {
        let nodes = self.config.nodes;
        let pages = bytes.div_ceil(PAGE) as u64;
        let page_bytes = PAGE as u64;
        let mut reserved = vec![0u64; nodes];
        let made = match policy {
            RegionPolicy::Bind(node) if node < nodes => {
                let on = self.pools.reserve(node, pages * page_bytes).map_err(|_| {
                    Refused::Limit(format!(
                        "neither node {node} nor any other node has room for its {} pages \
                         under the node limit",
                        pages
                    ))
                })?;
                reserved[on] = pages;
                Region::new(bytes, RegionPolicy::Bind(on), &self.config).map_err(Refused::from)
            }
            RegionPolicy::FirstTouch => {
                let mut left = pages;
                for node in self.nearest_first(0) {
                    if left == 0 {
                        break;
                    }
                    let got = self
                        .pools
                        .reserve_up_to(node, left * page_bytes, page_bytes);
                    reserved[node] = got / page_bytes;
                    left -= got / page_bytes;
                }
                if left > 0 {
                    self.release(&reserved);
                    return Err(Refused::Limit(format!(
                        "the nodes together have room for {} of its {pages} pages under \
                         the node limit",
                        pages - left
                    )));
                }
                Region::new(bytes, policy, &self.config).map_err(Refused::from)
            }
            _ => Region::new_admitted(bytes, policy, &self.config, |planned| {
                for (node, &p) in planned.iter().enumerate().take(nodes) {
                    if p > 0 && self.pools.reserve_on(node, p * page_bytes).is_err() {
                        self.release(&reserved);
                        reserved.iter_mut().for_each(|r| *r = 0);
                        return Err(Refused::Limit(format!(
                            "node {node} has no room for its {p} pages under the node \
                             limit ({} places pages on every node)",
                            policy.name()
                        )));
                    }
                    reserved[node] = p;
                }
                Ok(())
            }),
        };
        match made {
            Ok(region) => Ok((region, reserved)),
            Err(e) => {
                // Reservations made before the region failed are given back.
                self.release(&reserved);
                Err(e)
            }
        }
    }

    /// Gives back `pages[n]` reserved pages on each node `n`.
    fn release(&self, pages: &[u64]) {
        for (node, &p) in pages.iter().enumerate() {
            if p > 0 {
                self.pools.unreserve(node, p * PAGE as u64);
            }
        }
    }

    /// A zero-filled buffer of `bytes` placed by `policy`, its pages reserved against
    /// the node limits.
    pub(crate) fn buffer(
        self: &Arc<Self>,
        name: &str,
        bytes: usize,
        policy: RegionPolicy,
    ) -> Result<Arc<SharedBuffer>, Error> {
        let task = || format!("shared datum `{name}`");
        let (region, reserved) = self.admit(bytes, policy).map_err(|e| match e {
            Refused::Region(e @ RegionError::NoSuchNode { .. }) => {
                Error::Config(format!("shared datum `{name}`: {e}"))
            }
            Refused::Region(RegionError::Os(os)) => Error::OutOfMemory {
                task: task(),
                bytes,
                message: os.to_string(),
            },
            Refused::Region(
                e @ (RegionError::TooLarge { .. } | RegionError::MoreThanMemory { .. }),
            ) => Error::OutOfMemory {
                task: task(),
                bytes,
                message: e.to_string(),
            },
            Refused::Limit(message) => Error::OutOfMemory {
                task: task(),
                bytes,
                message,
            },
        })?;
        for (n, pages) in region
            .pages_per_node(self.config.nodes)
            .into_iter()
            .enumerate()
        {
            self.add(n, pages);
        }
        // Only first touch moves pages as tasks run: other placements fix the node that
        // data affinity resolves to here (and an explicit migration updates it), instead
        // of on every activation.
        let placed_main = if policy == RegionPolicy::FirstTouch {
            NO_MAIN
        } else {
            main_node_of(&region, self.config.nodes)
        };
        Ok(Arc::new(SharedBuffer {
            region,
            placed_main: AtomicUsize::new(placed_main),
            reservation: Mutex::new(Reservation {
                unplaced: if policy == RegionPolicy::FirstTouch {
                    reserved.clone()
                } else {
                    vec![0; reserved.len()]
                },
                reserved,
            }),
            setup: self.clone(),
            poisoned: std::sync::Mutex::new(None),
            maybe_poisoned: AtomicBool::new(false),
            pending: AtomicU64::new(0),
        }))
    }

    /// Counts `pages` more pages alive on `node`.
    fn add(&self, node: usize, pages: u64) {
        let bytes = pages * PAGE as u64;
        let now = self.live[node].fetch_add(bytes, Ordering::AcqRel) + bytes;
        self.peak[node].fetch_max(now, Ordering::AcqRel);
    }

    /// Starts a new peak at the bytes alive now.
    pub(crate) fn reset_peaks(&self) {
        for (live, peak) in self.live.iter().zip(&self.peak) {
            peak.store(live.load(Ordering::Acquire), Ordering::Release);
        }
    }

    /// Highest bytes of shared data alive per node since the last reset. Counted in whole
    /// pages; pages placed by first touch count from the task that touched them first.
    pub(crate) fn peaks(&self) -> Vec<u64> {
        self.peak
            .iter()
            .map(|p| p.load(Ordering::Acquire))
            .collect()
    }

    /// Bytes of shared data alive now, all nodes.
    pub(crate) fn live_bytes(&self) -> u64 {
        self.live.iter().map(|l| l.load(Ordering::Acquire)).sum()
    }
}

/// Index of [`SharedSetup::migrated`]: pages moved by explicit migrations.
pub(crate) const MIGRATED_NOW: usize = 0;
/// Pages moved on next touch.
pub(crate) const MIGRATED_NEXT_TOUCH: usize = 1;
/// Pages moved by the `auto` migration setting.
pub(crate) const MIGRATED_AUTO: usize = 2;

/// The memory of one shared datum.
pub(crate) struct SharedBuffer {
    pub(crate) region: Region,
    /// The node holding most of the buffer, when its placement changes only by an
    /// explicit migration (which updates it); [`NO_MAIN`] when touches move pages.
    placed_main: AtomicUsize,
    /// The pages reserved against each node's limit. First touches take this lock, so
    /// that the pages they place and the reservations they move agree.
    reservation: Mutex<Reservation>,
    setup: Arc<SharedSetup>,
    /// The task that panicked while writing the buffer in place, if one did since the
    /// last whole write: the contents may be partly written.
    poisoned: std::sync::Mutex<Option<String>>,
    /// Whether `poisoned` may hold a task: every access checks it, and only a
    /// poisoned datum pays for the lock.
    maybe_poisoned: AtomicBool,
    /// Tasks submitted that declare the datum and have not started yet, counted under
    /// the `auto` migration setting only: the datum's expected reuse. Incremented at
    /// submission, decremented when the task starts (`graph::exec::start`), before
    /// its own decision, which counts itself apart.
    pub(crate) pending: AtomicU64,
}

/// The pages of a shared datum reserved against the node limits, per node.
struct Reservation {
    /// Pages reserved on each node: placed there, or not placed yet.
    reserved: Vec<u64>,
    /// Of `reserved`, the pages no task has touched yet (first touch; zero otherwise).
    unplaced: Vec<u64>,
}

impl SharedBuffer {
    /// Marks the contents as possibly partly written by `task`, which panicked.
    pub(crate) fn poison(&self, task: &str) {
        let mut poisoned = crate::data::lock_mutex(&self.poisoned);
        *poisoned = Some(task.to_string());
        self.maybe_poisoned.store(true, Ordering::Release);
    }

    /// A whole write completed: the contents are whole again.
    pub(crate) fn clear_poison(&self) {
        if !self.maybe_poisoned.load(Ordering::Acquire) {
            return;
        }
        let mut poisoned = crate::data::lock_mutex(&self.poisoned);
        *poisoned = None;
        self.maybe_poisoned.store(false, Ordering::Release);
    }

    /// The task that left the contents partly written, if any.
    pub(crate) fn poisoned_by(&self) -> Option<String> {
        if !self.maybe_poisoned.load(Ordering::Acquire) {
            return None;
        }
        crate::data::lock_mutex(&self.poisoned).clone()
    }

    /// Records that a task on `node` touched `offset..offset + len` (first-touch
    /// placement); newly placed pages count as live on their node. Within the node
    /// limits, as [`SharedSetup`] says: a page goes to `node` if `node` holds an unplaced
    /// reservation of the datum or has room for one, else to the nearest node holding one.
    /// Returns the pages armed for next touch that moved to `node`.
    pub(crate) fn touch(&self, offset: usize, len: usize, node: usize) -> u64 {
        let moved = if self.region.armed_pages() > 0 && len > 0 {
            self.take_armed(offset, len, node)
        } else {
            0
        };
        if self.region.policy() != RegionPolicy::FirstTouch || len == 0 {
            return moved;
        }
        let setup = &self.setup;
        let nodes = setup.config.nodes;
        let mut guard = lock_mutex(&self.reservation);
        let Reservation { reserved, unplaced } = &mut *guard;
        let untouched = self.region.untouched_pages(offset, len) as u64;
        if untouched == 0 {
            return moved;
        }
        let order = setup.nearest_first(node);
        let mut mine = untouched.min(unplaced[node]);
        unplaced[node] -= mine;
        let mut rest = untouched - mine;
        if rest > 0 && setup.pools.reserve_on(node, rest * PAGE as u64).is_ok() {
            // `node` has room: the pages go there, and as many reserved pages of the
            // farthest nodes are given back.
            reserved[node] += rest;
            mine += rest;
            for &other in order.iter().rev() {
                let give = rest.min(unplaced[other]);
                if give > 0 {
                    unplaced[other] -= give;
                    reserved[other] -= give;
                    setup.pools.unreserve(other, give * PAGE as u64);
                    rest -= give;
                }
            }
        }
        let mut plan = vec![(node, mine as usize)];
        for &other in &order[1..] {
            let take = rest.min(unplaced[other]);
            if take > 0 {
                plan.push((other, take as usize));
                rest -= take;
            }
        }
        debug_assert_eq!(rest, 0, "every page of a first-touch datum is reserved");
        let placed = self.region.touch_planned(
            offset,
            len,
            node,
            &plan,
            setup.config.os_nodes.as_deref(),
            nodes,
        );
        for (n, &p) in placed.iter().enumerate().take(nodes) {
            if p > 0 {
                setup.add(n, p);
            }
        }
        moved
    }

    /// The node holding most of the buffer (the first such node; node 0 when no page is
    /// placed yet).
    pub(crate) fn main_node(&self) -> usize {
        match self.placed_main.load(Ordering::Acquire) {
            NO_MAIN => main_node_of(&self.region, self.setup.config.nodes),
            main => main,
        }
    }
}

/// Migration of shared data (Broquedis et al., "Dynamic Task and Data Placement over NUMA
/// Architectures: An OpenMP Runtime Perspective", MaMI's `mami_migrate_on_node` and
/// `mami_migrate_on_next_touch`), within the node limits: the pages moved take their
/// reservation along, and a move the target node has no room for is refused (now) or
/// left undone (next touch: the page stays where it is).
impl SharedBuffer {
    /// Moves the placed pages holding `offset..offset + len` to `node` now; returns the
    /// pages moved.
    pub(crate) fn migrate(&self, offset: usize, len: usize, node: usize) -> Result<u64, String> {
        self.migrate_for(offset, len, node, MIGRATED_NOW)
    }

    /// [`migrate`](Self::migrate), the pages counted under `reason`
    /// ([`MIGRATED_NOW`], [`MIGRATED_NEXT_TOUCH`] or [`MIGRATED_AUTO`]).
    pub(crate) fn migrate_for(
        &self,
        offset: usize,
        len: usize,
        node: usize,
        reason: usize,
    ) -> Result<u64, String> {
        let setup = &self.setup;
        let nodes = setup.config.nodes;
        let mut guard = lock_mutex(&self.reservation);
        let wanted = self.region.placed_elsewhere(offset, len, node) as u64;
        if wanted == 0 {
            // Armed pages already on `node` are disarmed all the same.
            let _ = self.region.migrate(offset, len, node, None, nodes);
            return Ok(0);
        }
        setup
            .pools
            .reserve_on(node, wanted * PAGE as u64)
            .map_err(|_| {
                format!("node {node} has no room for {wanted} more pages under the node limit")
            })?;
        let moved =
            match self
                .region
                .migrate(offset, len, node, setup.config.os_nodes.as_deref(), nodes)
            {
                Ok(moved) => moved,
                Err(e) => {
                    setup.pools.unreserve(node, wanted * PAGE as u64);
                    return Err(e.to_string());
                }
            };
        let total = self.account_moves(&mut guard.reserved, &moved, node, wanted);
        setup.migrated[reason].fetch_add(total, Ordering::Relaxed);
        if self.region.policy() != RegionPolicy::FirstTouch && self.region.armed_pages() == 0 {
            self.placed_main
                .store(main_node_of(&self.region, nodes), Ordering::Release);
        }
        Ok(total)
    }

    /// Arms every placed page for migration on next touch: the first task that declares
    /// an access to a page takes it to its node when it starts. Returns the pages armed.
    pub(crate) fn arm_next_touch(&self) -> usize {
        let _guard = lock_mutex(&self.reservation);
        // Touches now move pages: the main node is computed on demand.
        self.placed_main.store(NO_MAIN, Ordering::Release);
        self.region.arm_next_touch(0, self.region.len())
    }

    /// A task on `node` starts with an access to `offset..offset + len`: the armed pages
    /// there move to `node`, as many as `node` has room for. Returns the pages moved.
    fn take_armed(&self, offset: usize, len: usize, node: usize) -> u64 {
        let setup = &self.setup;
        let nodes = setup.config.nodes;
        let mut guard = lock_mutex(&self.reservation);
        let wanted = self.region.armed_elsewhere(offset, len, node) as u64;
        let granted = if wanted == 0 {
            0
        } else {
            setup
                .pools
                .reserve_up_to(node, wanted * PAGE as u64, PAGE as u64)
                / PAGE as u64
        };
        let moved = self.region.take_armed(
            offset,
            len,
            node,
            granted as usize,
            setup.config.os_nodes.as_deref(),
            nodes,
        );
        let total = self.account_moves(&mut guard.reserved, &moved, node, granted);
        setup.migrated[MIGRATED_NEXT_TOUCH].fetch_add(total, Ordering::Relaxed);
        total
    }

    /// Moves the reservations and live counts of the pages moved off each node
    /// (`moved[n]`) to `node`, which holds `granted` newly reserved pages (those not
    /// used are given back); returns the pages moved.
    fn account_moves(&self, reserved: &mut [u64], moved: &[u64], node: usize, granted: u64) -> u64 {
        let setup = &self.setup;
        let total: u64 = moved.iter().sum();
        if granted > total {
            setup.pools.unreserve(node, (granted - total) * PAGE as u64);
        }
        for (src, &pages) in moved.iter().enumerate().take(reserved.len()) {
            if pages > 0 {
                setup.pools.unreserve(src, pages * PAGE as u64);
                reserved[src] -= pages.min(reserved[src]);
                setup.live[src].fetch_sub(pages * PAGE as u64, Ordering::AcqRel);
            }
        }
        if total > 0 {
            reserved[node] += total;
            setup.add(node, total);
        }
        total
    }
}

impl SharedSetup {
    /// Pages moved so far, by reason: explicit migrations, on next touch, by `auto`.
    pub(crate) fn migrated_pages(&self) -> [u64; 3] {
        self.migrated.each_ref().map(|m| m.load(Ordering::Relaxed))
    }

    /// A shared buffer over a registered region (memory the user allocated): its placed
    /// pages are reserved on their nodes, its untouched ones as a first-touch datum's.
    pub(crate) fn register(
        self: &Arc<Self>,
        name: &str,
        region: Region,
    ) -> Result<Arc<SharedBuffer>, Error> {
        let nodes = self.config.nodes;
        let page_bytes = PAGE as u64;
        let placed = region.pages_per_node(nodes);
        let total_pages = match region.len() {
            0 => 0,
            len => (len + region.as_ptr() as usize % PAGE).div_ceil(PAGE) as u64,
        };
        let mut left = total_pages.saturating_sub(placed.iter().sum());
        let mut reserved = vec![0u64; nodes];
        let refuse = |reserved: &[u64], message: String| {
            self.release(reserved);
            Err(Error::OutOfMemory {
                task: format!("register({name})"),
                bytes: region.len(),
                message,
            })
        };
        for (node, &p) in placed.iter().enumerate() {
            if p > 0 && self.pools.reserve_on(node, p * page_bytes).is_err() {
                return refuse(
                    &reserved,
                    format!("node {node} has no room for its {p} pages under the node limit"),
                );
            }
            reserved[node] = p;
        }
        let mut unplaced = vec![0u64; nodes];
        for node in self.nearest_first(0) {
            if left == 0 {
                break;
            }
            let got = self
                .pools
                .reserve_up_to(node, left * page_bytes, page_bytes)
                / page_bytes;
            reserved[node] += got;
            unplaced[node] += got;
            left -= got;
        }
        if left > 0 {
            return refuse(
                &reserved,
                format!(
                    "the nodes have no room for its {left} untouched pages under the node limit"
                ),
            );
        }
        for (n, &pages) in placed.iter().enumerate() {
            self.add(n, pages);
        }
        Ok(Arc::new(SharedBuffer {
            region,
            placed_main: AtomicUsize::new(NO_MAIN),
            reservation: Mutex::new(Reservation { reserved, unplaced }),
            setup: self.clone(),
            poisoned: std::sync::Mutex::new(None),
            maybe_poisoned: AtomicBool::new(false),
            pending: AtomicU64::new(0),
        }))
    }
}

/// `SharedBuffer::placed_main` when the main node is computed on demand.
const NO_MAIN: usize = usize::MAX;

/// The node holding most of `region` (the first such node; node 0 when no page is
/// placed yet).
fn main_node_of(region: &Region, nodes: usize) -> usize {
    let per_node = region.pages_per_node(nodes);
    let max = per_node.iter().copied().max().unwrap_or(0);
    per_node.iter().position(|&p| p == max).unwrap_or(0)
}

/// Releases a complete task's binding `b` of shared data (task `task`, whose
/// completion is `completion`; `gathered`: the body saw the access through a gathered
/// copy): a reader no longer holds the version it read, a strong writer poisons the
/// datum if its body failed part-way or clears the poison if it wrote the datum whole,
/// and the version a writer made is published. Returns the tasks this releases: the
/// writer that waited for the last reader, and those that waited for the version.
pub(crate) fn release(
    b: &mut Binding,
    task: &str,
    gathered: bool,
    completion: Completion,
) -> (Vec<Waiting>, Waiters) {
    let released = match (&b.input, b.mode) {
        (Some(input), Mode::Read) => input.reader_done(),
        _ => Vec::new(),
    };
    if let (Some(shared), true) = (&b.data.shared, b.mode.writes() && !b.weak) {
        match completion {
            // A gathered view is a copy, scattered only once the body has returned: a
            // failed body wrote none of the segments.
            Completion::Panicked if gathered => {}
            Completion::Panicked => shared.poison(task),
            // A whole write replaces whatever a failed writer left.
            Completion::Done if b.mode == Mode::Write => shared.clear_poison(),
            _ => {}
        }
    }
    let published = b
        .output
        .as_ref()
        .map(|o| Version::publish_after_forward(o, completion == Completion::Done))
        .unwrap_or_default();
    (released, published)
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        let pages = self.region.pages_per_node(self.setup.config.nodes);
        for (live, pages) in self.setup.live.iter().zip(pages) {
            live.fetch_sub(pages * PAGE as u64, Ordering::AcqRel);
        }
        self.setup.release(&lock_mutex(&self.reservation).reserved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locus_mem::pool::PoolConfig;

    const P: u64 = PAGE as u64;

    /// Two virtual nodes of `limit_pages` pages each.
    fn setup(limit_pages: u64) -> (Arc<Pools>, Arc<SharedSetup>) {
        let pools =
            Pools::new(PoolConfig::virtual_nodes(2).with_node_limit(limit_pages * P)).unwrap();
        let config = RegionConfig {
            os_nodes: None,
            nodes: 2,
            accounting_only: false,
        };
        let setup = Arc::new(SharedSetup::new(config, None, pools.clone()));
        (pools, setup)
    }

    fn reserved_pages(pools: &Pools) -> Vec<u64> {
        pools.stats().iter().map(|s| s.reserved / P).collect()
    }

    fn nodes_of(b: &SharedBuffer) -> Vec<Option<usize>> {
        (0..b.region.len().div_ceil(PAGE))
            .map(|p| b.region.node_of(p * PAGE))
            .collect()
    }

    #[test]
    fn first_touch_moves_reservations_within_the_limits() {
        let (pools, setup) = setup(4);
        let a = setup
            .buffer("a", 3 * PAGE, RegionPolicy::FirstTouch)
            .unwrap();
        // Reserved at creation, node 0 first.
        assert_eq!(reserved_pages(&pools), vec![3, 0]);
        // Node 1 has room: its first touch moves the reservation of its pages there.
        a.touch(0, 2 * PAGE, 1);
        assert_eq!(reserved_pages(&pools), vec![1, 2]);
        a.touch(0, 3 * PAGE, 0);
        assert_eq!(nodes_of(&a), vec![Some(1), Some(1), Some(0)]);
        assert_eq!(reserved_pages(&pools), vec![1, 2]);

        // Bound to node 1, which has room for 2 of its 3 pages: the nearest node with
        // room for all of them takes it, and a fallback is counted at node 1.
        let b = setup.buffer("b", 3 * PAGE, RegionPolicy::Bind(1)).unwrap();
        assert_eq!(nodes_of(&b), vec![Some(0); 3]);
        assert_eq!(b.main_node(), 0);
        assert_eq!(reserved_pages(&pools), vec![4, 2]);
        assert_eq!(pools.stats()[1].fallbacks, 1);

        // Node 0 is full: a first touch from node 0 places on node 1, where the datum
        // holds its reservation.
        let c = setup
            .buffer("c", 2 * PAGE, RegionPolicy::FirstTouch)
            .unwrap();
        assert_eq!(reserved_pages(&pools), vec![4, 4]);
        c.touch(0, 2 * PAGE, 0);
        assert_eq!(nodes_of(&c), vec![Some(1), Some(1)]);
        assert_eq!(reserved_pages(&pools), vec![4, 4]);

        // Nothing fits any more, in any policy; each refusal names the datum.
        for policy in [
            RegionPolicy::FirstTouch,
            RegionPolicy::Bind(0),
            RegionPolicy::Interleave,
            RegionPolicy::Blocked,
        ] {
            match setup.buffer("d", PAGE, policy) {
                Err(Error::OutOfMemory {
                    task,
                    bytes,
                    message,
                }) => {
                    assert_eq!((task.as_str(), bytes), ("shared datum `d`", PAGE));
                    assert!(message.contains("node limit"), "{message}");
                }
                Err(e) => panic!("{policy:?}: {e}"),
                Ok(_) => panic!("{policy:?}: placed beyond the limits"),
            }
        }
        assert_eq!(reserved_pages(&pools), vec![4, 4]);
        assert_eq!(setup.live_bytes(), 8 * P);
        drop((a, b, c));
        assert_eq!(reserved_pages(&pools), vec![0, 0]);
        assert_eq!(setup.live_bytes(), 0);
    }

    #[test]
    fn spread_policies_need_room_on_every_node_and_share_it_with_blocks() {
        let (pools, setup) = setup(4);
        let block = pools.alloc(0, 3 * PAGE).unwrap(); // a 16 KiB class block
        assert_eq!(block.capacity(), 4 * PAGE);
        // Node 0 is full of pool memory: its share of an interleaved datum does not fit,
        // and nothing stays reserved on node 1.
        let e = setup
            .buffer("x", 4 * PAGE, RegionPolicy::Interleave)
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("node 0 has no room for its 2 pages"),
            "{e}"
        );
        assert_eq!(reserved_pages(&pools), vec![0, 0]);
        drop(block);
        let x = setup.buffer("x", 4 * PAGE, RegionPolicy::Blocked).unwrap();
        assert_eq!(reserved_pages(&pools), vec![2, 2]);
        // The pages count against the limit of pool blocks too.
        let b = pools.alloc(0, 2 * PAGE).unwrap();
        let c = pools.alloc(0, 2 * PAGE).unwrap();
        assert_eq!((b.node(), c.node(), c.fell_back()), (0, 1, true));
        assert!(pools.alloc(0, PAGE).is_err());
        drop((x, b, c));
        assert_eq!(reserved_pages(&pools), vec![0, 0]);
    }
}
