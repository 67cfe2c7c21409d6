//! Every constant of the machine model, in one place, each with where its value comes
//! from (the cost model itself is described in this crate's `README.md`).
//!
//! The remote-access factors are not here: they are the topology's `read_cost` and
//! `write_cost` (paper 1 Tables 1-2 for the `opteron-64` and `sgi-uv2000` presets),
//! which scale the local latencies below. Nor is the memory of each node: it is the
//! topology's (`locus_topo` presets), which the simulator's pools enforce.

/// The arithmetic of one kind of task, by the name the task was spawned with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelOps {
    /// The task's name (`"jacobi-2d"`, `"kmeans"`, ...).
    pub name: &'static str,
    /// Arithmetic operations per byte the task declares (reads plus writes).
    pub ops_per_byte: f64,
}

/// Parameters of the modelled machine and runtime. All times are integer nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    /// Bandwidth of one node's memory controller, in GB/s (= bytes per ns), shared by
    /// the tasks accessing that node at the same time.
    pub node_bandwidth_gb_s: f64,
    /// Bandwidth of the links of one node in each direction, in GB/s: every access
    /// from a core of another node to this node's memory crosses them, reads out of
    /// the node and writes into it (the links are full duplex).
    pub link_bandwidth_gb_s: f64,
    /// Bandwidth of a node's far port in each direction, in GB/s, or 0 for none. With
    /// a far port, `link_bandwidth_gb_s` is that of the links to the node's nearest
    /// nodes (those at the smallest read factor) only, and every other remote access
    /// to the node's memory crosses the far port instead: a machine whose sockets reach
    /// their neighbour and the rest of the machine over different links.
    pub far_link_bandwidth_gb_s: f64,
    /// Bytes of packet header a remote cache line's data take with them on a link,
    /// counted in the link's bandwidth: the bandwidth above counts every byte a link
    /// moves, headers included.
    pub link_header_bytes: u32,
    /// Bytes each remote cache line sends the other way on a link: a read's request,
    /// a write's acknowledgement.
    pub link_back_bytes: u32,
    /// Bytes of one node's last-level cache, shared by its cores: what a task reads
    /// of memory its node touched recently and that still fits costs no memory
    /// traffic (`src/cache.rs`). 0: no cache.
    pub llc_bytes: u64,
    /// Whether a written line is first read (read for ownership: ordinary stores on a
    /// write-back cache), so that a write moves its bytes from the data's node twice,
    /// in and back out, through its controller and links. Latencies measured per
    /// written line include it already; bandwidth does not.
    pub write_allocate: bool,
    /// How many times longer a written byte occupies its node's controller than a
    /// read byte (1: the same). A write-back costs the memory more than a read: the
    /// bus turns around, and the line is sent and acknowledged.
    pub write_occupancy: f64,
    /// Cache-line misses one core keeps in flight.
    pub outstanding_lines: u32,
    /// Bytes of a cache line.
    pub line_bytes: u32,
    /// Latency of a read from the core's own node, in ns; a read from node `j` takes
    /// this times the topology's read factor.
    pub read_latency_ns: f64,
    /// Latency of a write to the core's own node, in ns; scaled by the write factor.
    pub write_latency_ns: f64,
    /// Core clock, in GHz.
    pub clock_ghz: f64,
    /// Arithmetic operations a core retires per cycle.
    pub ops_per_cycle: f64,
    /// The arithmetic of the tasks the simulator knows by name (the kernels of
    /// `locus-bench`). A task with a cost hint takes its hint; a task not listed here
    /// takes `compute_ps_per_byte`.
    pub kernel_ops: &'static [KernelOps],
    /// Compute time of a task without a cost hint and not in `kernel_ops`, in
    /// picoseconds per byte accessed.
    pub compute_ps_per_byte: u64,
    /// Submitting one task from a body (the control program creates tasks over time):
    /// its record, its bindings and their registration with the versions it waits for.
    pub task_create_ns: u64,
    /// Making a task ready and queueing it locally: deciding where it goes, and the
    /// finish of the task that made it ready (its versions published and released),
    /// which is charged here as that task activates its successors.
    pub activate_ns: u64,
    /// Extra cost of transferring a task to another worker's mailbox.
    pub push_ns: u64,
    /// Taking a task out of a queue and preparing it (before its body).
    pub task_start_ns: u64,
    /// One steal attempt on a victim of the thief's own node; an attempt on a victim of
    /// node `j` costs this times the topology's read factor from the thief's node to `j`.
    pub steal_attempt_ns: u64,
    /// One spin round's pause between two sweeps over the victims.
    pub yield_ns: u64,
    /// From a wake-up announcement to the sleeping worker looking for work.
    pub wake_ns: u64,
    /// Allocating one buffer from a node's pool.
    pub alloc_ns: u64,
    /// What a task declaring no access pays of `task_create_ns`, `activate_ns` and
    /// `task_start_ns`, in percent: such a task takes the runtime's lean path (no
    /// binding, no registration, no release).
    pub lean_task_percent: u64,
    /// What a replayed task pays of `task_create_ns`, `activate_ns` and
    /// `task_start_ns`, in percent, whatever it declares, and it pays no `alloc_ns`: a
    /// replay analyses no dependence and allocates nothing per task (a counter per task,
    /// a list of successors, the recorded home).
    pub replay_task_percent: u64,
    /// Sweeps over the victims an idle worker makes before it sleeps (the `threads`
    /// engine's `SPIN_ROUNDS`).
    pub spin_rounds: u32,
    /// Capacity of a worker's mailbox of pushed tasks (the `threads` engine's
    /// `MAILBOX_CAPACITY`).
    pub mailbox_capacity: usize,
}

