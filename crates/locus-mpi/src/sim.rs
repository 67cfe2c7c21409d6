//! A simulated cluster: machines of one preset joined by a network, running a
//! distributed program under the same message rules ([`Plan`]) as the real runtime, to
//! show how a kernel would scale to 64 machines that are not here.
//!
//! The model is at the level of tasks and messages:
//!
//! - **Machines.** Each rank is one machine of a topology preset (`opteron-64`: 8 nodes
//!   of 8 cores) whose cores take the rank's tasks in program order, each on the core
//!   that frees first, once its inputs are there. A task takes the larger of its
//!   compute time and its memory time (a roofline): compute from the simulator's
//!   arithmetic of the kernel (`locus_sim::Costs::compute_ns`), memory as the bytes it
//!   declares over one core's share of its node's memory bandwidth when every core is
//!   busy (`Costs::node_bandwidth_gb_s` over the cores of a node).
//! - **Network.** Each message leaves its sender's network interface once the version
//!   it carries is written, one message at a time per interface, and arrives `latency +
//!   bytes / bandwidth` after it leaves (a [`Network`]'s two parameters, per link).
//! - **Messages** are exactly the plan's transfers: one per version and receiving rank,
//!   only where a task reads it; later readers on that rank wait for the same arrival.
//!
//! What it leaves out: the NUMA placement inside a machine (the single-machine
//! simulator, `locus sim`, models it), the runtime's own overheads, and network
//! contention beyond the sender's interface.

use std::collections::HashMap;

use locus_bench::jacobi_2d::Params;
use locus_sim::Costs;

use crate::dist::Distribution;
use crate::plan::{Extent, Plan, Purpose, Refused, Route};

/// A network joining the machines: every link has this latency and bandwidth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Network {
    /// One-way latency of a message, in seconds.
    pub latency_s: f64,
    /// Bandwidth of a link, in bytes per second.
    pub bandwidth: f64,
}

impl Network {
    /// An InfiniBand EDR fabric: 1.5 µs, 12.5 GB/s per link.
    pub const INFINIBAND_EDR: Network = Network {
        latency_s: 1.5e-6,
        bandwidth: 12.5e9,
    };
    /// 10 Gigabit Ethernet: 20 µs, 1.25 GB/s per link.
    pub const ETHERNET_10G: Network = Network {
        latency_s: 20e-6,
        bandwidth: 1.25e9,
    };
}

/// One task of a program: a name (for its arithmetic) and its accesses by datum number.
#[derive(Clone, Debug)]
pub struct SimTask {
    /// The kernel's task name (`"jacobi-2d"`).
    pub name: &'static str,
    /// Data read, and the part of each.
    pub reads: Vec<(usize, Extent)>,
    /// Data written whole (the first decides the rank). A read-write access is a
    /// read of the whole datum and a write.
    pub writes: Vec<usize>,
    /// Arithmetic operations of the body, when the kernel counts them (the tile
    /// kernels of `cholesky`); otherwise the simulator's arithmetic per byte of `name`.
    pub ops: Option<f64>,
}

/// A distributed program for the model: data (owner, elements of 8 bytes) and tasks
/// in program order.
#[derive(Clone, Debug, Default)]
pub struct SimProgram {
    /// `(owner, len)` of each datum.
    pub data: Vec<(usize, usize)>,
    /// The tasks.
    pub tasks: Vec<SimTask>,
}

/// What the model predicts for a program.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Time from the first task to the last, in seconds.
    pub makespan_s: f64,
    /// Messages sent.
    pub messages: u64,
    /// Bytes sent over the network.
    pub bytes: u64,
    /// Time the busiest rank's cores spent in tasks, over its cores, in seconds.
    pub busiest_compute_s: f64,
}

/// A cluster of `ranks` machines of one preset joined by `network`.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// Machines.
    pub ranks: usize,
    /// Cores per machine.
    pub cores: usize,
    /// Cores per NUMA node of a machine.
    pub cores_per_node: usize,
    /// The machine's cost model.
    pub costs: Costs,
    /// The network.
    pub network: Network,
}

impl Cluster {
    /// `ranks` machines of topology preset `preset`, joined by `network`.
    pub fn of_preset(preset: &str, ranks: usize, network: Network) -> Result<Self, String> {
        let t = locus::Topology::from_spec(preset).map_err(|e| e.to_string())?;
        let cores = t.num_cpus();
        Ok(Cluster {
            ranks,
            cores,
            cores_per_node: (cores / t.num_nodes().max(1)).max(1),
            costs: Costs::for_topology(preset),
            network,
        })
    }

