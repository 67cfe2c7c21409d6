//! Memory controllers and the links into them, shared by the tasks accessing them
//! (README, "Memory part").
//!
//! A *flow* is the bytes one running task moves to or from one node in one direction.
//! Three limits apply to it:
//!
//! - its **cap**, what one core can draw from that node: a core keeps a fixed number of
//!   cache-line misses in flight, so its stream runs at `lines x 64 B / latency`, and the
//!   latency grows with the distance to the node (Little's law);
//! - the node's **controller**, shared by every flow on the node;
//! - the node's **link port**, shared by the flows of cores on other nodes: remote
//!   traffic into or out of a node's memory crosses its links.
//!
//! The flows of a node share these max-min fairly (progressive filling: every flow's
//! rate rises together until it reaches its cap or a resource it uses is full). Flows of
//! equal cap and equal locality then run at one rate, so the flows of a node are kept
//! in *classes* (at most one per hop class and direction), each with one service
//! counter (bytes served to each of its flows since time 0): a flow ends when its
//! class's counter reaches the value it had when the flow started plus the flow's
//! volume. Rates change only when a flow of the node starts or ends; each change
//! reschedules the node's next completion, and the events of earlier schedules are
//! recognised as stale by the node's epoch.
//!
//! Volumes are in units of 1/1024 byte and time in nanoseconds, all integers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Sub-byte units per byte.
pub(crate) const UNITS_PER_BYTE: u64 = 1024;

/// The controllers and link ports of every node.
pub(crate) struct Memory {
    nodes: Vec<NodeMemory>,
    /// Flows started, for tie-breaking equal thresholds.
    flows_started: u64,
}

struct NodeMemory {
    /// Units per ns of the controller.
    controller: u64,
    /// Units per ns of the links into and out of the node, for remote flows.
    port: u64,
    /// Flows by cap and locality; a class is kept once created (at most a few).
    classes: Vec<Class>,
    /// When the classes' service was last brought up to date.
    updated_at: u64,
    /// Bumped at every reschedule; completion events carry it.
    epoch: u64,
}

struct Class {
    /// Most units per ns one flow of the class draws (the core's limit).
    cap: u64,
    /// Whether its flows come from cores of other nodes (and so use the port).
    remote: bool,
    /// Units per ns each flow receives now.
    rate: u64,
    /// Units served to each flow since time 0.
    service: u128,
    /// Running flows by the service value at which they end, with the worker whose
    /// task they belong to.
    flows: BinaryHeap<Reverse<(u128, u64, usize)>>,
}

/// The next completion of a node, to schedule as an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Completion {
    /// When the node's earliest flow ends at the current rates.
    pub(crate) at: u64,
    /// The node's epoch, to recognise a stale event.
    pub(crate) epoch: u64,
}

/// Converts GB/s (bytes per ns) to units per ns, at least 1.
pub(crate) fn rate_of(gb_s: f64) -> u64 {
    ((gb_s * UNITS_PER_BYTE as f64).round() as u64).max(1)
}

impl Memory {
    /// The memories of `nodes` nodes, each with a controller of `controller_gb_s` and
    /// link ports of `port_gb_s`.
    pub(crate) fn new(nodes: usize, controller_gb_s: f64, port_gb_s: f64) -> Self {
        Memory {
            nodes: (0..nodes)
                .map(|_| NodeMemory {
                    controller: rate_of(controller_gb_s),
                    port: rate_of(port_gb_s),
                    classes: Vec::new(),
                    updated_at: 0,
                    epoch: 0,
                })
                .collect(),
            flows_started: 0,
        }
    }

    /// The rate of a flow of cap `cap` alone on `node`: its time alone is `volume /
    /// rate`.
    pub(crate) fn solo_rate(&self, node: usize, cap: u64, remote: bool) -> u64 {
        let n = &self.nodes[node];
        let mut rate = cap.min(n.controller);
        if remote {
            rate = rate.min(n.port);
        }
        rate.max(1)
    }

    /// Flows running on `node` now.
    #[cfg(test)]
    pub(crate) fn flows(&self, node: usize) -> usize {
        self.nodes[node].classes.iter().map(|c| c.flows.len()).sum()
    }

