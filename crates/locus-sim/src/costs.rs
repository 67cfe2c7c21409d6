//! Every constant of the machine model, in one place, each with where its value comes
//! from (the cost model itself is described in this crate's `README.md`).
//!
//! The remote-access factors are not here: they are the topology's `read_cost` and
//! `write_cost` (paper 1 Tables 1-2 for the `opteron-64` and `sgi-uv2000` presets).

/// Parameters of the modelled machine and runtime. All times are integer nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    /// Bandwidth of one node's memory controller, in GB/s (= bytes per ns), shared by
    /// the tasks accessing that node at the same time.
    pub node_bandwidth_gb_s: f64,
    /// Most bandwidth one core draws from a controller, in GB/s: a single task cannot
    /// saturate a controller alone.
    pub core_bandwidth_gb_s: f64,
    /// Compute time of a task without a cost hint, in picoseconds per byte accessed.
    pub compute_ps_per_byte: u64,
    /// Submitting one task from a body (the control program creates tasks over time).
    pub task_create_ns: u64,
    /// Deciding where an activated task goes and queueing it locally.
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
    /// Sweeps over the victims an idle worker makes before it sleeps (the `threads`
    /// engine's `SPIN_ROUNDS`).
    pub spin_rounds: u32,
    /// Capacity of a worker's mailbox of pushed tasks (the `threads` engine's
    /// `MAILBOX_CAPACITY`).
    pub mailbox_capacity: usize,
}

/// Runtime costs. Task creation, activation, start and allocation add up to 1450 ns,
/// matching `cargo run --release -p locus-bench --example overhead -- 1x1 dsa-base` on
/// a 2-core, one-node machine shared with other builds: 1464 ns per task
/// for one worker, which pays every runtime cost of a task and nothing else; the split
/// among the four is an estimate. Steal attempts, the spin pause and the wake-up latency
/// are estimates (an uncontended cache-line transfer; one `sched_yield`; a futex wake-up
/// of a sleeping thread), not measured yet; README, "Where the constants come from".
const MEASURED: Costs = Costs {
    node_bandwidth_gb_s: 25.6,
    core_bandwidth_gb_s: 8.3,
    compute_ps_per_byte: 250,
    task_create_ns: 600,
    activate_ns: 150,
    push_ns: 100,
    task_start_ns: 500,
    steal_attempt_ns: 50,
    yield_ns: 200,
    wake_ns: 20_000,
    alloc_ns: 200,
    spin_rounds: 64,
    mailbox_capacity: 1024,
};

impl Costs {
    /// The Opteron-64 of paper 1 section 4.2 (AMD Opteron 6282 SE, one memory controller
    /// per die of 8 cores):
    ///
    /// - node bandwidth 25.6 GB/s: two DDR3-1600 channels per die (2 x 12.8 GB/s, the
    ///   processor's data sheet), the peak a controller can deliver;
    /// - core bandwidth 8.3 GB/s: 10 outstanding cache-line misses per core (the line
    ///   fill buffers) x 64 B over the 77 ns local access latency implied by paper 1
    ///   Table 1 (1288.5 ms for 2^24 lines);
    /// - compute without a hint: 250 ps per byte (about 5 cycles per `f64` at 2.6 GHz,
    ///   a three-point stencil's arithmetic; an estimate);
    /// - runtime costs: `MEASURED`.
    pub const OPTERON_64: Costs = MEASURED;

    /// The SGI UV2000 (SGI-192) of paper 1 section 4.2 (Intel Xeon E5-4640, one
    /// controller per CPU of 8 cores):
    ///
    /// - node bandwidth 51.2 GB/s: four DDR3-1600 channels per CPU (data sheet);
    /// - core bandwidth 11.5 GB/s: 10 line fill buffers x 64 B over the 55.7 ns local
    ///   latency implied by paper 1 Table 2 (934.82 ms for 2^24 lines);
    /// - runtime costs: as [`Costs::OPTERON_64`].
    pub const SGI_UV2000: Costs = Costs {
        node_bandwidth_gb_s: 51.2,
        core_bandwidth_gb_s: 11.5,
        ..MEASURED
    };

    /// The machine model for a topology: the preset's machine when the topology is
    /// `sgi-uv2000`, the Opteron-64 otherwise.
    pub fn for_topology(name: &str) -> Costs {
        if name.starts_with("sgi-uv2000") {
            Costs::SGI_UV2000
        } else {
            Costs::OPTERON_64
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
