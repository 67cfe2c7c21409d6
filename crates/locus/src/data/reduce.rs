//! Reductions: commutative, associative updates of a datum by tasks that never wait for
//! each other (OpenMP's task reductions, StarPU's `REDUX`).
//!
//! A task declaring [`Data::reduce`](crate::Data::reduce) gets, as its view, a
//! *private copy* of the datum: a buffer on the node of the worker running it, set to
//! the identity when it is made, into which the body accumulates its contribution.
//! Copies belong to the datum's open *reduction group*: the consecutive reductions (in
//! submission order, with the same identity and combine function) since the last
//! other access. Reducers bind to nothing and wait for nothing, not even the datum's
//! previous writer; a task of the group takes a free copy of its node (one left by an
//! earlier reducer there, which it keeps accumulating into) or makes a new one, so a
//! node holds as many copies as it ran reducers at once, at most one per worker (plus
//! one per task waiting on the worker's stack).
//!
//! The next other access to the datum (a read, a write, a reduction with other
//! functions, or a fetch) closes the group: a *combining* task, named
//! `reduce(<datum>)`, reads the datum's version from before the group (so it waits for
//! its writer), waits for every reducer of the group, and writes a new version: the
//! previous contents, combined with the copies of each node folded together first (in
//! the order the copies were made), then with the nodes' partial results in order of
//! distance from the combining task's node (its own first, then the pools' fallback
//! order, nearest first). The closing access binds to that new version like to any
//! writer's. A fetch combines on the calling thread, from the node of the datum's
//! buffer. A group whose reducer did not complete (a failed run) is discarded: the datum
//! keeps its contents from before the group.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use locus_mem::pool::{AllocError, Block, Pools};

use super::handle::{lock, DataInner, Element};
use super::version::Version;
use crate::graph::Waiting;

/// The identity and combine function of a reduction, without their element type.
pub(crate) struct Reducer {
    /// One element of the identity, as bytes.
    identity: Vec<u8>,
    /// The address of the combine function: reductions with the same function and
    /// identity share a group.
    key: usize,
    /// Combines the second buffer into the first, element by element.
    combine: Box<CombineBytes>,
}

/// A combine function over the bytes of whole buffers.
type CombineBytes = dyn Fn(&mut [u8], &[u8]) + Send + Sync;

impl Reducer {
    fn new<T: Element>(identity: T, combine: fn(&mut T, &T)) -> Self {
        Reducer {
            identity: bytemuck::bytes_of(&identity).to_vec(),
            key: combine as usize,
            combine: Box::new(move |into: &mut [u8], from: &[u8]| {
                let into: &mut [T] = bytemuck::cast_slice_mut(into);
                let from: &[T] = bytemuck::cast_slice(from);
                for (a, b) in into.iter_mut().zip(from) {
                    combine(a, b);
                }
            }),
        }
    }

    /// Whether `other` reduces with the same function and identity.
    pub(crate) fn same(&self, other: &Reducer) -> bool {
        self.key == other.key && self.identity == other.identity
    }

    fn fill_identity(&self, buffer: &mut [u8]) {
        if self.identity.is_empty() {
            return;
        }
        for chunk in buffer.chunks_exact_mut(self.identity.len()) {
            chunk.copy_from_slice(&self.identity);
        }
    }
}

/// A declared reduction into a whole datum; the body's view is `&mut [T]`, its private
/// copy, to combine its contribution into (module doc).
pub struct Reduce<T> {
    pub(crate) data: Arc<DataInner>,
    pub(crate) reducer: Arc<Reducer>,
    _elem: PhantomData<fn() -> T>,
}

impl<T: Element> Reduce<T> {
    pub(crate) fn new(data: Arc<DataInner>, identity: T, combine: fn(&mut T, &T)) -> Self {
        Reduce {
            data,
            reducer: Arc::new(Reducer::new(identity, combine)),
            _elem: PhantomData,
        }
    }
}

/// The open reduction group of a datum (module doc).
pub(crate) struct Group {
    pub(crate) reducer: Arc<Reducer>,
    /// Size of the datum, and of every copy, in bytes.
    bytes: usize,
    state: Mutex<GroupState>,
}

struct GroupState {
    /// Reducers bound to the group and not finished.
    unfinished: usize,
    /// The combining task, once the group is closed, while reducers are unfinished.
    combiner: Option<Waiting>,
    /// Copies not in use, in the order they were made.
    free: Vec<(u64, Block)>,
    /// Copies made so far (their order of creation).
    made: u64,
    /// A reducer did not complete: the group's contributions are discarded.
    failed: bool,
}

