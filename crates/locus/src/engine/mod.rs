//! The engine contract: what carries the policies' decisions out and supplies time.
//!
//! Programs never need this module: it is the seam between the runtime and the engines
//! that run it, and what a new engine implements.
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
//! # The contract
//!
//! An engine implements [`Engine`] (an `unsafe trait`: the runtime's soundness rests on
//! its [`run`](Engine::run) returning only once every task of the run has finished); a
//! runtime builder receives an [`EngineFactory`] and calls it once with the
//! [`EngineSetup`]. The engine's workers implement [`Executor`], are installed as their
//! thread's executor with [`CurrentExecutor::enter`] while they run tasks, and:
//!
//! 1. receive the run's root task in [`Engine::run`], ready, for worker 0;
//! 2. receive every other task through [`Executor::activate`] when it becomes ready, as
//!    an [`Activated`] the placement policy may inspect
//!    ([`Activated::describe`]) before the engine queues [`Activated::into_task`];
//! 3. run a ready task with [`start`] (its body, or a skipped body), then complete it
//!    with [`finish`], on the same worker and thread, which activates its successors;
//! 4. record what they decided on the task ([`Task::record`]), or fail the run with a
//!    placement they cannot carry out ([`Task::fail_run`]).
//!
//! 5. carry the policies' decisions out with the shared [`Mechanism`]: an engine
//!    implements [`mechanism::Queues`] over its worker queues, and the mechanism routes
//!    every activated task ([`Mechanism::activate`]), runs the find-work chain
//!    ([`Mechanism::find_work`]) and chooses whom to wake ([`Mechanism::wake_for`]),
//!    so that two engines make the same decisions from the same queues.
//!
//! The runtime checks the contract after every run: an engine whose `run` returned
//! with a task unfinished makes the process abort with a message, since the run's root
//! borrows the caller's stack.
//!
//! Safe code cannot implement an engine without that promise:
//!
//! ```compile_fail
//! use std::sync::Arc;
//! use locus::engine::{Engine, TaskRef};
//! use locus_mem::pool::Pools;
//!
//! struct Early(Arc<Pools>);
//! impl Engine for Early {
//!     fn name(&self) -> &'static str { "early" }
//!     fn worker_node(&self) -> &[usize] { &[0] }
//!     fn pools(&self) -> &Arc<Pools> { &self.0 }
//!     fn run(&self, _root: TaskRef) -> f64 { 0.0 } // returns before the root ran
//! }
//! ```
//!
//! and the runtime's internals are not part of the contract: running a task outside
//! an engine's worker, or reading a task's declarations once it may be queued, are not
//! possible.
//!
//! ```compile_fail
//! use locus::engine::execute;
//! ```
//!
//! ```compile_fail
//! use locus::engine::describe_ready;
//! ```

pub mod mechanism;
mod stack;
pub(crate) mod threads;

use std::sync::Arc;

use locus_mem::pool::{PoolConfig, Pools};
use locus_topo::{CpuId, Topology};

use crate::config::StealKind;
use crate::error::Error;
pub use crate::graph::{
    finish, start, Activated, Bodies, CurrentExecutor, EngineEvent, Executor, MemoryKey,
    ReadyDescription, Started, Task, TaskRef,
};
use crate::observe::Observer;
use crate::sched::ReadyPolicy;
pub use mechanism::Mechanism;
pub use stack::StackGuard;

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
    /// Whether a steal takes about half of the victim's deque at once (crossbeam's
    /// batch steal, modelled as such by the simulator).
    pub steal_half: bool,
    /// The per-node pools to create.
    pub pools: PoolConfig,
    /// Who sees every task run, if anyone ([`crate::observe`]). The engine calls its
    /// [`attach`](Observer::attach) once its workers are known and fails to start if
    /// that fails.
    pub observer: Option<Arc<dyn Observer>>,
    /// Bytes of stack of each worker thread (an engine that runs bodies on its own
    /// threads), [`RuntimeBuilder::worker_stack_size`](crate::RuntimeBuilder::worker_stack_size).
    pub worker_stack_bytes: usize,
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
///
/// # Safety
///
/// [`run`](Engine::run) must not return before every task of the run has finished:
/// the root it is given and every task activated through its workers' [`Executor`]s
/// must have gone through [`start`] and then [`finish`] (a `start` that returned `None`
/// counts as nothing: the task is run by whoever got its job). The root's body borrows
/// the stack of the thread that called [`Runtime::run`](crate::Runtime::run), so an
/// engine that returns early, or keeps a task to run later, would let that body use a
/// dead stack frame. The runtime checks this after every run and aborts the process if
/// it does not hold, but the check comes after the fact: implementing this trait is the
/// promise.
pub unsafe trait Engine: Send + Sync {
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
    /// it spawns, and returns once all have finished (the trait's safety contract),
    /// with the run's duration in seconds (wall-clock, or simulated).
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
