//! Enhanced work-pushing (paper 1 section 2.3, Algorithm 1).
//!
//! When a worker activates a task, the policy sums the bytes of the task's inputs and/or
//! outputs per node, with a weight per direction. Below a size threshold the task stays
//! with its activator (a remote push would cost more than it saves). Otherwise the
//! policy estimates, for every node, the cost of running the task there (bytes times the
//! topology's read or write cost factor from that node to each data node) and picks the
//! cheapest; if that is not the activator's node, the task is transferred to a worker
//! of that node. Buffers whose node is not known yet count in the total but not in the
//! per-node sums (Algorithm 1, line 16).
//!
//! The candidates for the cheapest node are the nodes holding some of the bytes
//! considered: a task whose inputs are split between two nodes
//! runs on one of them, so that half of its input is local (paper 1 section 5.1, on
//! bitonic's balanced dependences), never on a third node where all of it is remote,
//! even when the third node's summed latencies are slightly lower (on the Opteron-64,
//! two 1-hop reads cost 2 x 2.16 against 1 + 4.34 for a local and a 2-hop one).

use locus_topo::{NodeId, Topology};
use smallvec::SmallVec;

/// Which accesses the heuristic considers (paper 1 section 2.3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Heuristic {
    /// Inputs only (`push-in`; combines with deferred allocation, section 3.3).
    InputOnly,
    /// Outputs only (`push-out`).
    OutputOnly,
    /// Inputs and outputs with separate weights (`push-weighted`).
    Weighted {
        /// Weight of input bytes.
        read: f64,
        /// Weight of output bytes.
        write: f64,
    },
}

impl Heuristic {
    /// `(use inputs, use outputs, input weight, output weight)`: lines 1-4 of
    /// Algorithm 1.
    fn weights(self) -> (f64, f64) {
        match self {
            Heuristic::InputOnly => (1.0, 0.0),
            Heuristic::OutputOnly => (0.0, 1.0),
            Heuristic::Weighted { read, write } => (read, write),
        }
    }

    /// Whether the heuristic needs the nodes of output buffers at activation, which
    /// deferred allocation does not know yet (paper 1 section 3.3).
    pub fn uses_outputs(self) -> bool {
        !matches!(self, Heuristic::InputOnly)
    }
}

/// Settings of enhanced work-pushing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PushSettings {
    /// The heuristic.
    pub heuristic: Heuristic,
    /// Tasks accessing fewer bytes than this stay with their activator.
    pub threshold_bytes: u64,
}

/// Default threshold: 16 KiB, four pages; below it a remote push (a mailbox transfer and
/// a likely wake-up) costs more than the remote accesses it avoids.
pub const DEFAULT_THRESHOLD_BYTES: u64 = 16 * 1024;

/// Default weights `(read, write)` of the weighted heuristic: equal, because the cost
/// estimate already applies the topology's separate read and write factors (paper 1
/// Tables 1-2) to each byte.
pub const DEFAULT_WEIGHTS: (f64, f64) = (1.0, 1.0);

/// One access of a task, as the policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessInfo {
    /// Bytes accessed.
    pub bytes: u64,
    /// Node of the buffer, if it is allocated.
    pub node: Option<usize>,
    /// Whether the access reads (else it writes).
    pub input: bool,
}

/// A task's accesses as the placement policy sees them: inline up to four (most tasks
/// declare fewer), so that describing a ready task allocates nothing.
pub type AccessInfos = SmallVec<[AccessInfo; 4]>;

/// What Algorithm 1 decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum PushDecision {
    /// The task accesses fewer bytes than the threshold: keep it (line 24).
    BelowThreshold,
    /// The activator's node is the cheapest: keep it (line 35).
    LocalIsCheapest,
    /// Transfer the task to a worker of this node (lines 29-30).
    ToNode(usize),
}

impl PushSettings {
    /// Whether a task reading `input` and writing `output` bytes is below the
    /// threshold (line 24 of Algorithm 1, as [`activate`](Self::activate) applies it):
    /// the bytes of the accesses whose heuristic weight is not zero are counted.
    pub fn below_threshold(&self, input: u64, output: u64) -> bool {
        let (w_in, w_out) = self.heuristic.weights();
        let counted = |bytes: u64, w: f64| if w == 0.0 { 0 } else { bytes };
        counted(input, w_in).saturating_add(counted(output, w_out)) < self.threshold_bytes
    }

