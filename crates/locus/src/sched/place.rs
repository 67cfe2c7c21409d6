//! Where a task that just became ready goes.
//!
//! When a worker satisfies a task's last dependence it *activates* the task (paper 1
//! section 2.1). The [`ReadyPolicy`] returns a [`Placement`]; the engine carries it out.
//! An affinity hint wins over the pushing heuristic (paper 3 section 3); without either,
//! the task stays on the activating worker's own deque, the behaviour of `ws`,
//! `dsa-base` and `dfa`.
//!
//! Under the `auto` migration setting a *non-strict* hint is weighed against the data
//! ([`ReadyPolicy::moving_to_data`]): the task goes to the node where one use of its
//! accesses costs least when that is not the hint's node (Broquedis et al., ForestGOMP:
//! move the threads to the data rather than the data to the threads). What it still
//! finds remote when it starts is then migrated or not by the same setting
//! ([`crate::sched::migrate`]), so that a task with most of its data on one node and
//! some on its own moves to the first and may take the rest along: paper 2's mixed
//! case. A strict hint is never overridden.

use std::sync::Arc;

use locus_topo::Topology;

use super::migrate::MigrationCosts;
use super::push::{AccessInfo, PushDecision, PushSettings};

/// The domain an affinity hint resolved to when the task became ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// One worker, by index (wrapped modulo the number of workers).
    Worker(usize),
    /// One node, by index (wrapped modulo the number of nodes).
    Node(usize),
    /// A replayed task's home worker, by index (wrapped modulo the number of workers):
    /// the task runs next on an activator of that worker's node, else goes to the
    /// worker, as under a non-strict worker hint ([`Placement::HandOver`]).
    Home(usize),
}

/// A task at activation, as the policy sees it.
#[derive(Clone, Copy, Debug)]
pub struct ReadyTask<'a> {
    /// The task's accesses with their sizes and the nodes of allocated buffers.
    pub accesses: &'a [AccessInfo],
    /// The task's affinity hint, resolved, and whether it is strict.
    pub affinity: Option<(Domain, bool)>,
}

/// Why a task stays with its activator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepReason {
    /// The configuration does not push.
    NoPush,
    /// The task accesses fewer bytes than the pushing threshold.
    BelowThreshold,
    /// The activator's node is where the task's data is cheapest to reach.
    LocalIsCheapest,
    /// Home-based scheduling found no home: none of the task's buffers is allocated
    /// on a node with workers.
    NoHome,
}

/// The decision for a ready task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Placement {
    /// Push onto the activating worker's own deque.
    Local(KeepReason),
    /// Transfer to a worker of this node (work-pushing or a non-strict node hint); other
    /// workers may still steal it.
    Node(usize),
    /// Transfer to this worker (non-strict worker hint); others may still steal it.
    Worker(usize),
    /// Run next on the activator, a worker of this worker's node, if it is finishing
    /// a task and holds no next task yet (the hand-over); else transfer to this worker
    /// as [`Worker`](Self::Worker) does. A replayed task's home ([`Domain::Home`]).
    HandOver(usize),
    /// Only workers of this node may run the task (strict node hint).
    StrictNode(usize),
    /// Only this worker may run the task (strict worker hint).
    StrictWorker(usize),
    /// Run on this node, where the task's data costs least, instead of its non-strict
    /// hint's (the `auto` migration setting): only workers of the node take it, as
    /// under a strict node hint, so that no thief takes it away from its data again.
    ToData(usize),
    /// Onto the global queue, from which any worker takes the oldest task
    /// (breadth-first scheduling).
    Global,
}

impl Placement {
    /// The node the decision prefers for the task, if any.
    pub fn preferred_node(self, worker_node: &[usize], activator_node: usize) -> usize {
        match self {
            Placement::Local(_) | Placement::Global => activator_node,
            Placement::Node(n) | Placement::StrictNode(n) | Placement::ToData(n) => n,
            Placement::Worker(w) | Placement::StrictWorker(w) | Placement::HandOver(w) => {
                worker_node[w]
            }
        }
    }
}

