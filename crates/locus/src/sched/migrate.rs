//! Move the data or leave it: what a task does with shared data that lies on another
//! node than the one it starts on, under the runtime's
//! [`Migration`](crate::Migration) setting (Broquedis et al., "Dynamic Task and Data
//! Placement over NUMA Architectures: An OpenMP Runtime Perspective": MaMI's cost
//! queries, and ForestGOMP's choice between remote access and migration).
//!
//! Under `auto` the choice is by cost. Accessing the datum's remote bytes costs, per
//! use, the topology's read and write cost from the task's node (a miss per line at the
//! local latency times the remote factor); the datum will be used by this task and by
//! the tasks already submitted that declare it and have not started (its expected
//! reuse, known from the declarations). Migrating costs the topology's migration model
//! (`a + b x pages`) once, after which every use is local. The pages move when
//! migrating costs less than the remote accesses it saves (and, on real nodes, when
//! the kernel's free memory of the task's node holds them: the caller asks it).
//!
//! Pure: the costs come in as [`MigrationCosts`], the figures of one access as
//! arguments, the decision goes out as a [`Choice`].

use locus_topo::{NodeId, Topology};

use super::push::AccessInfo;

/// The cost model of the decision, taken from the topology once per run.
#[derive(Clone, Debug)]
pub struct MigrationCosts {
    nodes: usize,
    /// `read_ns[data * nodes + from]`: nanoseconds to read one byte of `data`'s memory
    /// from a CPU of `from`.
    read_ns: Vec<f64>,
    /// The same for writes.
    write_ns: Vec<f64>,
    /// The migration model: nanoseconds per call ...
    call_ns: f64,
    /// ... and per page (4 KiB).
    page_ns: f64,
    /// The kernel's number of each node, on a topology of real nodes (whose free
    /// memory the caller asks the kernel before moving pages there).
    os_nodes: Option<Vec<u32>>,
}

/// What to do with a remote datum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Choice {
    /// Access it where it is.
    Remote,
    /// Move its remote pages to the task's node first.
    Migrate,
}

impl MigrationCosts {
    /// The costs of `topology`: its read and write costs and its migration model.
    pub fn of(topology: &Topology) -> MigrationCosts {
        let nodes = topology.num_nodes();
        let per_byte = |f: &dyn Fn(u64, NodeId, NodeId) -> f64| {
            let mut v = Vec::with_capacity(nodes * nodes);
            for data in 0..nodes {
                for from in 0..nodes {
                    v.push(f(1 << 20, NodeId(data as u32), NodeId(from as u32)) / (1 << 20) as f64);
                }
            }
            v
        };
        let m = topology.memory_costs().migration;
        MigrationCosts {
            nodes,
            read_ns: per_byte(&|b, d, f| topology.read_cost_ns(b, d, f)),
            write_ns: per_byte(&|b, d, f| topology.write_cost_ns(b, d, f)),
            call_ns: m.fixed_ns,
            page_ns: m.per_page_ns,
            os_nodes: (!topology.is_virtual()).then(|| {
                (0..nodes)
                    .map(|n| topology.os_node(NodeId(n as u32)).unwrap_or(n as u32))
                    .collect()
            }),
        }
    }

    /// Nanoseconds of one use of `bytes` of `data`'s memory from `from`, read and/or
    /// written.
    fn use_ns(&self, bytes: u64, data: usize, from: usize, read: bool, write: bool) -> f64 {
        let k = data * self.nodes + from;
        let b = bytes as f64;
        f64::from(u8::from(read)) * b * self.read_ns[k]
            + f64::from(u8::from(write)) * b * self.write_ns[k]
    }

