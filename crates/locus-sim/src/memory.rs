//! Memory controllers and the links of their nodes, shared by the tasks accessing them
//! (README, "Memory part").
//!
//! A *flow* is the bytes one running task moves to or from one node in one direction.
//! Three limits apply to it:
//!
//! - its **cap**, what one core can draw from that node: a core keeps a fixed number of
//!   cache-line misses in flight, so its stream runs at `lines x 64 B / latency`, and the
//!   latency grows with the distance to the node (Little's law);
//! - the node's **controller**, shared by every flow on the node; a written byte may
//!   occupy it longer than a read one (`Costs::write_occupancy`);
//! - the node's **link port**, shared by the flows of cores on other nodes: remote
//!   traffic into or out of a node's memory crosses its links. Links are full duplex
//!   (HyperTransport, QuickPath and NUMAlink carry each direction on its own lanes), so
//!   the port has its capacity in each direction: remote reads of the node's memory
//!   leave through one, remote writes arrive through the other. A machine whose nodes
//!   reach their nearest neighbours and the rest of the machine through different
//!   links (the SGI UV2000: a socket's QPI link to the other socket of its blade, and
//!   its QPI link to the blade's hub and the NUMAlink fabric) has two ports per node,
//!   the *near* port for flows of the nearest nodes and the *far* port for the others,
//!   each with its own capacity in each direction.
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

/// Which of a node's resources a flow crosses besides its controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// Read by a core of the node: the controller only.
    LocalRead,
    /// Written by a core of the node: the controller only.
    LocalWrite,
    /// Read by a core of another node: out through the (near) link port.
    RemoteRead,
    /// Written by a core of another node: in through the (near) link port.
    RemoteWrite,
    /// Read by a core of a node beyond the nearest: out through the far port.
    FarRead,
    /// Written by a core of a node beyond the nearest: in through the far port.
    FarWrite,
}

impl Path {
    /// The path of a flow between a core of `core` and the memory of `memory`; `far`
    /// when the flow takes the far port (the machine has one and `core` is not among
    /// `memory`'s nearest nodes).
    pub(crate) fn of(core: usize, memory: usize, write: bool, far: bool) -> Path {
        match (core == memory, far, write) {
            (true, _, false) => Path::LocalRead,
            (true, _, true) => Path::LocalWrite,
            (false, false, false) => Path::RemoteRead,
            (false, false, true) => Path::RemoteWrite,
            (false, true, false) => Path::FarRead,
            (false, true, true) => Path::FarWrite,
        }
    }

    fn is_write(self) -> bool {
        matches!(self, Path::LocalWrite | Path::RemoteWrite | Path::FarWrite)
    }

    /// The port direction the flow's data cross besides the controller, as an index
    /// into [`NodeMemory::ports`]; none for a local flow. Its requests or
    /// acknowledgements cross the other direction of the same port, `port ^ 1`.
    fn port(self) -> Option<usize> {
        match self {
            Path::LocalRead | Path::LocalWrite => None,
            Path::RemoteRead => Some(0),
            Path::RemoteWrite => Some(1),
            Path::FarRead => Some(2),
            Path::FarWrite => Some(3),
        }
    }
}

/// Weights are in thousandths: a read byte weighs `WEIGHT_UNIT` on its controller, and
/// a remote byte on a port as much as the link moves for it, headers included.
const WEIGHT_UNIT: u64 = 1000;

/// What a remote flow's unit weighs on the two directions of the port it crosses.
#[derive(Clone, Copy, Debug)]
struct LinkWeights {
    /// In the direction of the data.
    data: u64,
    /// In the other direction.
    back: u64,
}

impl LinkWeights {
    /// The weights of a line of `line_bytes` that takes `header_bytes` more with it and
    /// `back_bytes` the other way.
    fn of(line_bytes: u32, header_bytes: u32, back_bytes: u32) -> LinkWeights {
        let per_line =
            |extra: u32| (WEIGHT_UNIT * u64::from(extra)).div_ceil(u64::from(line_bytes.max(1)));
        LinkWeights {
            data: WEIGHT_UNIT + per_line(header_bytes),
            back: per_line(back_bytes),
        }
    }
}

