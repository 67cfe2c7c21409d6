//! Errors of the runtime: building it, submitting tasks, running a program.

use crate::metrics::Report;

/// Everything that can go wrong when building a runtime, submitting a task or running a
/// program. Misuse of the API is reported here, never as undefined behaviour.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An invalid or unsupported configuration or setting.
    #[error("{0}")]
    Config(String),
    /// The topology could not be read or laid over the host.
    #[error("topology: {0}")]
    Topology(#[from] locus_topo::TopoError),
    /// A worker thread could not be started.
    #[error("cannot start worker {worker}: {message}")]
    Startup {
        /// The worker index.
        worker: usize,
        /// What the operating system said.
        message: String,
    },
    /// A task declared its accesses in a way the runtime cannot honour.
    #[error("task `{task}`: {message}")]
    Declaration {
        /// The task's name.
        task: String,
        /// What is wrong with the declaration.
        message: String,
    },
    /// A data handle was used with a runtime that did not create it.
    #[error("task `{task}`: data handle `{data}` belongs to another runtime")]
    ForeignData {
        /// The task's name (or the operation, outside tasks).
        task: String,
        /// The handle's name.
        data: String,
    },
    /// A task body panicked; the run was drained and every buffer freed.
    #[error("task `{task}` panicked: {message}")]
    TaskPanicked {
        /// The task's name.
        task: String,
        /// The panic message.
        message: String,
    },
    /// A task body reported a failure ([`TaskFailure`]: a C body that returned
    /// non-zero); the run was drained and every buffer freed, as after a panic.
    #[error("task `{task}` failed: {message}")]
    TaskFailed {
        /// The task's name.
        task: String,
        /// What the body reported.
        message: String,
    },
    /// Tasks waiting for their children nested too deeply on a worker's stack: a
    /// waiting task runs others on its worker's stack, and the next would have started
    /// with less than a quarter of the stack free (up to 1 MiB); it was drained unrun.
    #[error(
        "task `{task}`: waits nest too deeply on worker {worker}, whose stack of \
         {stack_bytes} bytes is nearly full (each task waiting for its children runs others \
         on its stack); give the workers more with RuntimeBuilder::worker_stack_size"
    )]
    StackExhausted {
        /// The task that would have started.
        task: String,
        /// The worker.
        worker: usize,
        /// The size of the worker's stack.
        stack_bytes: usize,
    },
    /// An observer ([`RuntimeBuilder::observer`](crate::RuntimeBuilder::observer))
    /// panicked in one of its calls; the run then drained without running more bodies.
    #[error("the observer panicked in `{call}`: {message}")]
    ObserverPanicked {
        /// The observer's method.
        call: &'static str,
        /// The panic message.
        message: String,
    },
    /// A buffer could not be allocated on any node.
    #[error("task `{task}`: cannot allocate {bytes} bytes: {message}")]
    OutOfMemory {
        /// The task's name.
        task: String,
        /// The requested size.
        bytes: usize,
        /// The allocator's explanation.
        message: String,
    },
    /// A datum's size in bytes (elements times element size) overflows the address
    /// space.
    #[error("datum `{data}`: {len} elements of {elem_size} bytes overflow the address space")]
    Size {
        /// The datum's name.
        data: String,
        /// The number of elements asked for.
        len: usize,
        /// The size of one element in bytes.
        elem_size: usize,
    },
    /// A shared datum was being written in place by a task that panicked: its contents
    /// may be partly written. Reads are refused until a task writes it whole
    /// ([`Data::write`](crate::Data::write)). (A versioned datum is never poisoned: it
    /// keeps its last complete version, [`Runtime::run`](crate::Runtime::run).)
    #[error("`{data}` may be partly written: task `{task}` panicked while writing it in place; write it whole before reading it")]
    Poisoned {
        /// The datum.
        data: String,
        /// The task that panicked.
        task: String,
    },
    /// The run has already failed; the task was not submitted.
    #[error("the run has failed; task `{task}` was not submitted")]
    RunFailed {
        /// The task that was refused.
        task: String,
    },
    /// `op` (`run`, `fetch`, or a query of where a datum lies) was called from a thread
    /// of its own while a run of the same runtime is in progress. It is refused rather
    /// than waiting for the run to end: a task of that run may be waiting for the
    /// calling thread (a helper thread its body joins), and the wait would never end
    /// (docs/guide.md, "Runs and threads").
    #[error(
        "{op}: a run of this runtime is in progress on another thread; {op} is refused \
         rather than waiting for it, since a task of that run may be waiting for this \
         thread: call it once the run has returned"
    )]
    RunInProgress {
        /// The refused call.
        op: String,
    },
    /// A recorded graph cannot be replayed: what it depends on changed since it was
    /// recorded (a datum freed, partitioned, written outside the graph, poisoned), or
    /// an earlier replay failed ([`Runtime::replay`](crate::Runtime::replay)).
    #[error("replay of graph `{graph}`: {message}")]
    Replay {
        /// The graph's name.
        graph: String,
        /// Why it cannot be replayed.
        message: String,
    },
    /// `Runtime::run` was called from inside a task.
    #[error("Runtime::run cannot be called from inside a task; spawn into the task's scope")]
    NestedRun,
}

/// A task body's reported failure: a body that unwinds with this payload
/// (`std::panic::resume_unwind(Box::new(TaskFailure(message)))`, which prints nothing)
/// fails its run with [`Error::TaskFailed`] instead of [`Error::TaskPanicked`]; its
/// outputs are treated as a panicking task's. Bindings to other languages use it for
/// bodies that return an error code.
#[derive(Clone, Debug)]
pub struct TaskFailure(pub String);

/// A failed run: the first error, and the report of what ran before and while draining.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{error}")]
pub struct RunError {
    /// The first error the run met.
    pub error: Error,
    /// The metrics of the run up to its end.
    pub report: Box<Report>,
}

impl From<Error> for RunError {
    /// An error met before any run (building the runtime, making data), with an empty
    /// report.
    fn from(error: Error) -> Self {
        RunError {
            error,
            report: Box::default(),
        }
    }
}

impl RunError {
    /// The first error the run met.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The report of the failed run.
    pub fn report(&self) -> &Report {
        &self.report
    }
}