    /// Paper 1, Algorithm 1 (`activate`): where a task activated on `local` should run.
    ///
    /// The cheapest node (line 26) is sought among the nodes holding some of the bytes
    /// considered (see the [module docs](self)); when none is placed yet the task stays. Ties between nodes
    /// go to the activator's node, then to the lowest index, so the decision is
    /// deterministic.
    pub fn activate(
        &self,
        local: usize,
        accesses: &[AccessInfo],
        topology: &Topology,
    ) -> PushDecision {
        let nodes = topology.num_nodes();
        let (w_in, w_out) = self.heuristic.weights();
        let weight = |a: &AccessInfo| if a.input { w_in } else { w_out };
        // Input and output bytes in one pass over the accesses.
        let (input, output) = accesses.iter().fold((0u64, 0u64), |(i, o), a| {
            if a.input {
                (i + a.bytes, o)
            } else {
                (i, o + a.bytes)
            }
        });
        if self.below_threshold(input, output) {
            return PushDecision::BelowThreshold;
        }
        // Inline up to 8 nodes: no allocation per decision on most machines.
        let mut input_bytes: SmallVec<[f64; 8]> = smallvec::smallvec![0.0; nodes];
        let mut output_bytes: SmallVec<[f64; 8]> = smallvec::smallvec![0.0; nodes];
        for a in accesses {
            let w = weight(a);
            if w == 0.0 {
                continue;
            }
            if let Some(n) = a.node {
                let per_node = if a.input {
                    &mut input_bytes
                } else {
                    &mut output_bytes
                };
                per_node[n] += w * a.bytes as f64;
            }
        }
        let cost = |i: usize| -> f64 {
            (0..nodes)
                .map(|j| {
                    let (from, to) = (NodeId(i as u32), NodeId(j as u32));
                    input_bytes[j] * topology.read_cost(from, to)
                        + output_bytes[j] * topology.write_cost(from, to)
                })
                .sum()
        };
        let holds = |i: usize| input_bytes[i] > 0.0 || output_bytes[i] > 0.0;
        let mut best: Option<(usize, f64)> = holds(local).then(|| (local, cost(local)));
        for i in (0..nodes).filter(|&i| holds(i)) {
            let c = cost(i);
            if best.map_or(true, |(_, b)| c < b) {
                best = Some((i, c));
            }
        }
        let Some(best) = best else {
            // No byte considered is placed yet: nothing to move towards.
            return PushDecision::LocalIsCheapest;
        };
        if best.0 == local {
            PushDecision::LocalIsCheapest
        } else {
            PushDecision::ToNode(best.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(bytes: u64, node: usize) -> AccessInfo {
        AccessInfo {
            bytes,
            node: Some(node),
            input: true,
        }
    }

    fn output(bytes: u64, node: Option<usize>) -> AccessInfo {
        AccessInfo {
            bytes,
            node,
            input: false,
        }
    }

    fn settings(heuristic: Heuristic) -> PushSettings {
        PushSettings {
            heuristic,
            threshold_bytes: DEFAULT_THRESHOLD_BYTES,
        }
    }

    #[test]
    fn inputs_mostly_on_node_2_go_to_node_2() {
        let topo = Topology::from_spec("4x2").unwrap();
        let acc = [input(90_000, 2), input(10_000, 0)];
        assert_eq!(
            settings(Heuristic::InputOnly).activate(0, &acc, &topo),
            PushDecision::ToNode(2)
        );
        // Already there: stays.
        assert_eq!(
            settings(Heuristic::InputOnly).activate(2, &acc, &topo),
            PushDecision::LocalIsCheapest
        );
    }

    #[test]
    fn small_tasks_stay_local() {
        let topo = Topology::from_spec("4x2").unwrap();
        let acc = [input(9_000, 2), input(1_000, 0)];
        assert_eq!(
            settings(Heuristic::InputOnly).activate(0, &acc, &topo),
            PushDecision::BelowThreshold
        );
    }

    #[test]
    fn unknown_nodes_count_in_the_total_only() {
        let topo = Topology::from_spec("2x1").unwrap();
        // 1 KiB known on node 1, 100 KiB output not allocated yet (deferred).
        let acc = [input(1024, 1), output(100 * 1024, None)];
        let weighted = settings(Heuristic::Weighted {
            read: 1.0,
            write: 1.0,
        });
        assert_eq!(weighted.activate(0, &acc, &topo), PushDecision::ToNode(1));
        // Input-only ignores outputs entirely, so the total is under the threshold.
        assert_eq!(
            settings(Heuristic::InputOnly).activate(0, &acc, &topo),
            PushDecision::BelowThreshold
        );
    }

    #[test]
    fn output_only_follows_the_outputs() {
        let topo = Topology::from_spec("2x1").unwrap();
        let acc = [input(1 << 20, 0), output(1 << 16, Some(1))];
        assert_eq!(
            settings(Heuristic::OutputOnly).activate(0, &acc, &topo),
            PushDecision::ToNode(1)
        );
        assert_eq!(
            settings(Heuristic::InputOnly).activate(1, &acc, &topo),
            PushDecision::ToNode(0)
        );
    }

    #[test]
    fn inputs_split_between_two_nodes_run_on_one_of_them() {
        // Opteron-64: node 0 and node 3 are 2 hops apart (read factor 4.34); node 1 is
        // 1 hop from both (1.81 and 2.16), and cheaper by the summed factors (3.97
        // against 5.34), but holds none of the data. Paper 1 section 5.1: with
        // balanced dependences half of the input is local.
        let topo = Topology::from_spec("opteron-64").unwrap();
        let acc = [input(1 << 16, 0), input(1 << 16, 3)];
        let s = settings(Heuristic::InputOnly);
        assert_eq!(s.activate(0, &acc, &topo), PushDecision::LocalIsCheapest);
        assert_eq!(s.activate(3, &acc, &topo), PushDecision::LocalIsCheapest);
        assert_eq!(s.activate(1, &acc, &topo), PushDecision::ToNode(0));
        assert_eq!(s.activate(5, &acc, &topo), PushDecision::ToNode(0));
    }

    #[test]
    fn costs_follow_the_distance_matrix() {
        // Node 0 near node 1 (12), far from 2 and 3 (30); 2 and 3 near each other.
        let topo =
            Topology::from_spec("4x1:10,12,30,30,12,10,30,30,30,30,10,12,30,30,12,10").unwrap();
        // Half the bytes on node 0, half on node 1: nodes 0 and 1 tie on cost; the
        // activator's node wins ties, and node 3 (far from both) never wins.
        let acc = [input(50_000, 0), input(50_000, 1)];
        let s = settings(Heuristic::InputOnly);
        assert_eq!(s.activate(0, &acc, &topo), PushDecision::LocalIsCheapest);
        assert_eq!(s.activate(1, &acc, &topo), PushDecision::LocalIsCheapest);
        assert_eq!(s.activate(3, &acc, &topo), PushDecision::ToNode(0));
    }

    proptest::proptest! {
        /// The threshold test on byte counts alone decides as `activate` does.
        #[test]
        fn below_threshold_agrees_with_activate(
            accesses in proptest::collection::vec(
                (0u64..40_000, proptest::option::of(0usize..4), proptest::bool::ANY),
                0..6,
            ),
            heuristic in 0usize..4,
            local in 0usize..4,
        ) {
            let topo = Topology::from_spec("4x1").unwrap();
            let heuristic = [
                Heuristic::InputOnly,
                Heuristic::OutputOnly,
                Heuristic::Weighted { read: 1.0, write: 1.0 },
                Heuristic::Weighted { read: 0.0, write: 2.0 },
            ][heuristic];
            let s = settings(heuristic);
            let acc: Vec<AccessInfo> = accesses
                .iter()
                .map(|&(bytes, node, input)| AccessInfo { bytes, node, input })
                .collect();
            let sum = |input: bool| acc.iter().filter(|a| a.input == input).map(|a| a.bytes).sum();
            let below = s.activate(local, &acc, &topo) == PushDecision::BelowThreshold;
            proptest::prop_assert_eq!(s.below_threshold(sum(true), sum(false)), below);
        }
    }
}
