//! Tasks, scopes and dependences: submission binds each declared access to a version,
//! completion publishes the written versions and activates the tasks that waited for
//! them.
//!
//! This module carries no scheduling decision and knows no thread: it reaches the engine
//! that runs it through the [`Executor`] trait.

mod body;
mod completion;
mod domain;
mod exec;
mod free_list;
mod hints;
mod record;
mod replay;
mod run;
mod scope;
mod task;
mod task_ref;
mod task_state;
mod team;

pub use hints::{Affinity, AffinityTarget};
pub use record::Recorder;
pub(crate) use replay::ReplayObserver;
pub use replay::{Graph, Iteration, ReplayPlacement};
pub use scope::{Scope, TaskBuilder, TaskCtx};
pub use team::{Attach, Team};
pub(crate) use team::{Owned, TeamInner};

pub(crate) use exec::{
    current_executor, drop_payload, panic_message, policy_access_infos, Completion,
};
pub use exec::{finish, start, Bodies, CurrentExecutor, Executor, MemoryKey, Started};
pub(crate) use run::{RunRef, RunState};
pub use task::{Activated, EngineEvent, ReadyDescription, Task, TaskRef};
pub(crate) use task::{BodyFor, Job, Waiting};