    /// The node other than `hinted` where one use of `accesses` costs least, if it costs
    /// less than on `hinted`: each access read or written at the topology's cost from
    /// that node to its data's (an unplaced buffer costs the same everywhere and is left
    /// out). Candidates are the nodes holding some of the bytes; ties go to the lower
    /// node.
    pub fn cheaper_node(&self, accesses: &[AccessInfo], hinted: usize) -> Option<usize> {
        if hinted >= self.nodes {
            return None;
        }
        // Bytes read and written on each node (one pass over the accesses).
        let mut on: smallvec::SmallVec<[(u64, u64); 8]> = smallvec::smallvec![(0, 0); self.nodes];
        for a in accesses {
            if let Some(d) = a.node.filter(|&d| d < self.nodes) {
                if a.input {
                    on[d].0 += a.bytes;
                } else {
                    on[d].1 += a.bytes;
                }
            }
        }
        let cost_from = |from: usize| -> f64 {
            on.iter()
                .enumerate()
                .map(|(d, &(r, w))| {
                    self.use_ns(r, d, from, true, false) + self.use_ns(w, d, from, false, true)
                })
                .sum()
        };
        let at_hint = cost_from(hinted);
        // Candidates: the nodes holding some of the bytes; ties to the lower node.
        let mut best: Option<(f64, usize)> = None;
        for node in (0..self.nodes).filter(|&n| n != hinted && on[n] != (0, 0)) {
            let cost = cost_from(node);
            if best.map_or(true, |(c, _)| cost < c) {
                best = Some((cost, node));
            }
        }
        best.filter(|&(cost, _)| cost < at_hint)
            .map(|(_, node)| node)
    }

    /// The kernel's number of `node` when the topology's nodes are real ones: its free
    /// memory can then be asked of the kernel.
    pub fn os_node(&self, node: usize) -> Option<u32> {
        self.os_nodes.as_ref()?.get(node).copied()
    }

    /// Nanoseconds of migrating `pages` pages in one call.
    pub fn migration_ns(&self, pages: u64) -> f64 {
        self.call_ns + self.page_ns * pages as f64
    }

    /// Whether a task on `run` that reads (`read`) and/or writes (`write`) `bytes`
    /// bytes held in `pages` pages of node `data`, which `reuse` more tasks already
    /// submitted will use after it, should migrate them first: migrating once plus
    /// `1 + reuse` local uses, against `1 + reuse` remote uses.
    pub fn choose(
        &self,
        bytes: u64,
        pages: u64,
        data: usize,
        run: usize,
        (read, write): (bool, bool),
        reuse: u64,
    ) -> Choice {
        if data == run || data >= self.nodes || run >= self.nodes || bytes == 0 {
            return Choice::Remote;
        }
        let uses = 1.0 + reuse as f64;
        let remote = uses * self.use_ns(bytes, data, run, read, write);
        let local = uses * self.use_ns(bytes, run, run, read, write);
        if self.migration_ns(pages) + local < remote {
            Choice::Migrate
        } else {
            Choice::Remote
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On `opteron-16` (MaMI's 120 us + 11 us per page; reads x1.18 / x1.41 and writes
    /// x1.25 / x1.46 at 83 ns and 142 ns per line), a 2.5 MB block written from the
    /// opposite node pays for its migration after a handful of uses, one read from a
    /// neighbour only after many more; a use alone never does.
    #[test]
    fn migration_pays_when_the_data_is_reused_enough() {
        let t = Topology::from_spec("opteron-16").unwrap();
        let c = MigrationCosts::of(&t);
        assert!((c.migration_ns(1) - 131_000.0).abs() < 1.0);
        let bytes = 2_500_000;
        let pages = bytes / 4096 + 1;
        let (write, read) = ((false, true), (true, false));
        // Find the opposite and a neighbouring node of node 0 by their factors.
        let factor = |d: usize| t.read_cost_ns(64, NodeId(d as u32), NodeId(0));
        let opposite = (1..4)
            .max_by(|&a, &b| factor(a).total_cmp(&factor(b)))
            .unwrap();
        let neighbour = (1..4)
            .min_by(|&a, &b| factor(a).total_cmp(&factor(b)))
            .unwrap();
        let first = |data, mode| {
            (0..1000)
                .find(|&r| c.choose(bytes, pages, data, 0, mode, r) == Choice::Migrate)
                .unwrap()
        };
        let w = first(opposite, write);
        let r_near = first(neighbour, read);
        assert!(w > 0, "one use never pays: {w}");
        assert!(w < 10, "{w}");
        assert!(
            r_near > 2 * w,
            "reads of a neighbour pay later: {r_near} vs {w}"
        );
        // Local data never moves.
        assert_eq!(c.choose(bytes, pages, 0, 0, read, 1000), Choice::Remote);
    }
}