/// The controllers and link ports of every node.
pub(crate) struct Memory {
    nodes: Vec<NodeMemory>,
    /// Flows started, for tie-breaking equal thresholds.
    flows_started: u64,
}

struct NodeMemory {
    /// Units per ns of the controller.
    controller: u64,
    /// Controller time of a written unit, in thousandths of a read unit's.
    write_weight: u64,
    /// Units per ns of each port direction, indexed by [`Path::port`]: the links out
    /// of and into the node for remote flows (of the nearest nodes only, when the node
    /// has a far port), then the far port out and in (flows of nodes beyond the
    /// nearest; 0 when the node has none, and then no flow takes it).
    ports: [u64; 4],
    /// Port time of a remote flow's unit, in thousandths of a unit: in the direction
    /// its data take (the data and their packet headers), and in the other direction
    /// (the requests of reads, the acknowledgements of writes).
    link_weights: LinkWeights,
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
    /// Whether its flows come from cores of other nodes (and so use the port), and in
    /// which direction.
    path: Path,
    /// What a unit of its flows weighs on each resource ([`NodeMemory::weight`]).
    weights: [u64; NodeMemory::RESOURCES],
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
    /// link ports of `port_gb_s`, and far ports of `far_port_gb_s` if it is positive; a
    /// written byte occupies a controller `write_occupancy` times as long as a read one.
    pub(crate) fn new(
        nodes: usize,
        controller_gb_s: f64,
        port_gb_s: f64,
        far_port_gb_s: f64,
        write_occupancy: f64,
    ) -> Self {
        let write_weight = ((write_occupancy * WEIGHT_UNIT as f64).round() as u64).max(1);
        let port = rate_of(port_gb_s);
        let far_port = if far_port_gb_s > 0.0 {
            rate_of(far_port_gb_s)
        } else {
            0
        };
        Memory {
            nodes: (0..nodes)
                .map(|_| NodeMemory {
                    controller: rate_of(controller_gb_s),
                    write_weight,
                    ports: [port, port, far_port, far_port],
                    link_weights: LinkWeights::of(64, 0, 0),
                    classes: Vec::new(),
                    updated_at: 0,
                    epoch: 0,
                })
                .collect(),
            flows_started: 0,
        }
    }

    /// Charges the link packets of remote flows on the ports: per line of
    /// `line_bytes`, `header_bytes` travel with the data and `back_bytes` the other way
    /// (without this, a port carries the data alone).
    pub(crate) fn with_link_packets(
        mut self,
        line_bytes: u32,
        header_bytes: u32,
        back_bytes: u32,
    ) -> Self {
        for n in &mut self.nodes {
            // Classes keep the weights they were made with.
            debug_assert!(n.classes.is_empty(), "link packets set before any flow");
            n.link_weights = LinkWeights::of(line_bytes, header_bytes, back_bytes);
        }
        self
    }

    /// Nanoseconds a task's flows `(node, volume, cap, path)`, started together, take
    /// alone on the machine: the longest of each flow at its cap and each resource
    /// (a controller, a direction of a port) at its bandwidth for what crosses it.
    pub(crate) fn alone_ns(&self, flows: impl Iterator<Item = (usize, u64, u64, Path)>) -> u64 {
        // Weighted units through each resource of each node.
        let mut load = vec![[0u64; NodeMemory::RESOURCES]; self.nodes.len()];
        let mut longest = 0u64;
        for (node, volume, cap, path) in flows {
            longest = longest.max(volume.div_ceil(cap.max(1)));
            let n = &self.nodes[node];
            for (r, l) in load[node].iter_mut().enumerate() {
                *l += volume * n.weight(r, path);
            }
        }
        for (n, l) in self.nodes.iter().zip(&load) {
            for (r, &units) in l.iter().enumerate() {
                longest = longest.max(units.div_ceil(n.capacity(r).max(1) * WEIGHT_UNIT));
            }
        }
        longest
    }

    /// Flows running on `node` now.
    #[cfg(test)]
    pub(crate) fn flows(&self, node: usize) -> usize {
        self.nodes[node].classes.iter().map(|c| c.flows.len()).sum()
    }