    /// Starts a flow of `volume` units on `node` for `worker`'s task at `now`, capped
    /// at `cap` units per ns, from a core of another node if `remote`; returns the
    /// node's next completion.
    pub(crate) fn start(
        &mut self,
        node: usize,
        volume: u64,
        cap: u64,
        remote: bool,
        worker: usize,
        now: u64,
    ) -> Completion {
        self.flows_started += 1;
        let seq = self.flows_started;
        let n = &mut self.nodes[node];
        n.advance(now);
        let k = match n
            .classes
            .iter()
            .position(|c| c.cap == cap && c.remote == remote)
        {
            Some(k) => k,
            None => {
                n.classes.push(Class {
                    cap: cap.max(1),
                    remote,
                    rate: 0,
                    service: 0,
                    flows: BinaryHeap::new(),
                });
                n.classes.len() - 1
            }
        };
        let c = &mut n.classes[k];
        c.flows
            .push(Reverse((c.service + u128::from(volume), seq, worker)));
        n.reschedule(now).expect("a flow was just added")
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
        let n = &mut self.nodes[node];
        if epoch != n.epoch {
            return None;
        }
        n.advance(now);
        for c in &mut n.classes {
            while let Some(&Reverse((end, _, worker))) = c.flows.peek() {
                if end > c.service {
                    break;
                }
                c.flows.pop();
                ended.push(worker);
            }
        }
        n.reschedule(now)
    }
}

/// The largest level `l` with `fixed + sum over (count, cap) of count x min(cap, l) <=
/// bandwidth`, for classes sorted by cap; `u64::MAX` when every class can run at its
/// cap.
fn fill_level(fixed: u64, bandwidth: u64, classes: &mut [(u64, u64)]) -> u64 {
    classes.sort_unstable_by_key(|&(_, cap)| cap);
    let mut left = bandwidth.saturating_sub(fixed);
    let mut unfrozen: u64 = classes.iter().map(|&(count, _)| count).sum();
    for &(count, cap) in classes.iter() {
        if unfrozen == 0 {
            break;
        }
        // Every unfrozen flow at `cap`: fits?
        if cap.saturating_mul(unfrozen) <= left {
            left -= cap * count;
            unfrozen -= count;
        } else {
            return left / unfrozen;
        }
    }
    u64::MAX
}

impl NodeMemory {
    fn advance(&mut self, now: u64) {
        let dt = u128::from(now - self.updated_at);
        for c in &mut self.classes {
            c.service += u128::from(c.rate) * dt;
        }
        self.updated_at = now;
    }

    /// Max-min fair rates by progressive filling: all flows rise together; remote flows
    /// stop where the port is full, then the others rise until the controller is full,
    /// each flow stopping at its cap.
    fn share(&mut self) {
        let active = |c: &Class| !c.flows.is_empty();
        let count = |c: &Class| c.flows.len() as u64;
        // The level at which the controller alone would be full.
        let mut all: Vec<(u64, u64)> = self
            .classes
            .iter()
            .filter(|c| active(c))
            .map(|c| (count(c), c.cap))
            .collect();
        let level_controller = fill_level(0, self.controller, &mut all);
        let mut remote: Vec<(u64, u64)> = self
            .classes
            .iter()
            .filter(|c| active(c) && c.remote)
            .map(|c| (count(c), c.cap))
            .collect();
        let level_port = fill_level(0, self.port, &mut remote);
        if level_port >= level_controller {
            for c in &mut self.classes {
                c.rate = c.cap.min(level_controller).max(1);
            }
            return;
        }
        // The port fills first: remote flows stop there, local ones go on.
        let mut fixed = 0u64;
        for c in self.classes.iter_mut().filter(|c| c.remote) {
            c.rate = c.cap.min(level_port).max(1);
            fixed += c.rate * c.flows.len() as u64;
        }
        let mut local: Vec<(u64, u64)> = self
            .classes
            .iter()
            .filter(|c| active(c) && !c.remote)
            .map(|c| (count(c), c.cap))
            .collect();
        let level_local = fill_level(fixed, self.controller, &mut local);
        for c in self.classes.iter_mut().filter(|c| !c.remote) {
            c.rate = c.cap.min(level_local).max(1);
        }
    }

