//! Scopes: where tasks are spawned, by the control program and by tasks themselves.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

use super::exec::{current_executor, submit, TaskBody};
use super::hints::{Affinity, Hints};
use super::run::RunState;
use crate::data::{AccessList, Data, DataInner, Element};
use crate::error::Error;

/// Where tasks are submitted. The root closure of [`Runtime::run`](crate::Runtime::run)
/// gets the run's scope; a task body gets its nested scope through [`TaskCtx::scope`].
///
/// Dependences follow submission order: a task reading a datum binds to the version
/// written by the last task submitted before it that writes the datum. Tasks spawned from
/// inside another task are ordered after everything submitted so far in the run, so a
/// parallel control program should give each creating task its own data.
pub struct Scope {
    run: Arc<RunState>,
    /// Whether submissions wait for room in the run's window: only the run's root does
    /// (see [`RuntimeBuilder::window`](crate::RuntimeBuilder::window)).
    throttled: bool,
    /// A scope is only usable on the worker thread it was handed to.
    _not_send: PhantomData<*const ()>,
}

impl Scope {
    pub(crate) fn new(run: Arc<RunState>, throttled: bool) -> Self {
        Scope {
            run,
            throttled,
            _not_send: PhantomData,
        }
    }

    /// Starts a task declaring `accesses`; add hints, then [`spawn`](TaskBuilder::spawn).
    pub fn task<L: AccessList>(
        &self,
        name: impl Into<Cow<'static, str>>,
        accesses: L,
    ) -> TaskBuilder<'_, L> {
        TaskBuilder {
            scope: self,
            name: name.into(),
            accesses,
            hints: Hints::default(),
        }
    }

    /// Spawns a task declaring `accesses`; the body receives one view per access.
    ///
    /// Returns an error, and fails the run, when the declaration is invalid (a handle of
    /// another runtime, an out-of-bounds range, a datum declared twice with a write);
    /// returns [`Error::RunFailed`] without submitting once the run has failed.
    pub fn spawn<L, F>(
        &self,
        name: impl Into<Cow<'static, str>>,
        accesses: L,
        body: F,
    ) -> Result<(), Error>
    where
        L: AccessList,
        F: for<'a> FnOnce(&TaskCtx, L::Views<'a>) + Send + 'static,
    {
        self.task(name, accesses).spawn(body)
    }

    /// Spawns a *control task*: a task whose `accesses` only order it among the other
    /// tasks (it starts after the writers of what it reads, and its writes order the
    /// tasks that read them after it), and whose body gets no view, only its context,
    /// typically to spawn tasks into its nested scope (a parallel control program).
    /// Since it cannot touch a buffer, a control task runs even when an engine skips
    /// the bodies of tasks (a simulation at paper sizes). Errors as
    /// [`spawn`](Self::spawn).
    ///
    /// ```
    /// # use locus::Runtime;
    /// let rt = Runtime::builder().build()?;
    /// let token = rt.data::<u64>("token", 1);
    /// let out = rt.data::<u64>("out", 1);
    /// rt.run(|s| {
    ///     let out = out.clone();
    ///     s.spawn_control("creator", token.write(), move |ctx| {
    ///         ctx.scope().spawn("work", out.write(), |_, o| o[0] = 7).unwrap();
    ///     })
    ///     .unwrap();
    /// })?;
    /// assert_eq!(rt.fetch(&out)?, vec![7]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_control<L, F>(
        &self,
        name: impl Into<Cow<'static, str>>,
        accesses: L,
        body: F,
    ) -> Result<(), Error>
    where
        L: AccessList,
        F: FnOnce(&TaskCtx) + Send + 'static,
    {
        self.task(name, accesses).spawn_control(body)
    }

    /// Creates a datum of `len` elements, zero until a task writes it: versioned, or
    /// shared when the configuration's data model is (`shm-base`), as
    /// [`Runtime::data`](crate::Runtime::data).
    pub fn data<T: Element>(&self, name: impl Into<String>, len: usize) -> Data<T> {
        let shared = &self.run.shared;
        Data::from_inner(Arc::new(DataInner::create_or_unavailable(
            self.run.runtime_id,
            name.into(),
            len,
            std::mem::size_of::<T>(),
            &self.run.versions,
            shared.default_policy.map(|p| (shared, p)),
        )))
    }

    /// Whether the run has failed (a task panicked or a declaration was refused).
    pub fn has_failed(&self) -> bool {
        self.run.is_failed()
    }
}

/// A task being built: accesses, name and hints.
#[must_use = "a task is submitted only by `spawn`"]
pub struct TaskBuilder<'s, L> {
    scope: &'s Scope,
    name: Cow<'static, str>,
    accesses: L,
    hints: Hints,
}

impl<L: AccessList> TaskBuilder<'_, L> {
    /// Estimated cost of the body in nanoseconds (used by the simulator and reports).
    pub fn cost(mut self, nanos: u64) -> Self {
        self.hints.cost = Some(nanos);
        self
    }

    /// Where the task would like to run (paper 3 section 3).
    pub fn affinity(mut self, affinity: Affinity) -> Self {
        self.hints.affinity = Some(affinity);
        self
    }

    /// Submits the task. See [`Scope::spawn`].
    pub fn spawn<F>(self, body: F) -> Result<(), Error>
    where
        F: for<'a> FnOnce(&TaskCtx, L::Views<'a>) + Send + 'static,
    {
        let TaskBuilder {
            scope,
            name,
            accesses,
            hints,
        } = self;
        let mut declared = Vec::new();
        accesses.declare(&mut declared);
        scope.submit(name, hints, declared, TaskBody::Views(accesses, body))
    }

    /// Submits the task as a control task, whose body gets no view. See
    /// [`Scope::spawn_control`].
    pub fn spawn_control<F>(self, body: F) -> Result<(), Error>
    where
        F: FnOnce(&TaskCtx) + Send + 'static,
    {
        let TaskBuilder {
            scope,
            name,
            accesses,
            hints,
        } = self;
        let mut declared = Vec::new();
        accesses.declare(&mut declared);
        scope.submit::<L, for<'a> fn(&TaskCtx, L::Views<'a>)>(
            name,
            hints,
            declared,
            TaskBody::Control(Box::new(body)),
        )
    }
}

impl Scope {
    /// Submits a task from the calling worker thread.
    fn submit<L, F>(
        &self,
        name: Cow<'static, str>,
        hints: Hints,
        declared: Vec<crate::data::Declared>,
        body: TaskBody<L, F>,
    ) -> Result<(), Error>
    where
        L: AccessList,
        F: for<'a> FnOnce(&TaskCtx, L::Views<'a>) + Send + 'static,
    {
        let mut task = Some((name, hints, declared, body));
        current_executor(|ex| {
            let (name, hints, declared, body) = task.take().expect("taken once");
            submit(ex, &self.run, self.throttled, name, hints, declared, body)
        })
        .unwrap_or_else(|| {
            let (name, ..) = task.take().expect("taken once");
            Err(Error::Config(format!(
                "task `{name}`: spawned outside a worker thread"
            )))
        })
    }
}

/// What a task body knows about where it runs, and its nested scope.
pub struct TaskCtx {
    scope: Scope,
    worker: usize,
    node: usize,
}

impl TaskCtx {
    pub(crate) fn new(run: Arc<RunState>, worker: usize, node: usize, root: bool) -> Self {
        TaskCtx {
            scope: Scope::new(run, root),
            worker,
            node,
        }
    }

    /// The scope for spawning child tasks (a parallel control program).
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Index of the worker running the task.
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// Node of the worker running the task.
    pub fn node(&self) -> usize {
        self.node
    }
}
