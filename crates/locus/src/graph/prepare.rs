//! What a task's body needs before it runs, on the executing node: buffers allocated
//! (zeroed for an initial version never written), a read-write's input taken over or
//! copied, reductions' private copies, gathered views filled, shared data migrated or
//! touched, and the backups of versions updated in place.

use std::ptr::NonNull;

use super::exec::{Bodies, Executor};
use super::migrate::migrate_remote;
use super::task::Task;
use crate::data::partition;
use crate::data::version::{self, Buffer, Version};
use crate::data::{Binding, Kind};
use crate::error::Error;
use smallvec::SmallVec;

/// Allocates what the body needs on the executing node: zeroed buffers for initial
/// versions that were never written, deferred output buffers, and the copy of a
/// read-write's previous version.
///
/// With skipped bodies the buffers are only accounted (the simulator's pools hold no
/// memory), so nothing is zeroed or copied.
///
/// Returns the pages of shared data that moved as the task starts: armed for next touch
/// and taken to this node, or, for a migration task (`migrate_to`), moved to its node.
/// Keeps in `backups` the copies of the versions the body updates in place, which
/// [`Backups::restore`] puts back if it fails (`data::version`, "Failed producers").
/// `how`: whether bodies run, whether the task is a control task, where a migration
/// task moves its data.
pub(super) fn prepare_buffers(
    ex: &dyn Executor,
    task: &Task,
    bindings: &mut [Binding],
    (bodies, control, migrate_to): (Bodies, bool, Option<usize>),
    backups: &mut Backups,
) -> Result<u64, Error> {
    let mut migrated = 0u64;
    if let Some(target) = migrate_to {
        // A migration task (`Scope::migrate`): its declared data move now, nothing else.
        for b in bindings.iter().flat_map(Binding::leaves) {
            if let Some(shared) = b.shared() {
                migrated += shared
                    .migrate(b.offset, b.bytes, target)
                    .map_err(|message| Error::OutOfMemory {
                        task: task.name.to_string(),
                        bytes: b.bytes,
                        message,
                    })?;
            }
        }
        return Ok(migrated);
    }
    check_memory(ex, task, bodies, control)?;
    let node = ex.node();
    let oom = |bytes: usize, e: locus_mem::pool::AllocError| oom(task, bytes, e);
    for (b, gathered) in leaves_gathered_mut(bindings) {
        if b.weak {
            // The task does not see what it declares weakly.
            continue;
        }
        match &b.kind {
            Kind::Reduction(r) => {
                // A private copy on this node (`data::reduce`).
                if !control {
                    r.group
                        .take_copy(r, node, ex.pools(), bodies == Bodies::Run)
                        .map_err(|e| oom(r.group.bytes(), e))?;
                }
            }
            Kind::Shared(..) => {
                // Shared data is placed at creation (or by this first touch) and
                // updated in place: nothing to allocate or copy.
                let shared = b.shared().expect("a shared version names its buffer");
                if !control {
                    migrated += migrate_remote(&task.run, shared, b, node);
                }
                migrated += shared.touch(b.offset, b.bytes, node);
            }
            Kind::Versioned(_) => {
                version::prepare(ex, task, b, (bodies, control, gathered), backups)?;
            }
            Kind::Gathered(_) => unreachable!("a leaf is not gathered"),
        }
    }
    // Gathered views: a buffer on this node, filled from the segments for reads.
    for b in bindings.iter().filter(|b| !b.weak && !control) {
        let Kind::Gathered(gather) = &b.kind else {
            continue;
        };
        partition::gather(b, gather, ex.pools(), node, bodies == Bodies::Skip)
            .map_err(|e| oom(b.bytes, e))?;
    }
    Ok(migrated)
}

/// Refuses to run a body that would see buffers holding no memory (a simulation with
/// skipped bodies); control tasks see no buffer, so they run whatever the pools hold.
#[inline]
pub(super) fn check_memory(
    ex: &dyn Executor,
    task: &Task,
    bodies: Bodies,
    control: bool,
) -> Result<(), Error> {
    if bodies == Bodies::Run && !control && ex.pools().config().accounting_only {
        return Err(Error::Config(format!(
            "task `{}`: buffers hold no memory (a simulation with skipped bodies), so its \
             body cannot run",
            task.name
        )));
    }
    Ok(())
}

/// Task `task` could not get `bytes` bytes.
pub(crate) fn oom(task: &Task, bytes: usize, e: locus_mem::pool::AllocError) -> Error {
    Error::OutOfMemory {
        task: task.name.to_string(),
        bytes,
        message: e.to_string(),
    }
}