    /// Recomputes the fair rates after a change and the next completion, if any flow is
    /// left.
    fn reschedule(&mut self, now: u64) -> Option<Completion> {
        self.epoch += 1;
        self.share();
        let dt = self
            .classes
            .iter()
            .filter_map(|c| {
                let Reverse((end, _, _)) = *c.flows.peek()?;
                let left = end.saturating_sub(c.service);
                Some(left.div_ceil(u128::from(c.rate)))
            })
            .min()?;
        Some(Completion {
            at: now + u64::try_from(dt).expect("completion within u64 nanoseconds"),
            epoch: self.epoch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: u64 = UNITS_PER_BYTE;

    /// Runs flows `(volume in bytes, cap in GB/s, remote)` started at time 0 on node 0
    /// to completion; returns each flow's end time.
    fn run(m: &mut Memory, flows: &[(u64, f64, bool)]) -> Vec<u64> {
        let mut next = None;
        for (w, &(v, cap, remote)) in flows.iter().enumerate() {
            next = Some(m.start(0, v * B, rate_of(cap), remote, w, 0));
        }
        let mut ends = vec![0; flows.len()];
        let mut ended = Vec::new();
        while let Some(c) = next {
            next = m.complete(0, c.epoch, c.at, &mut ended);
            for w in ended.drain(..) {
                ends[w] = c.at;
            }
        }
        ends
    }

    #[test]
    fn a_flow_alone_runs_at_its_cap() {
        // 8 GB/s cap, 32 GB/s controller: 8000 bytes in 1000 ns.
        let mut m = Memory::new(1, 32.0, 16.0);
        assert_eq!(run(&mut m, &[(8000, 8.0, false)]), vec![1000]);
        // A remote flow alone is limited by its own (lower) cap.
        let mut m = Memory::new(1, 32.0, 16.0);
        assert_eq!(run(&mut m, &[(8000, 2.0, true)]), vec![4000]);
    }

    #[test]
    fn flows_share_a_saturated_controller() {
        // 8 GB/s per flow, 16 GB/s controller: two flows at full speed, four at half.
        let mut m = Memory::new(1, 16.0, 16.0);
        assert_eq!(run(&mut m, &[(8000, 8.0, false); 2]), vec![1000, 1000]);
        let mut m = Memory::new(1, 16.0, 16.0);
        assert_eq!(run(&mut m, &[(8000, 8.0, false); 4]), vec![2000; 4]);
    }

    #[test]
    fn slow_flows_leave_the_rest_of_the_controller_to_fast_ones() {
        // Controller 10 GB/s; a remote flow capped at 2 GB/s keeps its cap, the two
        // local flows share the other 8 GB/s.
        let mut m = Memory::new(1, 10.0, 16.0);
        let ends = run(
            &mut m,
            &[(2000, 2.0, true), (4000, 8.0, false), (4000, 8.0, false)],
        );
        assert_eq!(ends, vec![1000, 1000, 1000]);
    }

    #[test]
    fn the_port_limits_remote_flows_only() {
        // Port 4 GB/s: two remote flows (cap 8) get 2 GB/s each; the local flow gets
        // the controller's remaining 12 GB/s up to its cap of 8.
        let mut m = Memory::new(1, 16.0, 4.0);
        let ends = run(
            &mut m,
            &[(2000, 8.0, true), (2000, 8.0, true), (8000, 8.0, false)],
        );
        assert_eq!(ends, vec![1000, 1000, 1000]);
    }

    #[test]
    fn a_short_flow_leaves_its_share_to_the_others() {
        // 4 GB/s each while both run, then 8 GB/s alone.
        let mut m = Memory::new(1, 8.0, 8.0);
        let ends = run(&mut m, &[(4000, 8.0, false), (8000, 8.0, false)]);
        // Flow 0 done at 1000 ns (flow 1 has 4000 left), then 500 ns.
        assert_eq!(ends, vec![1000, 1500]);
    }

    #[test]
    fn nodes_are_independent() {
        let mut m = Memory::new(2, 8.0, 8.0);
        let a = m.start(0, 8000 * B, rate_of(8.0), false, 0, 0);
        let b = m.start(1, 8000 * B, rate_of(8.0), false, 1, 0);
        assert_eq!((a.at, b.at), (1000, 1000));
        assert_eq!(m.flows(0), 1);
    }

    #[test]
    fn fill_level_is_the_water_level() {
        // Caps 1 and 10, one flow each, 6 units: the small one takes 1, the other 5.
        assert_eq!(fill_level(0, 6, &mut [(1, 10), (1, 1)]), 5);
        // Enough for every cap.
        assert_eq!(fill_level(0, 100, &mut [(2, 10)]), u64::MAX);
        // Two flows, nothing left after a fixed share.
        assert_eq!(fill_level(6, 6, &mut [(2, 10)]), 0);
    }
}