/// Which data regions decide a task's home under home-based scheduling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HomeRegions {
    /// The node homing the task's largest region (by bytes accessed).
    Largest,
    /// Every node homing one of the task's regions.
    All,
}

/// How busy each worker is, for least-loaded choices.
pub trait LoadView {
    /// Tasks queued for worker `w`.
    fn load(&self, w: usize) -> usize;
}

/// The activation policy of a configuration.
#[derive(Clone, Debug, Default)]
pub struct ReadyPolicy {
    push: Option<PushSettings>,
    home: Option<HomeRegions>,
    global: bool,
    /// The access costs by which a non-strict hint yields to the data (`auto`).
    to_data: Option<Arc<MigrationCosts>>,
}

impl ReadyPolicy {
    /// Keeps every task with its activator unless a hint says otherwise.
    pub fn keep_local() -> Self {
        ReadyPolicy::default()
    }

    /// Enhanced work-pushing with `settings`.
    pub fn pushing(settings: PushSettings) -> Self {
        ReadyPolicy {
            push: Some(settings),
            ..ReadyPolicy::default()
        }
    }

    /// Home-based scheduling (paper 4 section 3.1).
    pub fn home(regions: HomeRegions) -> Self {
        ReadyPolicy {
            home: Some(regions),
            ..ReadyPolicy::default()
        }
    }

    /// Breadth-first scheduling: every task without a hint goes to one global FIFO
    /// queue (Nanos++'s `bf` policy, which paper 4 section 4 compares with).
    pub fn breadth_first() -> Self {
        ReadyPolicy {
            global: true,
            ..ReadyPolicy::default()
        }
    }

    /// The same policy, except that a task with a non-strict hint goes to the node
    /// where one use of its accesses costs least under `costs` (the topology's read
    /// and write costs), when that costs less than on the hint's node (module doc).
    /// The runtime sets this under the `auto` migration setting.
    pub fn moving_to_data(mut self, costs: Arc<MigrationCosts>) -> Self {
        self.to_data = Some(costs);
        self
    }

    /// Whether tasks without a hint go to the global queue ([`breadth_first`]).
    ///
    /// [`breadth_first`]: Self::breadth_first
    pub fn is_global(&self) -> bool {
        self.global
    }

    /// Where a task without a hint goes when the policy needs none of its accesses:
    /// the global queue under breadth-first scheduling, else the activator.
    pub fn default_placement(&self) -> Placement {
        if self.global {
            Placement::Global
        } else {
            Placement::Local(KeepReason::NoPush)
        }
    }

    /// The home-based settings, if the policy is home-based.
    pub fn home_regions(&self) -> Option<HomeRegions> {
        self.home
    }

    /// The pushing settings, if the policy pushes.
    pub fn push_settings(&self) -> Option<&PushSettings> {
        self.push.as_ref()
    }

    /// Whether [`place`](Self::place) needs the task's accesses (it does when pushing).
    pub fn needs_accesses(&self) -> bool {
        self.push.is_some() || self.home.is_some()
    }

    /// The pushing settings by which [`place`](Self::place) decides a task without a
    /// hint, when it decides by them alone (work-pushing, not home-based scheduling):
    /// a task below their threshold is then kept, whatever its bytes' nodes.
    pub fn threshold_push(&self) -> Option<&PushSettings> {
        match (&self.push, self.home) {
            (Some(push), None) => Some(push),
            _ => None,
        }
    }

    /// Whether [`place`](Self::place) needs the accesses of a task that carries a
    /// hint: only when non-strict hints are weighed against the data
    /// ([`moving_to_data`](Self::moving_to_data)). Otherwise the hint decides alone,
    /// whether the policy pushes or not.
    pub fn needs_accesses_of_hinted(&self) -> bool {
        self.to_data.is_some()
    }