/// The leaves of `bindings` (`Binding::leaves_mut`), each with whether the body sees
/// it through a gathered copy (`data::partition`) rather than its own buffer.
pub(super) fn leaves_gathered_mut(
    bindings: &mut [Binding],
) -> impl Iterator<Item = (&mut Binding, bool)> {
    bindings.iter_mut().flat_map(|b| {
        let gathered = matches!(b.kind, Kind::Gathered(_));
        b.leaves_mut().map(move |leaf| (leaf, gathered))
    })
}

/// The previous contents of the versions a task updates in place, copied before its
/// body runs: a body that fails (panics, or a C body that returns non-zero) gets them
/// put back, so that the datum keeps its last complete version wherever the task ran
/// (`data::version`, "Failed producers"). Dropping it returns the copies to their pool.
#[derive(Default)]
pub(crate) struct Backups(SmallVec<[(NonNull<u8>, Saved); 1]>);

/// Bytes of a version copied inline rather than into a block of a pool (most of the
/// cost of a small copy is the allocation).
const INLINE_BACKUP: usize = 64;

/// One copy kept by [`Backups`].
enum Saved {
    /// A small version's bytes.
    Inline([u8; INLINE_BACKUP], usize),
    /// A block of a pool.
    Block(locus_mem::pool::Block),
}

impl Backups {
    /// Copies `output`'s buffer, just taken over from its input, aside (into a block
    /// on `node` unless it is small).
    #[inline]
    pub(crate) fn keep(
        &mut self,
        ex: &dyn Executor,
        node: usize,
        output: &Version,
    ) -> Result<(), locus_mem::pool::AllocError> {
        let buffer = output
            .buffer()
            .expect("a version updated in place holds its input's buffer");
        let bytes = output.bytes;
        let dst = NonNull::new(buffer.as_mut_ptr()).expect("a block is not null");
        if bytes <= INLINE_BACKUP {
            let mut inline = [0u8; INLINE_BACKUP];
            match buffer {
                // A block of a pool holds at least the smallest class, 64 bytes: they
                // are copied whole, in a few instructions, where a copy of `bytes`
                // calls `memcpy`.
                Buffer::Private(block) if block.capacity() >= INLINE_BACKUP => {
                    // SAFETY: the block's memory holds `capacity` initialised bytes
                    // (fresh mappings are zero-filled, recycled blocks hold earlier
                    // bytes); nobody but this task, whose body has not started,
                    // touches it.
                    inline = unsafe {
                        buffer
                            .as_ptr()
                            .cast::<[u8; INLINE_BACKUP]>()
                            .read_unaligned()
                    };
                }
                // SAFETY: the buffer holds `bytes` bytes, produced by the input's
                // producer; nobody but this task, whose body has not started, touches it.
                _ => inline[..bytes]
                    .copy_from_slice(unsafe { std::slice::from_raw_parts(buffer.as_ptr(), bytes) }),
            }
            self.0.push((dst, Saved::Inline(inline, bytes)));
            return Ok(());
        }
        let copy = ex.pools().alloc(node, bytes)?;
        // SAFETY: (1) both blocks hold at least `bytes` bytes (versions of one datum);
        // (2) distinct allocations; (3) as above.
        unsafe { std::ptr::copy_nonoverlapping(buffer.as_ptr(), copy.as_mut_ptr(), bytes) };
        self.0.push((dst, Saved::Block(copy)));
        Ok(())
    }

    /// Keeps `block`, holding what the buffer at `dst` held before the body runs (a
    /// version's block moved to the executing node, `data::version`).
    pub(crate) fn keep_block(&mut self, dst: NonNull<u8>, block: locus_mem::pool::Block) {
        self.0.push((dst, Saved::Block(block)));
    }

    /// Puts the copies back, once the body has failed.
    ///
    /// # Safety
    ///
    /// The versions the copies were made of are still held by the task (its bindings),
    /// not published, and their buffers not touched by anyone else.
    pub(super) unsafe fn restore(&self) {
        for (dst, saved) in &self.0 {
            let (src, bytes) = match saved {
                Saved::Inline(inline, bytes) => (inline.as_ptr(), *bytes),
                Saved::Block(block) => (block.as_ptr(), block.len()),
            };
            // SAFETY: (1) `dst` is the buffer of a version of `bytes` bytes, alive and
            // unpublished by the caller's contract, so written by nobody else; (2) the
            // copy is a distinct allocation of `bytes` bytes.
            unsafe { std::ptr::copy_nonoverlapping(src, dst.as_ptr(), bytes) };
        }
    }
}