    /// Seconds one task named `name` declaring `bytes` (and `ops` operations, when
    /// given) takes on a busy machine.
    fn task_s(&self, name: &str, bytes: u64, ops: Option<f64>) -> f64 {
        let compute = match ops {
            Some(ops) => ops / (self.costs.clock_ghz * 1e9 * self.costs.ops_per_cycle),
            None => self.costs.compute_ns(name, bytes) as f64 * 1e-9,
        };
        let share = self.costs.node_bandwidth_gb_s * 1e9 / self.cores_per_node as f64;
        compute.max(bytes as f64 / share)
    }

    /// Runs `program` through the model.
    pub fn predict(&self, program: &SimProgram) -> Result<Prediction, Refused> {
        let mut plan = Plan::new(self.ranks);
        for &(owner, len) in &program.data {
            plan.add(owner, len, 8)?;
        }
        let n = program.data.len();
        // When the current version of each datum is written (0: initial contents).
        let mut written_at = vec![0.0f64; n];
        // Arrival of each copy: (datum, version, rank, extent).
        let mut arrivals: HashMap<(usize, u64, usize, Extent), f64> = HashMap::new();
        let mut cores: Vec<Vec<f64>> = vec![vec![0.0; self.cores]; self.ranks];
        let mut busy = vec![0.0f64; self.ranks];
        let mut nic = vec![0.0f64; self.ranks];
        let (mut messages, mut bytes_sent, mut makespan) = (0u64, 0u64, 0.0f64);
        for task in &program.tasks {
            let exec = plan.executor(&task.writes)?;
            let mut ready = 0.0f64;
            let mut bytes = 0u64;
            for (d, extent) in &task.reads {
                plan.check(*d, extent)?;
                let len = program.data[*d].1;
                bytes += (extent.len(len) * 8) as u64;
                let version = plan.version(*d);
                let at = match plan.read(*d, extent.clone(), exec, Purpose::Compute) {
                    Route::Held => written_at[*d],
                    Route::Received(e) => arrivals[&(*d, version, exec, e)],
                    Route::Transfer(t) => {
                        let leave = written_at[*d].max(nic[t.from]);
                        let on_wire = t.bytes as f64 / self.network.bandwidth;
                        nic[t.from] = leave + on_wire;
                        let arrive = leave + on_wire + self.network.latency_s;
                        messages += 1;
                        bytes_sent += t.bytes;
                        arrivals.insert((*d, version, exec, t.extent), arrive);
                        arrive
                    }
                };
                ready = ready.max(at);
            }
            for &d in &task.writes {
                bytes += (program.data[d].1 * 8) as u64;
            }
            let core = (0..self.cores)
                .min_by(|&a, &b| cores[exec][a].total_cmp(&cores[exec][b]))
                .unwrap_or(0);
            let start = ready.max(cores[exec][core]);
            let took = self.task_s(task.name, bytes, task.ops);
            let end = start + took;
            cores[exec][core] = end;
            busy[exec] += took;
            makespan = makespan.max(end);
            for &d in &task.writes {
                plan.write(d, exec);
                written_at[d] = end;
            }
        }
        let busiest = busy.iter().copied().fold(0.0, f64::max) / self.cores as f64;
        Ok(Prediction {
            makespan_s: makespan,
            messages,
            bytes: bytes_sent,
            busiest_compute_s: busiest,
        })
    }
}

/// The program of the distributed `jacobi-2d` (the tasks and accesses of
/// [`kernels::jacobi_2d`](crate::kernels::jacobi_2d)) over `ranks`.
pub fn jacobi_2d(p: &Params, ranks: usize) -> SimProgram {
    let dist: Distribution = crate::kernels::jacobi_2d::distribution(p, ranks);
    let (br, bc) = (p.block_rows, p.block_cols);
    let (nbr, nbc) = (p.rows / br, p.cols / bc);
    let blocks = nbr * nbc;
    let faces = nbc > 1;
    let mut program = SimProgram::default();
    // Per set: blocks, then west and east faces.
    let mut ids = [
        [Vec::new(), Vec::new(), Vec::new()],
        [Vec::new(), Vec::new(), Vec::new()],
    ];
    for set in &mut ids {
        for blk in 0..blocks {
            let owner = dist.owner(blk);
            set[0].push(program.data.len());
            program.data.push((owner, br * bc));
            if faces {
                for face in &mut set[1..] {
                    face.push(program.data.len());
                    program.data.push((owner, br));
                }
            }
        }
    }
    for t in 0..p.iterations {
        let (src, dst) = (&ids[t % 2], &ids[(t + 1) % 2]);
        for blk in 0..blocks {
            let (bi, bj) = (blk / nbc, blk % nbc);
            let mut reads = vec![(src[0][blk], Extent::Whole)];
            if bi > 0 {
                reads.push((src[0][blk - nbc], Extent::Range((br - 1) * bc..br * bc)));
            }
            if bi + 1 < nbr {
                reads.push((src[0][blk + nbc], Extent::Range(0..bc)));
            }
            if bj > 0 {
                reads.push((src[2][blk - 1], Extent::Whole));
            }
            if bj + 1 < nbc {
                reads.push((src[1][blk + 1], Extent::Whole));
            }
            let mut writes = vec![dst[0][blk]];
            if faces {
                writes.extend([dst[1][blk], dst[2][blk]]);
            }
            program.tasks.push(SimTask {
                name: "jacobi-2d",
                reads,
                writes,
                ops: None,
            });
        }
    }
    program
}