/// The arithmetic of the kernels of `locus-bench`, counted from their bodies: operations
/// per element (floating-point operations, comparisons) over the bytes the task declares
/// per element (an 8-byte read and an 8-byte write for the stencils). Counts of the
/// source code, not measurements: vector units and the compiler change them (README,
/// "Where the constants come from").
pub const KERNEL_OPS: &[KernelOps] = &[
    // 3-point average: 2 additions, 1 division, over 16 bytes.
    KernelOps {
        name: "jacobi",
        ops_per_byte: 3.0 / 16.0,
    },
    KernelOps {
        name: "jacobi-1d",
        ops_per_byte: 3.0 / 16.0,
    },
    KernelOps {
        name: "seidel-1d",
        ops_per_byte: 3.0 / 16.0,
    },
    // 5-point average: 4 additions, 1 division.
    KernelOps {
        name: "jacobi-2d",
        ops_per_byte: 5.0 / 16.0,
    },
    KernelOps {
        name: "seidel-2d",
        ops_per_byte: 5.0 / 16.0,
    },
    // 7-point average: 6 additions, 1 division.
    KernelOps {
        name: "jacobi-3d",
        ops_per_byte: 7.0 / 16.0,
    },
    KernelOps {
        name: "seidel-3d",
        ops_per_byte: 7.0 / 16.0,
    },
    // Gaussian blur over the Moore neighbourhood: 9 multiplications, 8 additions.
    KernelOps {
        name: "blur",
        ops_per_byte: 17.0 / 16.0,
    },
    // Roberts cross: 2 differences, 2 squares, 1 addition, 1 square root.
    KernelOps {
        name: "roberts",
        ops_per_byte: 6.0 / 16.0,
    },
    // Compare-exchange of two keys: 1 comparison per pair, 2 x 16 bytes.
    KernelOps {
        name: "bitonic-pair",
        ops_per_byte: 1.0 / 32.0,
    },
    // Merging a bitonic block of 2^16 or 2^17 keys after the copy: log2(n) = 16
    // compare-exchanges per key, over 16 bytes.
    KernelOps {
        name: "bitonic-merge",
        ops_per_byte: 1.0,
    },
    // Sorting a block of 2^16 or 2^17 keys: about log2(n) = 16 comparisons per key, over
    // 16 bytes.
    KernelOps {
        name: "bitonic-sort",
        ops_per_byte: 1.0,
    },
    // Per point of 10 dimensions: 11 clusters x 10 dimensions x 3 operations
    // (difference, square, sum), 11 comparisons, 10 additions to the partial sums: 351
    // operations over 84 bytes (40 read, 40 written as the next iteration's copy, 4 of
    // assignment).
    KernelOps {
        name: "kmeans",
        ops_per_byte: 351.0 / 84.0,
    },
    // A sparse product's row of the five-point Laplacian: 5 multiplications and 5
    // additions over 84 bytes (its row pointer, 8; 5 column indices, 20; 5 values, 40;
    // its element of x, 8, the rest of x mostly shared with the neighbouring rows; its
    // element of y, 8). Memory-bound, as sparse products are: a core computes a row in
    // less time than it takes to draw its bytes.
    KernelOps {
        name: "spmv",
        ops_per_byte: 10.0 / 84.0,
    },
];

/// Which of the runtime's task paths a task takes, for its costs per task
/// ([`Costs::per_task_ns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskPath {
    /// Submitted, made ready and started by the dynamic path: every cost.
    Full,
    /// A task declaring no access, by the dynamic path's lean path:
    /// [`Costs::lean_task_percent`] of each cost.
    Lean,
    /// A task of a replayed graph (docs/guide.md, "Recorded graphs"):
    /// [`Costs::replay_task_percent`] of each cost.
    Replayed,
}

