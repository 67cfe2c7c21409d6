//! Memory controllers shared by the tasks accessing them (README, "Memory part").
//!
//! Each node's controller serves *flows*: the bytes one running task moves to or from
//! that node, weighted by the topology's access-cost factor from the task's node. The
//! flows of a node share its bandwidth max-min fairly, each capped by what one core can
//! draw. All caps being equal, every flow of a node runs at the same rate
//! `min(core, node / flows)`, so a node keeps one *service* counter (bytes served to
//! each of its flows since time 0) and a flow ends when the counter reaches the value
//! it had when the flow started plus the flow's volume. Rates change only when a flow
//! starts or ends; each change reschedules the node's next completion, and the events
//! of earlier schedules are recognised as stale by the node's epoch.
//!
//! Volumes are in units of 1/1024 byte and time in nanoseconds, all integers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Sub-byte units per byte.
pub(crate) const UNITS_PER_BYTE: u64 = 1024;

/// The controllers of every node.
pub(crate) struct Memory {
    nodes: Vec<Controller>,
    /// Most units per ns one flow receives.
    core_rate: u64,
    /// Flows started, for tie-breaking equal thresholds.
    flows_started: u64,
}

struct Controller {
    /// Units per ns of the whole controller.
    bandwidth: u64,
    /// Units served to each flow since time 0.
    service: u128,
    /// Units per ns each flow receives now (0 without flows).
    rate: u64,
    /// When `service` was last brought up to date.
    updated_at: u64,
    /// Running flows by the service value at which they end, with the worker whose
    /// task they belong to.
    flows: BinaryHeap<Reverse<(u128, u64, usize)>>,
    /// Bumped at every reschedule; completion events carry it.
    epoch: u64,
}

/// The next completion of a node, to schedule as an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Completion {
    /// When the node's earliest flow ends at the current rate.
    pub(crate) at: u64,
    /// The node's epoch, to recognise a stale event.
    pub(crate) epoch: u64,
}

/// Converts GB/s (bytes per ns) to units per ns, at least 1.
pub(crate) fn rate_of(gb_s: f64) -> u64 {
    ((gb_s * UNITS_PER_BYTE as f64).round() as u64).max(1)
}

impl Memory {
    /// Controllers of `nodes` nodes, each of `node_gb_s`, flows capped at `core_gb_s`.
    pub(crate) fn new(nodes: usize, node_gb_s: f64, core_gb_s: f64) -> Self {
        Memory {
            nodes: (0..nodes)
                .map(|_| Controller {
                    bandwidth: rate_of(node_gb_s),
                    service: 0,
                    rate: 0,
                    updated_at: 0,
                    flows: BinaryHeap::new(),
                    epoch: 0,
                })
                .collect(),
            core_rate: rate_of(core_gb_s),
            flows_started: 0,
        }
    }

    /// The rate of a flow alone on a node: its time alone is `volume / rate`.
    pub(crate) fn solo_rate(&self, node: usize) -> u64 {
        self.core_rate.min(self.nodes[node].bandwidth)
    }

    /// Flows running on `node` now.
    #[cfg(test)]
    pub(crate) fn flows(&self, node: usize) -> usize {
        self.nodes[node].flows.len()
    }

    /// Starts a flow of `volume` units on `node` for `worker`'s task at `now`; returns
    /// the node's next completion.
    pub(crate) fn start(
        &mut self,
        node: usize,
        volume: u64,
        worker: usize,
        now: u64,
    ) -> Completion {
        self.flows_started += 1;
        let seq = self.flows_started;
        let core_rate = self.core_rate;
        let c = &mut self.nodes[node];
        c.advance(now);
        c.flows
            .push(Reverse((c.service + u128::from(volume), seq, worker)));
        c.reschedule(core_rate, now).expect("a flow was just added")
    }

