//! Engines: what carries the policies' decisions out and supplies time.
//!
//! The runtime (data, dependences, versions, policies, metrics) is the same whatever the
//! engine; an engine only decides *when* and *on which worker* each ready task runs, by
//! carrying out the [`sched`](crate::sched) policies, and measures the run's duration.
//!
//! - `threads` (the default): one pinned OS thread per worker, real memory, wall-clock
//!   time.
//! - The simulator (crate `locus-sim`) implements the same traits: a deterministic
//!   discrete-event model of a machine, in virtual time.
//!
//! An engine implements [`Engine`]; a runtime builder receives an [`EngineFactory`] and
//! calls it once with the [`EngineSetup`]. Its workers implement [`Executor`] and drive
//! tasks with [`start`] and [`finish`] (or [`execute`], both at once).

pub(crate) mod threads;

use std::sync::Arc;

use locus_mem::pool::{PoolConfig, Pools};
use locus_topo::{CpuId, Topology};

use crate::config::StealKind;
use crate::error::Error;
pub use crate::graph::{
    describe_ready, execute, finish, start, Bodies, CurrentExecutor, EngineEvent, Executor,
    ReadyDescription, Started, Task, TaskRef,
};
use crate::observe::Observer;
use crate::sched::ReadyPolicy;

/// What an engine is started with.
pub struct EngineSetup {
    /// The topology (laid over the host's CPUs for `threads`).
    pub topology: Topology,
    /// The CPU of each worker; one worker per entry.
    pub worker_cpu: Vec<CpuId>,
    /// Node of each worker.
    pub worker_node: Vec<usize>,
    /// Where ready tasks go.
    pub ready_policy: ReadyPolicy,
    /// Whom idle workers steal from.
    pub steal: StealKind,
    /// Whether a thief tries the last worker it stole from before its plan's order
    /// (OpenStream's refinement).
    pub last_victim_first: bool,
    /// Whether a steal takes about half of the victim's deque at once (the `threads`
    /// engine; the simulator steals one task at a time).
    pub steal_half: bool,
    /// The per-node pools to create.
    pub pools: PoolConfig,
    /// Who sees every task run, if anyone ([`crate::observe`]). The engine calls its
    /// [`attach`](Observer::attach) once its workers are known and fails to start if
    /// that fails.
    pub observer: Option<Arc<dyn Observer>>,
}

/// Starts an engine.
pub trait EngineFactory {
    /// Adapts the topology the runtime was given to the engine: `threads` lays a
    /// synthetic topology over the host's CPUs (virtual nodes); a simulator keeps it.
    fn prepare_topology(&self, topology: Topology) -> Result<Topology, Error> {
        Ok(topology)
    }

    /// Starts the engine's workers for `setup`.
    fn start(self: Box<Self>, setup: EngineSetup) -> Result<Box<dyn Engine>, Error>;
}

/// A started engine. Dropping it shuts its workers down.
pub trait Engine: Send + Sync {
    /// `threads` or `sim`, as shown in reports.
    fn name(&self) -> &'static str;

    /// Node of each worker.
    fn worker_node(&self) -> &[usize];

    /// The per-node pools buffers come from.
    fn pools(&self) -> &Arc<Pools>;

    /// Whether task bodies are skipped (a simulation whose buffers hold no memory);
    /// programs then create data empty and cannot fetch results.
    fn skips_bodies(&self) -> bool {
        false
    }

    /// Runs `root` (the control program, ready, to be run by worker 0) and every task
    /// it spawns, and returns once all have finished, with the run's duration in seconds
    /// (wall-clock, or simulated).
    fn run(&self, root: TaskRef) -> f64;
}

/// The default engine: one pinned OS thread per worker.
#[derive(Clone, Copy, Debug, Default)]
pub struct Threads;

impl EngineFactory for Threads {
    fn prepare_topology(&self, topology: Topology) -> Result<Topology, Error> {
        if topology.num_cpus() > 0 && topology.os_cpu(CpuId(0)).is_none() {
            Ok(topology.laid_over_host()?)
        } else {
            Ok(topology)
        }
    }

    fn start(self: Box<Self>, setup: EngineSetup) -> Result<Box<dyn Engine>, Error> {
        let pools = Pools::new(setup.pools.clone())
            .map_err(|e| Error::Config(format!("cannot create the memory pools: {e}")))?;
        let os_cpu = setup
            .worker_cpu
            .iter()
            .map(|&c| setup.topology.os_cpu(c))
            .collect();
        Ok(Box::new(threads::ThreadsEngine::start(
            setup, os_cpu, pools,
        )?))
    }
}