impl TaskPath {
    /// The path of a task that declares `accesses` accesses and is replayed or not.
    pub fn of(accesses: usize, replayed: bool) -> Self {
        if replayed {
            TaskPath::Replayed
        } else if accesses == 0 {
            TaskPath::Lean
        } else {
            TaskPath::Full
        }
    }
}

/// Runtime costs. Task creation, activation and start add up to 370 ns, the median wall
/// time per task of the overhead graph on one worker under `dsa-base`, 368 ns (`dsa-opt`:
/// 364 ns), which pays every runtime cost of a task and nothing else. They split it as
/// callgrind splits a chain task's instructions (one worker, `dsa-opt`, inclusive costs):
/// submission 38%, start 38%, finish with the successor's activation 24%. A task
/// declaring nothing pays 31% of each: 920 instructions against a chain task's 2,959.
/// A replayed task pays 8% of each, whatever it declares: a replayed chain task costs 213
/// instructions against a dynamic one's 2,521 (`replay-chain` and `chain` under
/// `scripts/task-cost.py`, one worker, `dsa-opt`, the same commit `6c2d4d8`; a replayed
/// empty task costs the same 213).
/// `scripts/sim-task-costs.py` measures and prints them (7 alternating runs of
/// `locus run overhead --topology 1x1 --config dsa-base` and `dsa-opt`; 2-core AMD EPYC
/// KVM guest, 2026-11-28); docs/performance.md, "The simulator's costs per task", gives
/// the callgrind commands. `alloc_ns`, a pool's free list, is not measured apart: it is
/// the earlier estimate (200 ns of an earlier 1,464 ns per task) scaled by the same
/// ratio. Steal attempts, the spin pause and the wake-up latency are estimates (an
/// uncontended cache-line transfer; one `sched_yield`; a futex wake-up of a sleeping
/// thread), not measured yet; README, "Where the constants come from".
const OPTERON: Costs = Costs {
    node_bandwidth_gb_s: 25.6,
    link_bandwidth_gb_s: 38.4,
    far_link_bandwidth_gb_s: 0.0,
    link_header_bytes: 4,
    link_back_bytes: 8,
    llc_bytes: 6 << 20,
    write_allocate: false,
    write_occupancy: 1.0,
    outstanding_lines: 10,
    line_bytes: 64,
    read_latency_ns: 1288.5e6 / LINES,
    write_latency_ns: 2256.9e6 / LINES,
    clock_ghz: 2.6,
    ops_per_cycle: 1.0,
    kernel_ops: KERNEL_OPS,
    compute_ps_per_byte: 250,
    task_create_ns: 140,
    activate_ns: 90,
    push_ns: 100,
    task_start_ns: 140,
    steal_attempt_ns: 50,
    yield_ns: 200,
    wake_ns: 20_000,
    alloc_ns: 50,
    lean_task_percent: 31,
    replay_task_percent: 8,
    spin_rounds: 64,
    mailbox_capacity: 1024,
};

/// The lines paper 1's latency benchmark touches: a 1 GiB buffer in steps of 64 bytes
/// (section 4.2), so that Tables 1-2's total times divided by this are latencies.
const LINES: f64 = (1u64 << 24) as f64;

impl Costs {
    /// The Opteron-64 of paper 1 section 4.2 (AMD Opteron 6282 SE at 2.6 GHz, one memory
    /// controller per die of 8 cores):
    ///
    /// - controller 25.6 GB/s: two DDR3-1600 channels per die (2 x 12.8 GB/s; the
    ///   Opteron 6200 series has four channels per package of two dies);
    /// - links 38.4 GB/s each way: an estimate from the links of a four-socket G34
    ///   board, HyperTransport 3 at 6.4 GT/s (12.8 GB/s per direction for 16 bits): the
    ///   other die of the package over 1.5 links (19.2 GB/s) and one die of each other
    ///   package over an 8-bit link (3 x 6.4 GB/s), the four 1-hop neighbours of
    ///   paper 1's description;
    /// - link packets: HyperTransport sends a read's 64-byte line after a 4-byte
    ///   response packet, and its request as an 8-byte command one way; a write goes
    ///   as an 8-byte command with its line, acknowledged by a 4-byte one
    ///   (HyperTransport's packet formats). The model charges a read's 4 and 8 bytes to
    ///   every remote line;
    /// - last-level cache 6 MiB per node: the L3 "of 6MiB ... shared by the 8 cores on
    ///   the same die" (paper 1 section 4.2; one die is one node);
    /// - latencies 76.8 ns (read) and 134.5 ns (write): paper 1 Table 1, 1288.5 ms and
    ///   2256.9 ms for 2^24 lines;
    /// - 10 misses in flight per core: an estimate (the line fill buffers of Intel cores
    ///   of the time; AMD does not publish the figure for this core), giving a core
    ///   8.3 GB/s of local reads and 4.8 GB/s of local writes;
    /// - one operation per cycle: an estimate (scalar code, no vector units).
    pub const OPTERON_64: Costs = OPTERON;