/// What a reducing task holds: its group, and the copy it accumulates into while its
/// body runs (with the copy's rank of creation).
pub(crate) struct ReduceBinding {
    pub(crate) group: Arc<Group>,
    pub(crate) copy: Mutex<Option<(u64, Block)>>,
}

impl ReduceBinding {
    /// Start of the copy's memory (dangling, aligned for `T`, when it holds none).
    pub(crate) fn view_ptr<T>(&self) -> *mut u8 {
        match &*lock(&self.copy) {
            Some((_, block)) if self.group.bytes > 0 => block.as_mut_ptr(),
            _ => std::ptr::NonNull::<T>::dangling().as_ptr().cast(),
        }
    }

    /// The node of the copy, once taken.
    pub(crate) fn node(&self) -> Option<usize> {
        lock(&self.copy).as_ref().map(|(_, b)| b.node())
    }
}

impl Group {
    pub(crate) fn new(reducer: Arc<Reducer>, bytes: usize) -> Self {
        Group {
            reducer,
            bytes,
            state: Mutex::new(GroupState {
                unfinished: 0,
                combiner: None,
                free: Vec::new(),
                made: 0,
                failed: false,
            }),
        }
    }

    /// Size of the datum in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// A reducer was bound to the group.
    pub(crate) fn add_reducer(&self) {
        lock(&self.state).unfinished += 1;
    }

    /// Gives `binding` a copy on `node`: a free one of that node, or a new one from its
    /// pool set to the identity (`fill`: whether bodies run, so that memory exists).
    pub(crate) fn take_copy(
        &self,
        binding: &ReduceBinding,
        node: usize,
        pools: &Arc<Pools>,
        fill: bool,
    ) -> Result<(), AllocError> {
        let mut state = lock(&self.state);
        let found = state.free.iter().position(|(_, b)| b.node() == node);
        let copy = match found {
            Some(i) => state.free.remove(i),
            None => {
                let rank = state.made;
                state.made += 1;
                drop(state);
                let block = pools.alloc(node, self.bytes)?;
                if fill && self.bytes > 0 {
                    // SAFETY: the block was just made, holds `bytes` bytes and is this
                    // binding's alone.
                    let bytes =
                        unsafe { std::slice::from_raw_parts_mut(block.as_mut_ptr(), self.bytes) };
                    self.reducer.fill_identity(bytes);
                }
                (rank, block)
            }
        };
        *lock(&binding.copy) = Some(copy);
        Ok(())
    }

    /// A reducer finished (`complete`: its body ran to its end): its copy goes back to
    /// the free ones. Returns the combining task if it waited for this last reducer.
    pub(crate) fn reducer_done(&self, binding: &ReduceBinding, complete: bool) -> Option<Waiting> {
        let copy = lock(&binding.copy).take();
        let mut state = lock(&self.state);
        if let Some(copy) = copy {
            state.free.push(copy);
        }
        state.failed |= !complete;
        state.unfinished -= 1;
        if state.unfinished == 0 {
            state.combiner.take()
        } else {
            None
        }
    }

    /// Closes the group for `combiner`; returns whether it must wait for reducers still
    /// unfinished (the last of them then hands it back through
    /// [`reducer_done`](Self::reducer_done)).
    pub(crate) fn close(&self, combiner: Waiting) -> bool {
        let mut state = lock(&self.state);
        if state.unfinished > 0 {
            state.combiner = Some(combiner);
            true
        } else {
            false
        }
    }

    /// Combines every copy into `out`, which holds the contents from before the group:
    /// node by node first, then the nodes in `order` (module doc).
    ///
    /// # Safety
    ///
    /// `out` holds `bytes` bytes that nobody else touches meanwhile; every reducer of
    /// the group has finished.
    pub(crate) unsafe fn combine_into(&self, out: *mut u8, order: &[usize]) {
        let mut state = lock(&self.state);
        if state.failed || self.bytes == 0 {
            return;
        }
        state.free.sort_by_key(|(rank, _)| *rank);
        // SAFETY: the caller's contract.
        let out = unsafe { std::slice::from_raw_parts_mut(out, self.bytes) };
        for &node in order {
            let mut copies = state.free.iter().filter(|(_, b)| b.node() == node);
            let Some((_, first)) = copies.next() else {
                continue;
            };
            // SAFETY: every reducer has finished (the caller's contract), so the free
            // copies are the group's alone, each `bytes` long and distinct.
            let partial = unsafe { std::slice::from_raw_parts_mut(first.as_mut_ptr(), self.bytes) };
            for (_, other) in copies {
                // SAFETY: as above.
                let other = unsafe { std::slice::from_raw_parts(other.as_ptr(), self.bytes) };
                (self.reducer.combine)(partial, other);
            }
            (self.reducer.combine)(out, partial);
        }
    }