    /// Handles a completion event of `node`: pushes the workers whose flows ended into
    /// `ended` and returns the node's next completion. A stale event changes nothing.
    pub(crate) fn complete(
        &mut self,
        node: usize,
        epoch: u64,
        now: u64,
        ended: &mut Vec<usize>,
    ) -> Option<Completion> {
        let core_rate = self.core_rate;
        let c = &mut self.nodes[node];
        if epoch != c.epoch {
            return None;
        }
        c.advance(now);
        while let Some(&Reverse((end, _, worker))) = c.flows.peek() {
            if end > c.service {
                break;
            }
            c.flows.pop();
            ended.push(worker);
        }
        c.reschedule(core_rate, now)
    }
}

impl Controller {
    fn advance(&mut self, now: u64) {
        self.service += u128::from(self.rate) * u128::from(now - self.updated_at);
        self.updated_at = now;
    }

    /// Recomputes the fair rate after a change and the next completion, if any flow is
    /// left.
    fn reschedule(&mut self, core_rate: u64, now: u64) -> Option<Completion> {
        self.epoch += 1;
        let n = self.flows.len() as u64;
        if n == 0 {
            self.rate = 0;
            return None;
        }
        self.rate = core_rate.min(self.bandwidth / n).max(1);
        let Reverse((end, _, _)) = *self.flows.peek()?;
        let left = end.saturating_sub(self.service);
        let dt = left.div_ceil(u128::from(self.rate));
        Some(Completion {
            at: now + u64::try_from(dt).expect("completion within u64 nanoseconds"),
            epoch: self.epoch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs flows started at time 0 to completion; returns each worker's end time.
    fn run(m: &mut Memory, node: usize, volumes: &[u64]) -> Vec<u64> {
        let mut next = None;
        for (w, &v) in volumes.iter().enumerate() {
            next = Some(m.start(node, v, w, 0));
        }
        let mut ends = vec![0; volumes.len()];
        let mut ended = Vec::new();
        while let Some(c) = next {
            next = m.complete(node, c.epoch, c.at, &mut ended);
            for w in ended.drain(..) {
                ends[w] = c.at;
            }
        }
        ends
    }

    #[test]
    fn a_flow_alone_runs_at_the_core_rate() {
        // 8 GB/s core, 32 GB/s node: 8000 bytes in 1000 ns.
        let mut m = Memory::new(1, 32.0, 8.0);
        assert_eq!(run(&mut m, 0, &[8000 * UNITS_PER_BYTE]), vec![1000]);
    }

    #[test]
    fn flows_share_a_saturated_controller() {
        // 8 GB/s per core, 16 GB/s per node: two flows run at full speed, four at half.
        let mut m = Memory::new(1, 16.0, 8.0);
        assert_eq!(
            run(&mut m, 0, &[8000 * UNITS_PER_BYTE; 2]),
            vec![1000, 1000]
        );
        let mut m = Memory::new(1, 16.0, 8.0);
        assert_eq!(run(&mut m, 0, &[8000 * UNITS_PER_BYTE; 4]), vec![2000; 4]);
    }

    #[test]
    fn a_short_flow_leaves_its_share_to_the_others() {
        // One core-rate unit each while both run (4 GB/s), then 8 GB/s alone.
        let mut m = Memory::new(1, 8.0, 8.0);
        let ends = run(&mut m, 0, &[4000 * UNITS_PER_BYTE, 8000 * UNITS_PER_BYTE]);
        // Both at 4 B/ns until 1000 ns (flow 0 done, flow 1 has 4000 left), then 500 ns.
        assert_eq!(ends, vec![1000, 1500]);
    }

    #[test]
    fn nodes_are_independent() {
        let mut m = Memory::new(2, 8.0, 8.0);
        let a = m.start(0, 8000 * UNITS_PER_BYTE, 0, 0);
        let b = m.start(1, 8000 * UNITS_PER_BYTE, 1, 0);
        assert_eq!((a.at, b.at), (1000, 1000));
        assert_eq!(m.flows(0), 1);
    }
}