    /// The SGI UV2000 (SGI-192) of paper 1 section 4.2 (Intel Xeon E5-4640 at 2.4 GHz,
    /// one controller per CPU of 8 cores):
    ///
    /// - controller 51.2 GB/s: four DDR3-1600 channels per CPU (Intel's data sheet of
    ///   the E5-4640: 51.2 GB/s maximum memory bandwidth);
    /// - links: its two QPI links at 8 GT/s, 16 GB/s per direction each (data sheet),
    ///   reach different nodes: one goes to the other CPU of the blade (the near port),
    ///   the other to the blade's hub and through it over NUMAlink to every other node
    ///   (the far port). The hub itself, which the blade's two CPUs share, is not
    ///   modelled: it exchanges 25.6 GB/s with them and 4 x 6.7 GB/s each way with
    ///   NUMAlink 6 (van der Steen, "Overview of recent supercomputers", SGI UV 2), so
    ///   a far port of 12.8 GB/s, half of it, is the other bound the README measures;
    /// - link packets: QPI moves 80-bit flits with 64 bits of payload each, and its
    ///   16 GB/s counts the payload of every flit; a 64-byte line crosses as a header
    ///   flit and 8 data flits, and the request that asked for it, or the completion
    ///   that acknowledges a written one, is one flit the other way (QPI's packet
    ///   formats: a standard header of one flit, a data packet of a header and 8 data
    ///   flits): 8 bytes each;
    /// - last-level cache 20 MiB per node: the "unified L3 cache of 20MiB, shared among
    ///   all 8 cores of the CPU" (paper 1 section 4.2; one CPU is one node);
    /// - latencies 55.7 ns (read) and 77.9 ns (write): paper 1 Table 2, 934.82 ms and
    ///   1307.4 ms for 2^24 lines;
    /// - 10 misses in flight per core: the 10 line fill buffers of the core (Intel 64
    ///   and IA-32 Architectures Optimization Reference Manual, Sandy Bridge), giving a
    ///   core 11.5 GB/s of local reads and 8.2 GB/s of local writes;
    /// - runtime costs: as [`Costs::OPTERON_64`].
    pub const SGI_UV2000: Costs = Costs {
        node_bandwidth_gb_s: 51.2,
        link_bandwidth_gb_s: 16.0,
        far_link_bandwidth_gb_s: 16.0,
        link_header_bytes: 8,
        link_back_bytes: 8,
        llc_bytes: 20 << 20,
        read_latency_ns: 934.82e6 / LINES,
        write_latency_ns: 1307.4e6 / LINES,
        clock_ghz: 2.4,
        ..OPTERON
    };

    /// The quad-socket quad-core Opteron 8347HE (1.9 GHz, one node per socket) of
    /// Broquedis et al., "Dynamic Task and Data Placement over NUMA Architectures: An
    /// OpenMP Runtime Perspective" (ForestGOMP and MaMI), from that paper's own
    /// measurements:
    ///
    /// - controller 3.635 GB/s: its Table 1, 4 threads per node (16 in all) on local
    ///   memory, 4 x 3635 MB/s;
    /// - links 1.599 GB/s each way: its Table 1, the same 16 threads on local and
    ///   neighbour memory, 4 x 2257 MB/s; two thirds of each node's traffic then comes
    ///   from its two neighbours, so a node's links carried 2/3 x 2257 MB/s of data out
    ///   of it when they limited it, 1.505 GB/s, and with the 4-byte header of each
    ///   64-byte line (HyperTransport, as [`Costs::OPTERON_64`]) 1.599 GB/s of packets;
    /// - last-level cache 2 MiB per node: its section 4.1 (a 2 MB L3 per processor);
    /// - write-allocate: the paper explains why migrating the written vector pays
    ///   more than migrating a read one by "twice as many low-level memory accesses"
    ///   for a write (section 4.4). (The Opteron-64 and SGI models leave it off: their
    ///   validation against paper 1 was made without it.)
    /// - a written byte occupies the controller 1.71 times as long as a read byte:
    ///   the ratio of its Table 3's local write and read latencies (142 ns / 83 ns),
    ///   that paper's own measure of the extra "hardware traffic" of a write. With it
    ///   the model's STREAM gives 7,836 MB/s for copy and scale (its Table 4: 7,851
    ///   and 7,821) and 9,259 MB/s for add and triad (Table 4: 8,335 and 8,357;
    ///   Table 6's phase 1: 9,108); without it, 9,693 and 10,905.
    /// - latencies 83 ns (read) and 142 ns (write): its Table 3;
    /// - clock 1.9 GHz; misses in flight and runtime costs as [`Costs::OPTERON_64`].
    pub const OPTERON_16: Costs = Costs {
        node_bandwidth_gb_s: 3.635,
        link_bandwidth_gb_s: 2.257 * 2.0 / 3.0
            * (OPTERON.line_bytes + OPTERON.link_header_bytes) as f64
            / OPTERON.line_bytes as f64,
        llc_bytes: 2 << 20,
        write_allocate: true,
        write_occupancy: 142.0 / 83.0,
        read_latency_ns: 83.0,
        write_latency_ns: 142.0,
        clock_ghz: 1.9,
        ..OPTERON
    };

