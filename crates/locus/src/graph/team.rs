//! Teams: tasks placed as a unit, and data attached to an owner (Broquedis et al.,
//! "Dynamic Task and Data Placement over NUMA Architectures: An OpenMP Runtime
//! Perspective": ForestGOMP's *bubbles*, which keep a team's threads together and near
//! its data, and MaMI's `mami_attach`). `docs/guide.md`, "Teams", explains the choices.
//!
//! A [`Team`] names a set of nodes. A task spawned with
//! [`TaskBuilder::team`](crate::TaskBuilder::team) belongs to it, and so does every
//! task its body spawns, at any depth, unless a task names another team: a team is a
//! nested scope placed as a unit. A team's task without an affinity hint of its own
//! gets a node hint to one of the team's nodes (round robin over them), non-strict
//! unless the team is strict ([`Team::set_strict`]); since thieves look at their own
//! node first (hierarchical stealing), a one-node team's tasks are stolen inside it
//! first. Locus does not migrate threads: its workers stay pinned and the tasks go to
//! the team's nodes.
//!
//! A team is re-placed between phases with [`Runtime::move_team`](crate::Runtime::move_team): the tasks spawned
//! after the move go to its new nodes, and the data attached to it
//! ([`Runtime::attach`](crate::Runtime::attach) with [`Attach::Team`]) migrate along, or stay, as asked
//! (paper 2's "update memory hints").
//!
//! Attaching a datum to a worker, a node or a team makes the placement policies treat
//! it as that owner's data wherever its pages lie: an affinity to the datum
//! ([`Affinity::data`](crate::Affinity::data)) resolves to the owner, and work-pushing and the `auto`
//! migration setting count its bytes on the owner's node. Its memory does not move;
//! the locality metrics still count where its pages really are.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use super::hints::DataRef;
use crate::data::DataInner;

/// Tasks placed as a unit on a set of nodes (module documentation).
///
/// Cheap to clone: clones name the same team.
#[derive(Clone)]
pub struct Team {
    pub(crate) inner: Arc<TeamInner>,
}

pub(crate) struct TeamInner {
    /// The runtime that made the team.
    pub(crate) runtime: u64,
    /// Its nodes, in the order tasks are dealt to them.
    pub(crate) nodes: RwLock<Vec<usize>>,
    /// Whether only the team's nodes may run its tasks.
    pub(crate) strict: AtomicBool,
    /// The next node to deal a task to.
    pub(crate) next: AtomicUsize,
    /// The data attached to the team, which move with it. Weak: an attached datum
    /// holds its team (its owner), and a datum dropped by its user is not kept alive
    /// by the team.
    pub(crate) data: Mutex<Vec<Weak<DataInner>>>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("nodes", &self.nodes())
            .field("strict", &self.is_strict())
            .finish()
    }
}

impl Team {
    /// The team's nodes.
    pub fn nodes(&self) -> Vec<usize> {
        self.inner.nodes.read().expect("team lock").clone()
    }

    /// Whether only the team's nodes may run its tasks.
    pub fn is_strict(&self) -> bool {
        self.inner.strict.load(Ordering::Relaxed)
    }

    /// Makes the team's hints strict (only its nodes' workers run its tasks) or not
    /// (its tasks may be stolen as any non-strict hint's are; the default). Applies to the tasks spawned afterwards.
    pub fn set_strict(&self, strict: bool) {
        self.inner.strict.store(strict, Ordering::Relaxed);
    }

    /// How many data are attached to the team (data dropped since do not count).
    pub fn attached(&self) -> usize {
        let mut data = self.inner.data.lock().expect("team lock");
        data.retain(|d| d.strong_count() > 0);
        data.len()
    }

    /// The data attached to the team that still exist.
    pub(crate) fn attached_data(&self) -> Vec<Arc<DataInner>> {
        let mut data = self.inner.data.lock().expect("team lock");
        data.retain(|d| d.strong_count() > 0);
        data.iter().filter_map(Weak::upgrade).collect()
    }

    /// The node the team's next task without a hint of its own is sent to.
    pub(crate) fn next_node(&self) -> usize {
        let nodes = self.inner.nodes.read().expect("team lock");
        let k = self.inner.next.fetch_add(1, Ordering::Relaxed);
        nodes[k % nodes.len()]
    }

    /// The node its attached data count on for the policies: its first.
    pub(crate) fn home(&self) -> usize {
        self.inner.nodes.read().expect("team lock")[0]
    }

    pub(crate) fn runtime(&self) -> u64 {
        self.inner.runtime
    }
}

/// Whom a datum is attached to ([`Runtime::attach`](crate::Runtime::attach)).
#[derive(Clone, Debug)]
pub enum Attach {
    /// A worker, by index: the policies treat the datum as on the worker's node, and an
    /// affinity to the datum is an affinity to the worker.
    Worker(usize),
    /// A node, by index.
    Node(usize),
    /// A team: the datum counts on the team's first node and moves with the team
    /// ([`Runtime::move_team`](crate::Runtime::move_team)).
    Team(Team),
}

/// What an attached datum's affinity and accesses resolve to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owned {
    Worker(usize),
    Node(usize),
}

impl DataInner {
    /// The owner the policies treat this datum as belonging to, if it is attached.
    pub(crate) fn owned_by(&self) -> Option<Owned> {
        self.extras.owner.get().map(|(a, _)| match a {
            Attach::Worker(w) => Owned::Worker(w),
            Attach::Node(n) => Owned::Node(n),
            Attach::Team(t) => Owned::Node(t.home()),
        })
    }

    /// The node the policies count this datum's bytes on, if it is attached.
    pub(crate) fn owner_node(&self) -> Option<usize> {
        self.extras.owner.get().map(|(a, worker_node)| match a {
            Attach::Worker(_) => worker_node,
            Attach::Node(n) => n,
            Attach::Team(t) => t.home(),
        })
    }
}

/// Whether the datum behind an affinity is attached, and to whom.
pub(crate) fn owner_of(data: &DataRef) -> Option<Owned> {
    data.0.owned_by()
}