    /// Starts a flow of `volume` units on `node` for `worker`'s task at `now`, capped
    /// at `cap` units per ns, along `path`; returns the node's next completion.
    pub(crate) fn start(
        &mut self,
        node: usize,
        volume: u64,
        cap: u64,
        path: Path,
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
            .position(|c| c.cap == cap && c.path == path)
        {
            Some(k) => k,
            None => {
                let weights = std::array::from_fn(|r| n.weight(r, path));
                n.classes.push(Class {
                    cap: cap.max(1),
                    path,
                    weights,
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
/// cap. A count may be weighted (flows times their weight on the resource).
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
    /// Resources of a node: 0 is the controller, `1 + p` port direction `p`.
    const RESOURCES: usize = 5;

    /// Units per ns of resource `r`.
    fn capacity(&self, r: usize) -> u64 {
        if r == 0 {
            self.controller
        } else {
            self.ports[r - 1]
        }
    }

    /// What a unit moved along `path` weighs on resource `r`, in thousandths; 0 when
    /// the flow does not cross it. Every flow crosses the controller, a written unit
    /// at the write weight; a remote flow crosses its port direction at the data's
    /// weight and the other direction at its requests' or acknowledgements'.
    fn weight(&self, r: usize, path: Path) -> u64 {
        match (r, path.port()) {
            (0, _) if path.is_write() => self.write_weight,
            (0, _) => WEIGHT_UNIT,
            (_, Some(p)) if r - 1 == p => self.link_weights.data,
            (_, Some(p)) if r - 1 == p ^ 1 => self.link_weights.back,
            _ => 0,
        }
    }

    fn advance(&mut self, now: u64) {
        let dt = u128::from(now - self.updated_at);
        for c in &mut self.classes {
            c.service += u128::from(c.rate) * dt;
        }
        self.updated_at = now;
    }

    /// Max-min fair rates by progressive filling: all flows rise together; the flows
    /// crossing the first resource to fill (the controller or one direction of the
    /// port) stop there, the others rise on until another fills, each flow stopping at
    /// its cap.
    fn share(&mut self) {
        // The resources: the controller, which every flow crosses, and the port
        // directions, crossed by remote flows (each class's `weights`).
        let mut frozen = vec![false; self.classes.len()];
        // The open classes crossing one resource, `(weighted count, cap)`.
        let mut open: Vec<(u64, u64)> = Vec::with_capacity(self.classes.len());
        loop {
            // The lowest level at which a resource fills, given the frozen flows.
            let mut lowest: Option<(u64, usize)> = None;
            for r in 0..Self::RESOURCES {
                let capacity = self.capacity(r);
                let mut fixed = 0u64;
                open.clear();
                for (k, c) in self.classes.iter().enumerate() {
                    let weight = c.weights[r];
                    if c.flows.is_empty() || weight == 0 {
                        continue;
                    }
                    let count = c.flows.len() as u64 * weight;
                    if frozen[k] {
                        fixed += c.rate * count;
                    } else {
                        open.push((count, c.cap));
                    }
                }
                if open.is_empty() {
                    continue;
                }
                let level = fill_level(fixed, capacity * WEIGHT_UNIT, &mut open);
                if level != u64::MAX && lowest.map_or(true, |(l, _)| level < l) {
                    lowest = Some((level, r));
                }
            }
            let Some((level, r)) = lowest else {
                // Every flow left runs at its cap.
                for (k, c) in self.classes.iter_mut().enumerate() {
                    if !frozen[k] {
                        c.rate = c.cap.max(1);
                    }
                }
                return;
            };
            for (c, frozen) in self.classes.iter_mut().zip(&mut frozen) {
                if !*frozen && !c.flows.is_empty() && c.weights[r] > 0 {
                    c.rate = c.cap.min(level).max(1);
                    *frozen = true;
                }
            }
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

    const R: Path = Path::RemoteRead;
    const W: Path = Path::RemoteWrite;
    const L: Path = Path::LocalRead;
    const LW: Path = Path::LocalWrite;

    /// Runs flows `(volume in bytes, cap in GB/s, path)` started at time 0 on node 0
    /// to completion; returns each flow's end time.
    fn run(m: &mut Memory, flows: &[(u64, f64, Path)]) -> Vec<u64> {
        let mut next = None;
        for (w, &(v, cap, path)) in flows.iter().enumerate() {
            next = Some(m.start(0, v * B, rate_of(cap), path, w, 0));
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
        let mut m = Memory::new(1, 32.0, 16.0, 0.0, 1.0);
        assert_eq!(run(&mut m, &[(8000, 8.0, L)]), vec![1000]);
        // A remote flow alone is limited by its own (lower) cap.
        let mut m = Memory::new(1, 32.0, 16.0, 0.0, 1.0);
        assert_eq!(run(&mut m, &[(8000, 2.0, R)]), vec![4000]);
    }

    #[test]
    fn flows_share_a_saturated_controller() {
        // 8 GB/s per flow, 16 GB/s controller: two flows at full speed, four at half.
        let mut m = Memory::new(1, 16.0, 16.0, 0.0, 1.0);
        assert_eq!(run(&mut m, &[(8000, 8.0, L); 2]), vec![1000, 1000]);
        let mut m = Memory::new(1, 16.0, 16.0, 0.0, 1.0);
        assert_eq!(run(&mut m, &[(8000, 8.0, L); 4]), vec![2000; 4]);
    }

    #[test]
    fn slow_flows_leave_the_rest_of_the_controller_to_fast_ones() {
        // Controller 10 GB/s; a remote flow capped at 2 GB/s keeps its cap, the two
        // local flows share the other 8 GB/s.
        let mut m = Memory::new(1, 10.0, 16.0, 0.0, 1.0);
        let ends = run(&mut m, &[(2000, 2.0, R), (4000, 8.0, L), (4000, 8.0, L)]);
        assert_eq!(ends, vec![1000, 1000, 1000]);
    }

    #[test]
    fn link_packets_weigh_on_both_directions_of_the_port() {
        // Port 8 GB/s each way; per 64-byte line, 16 header bytes with the data and 16
        // back. A remote read alone: its data and headers, 80 bytes a line, fill the
        // way out: 8000 bytes in 1250 ns.
        // (Rates are whole units per ns: ends may fall 1 ns late.)
        let packets = || Memory::new(1, 64.0, 8.0, 0.0, 1.0).with_link_packets(64, 16, 16);
        let near = |ends: &[u64], want: u64| ends.iter().all(|&e| e == want || e == want + 1);
        assert!(near(&run(&mut packets(), &[(8000, 64.0, R)]), 1250));
        // A read and a write of 8000 bytes each: each direction carries one flow's
        // data (80 a line) and the other's requests or acknowledgements (16 a line),
        // 96 bytes a line for each flow: 1500 ns for both.
        let ends = run(&mut packets(), &[(8000, 64.0, R), (8000, 64.0, W)]);
        assert!(near(&ends, 1500), "{ends:?}");
        // Two reads: the way out carries 160 bytes a line, the way back 32.
        let ends = run(&mut packets(), &[(8000, 64.0, R), (8000, 64.0, R)]);
        assert!(near(&ends, 2500), "{ends:?}");
        // The same flows alone on the machine, as a task's alone time counts them.
        let m = packets();
        let flows = [
            (0, 8000 * B, rate_of(64.0), R),
            (0, 8000 * B, rate_of(64.0), W),
        ];
        assert!(near(&[m.alone_ns(flows.into_iter())], 1500));
        // Local flows do not cross the port.
        assert_eq!(run(&mut packets(), &[(8000, 8.0, L)]), vec![1000]);
    }

    #[test]
    fn the_port_limits_remote_flows_only() {
        // Port 4 GB/s: two remote flows (cap 8) get 2 GB/s each; the local flow gets
        // the controller's remaining 12 GB/s up to its cap of 8.
        let mut m = Memory::new(1, 16.0, 4.0, 0.0, 1.0);
        let ends = run(&mut m, &[(2000, 8.0, R), (2000, 8.0, R), (8000, 8.0, L)]);
        assert_eq!(ends, vec![1000, 1000, 1000]);
    }

    #[test]
    fn the_port_carries_each_direction_at_its_capacity() {
        // Port 4 GB/s each way: a remote reader and a remote writer (cap 8) each get
        // 4 GB/s; two readers share one direction, 2 GB/s each, while the writer keeps
        // its 4.
        let mut m = Memory::new(1, 16.0, 4.0, 0.0, 1.0);
        assert_eq!(
            run(&mut m, &[(4000, 8.0, R), (4000, 8.0, W)]),
            vec![1000, 1000]
        );
        let mut m = Memory::new(1, 16.0, 4.0, 0.0, 1.0);
        let ends = run(&mut m, &[(2000, 8.0, R), (2000, 8.0, R), (4000, 8.0, W)]);
        assert_eq!(ends, vec![1000, 1000, 1000]);
        // The controller still bounds both directions together: 6 GB/s for two
        // flows of 4 GB/s of port each gives 3 GB/s each.
        let mut m = Memory::new(1, 6.0, 4.0, 0.0, 1.0);
        assert_eq!(
            run(&mut m, &[(3000, 8.0, R), (3000, 8.0, W)]),
            vec![1000, 1000]
        );
    }

    #[test]
    fn near_and_far_flows_cross_their_own_ports() {
        // Near port 4 GB/s, far port 2 GB/s each way: a near and a far reader (cap 8)
        // each fill their own port; two far readers share the far port, 1 GB/s each.
        const FR: Path = Path::FarRead;
        const FW: Path = Path::FarWrite;
        let mut m = Memory::new(1, 16.0, 4.0, 2.0, 1.0);
        assert_eq!(
            run(&mut m, &[(4000, 8.0, R), (2000, 8.0, FR)]),
            vec![1000, 1000]
        );
        let mut m = Memory::new(1, 16.0, 4.0, 2.0, 1.0);
        assert_eq!(
            run(&mut m, &[(1000, 8.0, FR), (1000, 8.0, FR), (2000, 8.0, FW)]),
            vec![1000, 1000, 1000]
        );
        let m = Memory::new(1, 16.0, 4.0, 2.0, 1.0);
        assert_eq!(
            m.alone_ns([(0, 2000 * B, rate_of(8.0), FW)].into_iter()),
            1000
        );
        // A far write weighs on the controller as a write.
        let mut m = Memory::new(1, 9.0, 8.0, 8.0, 2.0);
        assert_eq!(run(&mut m, &[(4500, 8.0, FW)]), vec![1000]);
    }

    #[test]
    fn a_written_byte_occupies_the_controller_by_its_weight() {
        // Controller 9 GB/s, writes weigh 2: a reader and a writer (cap 8) rise
        // together until 1 x r + 2 x r = 9, so 3 GB/s each.
        let mut m = Memory::new(1, 9.0, 8.0, 0.0, 2.0);
        assert_eq!(
            run(&mut m, &[(3000, 8.0, L), (3000, 8.0, LW)]),
            vec![1000, 1000]
        );
        // Alone, the writer has half the controller: 4.5 GB/s.
        let mut m = Memory::new(1, 9.0, 8.0, 0.0, 2.0);
        assert_eq!(run(&mut m, &[(4500, 8.0, LW)]), vec![1000]);
        // So does a remote writer, whose port does not weigh it.
        let mut m = Memory::new(1, 9.0, 8.0, 0.0, 2.0);
        assert_eq!(run(&mut m, &[(4500, 8.0, W)]), vec![1000]);
        assert_eq!(
            m.alone_ns([(0, 4500 * B, rate_of(8.0), W)].into_iter()),
            1000
        );
    }

    #[test]
    fn a_short_flow_leaves_its_share_to_the_others() {
        // 4 GB/s each while both run, then 8 GB/s alone.
        let mut m = Memory::new(1, 8.0, 8.0, 0.0, 1.0);
        let ends = run(&mut m, &[(4000, 8.0, L), (8000, 8.0, L)]);
        // Flow 0 done at 1000 ns (flow 1 has 4000 left), then 500 ns.
        assert_eq!(ends, vec![1000, 1500]);
    }

    #[test]
    fn nodes_are_independent() {
        let mut m = Memory::new(2, 8.0, 8.0, 0.0, 1.0);
        let a = m.start(0, 8000 * B, rate_of(8.0), L, 0, 0);
        let b = m.start(1, 8000 * B, rate_of(8.0), L, 1, 0);
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