    /// Decides where a task activated by a worker of `activator_node` goes.
    ///
    /// Hints name workers and nodes by index; out-of-range indices wrap modulo the
    /// number of workers or nodes, as paper 3 prescribes.
    pub fn place(
        &self,
        activator_node: usize,
        task: &ReadyTask<'_>,
        topology: &Topology,
        worker_node: &[usize],
        loads: &dyn LoadView,
    ) -> Placement {
        let workers = worker_node.len();
        if let (Some((domain, false)), Some(costs)) = (task.affinity, &self.to_data) {
            let hinted = match domain {
                Domain::Worker(w) | Domain::Home(w) => worker_node[w % workers],
                Domain::Node(n) => n % topology.num_nodes(),
            };
            // A node without workers cannot take it (memory-only nodes).
            if let Some(node) = costs
                .cheaper_node(task.accesses, hinted)
                .filter(|n| worker_node.contains(n))
            {
                return Placement::ToData(node);
            }
        }
        if let Some((domain, strict)) = task.affinity {
            return match (domain, strict) {
                (Domain::Worker(w), false) => Placement::Worker(w % workers),
                (Domain::Worker(w), true) => Placement::StrictWorker(w % workers),
                (Domain::Node(n), false) => Placement::Node(n % topology.num_nodes()),
                (Domain::Node(n), true) => Placement::StrictNode(n % topology.num_nodes()),
                (Domain::Home(w), false)
                    if worker_node[w % workers] == activator_node
                        && loads.load(w % workers) > 0 =>
                {
                    Placement::HandOver(w % workers)
                }
                (Domain::Home(w), false) => Placement::Worker(w % workers),
                (Domain::Home(w), true) => Placement::StrictWorker(w % workers),
            };
        }
        if let Some(regions) = self.home {
            return home_worker(
                regions,
                task.accesses,
                topology.num_nodes(),
                worker_node,
                loads,
            )
            .map_or(Placement::Local(KeepReason::NoHome), Placement::Worker);
        }
        match &self.push {
            None => self.default_placement(),
            Some(push) => match push.activate(activator_node, task.accesses, topology) {
                PushDecision::BelowThreshold => Placement::Local(KeepReason::BelowThreshold),
                PushDecision::LocalIsCheapest => Placement::Local(KeepReason::LocalIsCheapest),
                PushDecision::ToNode(n) => Placement::Node(n),
            },
        }
    }
}