/// The program of the distributed `cholesky` (the tasks and accesses of
/// [`kernels::cholesky`](crate::kernels::cholesky)) over `ranks`: `n × n` in tiles of
/// `tile`, with the flops of each tile kernel.
pub fn cholesky(n: usize, tile: usize, ranks: usize) -> SimProgram {
    let nt = n / tile.max(1);
    let dist = crate::kernels::cholesky::distribution(nt, ranks);
    let slot = |i: usize, j: usize| i * (i + 1) / 2 + j;
    let mut program = SimProgram::default();
    for i in 0..nt {
        for j in 0..=i {
            program.data.push((dist.owner(i * nt + j), tile * tile));
        }
    }
    let b = tile as f64;
    let mut task = |name, reads: &[(usize, usize)], rw: (usize, usize), ops: f64| {
        let mut r: Vec<(usize, Extent)> = reads
            .iter()
            .map(|&(i, j)| (slot(i, j), Extent::Whole))
            .collect();
        r.push((slot(rw.0, rw.1), Extent::Whole));
        program.tasks.push(SimTask {
            name,
            reads: r,
            writes: vec![slot(rw.0, rw.1)],
            ops: Some(ops),
        });
    };
    for k in 0..nt {
        task("potrf", &[], (k, k), b * b * b / 3.0);
        for i in k + 1..nt {
            task("trsm", &[(k, k)], (i, k), b * b * b);
        }
        for i in k + 1..nt {
            task("syrk", &[(i, k)], (i, i), b * b * b);
            for j in k + 1..i {
                task("gemm", &[(i, k), (j, k)], (i, j), 2.0 * b * b * b);
            }
        }
    }
    program
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(n: usize, b: usize, iterations: usize) -> Params {
        Params {
            rows: n,
            cols: n,
            block_rows: b,
            block_cols: b,
            iterations,
            ..Params::default()
        }
    }

    /// The model sends what the runtime sends: the halos, no more.
    #[test]
    fn the_model_sends_the_halos() {
        for ranks in [1, 2, 4, 9] {
            let p = params(96, 8, 3);
            let c = Cluster::of_preset("opteron-64", ranks, Network::INFINIBAND_EDR).unwrap();
            let got = c.predict(&jacobi_2d(&p, ranks)).unwrap();
            let dist = crate::kernels::jacobi_2d::distribution(&p, ranks);
            let want: u64 = crate::kernels::jacobi_2d::halo_bytes(&p, &dist, ranks)
                .iter()
                .sum();
            assert_eq!(got.bytes, want, "{ranks} ranks");
            assert_eq!(got.messages == 0, ranks == 1);
        }
    }

    /// Cholesky: panel tiles travel once per version and rank; more machines help.
    #[test]
    fn cholesky_scales_and_sends_panels() {
        let time = |ranks| {
            Cluster::of_preset("opteron-64", ranks, Network::INFINIBAND_EDR)
                .unwrap()
                .predict(&cholesky(4096, 256, ranks))
                .unwrap()
        };
        let (one, four) = (time(1), time(4));
        assert_eq!((one.messages, one.bytes), (0, 0));
        assert!(four.messages > 0 && four.bytes % (256 * 256 * 8) == 0);
        assert!(four.makespan_s < one.makespan_s);
    }

    /// More machines finish a fixed problem sooner, and a slower network costs time.
    #[test]
    fn strong_scaling_and_the_network() {
        let p = params(2048, 128, 4);
        let time = |ranks, net| {
            Cluster::of_preset("opteron-64", ranks, net)
                .unwrap()
                .predict(&jacobi_2d(&p, ranks))
                .unwrap()
                .makespan_s
        };
        let (one, four) = (
            time(1, Network::INFINIBAND_EDR),
            time(4, Network::INFINIBAND_EDR),
        );
        assert!(four < one, "{four} vs {one}");
        assert!(time(4, Network::ETHERNET_10G) > four);
    }
}
