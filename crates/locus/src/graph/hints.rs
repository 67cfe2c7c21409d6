//! Task hints: affinity (paper 3 section 3) and cost estimates.

use std::ptr::NonNull;
use std::sync::Arc;

use super::free_list::{self, Depot, FreeList};
use crate::data::{Data, DataInner, Element};

/// Where a task would like to run (paper 3 section 3).
///
/// Non-strict affinity places the task there but lets other workers steal it; strict
/// affinity lets only workers of that domain run it. Out-of-range worker and node ids
/// wrap modulo the number of workers or nodes, as in the paper.
#[derive(Clone, Debug)]
pub struct Affinity {
    /// The domain the task is attached to.
    pub target: AffinityTarget,
    /// Whether only that domain may run the task.
    pub strict: bool,
    /// A replayed task's home worker (non-strict): made ready by a worker of that
    /// worker's node, the task runs next on its activator, as a replay runs a ready
    /// successor of its node directly (docs/guide.md, "Recorded graphs").
    pub(crate) hand_over: bool,
}

/// The domain an [`Affinity`] names.
#[derive(Clone)]
pub enum AffinityTarget {
    /// A worker, by index.
    Worker(usize),
    /// A NUMA node of the runtime's topology, by index.
    Node(usize),
    /// The node holding a datum's current buffer when the task becomes ready.
    Data(DataRef),
}

/// A type-erased reference to a datum, for affinity to data.
#[derive(Clone)]
pub struct DataRef(pub(crate) Arc<DataInner>);

impl std::fmt::Debug for AffinityTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AffinityTarget::Worker(w) => write!(f, "Worker({w})"),
            AffinityTarget::Node(n) => write!(f, "Node({n})"),
            AffinityTarget::Data(d) => write!(f, "Data({})", d.0.name),
        }
    }
}

impl Affinity {
    /// Affinity to a worker (non-strict).
    pub fn worker(index: usize) -> Self {
        Affinity {
            target: AffinityTarget::Worker(index),
            strict: false,
            hand_over: false,
        }
    }

    /// Affinity to a node (non-strict).
    pub fn node(index: usize) -> Self {
        Affinity {
            target: AffinityTarget::Node(index),
            strict: false,
            hand_over: false,
        }
    }

    /// Affinity to the node of a datum's buffer (non-strict). A datum of another
    /// runtime is refused at spawn with [`Error::ForeignData`](crate::Error::ForeignData),
    /// which fails the run: its node is one of the other runtime's topology.
    pub fn data<T: Element>(data: &Data<T>) -> Self {
        Affinity {
            target: AffinityTarget::Data(DataRef(data.inner.clone())),
            strict: false,
            hand_over: false,
        }
    }

    /// Affinity to a recorded graph's home worker for a task submitted as one of its
    /// replayed iterations (see [`hand_over`](Self::hand_over)).
    pub(crate) fn home(worker: usize) -> Self {
        Affinity {
            hand_over: true,
            ..Affinity::worker(worker)
        }
    }

    /// Makes the affinity strict: only the domain's workers may run the task.
    pub fn strict(mut self) -> Self {
        self.strict = true;
        self
    }
}

/// The optional hints of a task.
#[derive(Clone, Debug, Default)]
pub struct Hints {
    /// Estimated cost of the body, in nanoseconds of computation.
    pub cost: Option<u64>,
    /// Where the task would like to run.
    pub affinity: Option<Affinity>,
    /// For a migration task ([`Scope::migrate`](crate::Scope::migrate)): the node its
    /// datum's pages move to when it starts.
    pub(crate) migrate_to: Option<usize>,
    /// The team the task belongs to ([`TaskBuilder::team`](crate::TaskBuilder::team),
    /// or its parent's); its children inherit it.
    pub(crate) team: Option<super::Team>,
}

impl Hints {
    /// The hints as a task's record keeps them: `None` if there are none.
    #[inline]
    pub(crate) fn boxed(self) -> Option<BoxedHints> {
        if self.is_default() {
            None
        } else {
            Some(BoxedHints::new(self))
        }
    }

    /// Whether no hint is given (the task's placement is the policy's alone).
    #[inline]
    pub(crate) fn is_default(&self) -> bool {
        self.cost.is_none()
            && self.affinity.is_none()
            && self.migrate_to.is_none()
            && self.team.is_none()
    }
}

thread_local! {
    /// The calling thread's free allocations of hints (module `free_list`).
    static FREE_HINTS: FreeList<Hints> = const { FreeList::new() };
}

/// The full lists of allocations of hints handed between threads (module `free_list`).
static HINTS_DEPOT: Depot<Hints> = Depot::new();

/// A task's hints, as its record keeps them when it has any: in an allocation of the
/// threads' free lists (module `free_list`), as the task records are, so that a hinted
/// task submitted by one thread and run by another costs no allocator call, and its
/// hints go back to their maker by the list.
pub(crate) struct BoxedHints(NonNull<Hints>);

// SAFETY: owns its `Hints` (which are `Send` and `Sync`) as a `Box` would.
unsafe impl Send for BoxedHints {}
// SAFETY: as above.
unsafe impl Sync for BoxedHints {}

impl BoxedHints {
    /// Out of line: most tasks have no hints.
    #[inline(never)]
    fn new(hints: Hints) -> Self {
        let slot = free_list::take(&FREE_HINTS, &HINTS_DEPOT);
        // SAFETY: an allocation for a `Hints` holding no live value (`take`).
        unsafe { slot.as_ptr().write(hints) };
        BoxedHints(slot)
    }
}

impl std::ops::Deref for BoxedHints {
    type Target = Hints;

    fn deref(&self) -> &Hints {
        // SAFETY: written by `new`, live until the drop.
        unsafe { self.0.as_ref() }
    }
}

impl std::ops::DerefMut for BoxedHints {
    fn deref_mut(&mut self) -> &mut Hints {
        // SAFETY: as above; owned by `self`.
        unsafe { self.0.as_mut() }
    }
}

impl Drop for BoxedHints {
    #[inline(never)]
    fn drop(&mut self) {
        // SAFETY: live since `new`, dropped once, here; the allocation then holds no
        // live value, came from `take` and is used by nothing else.
        unsafe {
            std::ptr::drop_in_place(self.0.as_ptr());
            free_list::give(&FREE_HINTS, &HINTS_DEPOT, self.0);
        }
    }
}

impl std::fmt::Debug for BoxedHints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Hints::fmt(self, f)
    }
}
