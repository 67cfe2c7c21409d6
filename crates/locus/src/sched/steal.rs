//! Victim order for work-stealing.
//!
//! `ws` tries every other worker, starting from a random one. Hierarchical stealing
//! (`dsa-base` and the configurations built on it) tries the workers of its own node
//! first, then the workers of the nearest nodes, class by class in increasing access
//! cost, starting from a random worker within each class (paper 1 section 4.4).

use locus_topo::{NodeId, Topology};

use crate::config::StealKind;

/// The victims of one worker, grouped in classes tried in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StealPlan {
    /// Victim worker indices; class 0 is tried first.
    classes: Vec<Vec<usize>>,
    /// Whether each class holds workers of the thief's own node.
    same_node: Vec<bool>,
}

impl StealPlan {
    /// The plan of worker `me`, given the node of every worker.
    pub fn build(kind: StealKind, me: usize, worker_node: &[usize], topology: &Topology) -> Self {
        let my_node = worker_node[me];
        // The workers of each node, in index order: a plan is built in time linear in
        // the workers.
        let mut by_node = vec![Vec::new(); topology.num_nodes().max(my_node + 1)];
        for (w, &n) in worker_node.iter().enumerate() {
            if w != me && n < by_node.len() {
                by_node[n].push(w);
            }
        }
        let workers_on = |nodes: &[usize]| -> Vec<usize> {
            let mut out: Vec<usize> = nodes
                .iter()
                .filter_map(|&n| by_node.get(n))
                .flatten()
                .copied()
                .collect();
            out.sort_unstable();
            out
        };
        let mut plan = StealPlan {
            classes: Vec::new(),
            same_node: Vec::new(),
        };
        match kind {
            StealKind::Random => {
                let all: Vec<usize> = (0..worker_node.len()).filter(|&w| w != me).collect();
                plan.push(all, false);
            }
            StealKind::Hierarchical | StealKind::Vicinity(_) => {
                let mut allowed = vec![true; worker_node.len()];
                if let StealKind::Vicinity(size) = kind {
                    allowed.fill(false);
                    for w in vicinity_of(me, size, worker_node, topology) {
                        allowed[w] = true;
                    }
                }
                let keep = |class: Vec<usize>| -> Vec<usize> {
                    class.into_iter().filter(|&w| allowed[w]).collect()
                };
                plan.push(keep(workers_on(&[my_node])), true);
                let node = NodeId(my_node as u32);
                for class in topology.nodes_by_distance(node) {
                    let nodes: Vec<usize> = class.iter().map(|n| n.index()).collect();
                    plan.push(keep(workers_on(&nodes)), false);
                }
            }
        }
        plan
    }

    fn push(&mut self, class: Vec<usize>, same_node: bool) {
        if !class.is_empty() {
            self.classes.push(class);
            self.same_node.push(same_node);
        }
    }

    /// The classes of victims, nearest first.
    pub fn classes(&self) -> &[Vec<usize>] {
        &self.classes
    }

    /// Whether class `i` holds workers of the thief's own node.
    pub fn is_same_node(&self, class: usize) -> bool {
        self.same_node[class]
    }

    /// Every victim once, class by class, each class starting at a position drawn from
    /// `random` (any integer; the caller's RNG supplies it).
    pub fn victims(&self, random: u64) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.classes.iter().enumerate().flat_map(move |(c, class)| {
            let start = (random as usize).wrapping_add(c) % class.len();
            (0..class.len()).map(move |i| (c, class[(start + i) % class.len()]))
        })
    }

    /// As [`victims`](Self::victims), but `first` (the last victim that had work, as
    /// OpenStream does) is tried before everyone else, if it is in the plan.
    pub fn victims_from(
        &self,
        first: Option<usize>,
        random: u64,
    ) -> impl Iterator<Item = (usize, usize)> + '_ {
        let first = first.and_then(|w| self.class_of(w).map(|c| (c, w)));
        first.into_iter().chain(
            self.victims(random)
                .filter(move |&(_, w)| Some(w) != first.map(|f| f.1)),
        )
    }

    /// The class of worker `w`, if it is a victim.
    pub fn class_of(&self, w: usize) -> Option<usize> {
        self.classes.iter().position(|class| class.contains(&w))
    }

    /// Number of victims.
    pub fn len(&self) -> usize {
        self.classes.iter().map(Vec::len).sum()
    }

    /// Whether the worker has no victim at all (a single worker).
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }
}

