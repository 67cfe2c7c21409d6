//! Locus: a NUMA-aware task-parallel dataflow runtime.
//!
//! Programs describe tasks and the data each task reads and writes; Locus decides where
//! every task runs and where every buffer lives. Data are versioned: every task that
//! writes a datum gets a fresh, task-private version whose buffer the runtime places
//! (on the submitter's node with immediate allocation, on the writer's own node with
//! deferred allocation), and readers bind to the version current when they were
//! submitted. A task body receives views of exactly what it declared (`&[T]` for reads,
//! `&mut [T]` for writes), so safe code cannot race on data.
//!
//! Data may also be *shared* (the classic SHM model): one buffer per datum, placed when
//! it is created by a `RegionPolicy` (interleaved page by page, bound to a node, one
//! block per node, or first touch) and updated in place. Under `shm-base` every datum
//! is shared and interleaved; [`Runtime::shared`] makes one under any configuration.
//! Declarations and views are the same; a writer of shared data also waits for the
//! previous writer and for the readers of the previous contents, and the metrics count
//! its bytes page by page, by the node of each page.
//!
//! A datum can be cut into parts ([`Runtime::partition`]: blocks, ranges, or the tiles
//! of a row-major matrix), each a [`Data`] handle of its own, with dependences by
//! overlap; accesses may be dynamic (`Option`, `Vec` or arrays of one access type); and
//! [`Data::reduce`] declares a contribution to a reduction, accumulated in a private copy
//! per node without waiting (`docs/guide.md` states the semantics of each).
//!
//! # Documentation
//!
//! Beside this API documentation, the repository's `docs/` directory has
//! `docs/guide.md` (the programming model, choosing a configuration, every field of
//! the report, traces, the simulator), `docs/architecture.md` (concepts, crates and
//! modules, the engine seam, a task's path from `spawn` to a worker and back) and
//! `docs/papers.md` (the papers this crate cites as "paper 1" to "paper 4", and which
//! module implements which of their mechanisms).
//!
//! # Example
//!
//! ```
//! use locus::{Config, Runtime, Topology};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Two virtual nodes of one CPU each, laid over the host's CPUs.
//! let rt = Runtime::builder()
//!     .topology(Topology::from_spec("2x1")?)
//!     .config(Config::Dfa)
//!     .build()?;
//! let input = rt.data_from("input", &[1u64, 2, 3, 4])?;
//! let doubled = rt.data::<u64>("doubled", 4);
//! let total = rt.data::<u64>("total", 1);
//!
//! let finished = rt.run(|s| -> Result<(), locus::Error> {
//!     s.spawn("double", (input.read(), doubled.write()), |_, (x, y)| {
//!         for (o, i) in y.iter_mut().zip(x) {
//!             *o = 2 * i;
//!         }
//!     })?;
//!     s.spawn("sum", (doubled.read(), total.write()), |_, (y, t)| {
//!         t[0] = y.iter().sum();
//!     })
//! })?;
//! finished.value?;
//!
//! assert_eq!(rt.fetch(&doubled)?, vec![2, 4, 6, 8]);
//! assert_eq!(rt.fetch(&total)?, vec![20]);
//! // Every byte a task touched is counted, by node of the task and node of the data.
//! let loc = &finished.report.locality;
//! assert_eq!(loc.read_local_bytes + loc.read_remote_bytes, 32 + 32);
//! // With deferred allocation every write is local.
//! assert_eq!(loc.write_remote_bytes, 0);
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! - [`data`]: handles, versions, access declarations and views.
//! - `graph` (private): scopes, submission, dependences, execution of a task; its
//!   user-facing types ([`Scope`], [`TaskBuilder`], [`TaskCtx`], [`Affinity`]) are
//!   re-exported here.
//! - [`sched`]: pure scheduling policies (victim order, placement of ready tasks).
//! - [`engine`]: the engine contract, the seam between the runtime and the engines
//!   that run it (the default `threads` engine: pinned workers, deques, mailboxes,
//!   sleep; the simulator of crate `locus-sim`). Programs never need it.
//! - [`metrics`]: per-worker counters and the [`Report`].
//! - [`observe`]: the [`Observer`](observe::Observer) trait engines call as tasks run,
//!   and the Chrome trace ([`RuntimeBuilder::trace`]; open the file in the Perfetto UI,
//!   <https://ui.perfetto.dev>, "Open trace file").

// Without feature `engine-seam` the pages name the seam's modules without linking them.
#![cfg_attr(not(feature = "engine-seam"), allow(rustdoc::private_intra_doc_links))]

#[cfg(not(loom))]
mod config;
#[cfg(not(loom))]
pub mod data;
// The engine seam and the scheduler's internals: public for the crates that run the
// mechanism themselves (the simulator, the command line's reports), behind feature
// `engine-seam`; programs never need them.
#[cfg(all(not(loom), feature = "engine-seam"))]
pub mod engine;
#[cfg(all(not(loom), not(feature = "engine-seam")))]
#[allow(dead_code, unused_imports)]
mod engine;
#[cfg(not(loom))]
mod error;
#[cfg(not(loom))]
mod graph;
#[cfg(not(loom))]
pub mod metrics;
#[cfg(not(loom))]
pub mod observe;
#[cfg(not(loom))]
mod runtime;
#[cfg(all(not(loom), feature = "engine-seam"))]
pub mod sched;
#[cfg(all(not(loom), not(feature = "engine-seam")))]
#[allow(dead_code, unused_imports)]
mod sched;
mod sync;

#[cfg(not(loom))]
pub use {
    config::{AllocMode, Config, Migration, ProcBind, StealKind},
    data::{AccessList, Data, Element, Partition, Parts, Read, ReadWrite, Reduce, Weak, Write},
    error::{Error, RunError, TaskFailure},
    graph::{
        Affinity, AffinityTarget, Attach, Graph, Iteration, Recorder, ReplayPlacement, Scope,
        TaskBuilder, TaskCtx, Team,
    },
    metrics::Report,
    runtime::{
        Finished, Migrated, MigrationCounts, Runtime, RuntimeBuilder, DEFAULT_WINDOW_MIN,
        DEFAULT_WINDOW_PER_WORKER, DEFAULT_WORKER_STACK, MAX_WORKERS, MIN_WORKER_STACK,
    },
};

// Re-exported from the crates that define them, whose pages hold their documentation
// (inlined here, their intra-doc links would not resolve).
#[cfg(not(loom))]
#[doc(no_inline)]
pub use {
    locus_mem::region::RegionPolicy,
    locus_topo::{CpuId, NodeId, TopoError, Topology},
};

// Under `RUSTFLAGS="--cfg loom"` the crate is only its synchronisation protocols, built on
// loom's types (module `sync`): the very files of the runtime's modules, compiled here on
// their own so that the models of `tests/loom.rs` can drive them. Nothing else of the
// runtime (deques, thread-locals, pools) is loom-aware.
#[cfg(loom)]
#[doc(hidden)]
#[path = "graph/completion.rs"]
pub mod completion;
#[cfg(loom)]
#[doc(hidden)]
#[path = "data/counts.rs"]
pub mod counts;
#[cfg(loom)]
#[doc(hidden)]
#[path = "engine/threads/sleep.rs"]
pub mod sleep;
#[cfg(loom)]
#[doc(hidden)]
#[path = "graph/task_state.rs"]
pub mod task_state;
