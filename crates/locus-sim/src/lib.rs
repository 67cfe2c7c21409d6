//! `sim`: a deterministic discrete-event engine for Locus.
//!
//! The simulator runs the same program, dependence tracking, versions, scheduling
//! policies and metrics as the `threads` engine, on a modelled machine of any topology
//! (the 192 cores of `sgi-uv2000` on a laptop), in virtual time. Task bodies are either
//! executed (small sizes: results verify as on `threads`) or skipped (paper sizes).
//! The cost model is described in this crate's `README.md`; its constants are in
//! [`Costs`]. "Paper 1" and the other papers cited in this crate are listed in
//! `docs/papers.md` of the repository.
//!
//! # Example
//!
//! ```
//! use locus::{Config, Runtime, Topology};
//! use locus_sim::Sim;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::builder()
//!     .topology(Topology::from_spec("4x2")?)
//!     .config(Config::DsaOpt)
//!     .engine(Sim::new().seed(7))
//!     .build()?;
//! let a = rt.data_from("a", &[1u64; 4096])?;
//! let b = rt.data::<u64>("b", 4096);
//! let finished = rt.run(|s| {
//!     s.spawn("double", (a.read(), b.write()), |_, (x, y)| {
//!         for (o, i) in y.iter_mut().zip(x) {
//!             *o = 2 * i;
//!         }
//!     })
//! })?;
//! finished.value?;
//! assert_eq!(rt.fetch(&b)?[0], 2);
//! assert_eq!(finished.report.engine, "sim");
//! assert!(finished.report.wall_s > 0.0); // simulated seconds
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! - [`Sim`] (`builder`): the settings, and the [`EngineFactory`](locus::engine::EngineFactory).
//! - `engine`: the event loop, the workers' states, the executor seam.
//! - `queues`: the workers' queues, modelled, driven by the shared
//!   [`Mechanism`](locus::engine::Mechanism) as on `threads`.
//! - `memory`: memory controllers and their nodes' links, shared max-min fairly by
//!   the tasks using them, each task's stream limited by its core's misses in flight.
//! - `cache`: each node's last-level cache, which spares a task's reads of memory
//!   its node touched recently the trip to memory.
//! - `events`: the event queue, ordered by `(time, sequence)`.
//! - [`costs`]: every constant of the model, with its source.
//! - [`probe`]: the simulator's counters and per-task spans.
//!
//! Traces: [`Sim::trace`] writes the Chrome trace of every run through the runtime's
//! [`locus::observe::TraceRecorder`], so a simulated trace has the layout and the
//! arguments of a `threads` one (the cost model's per-task figures are in
//! [`probe`]'s spans); an observer installed on the
//! runtime ([`RuntimeBuilder::observer`](locus::RuntimeBuilder::observer) or
//! [`RuntimeBuilder::trace`](locus::RuntimeBuilder::trace)) sees every simulated task
//! too, in simulated nanoseconds.

mod builder;
mod cache;
pub mod costs;
mod engine;
mod events;
mod memory;
pub mod probe;
mod queues;

pub use builder::{BodiesChoice, Sim, DEFAULT_SKIP_ABOVE_BYTES};
pub use costs::Costs;
pub use probe::{Probe, Span, Summary};