/// The fixed-size groups of workers that may steal from each other under home-based
/// scheduling (paper 4 section 3.1): workers listed node by node, each next node the
/// nearest unvisited one to the previous, cut into consecutive groups of `size`.
pub fn vicinities(size: usize, worker_node: &[usize], topology: &Topology) -> Vec<Vec<usize>> {
    let size = size.max(1);
    let nodes = topology.num_nodes();
    let mut order = Vec::with_capacity(nodes);
    let mut visited = vec![false; nodes];
    let mut current = 0usize;
    while order.len() < nodes {
        visited[current] = true;
        order.push(current);
        let next = (0..nodes).filter(|&n| !visited[n]).min_by_key(|&n| {
            (
                topology.distance(NodeId(current as u32), NodeId(n as u32)),
                n,
            )
        });
        match next {
            Some(n) => current = n,
            None => break,
        }
    }
    let workers: Vec<usize> = order
        .iter()
        .flat_map(|&n| (0..worker_node.len()).filter(move |&w| worker_node[w] == n))
        .collect();
    workers.chunks(size).map(<[usize]>::to_vec).collect()
}

/// The vicinity of worker `me`.
fn vicinity_of(me: usize, size: usize, worker_node: &[usize], topology: &Topology) -> Vec<usize> {
    vicinities(size, worker_node, topology)
        .into_iter()
        .find(|group| group.contains(&me))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn four_nodes() -> Topology {
        // Distances: 0-1 near (12), 0-2 and 0-3 far (20), 2-3 near.
        Topology::from_spec("4x2:10,12,20,20,12,10,20,20,20,20,10,12,20,20,12,10").unwrap()
    }

    #[test]
    fn hierarchical_tries_own_node_then_nearest() {
        let topo = four_nodes();
        let worker_node = [0, 0, 1, 1, 2, 2, 3, 3];
        let plan = StealPlan::build(StealKind::Hierarchical, 0, &worker_node, &topo);
        assert_eq!(plan.classes(), &[vec![1], vec![2, 3], vec![4, 5, 6, 7]]);
        assert!(plan.is_same_node(0));
        assert!(!plan.is_same_node(1));
        // Every victim exactly once, classes in order, whatever the random start.
        for r in 0..20 {
            let order: Vec<usize> = plan.victims(r).map(|(_, w)| w).collect();
            assert_eq!(order.len(), 7);
            assert_eq!(order[0], 1);
            let mut near: Vec<usize> = order[1..3].to_vec();
            near.sort();
            assert_eq!(near, vec![2, 3]);
            let mut far: Vec<usize> = order[3..].to_vec();
            far.sort();
            assert_eq!(far, vec![4, 5, 6, 7]);
        }
    }

    #[test]
    fn the_last_victim_comes_first_once() {
        let topo = four_nodes();
        let worker_node = [0, 0, 1, 1, 2, 2, 3, 3];
        let plan = StealPlan::build(StealKind::Hierarchical, 0, &worker_node, &topo);
        for r in 0..10 {
            let order: Vec<(usize, usize)> = plan.victims_from(Some(6), r).collect();
            assert_eq!(order[0], (2, 6));
            assert_eq!(order.len(), 7);
            assert_eq!(order.iter().filter(|&&(_, w)| w == 6).count(), 1);
            assert_eq!(order[1], (0, 1), "then the plan's order");
        }
        // A worker outside the plan is ignored.
        assert_eq!(plan.victims_from(Some(0), 3).count(), 7);
    }

    #[test]
    fn random_is_one_class_of_all_others() {
        let topo = four_nodes();
        let worker_node = [0, 0, 1, 1, 2, 2, 3, 3];
        let plan = StealPlan::build(StealKind::Random, 5, &worker_node, &topo);
        assert_eq!(plan.classes(), &[vec![0, 1, 2, 3, 4, 6, 7]]);
        let starts: std::collections::BTreeSet<usize> =
            (0..50).map(|r| plan.victims(r).next().unwrap().1).collect();
        assert_eq!(starts.len(), 7, "every victim can come first");
    }

    #[test]
    fn vicinities_group_near_workers() {
        let topo = four_nodes();
        let worker_node = [0, 0, 1, 1, 2, 2, 3, 3];
        // Size 1: nobody to steal from.
        for w in 0..8 {
            assert!(StealPlan::build(StealKind::Vicinity(1), w, &worker_node, &topo).is_empty());
        }
        // Size 4: nodes 0 and 1 (near each other) form one group, 2 and 3 the other.
        assert_eq!(
            vicinities(4, &worker_node, &topo),
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
        );
        let plan = StealPlan::build(StealKind::Vicinity(4), 2, &worker_node, &topo);
        assert_eq!(plan.classes(), &[vec![3], vec![0, 1]]);
        // All workers: the same as full hierarchical stealing.
        assert_eq!(
            StealPlan::build(StealKind::Vicinity(8), 5, &worker_node, &topo),
            StealPlan::build(StealKind::Hierarchical, 5, &worker_node, &topo)
        );
    }

    #[test]
    fn single_worker_has_no_victims() {
        let topo = Topology::from_spec("1x1").unwrap();
        let plan = StealPlan::build(StealKind::Hierarchical, 0, &[0], &topo);
        assert!(plan.is_empty());
        assert_eq!(plan.victims(3).count(), 0);
    }
}
