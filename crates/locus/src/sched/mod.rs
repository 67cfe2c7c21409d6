//! Pure scheduling policies: events and a read-only view in, decisions
//! out. Nothing here touches threads, atomics, clocks or the operating system, so the
//! `threads` engine and the simulator drive the same code.
//!
//! - [`steal`]: the order in which an idle worker tries its victims.
//! - [`migrate`]: whether a task migrates remote shared data before it runs.
//! - [`place`]: where a task that just became ready goes.
//! - [`push`]: enhanced work-pushing (paper 1 Algorithm 1).
//! - home-based scheduling (paper 4 section 3.1) is part of [`place`]; its steal
//!   vicinities are part of [`steal`].

pub mod migrate;
pub mod place;
pub mod push;
pub mod steal;

pub use place::{Domain, HomeRegions, KeepReason, LoadView, Placement, ReadyPolicy, ReadyTask};
pub use push::{AccessInfo, AccessInfos, Heuristic, PushDecision, PushSettings};
pub use steal::{vicinities, StealPlan};
