//! Versions: the single-assignment instances of a datum, and the readiness of their
//! readers.
//!
//! A version is created by the submission of a task that writes its datum (its
//! *producer*) and is *produced* when that task finishes. Tasks that read it before then
//! wait in its list of waiters; the producer's completion hands them back to the engine.
//! Its buffer is allocated either at submission (immediate allocation) or by the
//! producer's worker right before the body runs (deferred allocation), and returns to its
//! node's pool when the last `Arc<Version>` is dropped.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use locus_mem::pool::Block;

use super::handle::lock;
use crate::graph::TaskRef;

/// Counts of live versions, shared by all versions of a runtime.
#[derive(Default)]
pub(crate) struct VersionCounts {
    live: AtomicUsize,
    peak: AtomicUsize,
    created: AtomicU64,
}

impl VersionCounts {
    /// Versions currently alive (held by a handle or a task).
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// Highest number of live versions since the last [`reset_peak`](Self::reset_peak).
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire)
    }

    /// Versions created since the runtime started.
    pub(crate) fn created(&self) -> u64 {
        self.created.load(Ordering::Acquire)
    }

    pub(crate) fn reset_peak(&self) {
        self.peak.store(self.live(), Ordering::Release);
    }
}

struct State {
    produced: bool,
    waiters: Vec<TaskRef>,
}

/// One version of a datum.
pub(crate) struct Version {
    /// Size of the version's buffer in bytes.
    pub(crate) bytes: usize,
    buffer: OnceLock<Block>,
    state: Mutex<State>,
    counts: Arc<VersionCounts>,
}

impl Version {
    fn new(bytes: usize, produced: bool, counts: &Arc<VersionCounts>) -> Arc<Self> {
        let live = counts.live.fetch_add(1, Ordering::AcqRel) + 1;
        counts.peak.fetch_max(live, Ordering::AcqRel);
        counts.created.fetch_add(1, Ordering::Relaxed);
        Arc::new(Version {
            bytes,
            buffer: OnceLock::new(),
            state: Mutex::new(State {
                produced,
                waiters: Vec::new(),
            }),
            counts: counts.clone(),
        })
    }

    /// A version that no task produces: the initial contents of a datum.
    pub(crate) fn initial(bytes: usize, counts: &Arc<VersionCounts>) -> Arc<Self> {
        Version::new(bytes, true, counts)
    }

    /// A version that its producer, just submitted, will write.
    pub(crate) fn pending(bytes: usize, counts: &Arc<VersionCounts>) -> Arc<Self> {
        Version::new(bytes, false, counts)
    }

    /// Registers `task` as waiting for this version unless it is already produced.
    /// Returns whether the task must wait.
    pub(crate) fn add_waiter(&self, task: &TaskRef) -> bool {
        let mut state = lock(&self.state);
        if state.produced {
            false
        } else {
            state.waiters.push(task.clone());
            true
        }
    }

    /// Marks the version produced and returns the tasks that waited for it.
    pub(crate) fn publish(&self) -> Vec<TaskRef> {
        let mut state = lock(&self.state);
        state.produced = true;
        std::mem::take(&mut state.waiters)
    }

    /// Whether the producer has finished.
    pub(crate) fn is_produced(&self) -> bool {
        lock(&self.state).produced
    }

    /// The buffer, once allocated.
    pub(crate) fn buffer(&self) -> Option<&Block> {
        self.buffer.get()
    }

    /// The node of the buffer, once allocated.
    pub(crate) fn node(&self) -> Option<usize> {
        self.buffer.get().map(Block::node)
    }

    /// Installs the buffer, allocating it with `alloc` if no other thread has; returns
    /// the installed buffer. Two racing readers of an unwritten initial version may both
    /// allocate; the loser's block goes straight back to its pool.
    pub(crate) fn buffer_or_alloc<E>(
        &self,
        alloc: impl FnOnce() -> Result<Block, E>,
    ) -> Result<&Block, E> {
        if let Some(block) = self.buffer.get() {
            return Ok(block);
        }
        let block = alloc()?;
        // A lost race drops `block` here, which frees it.
        let _ = self.buffer.set(block);
        Ok(self.buffer.get().expect("buffer was just installed"))
    }
}

impl Drop for Version {
    fn drop(&mut self) {
        self.counts.live.fetch_sub(1, Ordering::AcqRel);
    }
}