/// Paper 4 section 3.1: the least-loaded worker among those whose node homes one of the
/// task's regions (only the largest one's, or all of them). Ties go to the lowest
/// index.
fn home_worker(
    regions: HomeRegions,
    accesses: &[AccessInfo],
    nodes: usize,
    worker_node: &[usize],
    loads: &dyn LoadView,
) -> Option<usize> {
    let mut bytes = vec![0u64; nodes];
    for a in accesses {
        if let Some(n) = a.node {
            bytes[n] += a.bytes;
        }
    }
    let homes: Vec<bool> = match regions {
        HomeRegions::All => bytes.iter().map(|&b| b > 0).collect(),
        HomeRegions::Largest => {
            let largest = accesses
                .iter()
                .filter(|a| a.node.is_some())
                .max_by_key(|a| a.bytes)?
                .node?;
            (0..nodes).map(|n| n == largest).collect()
        }
    };
    (0..worker_node.len())
        .filter(|&w| homes[worker_node[w]])
        .min_by_key(|&w| (loads.load(w), w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::push::{Heuristic, DEFAULT_THRESHOLD_BYTES};

    fn ready(accesses: &[AccessInfo], affinity: Option<(Domain, bool)>) -> ReadyTask<'_> {
        ReadyTask { accesses, affinity }
    }

    struct Loads(Vec<usize>);

    impl LoadView for Loads {
        fn load(&self, w: usize) -> usize {
            self.0[w]
        }
    }

    const TWO_BY_TWO: [usize; 4] = [0, 0, 1, 1];

    fn at(bytes: u64, node: usize) -> AccessInfo {
        AccessInfo {
            bytes,
            node: Some(node),
            input: true,
        }
    }

    #[test]
    fn home_picks_the_least_loaded_home_worker() {
        let topo = Topology::from_spec("2x2").unwrap();
        let acc = [at(1000, 1), at(10, 0)];
        let loads = Loads(vec![0, 0, 5, 2]);
        let largest = ReadyPolicy::home(HomeRegions::Largest);
        assert_eq!(
            largest.place(0, &ready(&acc, None), &topo, &TWO_BY_TWO, &loads),
            Placement::Worker(3)
        );
        // All regions: node 0 homes one too, and its workers are idle.
        let all = ReadyPolicy::home(HomeRegions::All);
        assert_eq!(
            all.place(1, &ready(&acc, None), &topo, &TWO_BY_TWO, &loads),
            Placement::Worker(0)
        );
        // No allocated region: no home.
        let none = [AccessInfo {
            bytes: 10,
            node: None,
            input: false,
        }];
        assert_eq!(
            all.place(1, &ready(&none, None), &topo, &TWO_BY_TWO, &loads),
            Placement::Local(KeepReason::NoHome)
        );
    }

    #[test]
    fn keep_local_keeps_every_task() {
        let topo = Topology::from_spec("2x2").unwrap();
        let p = ReadyPolicy::keep_local();
        assert_eq!(
            p.place(1, &ready(&[], None), &topo, &TWO_BY_TWO, &Loads(vec![0; 4])),
            Placement::Local(KeepReason::NoPush)
        );
    }

    #[test]
    fn under_auto_a_non_strict_hint_yields_to_the_data() {
        let topo = Topology::from_spec("2x2").unwrap();
        let costs = Arc::new(MigrationCosts::of(&topo));
        let p = ReadyPolicy::keep_local().moving_to_data(costs);
        let l = Loads(vec![0; 4]);
        // Two of three blocks on node 1, one on node 0: the task moves to node 1.
        let acc = [at(1 << 20, 1), at(1 << 20, 1), at(1 << 20, 0)];
        let hint = |strict| Some((Domain::Node(0), strict));
        assert_eq!(
            p.place(0, &ready(&acc, hint(false)), &topo, &TWO_BY_TWO, &l),
            Placement::ToData(1)
        );
        // A worker hint resolves to the worker's node first.
        assert_eq!(
            p.place(
                0,
                &ready(&acc, Some((Domain::Worker(1), false))),
                &topo,
                &TWO_BY_TWO,
                &l
            ),
            Placement::ToData(1)
        );
        // A strict hint stays; so does a task whose data is mostly on the hint's node,
        // or not placed yet.
        assert_eq!(
            p.place(0, &ready(&acc, hint(true)), &topo, &TWO_BY_TWO, &l),
            Placement::StrictNode(0)
        );
        let mostly_home = [at(1 << 20, 0), at(1 << 20, 0), at(1 << 20, 1)];
        assert_eq!(
            p.place(0, &ready(&mostly_home, hint(false)), &topo, &TWO_BY_TWO, &l),
            Placement::Node(0)
        );
        let unplaced = [AccessInfo {
            bytes: 1 << 20,
            node: None,
            input: false,
        }];
        assert_eq!(
            p.place(0, &ready(&unplaced, hint(false)), &topo, &TWO_BY_TWO, &l),
            Placement::Node(0)
        );
        // Without `auto`, the hint wins.
        assert_eq!(
            ReadyPolicy::keep_local().place(0, &ready(&acc, hint(false)), &topo, &TWO_BY_TWO, &l),
            Placement::Node(0)
        );
    }

    #[test]
    fn hints_win_over_pushing_and_wrap() {
        let topo = Topology::from_spec("2x2").unwrap();
        let p = ReadyPolicy::pushing(PushSettings {
            heuristic: Heuristic::InputOnly,
            threshold_bytes: DEFAULT_THRESHOLD_BYTES,
        });
        let acc = [AccessInfo {
            bytes: 1 << 20,
            node: Some(1),
            input: true,
        }];
        let l = Loads(vec![0; 4]);
        assert_eq!(
            p.place(0, &ready(&acc, None), &topo, &TWO_BY_TWO, &l),
            Placement::Node(1)
        );
        assert_eq!(
            p.place(
                0,
                &ready(&acc, Some((Domain::Node(0), false))),
                &topo,
                &TWO_BY_TWO,
                &l
            ),
            Placement::Node(0)
        );
        assert_eq!(
            p.place(
                0,
                &ready(&acc, Some((Domain::Node(5), true))),
                &topo,
                &TWO_BY_TWO,
                &l
            ),
            Placement::StrictNode(1)
        );
        assert_eq!(
            p.place(
                0,
                &ready(&acc, Some((Domain::Worker(6), true))),
                &topo,
                &TWO_BY_TWO,
                &l
            ),
            Placement::StrictWorker(2)
        );
    }

    #[test]
    fn a_replayed_task_runs_on_an_activator_of_its_home_node_while_its_home_is_busy() {
        let topo = Topology::from_spec("2x2").unwrap();
        let p = ReadyPolicy::keep_local();
        let home = |w, strict| ready(&[], Some((Domain::Home(w), strict)));
        let idle = Loads(vec![0; 4]);
        let busy = Loads(vec![1; 4]);
        // Worker 1 is on node 0: an activator of node 0 takes the task while worker 1
        // has work queued, else the task goes to worker 1.
        assert_eq!(
            p.place(0, &home(1, false), &topo, &TWO_BY_TWO, &busy),
            Placement::HandOver(1)
        );
        assert_eq!(
            p.place(0, &home(1, false), &topo, &TWO_BY_TWO, &idle),
            Placement::Worker(1)
        );
        // An activator of another node transfers it; out-of-range homes wrap.
        assert_eq!(
            p.place(1, &home(5, false), &topo, &TWO_BY_TWO, &busy),
            Placement::Worker(1)
        );
        assert_eq!(
            p.place(0, &home(3, true), &topo, &TWO_BY_TWO, &busy),
            Placement::StrictWorker(3)
        );
    }

    #[test]
    fn a_hint_decides_without_the_accesses_unless_weighed_against_the_data() {
        // The engines describe a hinted task's accesses only when the policy says it
        // needs them: the placement must then be the same without them.
        let topo = Topology::from_spec("2x2").unwrap();
        let l = Loads(vec![0; 4]);
        let acc = [at(1 << 20, 1), at(1 << 10, 0)];
        let hints = [
            (Domain::Node(0), false),
            (Domain::Node(1), true),
            (Domain::Worker(3), false),
            (Domain::Worker(0), true),
        ];
        let pushing = |heuristic| {
            ReadyPolicy::pushing(PushSettings {
                heuristic,
                threshold_bytes: DEFAULT_THRESHOLD_BYTES,
            })
        };
        let policies = [
            ReadyPolicy::keep_local(),
            pushing(Heuristic::InputOnly),
            pushing(Heuristic::OutputOnly),
            ReadyPolicy::home(HomeRegions::All),
        ];
        for p in policies {
            assert!(!p.needs_accesses_of_hinted());
            for hint in hints {
                assert_eq!(
                    p.place(0, &ready(&acc, Some(hint)), &topo, &TWO_BY_TWO, &l),
                    p.place(0, &ready(&[], Some(hint)), &topo, &TWO_BY_TWO, &l),
                    "{hint:?}"
                );
            }
        }
    }
}