    /// The machine model for a topology: the preset's machine when the topology is
    /// `sgi-uv2000` or `opteron-16`, the Opteron-64 otherwise.
    pub fn for_topology(name: &str) -> Costs {
        if name.starts_with("sgi-uv2000") {
            Costs::SGI_UV2000
        } else if name.starts_with("opteron-16") {
            Costs::OPTERON_16
        } else {
            Costs::OPTERON_64
        }
    }

    /// What one core draws from memory at `latency_ns` per line, in GB/s: its misses
    /// in flight times the line size over the latency (Little's law).
    pub fn core_bandwidth_gb_s(&self, latency_ns: f64) -> f64 {
        f64::from(self.outstanding_lines) * f64::from(self.line_bytes) / latency_ns
    }

    /// The runtime cost `ns` (`task_create_ns`, `activate_ns` or `task_start_ns`) of a
    /// task taking `path`.
    pub fn per_task_ns(&self, ns: u64, path: TaskPath) -> u64 {
        match path {
            TaskPath::Full => ns,
            TaskPath::Lean => ns * self.lean_task_percent / 100,
            TaskPath::Replayed => ns * self.replay_task_percent / 100,
        }
    }

    /// Compute time, in ns, of a task named `name` declaring `bytes` (without a cost
    /// hint).
    pub fn compute_ns(&self, name: &str, bytes: u64) -> u64 {
        match self.kernel_ops.iter().find(|k| k.name == name) {
            Some(k) => {
                let ns_per_op = 1.0 / (self.clock_ghz * self.ops_per_cycle);
                (bytes as f64 * k.ops_per_byte * ns_per_op).round() as u64
            }
            None => bytes.saturating_mul(self.compute_ps_per_byte) / 1000,
        }
    }

    /// Runtime costs all zero (creation, activation, pushes, steals, wake-ups,
    /// allocation), keeping the memory and compute model: what remains is the time the
    /// tasks themselves take, so a run's makespan can be compared with its critical
    /// path.
    pub fn without_runtime_overhead(self) -> Costs {
        Costs {
            task_create_ns: 0,
            activate_ns: 0,
            push_ns: 0,
            task_start_ns: 0,
            steal_attempt_ns: 0,
            yield_ns: 0,
            wake_ns: 0,
            alloc_ns: 0,
            ..self
        }
    }
}

impl Default for Costs {
    fn default() -> Self {
        Costs::OPTERON_64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_are_paper_1_tables_over_the_lines_touched() {
        let o = Costs::OPTERON_64;
        assert!(
            (o.read_latency_ns - 76.80).abs() < 0.01,
            "{}",
            o.read_latency_ns
        );
        assert!((o.core_bandwidth_gb_s(o.read_latency_ns) - 8.33).abs() < 0.01);
        let s = Costs::SGI_UV2000;
        assert!(
            (s.read_latency_ns - 55.72).abs() < 0.01,
            "{}",
            s.read_latency_ns
        );
        assert!((s.core_bandwidth_gb_s(s.read_latency_ns) - 11.49).abs() < 0.01);
    }

    #[test]
    fn named_kernels_take_their_arithmetic_others_the_default() {
        let o = Costs::OPTERON_64;
        // kmeans: 351/84 operations per byte at 2.6 per ns.
        assert_eq!(o.compute_ns("kmeans", 84_000), 135_000);
        assert_eq!(o.compute_ns("something", 1000), 250);
    }
}
