//! Tasks, scopes and dependences: submission binds each declared access to a version,
//! completion publishes the written versions and activates the tasks that waited for
//! them.
//!
//! This module carries no scheduling decision and knows no thread: it reaches the engine
//! that runs it through the [`Executor`] trait.

mod accesses;
mod bind;
mod body;
mod completion;
mod domain;
mod exec;
pub(crate) mod free_list;
mod hints;
mod migrate;
mod prepare;
mod record;
mod release;
mod replay;
mod run;
mod scope;
mod submit;
mod task;
mod task_ref;
mod task_state;
mod team;
mod validate;

pub use hints::{Affinity, AffinityTarget};
pub use record::Recorder;
pub(crate) use replay::ReplayObserver;
pub use replay::{Graph, Iteration, ReplayPlacement};
pub use scope::{Scope, TaskBuilder, TaskCtx};
pub use team::{Attach, Team};
pub(crate) use team::{Owned, TeamInner};

pub(crate) use accesses::policy_access_infos;
pub use accesses::MemoryKey;
pub(crate) use body::{drop_payload, panic_message};
pub(crate) use exec::{current_executor, finish_holding, Completion};
pub use exec::{finish, start, Bodies, CurrentExecutor, Executor, Started};
pub(crate) use prepare::{oom, Backups};
pub(crate) use run::{Finished, RunRef, RunState};
pub use task::{Activated, EngineEvent, ReadyDescription, Task, TaskRef};
pub(crate) use task::{BodyFor, Job, Waiting};