    /// Whether the group has contributions to combine.
    pub(crate) fn is_empty(&self) -> bool {
        let state = lock(&self.state);
        state.failed || state.free.is_empty()
    }
}

/// The nodes in the order a combination on `node` takes them: itself, then its pools'
/// fallback order (nearest first).
pub(crate) fn combine_order(pools: &Pools, node: usize) -> Vec<usize> {
    let mut order = vec![node];
    order.extend(
        pools
            .config()
            .fallback
            .get(node)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&n| n != node),
    );
    for n in 0..pools.nodes() {
        if !order.contains(&n) {
            order.push(n);
        }
    }
    order
}

/// Why [`DataInner::combine_now`] failed.
pub(crate) enum CombineFailure {
    /// The combination's buffer could not be allocated.
    Alloc(AllocError),
    /// The combining function panicked, with this message: as when the combining task
    /// of a run panics, versioned data keep the contents from before the reduction,
    /// shared data (combined in place) are poisoned.
    Panicked(String),
}

impl CombineFailure {
    /// The error of operation `op` (`fetch`, `partition`) on `data`.
    pub(crate) fn into_error(self, op: &str, data: &DataInner) -> crate::Error {
        match self {
            CombineFailure::Alloc(e) => crate::Error::OutOfMemory {
                task: format!("{op}({})", data.name),
                bytes: data.bytes(),
                message: e.to_string(),
            },
            CombineFailure::Panicked(message) => crate::Error::TaskPanicked {
                task: format!("reduce({})", data.name),
                message,
            },
        }
    }
}

impl DataInner {
    /// Closes the datum's open reduction group on the calling thread: the current
    /// version becomes the combination (module doc), made on the node of the current
    /// buffer. For fetch, with no run in progress. A combining function that panics
    /// leaves a versioned datum with its contents from before the reduction (the
    /// combination is never published, as for a combining task that fails in a run),
    /// and a shared datum poisoned: reading it is refused until a task writes it whole.
    ///
    /// # Safety
    ///
    /// No run is in progress: every reducer has finished and the current version is
    /// produced.
    pub(crate) unsafe fn combine_now(
        &self,
        pools: &Arc<Pools>,
        default_node: usize,
    ) -> Result<(), CombineFailure> {
        let mut current = self.lock_current();
        let Some(group) = self.reduction.lock().take() else {
            return Ok(());
        };
        if group.is_empty() {
            return Ok(());
        }
        let previous = current.clone();
        let shared = self.shared.as_ref();
        let next = Version::initial(self.bytes(), previous.counts(), shared);
        let node = previous.node().unwrap_or(default_node);
        let out = next
            .buffer_or_alloc(|| pools.alloc(node, self.bytes()))
            .map_err(CombineFailure::Alloc)?;
        if out.is_accounted_only() {
            return Ok(());
        }
        if shared.is_none() {
            match previous.buffer() {
                // SAFETY: (1) the previous version is produced and no run writes it;
                // (2) both buffers hold the datum's bytes; (3) distinct blocks.
                Some(src) => unsafe {
                    std::ptr::copy_nonoverlapping(src.as_ptr(), out.as_mut_ptr(), self.bytes())
                },
                // SAFETY: the new block holds the datum's bytes and is ours alone.
                None => unsafe { std::ptr::write_bytes(out.as_mut_ptr(), 0, self.bytes()) },
            }
        }
        let order = combine_order(pools, node);
        let combined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: no run is in progress (the caller's contract): the new version's
            // buffer (or the shared one) is ours, and every reducer has finished.
            unsafe { group.combine_into(out.as_mut_ptr(), &order) }
        }));
        let task = || format!("reduce({})", self.name);
        match combined {
            Ok(()) => {
                *current = next;
                Ok(())
            }
            Err(payload) => {
                let message = crate::graph::panic_message(&*payload);
                crate::graph::drop_payload(payload);
                if let Some(shared) = shared {
                    shared.poison(&task());
                    *current = next;
                }
                Err(CombineFailure::Panicked(message))
            }
        }
    }
}
