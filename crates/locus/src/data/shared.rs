//! Shared data: one buffer per datum, placed by a policy and updated in place (the SHM
//! model, config `shm-base`; `docs/architecture.md`, "Shared data").
//!
//! A shared datum keeps the same dependences as a versioned one (readers follow the last
//! writer submitted before them), plus the ones renaming removes: a writer also waits for
//! the previous writer to finish (write after write) and for every reader of the
//! previous contents to finish (write after read). Every version of a shared datum
//! names the same [`SharedBuffer`], a [`Region`] placed by its [`RegionPolicy`] when the
//! datum is created; tasks never allocate.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use locus_mem::region::{Region, RegionConfig, RegionPolicy, PAGE};

use crate::error::Error;

/// Where shared data goes on a runtime, and how much of it is alive.
pub(crate) struct SharedSetup {
    /// The machine regions are placed on.
    pub(crate) config: RegionConfig,
    /// The policy of data created by [`Runtime::data`](crate::Runtime::data) and
    /// [`Scope::data`](crate::Scope::data) when the configuration's data model is
    /// shared; `None` when new data are versioned.
    pub(crate) default_policy: Option<RegionPolicy>,
    live: Vec<AtomicU64>,
    peak: Vec<AtomicU64>,
}

impl SharedSetup {
    pub(crate) fn new(config: RegionConfig, default_policy: Option<RegionPolicy>) -> Self {
        let nodes = config.nodes;
        SharedSetup {
            config,
            default_policy,
            live: (0..nodes).map(|_| AtomicU64::new(0)).collect(),
            peak: (0..nodes).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// A zero-filled buffer of `bytes` placed by `policy`.
    pub(crate) fn buffer(
        self: &Arc<Self>,
        name: &str,
        bytes: usize,
        policy: RegionPolicy,
    ) -> Result<Arc<SharedBuffer>, Error> {
        let region = Region::new(bytes, policy, &self.config).map_err(|e| match e {
            locus_mem::region::RegionError::NoSuchNode { .. } => {
                Error::Config(format!("shared datum `{name}`: {e}"))
            }
            locus_mem::region::RegionError::Os(os) => Error::OutOfMemory {
                task: format!("shared datum `{name}`"),
                bytes,
                message: os.to_string(),
            },
            e @ locus_mem::region::RegionError::TooLarge { .. } => Error::OutOfMemory {
                task: format!("shared datum `{name}`"),
                bytes,
                message: e.to_string(),
            },
        })?;
        for (n, pages) in region
            .pages_per_node(self.config.nodes)
            .into_iter()
            .enumerate()
        {
            self.add(n, pages);
        }
        // Only first touch moves pages after creation: other placements fix the node
        // that data affinity resolves to once, here, instead of on every activation.
        let placed_main =
            (policy != RegionPolicy::FirstTouch).then(|| main_node_of(&region, self.config.nodes));
        Ok(Arc::new(SharedBuffer {
            region,
            placed_main,
            setup: self.clone(),
            poisoned: std::sync::Mutex::new(None),
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

/// The memory of one shared datum.
pub(crate) struct SharedBuffer {
    pub(crate) region: Region,
    /// The node holding most of the buffer, when its placement cannot change.
    placed_main: Option<usize>,
    setup: Arc<SharedSetup>,
    /// The task that panicked while writing the buffer in place, if one did since the
    /// last whole write: the contents may be partly written.
    poisoned: std::sync::Mutex<Option<String>>,
}

impl SharedBuffer {
    /// Marks the contents as possibly partly written by `task`, which panicked.
    pub(crate) fn poison(&self, task: &str) {
        *crate::data::lock_mutex(&self.poisoned) = Some(task.to_string());
    }

    /// A whole write completed: the contents are whole again.
    pub(crate) fn clear_poison(&self) {
        *crate::data::lock_mutex(&self.poisoned) = None;
    }

    /// The task that left the contents partly written, if any.
    pub(crate) fn poisoned_by(&self) -> Option<String> {
        crate::data::lock_mutex(&self.poisoned).clone()
    }

    /// Records that a task on `node` touched `offset..offset + len` (first-touch
    /// placement); newly placed pages count as live on their node.
    pub(crate) fn touch(&self, offset: usize, len: usize, node: usize) {
        let placed = self.region.touch(offset, len, node);
        if placed > 0 {
            self.setup.add(node, placed as u64);
        }
    }

    /// The node holding most of the buffer (the first such node; node 0 when no page is
    /// placed yet).
    pub(crate) fn main_node(&self) -> usize {
        self.placed_main
            .unwrap_or_else(|| main_node_of(&self.region, self.setup.config.nodes))
    }
}

/// The node holding most of `region` (the first such node; node 0 when no page is
/// placed yet).
fn main_node_of(region: &Region, nodes: usize) -> usize {
    let per_node = region.pages_per_node(nodes);
    let max = per_node.iter().copied().max().unwrap_or(0);
    per_node.iter().position(|&p| p == max).unwrap_or(0)
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        let pages = self.region.pages_per_node(self.setup.config.nodes);
        for (live, pages) in self.setup.live.iter().zip(pages) {
            live.fetch_sub(pages * PAGE as u64, Ordering::AcqRel);
        }
    }
}
