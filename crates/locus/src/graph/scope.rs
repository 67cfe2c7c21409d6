//! Scopes: where tasks are spawned, by the control program and by tasks themselves.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

use super::body::Body;
use super::domain::Owner;
use super::exec::{current_executor, with_executor};
use super::hints::{Affinity, Hints};
use super::run::RunRef;
use super::submit::{forget_empty, submit, submit_lean, TaskBody, Throttle};
use crate::data::version::VersionRef;
use crate::data::{AccessList, Binding, Data, DataInner, Element};
use crate::error::Error;

/// Where tasks are submitted. The root closure of [`Runtime::run`](crate::Runtime::run)
/// gets the run's scope; a task body gets its nested scope through [`TaskCtx::scope`].
///
/// Dependences follow submission order: a task reading a datum binds to the version
/// written by the last task submitted before it that writes the datum. Tasks spawned from
/// inside another task are ordered after everything submitted so far in the run, so a
/// parallel control program should give each creating task its own data.
pub struct Scope {
    /// The run, borrowed from the task whose body holds the scope (see
    /// [`TaskCtx::new`]): no reference count is taken per task run.
    run: RunRef,
    /// The task whose domain the scope's tasks bind in; `None` for the run's control
    /// program, whose tasks bind to the run-wide current versions.
    owner: Option<Owner>,
    /// How submissions respond to a full window (see
    /// [`RuntimeBuilder::window`](crate::RuntimeBuilder::window)).
    throttle: Throttle,
    /// The team of the task whose body holds the scope: its children join it.
    team: Option<super::Team>,
    /// A scope is only usable on the worker thread it was handed to.
    _not_send: PhantomData<*const ()>,
}

impl Scope {
    /// # Safety
    ///
    /// `run` outlives the scope.
    unsafe fn new(
        run: RunRef,
        throttle: Throttle,
        owner: Option<Owner>,
        team: Option<super::Team>,
    ) -> Self {
        Scope {
            run,
            owner,
            throttle,
            team,
            _not_send: PhantomData,
        }
    }

    /// The run the scope submits to.
    fn run(&self) -> RunRef {
        // `Scope::new`'s contract: the run outlives the scope.
        self.run
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
    /// Only this makes a control task: a task spawned with [`spawn`](Self::spawn) that
    /// declares nothing has a domain of its own (the data created in its scope), so
    /// its children cannot silently bind to data it did not declare: such a child is
    /// refused at spawn, naming the datum and the task.
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

    /// Submits a *migration task*: in submission order, after the tasks that use the
    /// shared datum before it and before those that use it after, its pages move to
    /// `node` (Broquedis et al., MaMI's `mami_migrate_on_node`, as a task of the graph
    /// rather than a call between runs). The task runs preferably on `node`, declares a
    /// read-write of the whole datum for its dependences and accesses nothing: the
    /// report counts the pages moved (`migration.now_pages`), and the simulator charges
    /// the topology's migration model (`a + b x pages`) to the worker that runs it.
    /// [`Runtime::migrate`](crate::Runtime::migrate) does the same between runs.
    ///
    /// A versioned datum, or a node outside the topology, is refused.
    ///
    /// ```
    /// use locus::{RegionPolicy, Runtime, Topology};
    /// let rt = Runtime::builder().topology(Topology::from_spec("2x1")?).build()?;
    /// let v = rt.shared::<u64>("v", 4096, RegionPolicy::Bind(0))?;
    /// let finished = rt.run(|s| {
    ///     s.spawn("fill", v.write(), |_, x| x.fill(3)).unwrap();
    ///     s.migrate(&v, 1).unwrap();
    ///     s.spawn("bump", v.read_write(), |_, x| x[0] += 1).unwrap();
    /// })?;
    /// assert_eq!(finished.report.migration.now_pages, 8);
    /// assert_eq!(rt.bytes_per_node(&v).unwrap(), vec![0, 8 * 4096]);
    /// assert_eq!(rt.fetch(&v)?[..2], [4, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn migrate<T: Element>(&self, data: &Data<T>, node: usize) -> Result<(), Error> {
        let name = format!("migrate({})", data.name());
        let nodes = self.run().shared.config.nodes;
        if node >= nodes {
            return Err(Error::Declaration {
                task: name,
                message: format!("node {node} does not exist (the topology has {nodes})"),
            });
        }
        if data.inner.shared.is_none() {
            return Err(Error::Declaration {
                task: name,
                message: format!(
                    "`{}` is versioned: its versions are placed where their producers run; \
                     move it between runs with Runtime::migrate",
                    data.name()
                ),
            });
        }
        let mut builder = self
            .task(name, data.read_write())
            .affinity(Affinity::node(node));
        builder.hints.migrate_to = Some(node);
        builder.spawn_control(|_| {})
    }

    /// Creates a datum of `len` elements, zero until a task writes it: versioned, or
    /// shared when the configuration's data model is (`shm-base`), as
    /// [`Runtime::data`](crate::Runtime::data).
    ///
    /// Created in a task's scope, the datum belongs to the task's domain: the task's
    /// children may read and write it, the task reads their results with
    /// [`TaskCtx::fetch`], and once the task is complete the datum holds what its
    /// children wrote last.
    pub fn data<T: Element>(&self, name: impl Into<String>, len: usize) -> Data<T> {
        let shared = &self.run().shared;
        let inner = Arc::new(DataInner::create_or_unavailable(
            self.run().runtime_id,
            name.into(),
            len,
            std::mem::size_of::<T>(),
            self.run().versions,
            shared.default_policy.map(|p| (shared, p)),
        ));
        if let Some(owner) = &self.owner {
            if let Ok(domain) = owner.domain_or_refusal() {
                inner
                    .local
                    .store(true, std::sync::atomic::Ordering::Release);
                domain.add_local(inner.clone());
            }
        }
        Data::from_inner(inner)
    }

    /// Whether the run has failed (a task panicked or a declaration was refused).
    pub fn has_failed(&self) -> bool {
        self.run().is_failed()
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

    /// Makes the task, and every task its body spawns at any depth, a member of
    /// `team` (`graph::team`: a nested scope placed as a unit). Without an affinity of
    /// its own, a member runs on one of the team's nodes. A task spawned in a team's
    /// scope is a member already; this names another team.
    pub fn team(mut self, team: &super::Team) -> Self {
        self.hints.team = Some(team.clone());
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
            mut accesses,
            hints,
        } = self;
        let declared = crate::data::declarations(&mut accesses);
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
            mut accesses,
            hints,
        } = self;
        let declared = crate::data::declarations(&mut accesses);
        scope.submit::<L, for<'a> fn(&TaskCtx, L::Views<'a>)>(
            name,
            hints,
            declared,
            TaskBody::Control(Body::new(move |ctx: &TaskCtx, _: &[Binding]| body(ctx))),
        )
    }
}

impl Scope {
    /// Submits a task from the calling worker thread.
    fn submit<L, F>(
        &self,
        name: Cow<'static, str>,
        hints: Hints,
        declared: crate::data::Declarations,
        body: TaskBody<L, F>,
    ) -> Result<(), Error>
    where
        L: AccessList,
        F: for<'a> FnOnce(&TaskCtx, L::Views<'a>) + Send + 'static,
    {
        let (run, throttle, owner) = (self.run(), self.throttle, self.owner.as_ref());
        if declared.is_empty() && self.team.is_none() && hints.is_default() {
            // The lean path, with no hint to check (`submit::submit_lean`).
            forget_empty(declared);
            return with_executor((name, body), |ex, (name, body)| {
                submit_lean(ex, run, throttle, owner, name, None, body)
            })
            .unwrap_or_else(|(name, _)| Err(outside_a_worker(&name)));
        }
        let mut hints = hints;
        if let Some(super::hints::AffinityTarget::Data(d)) =
            hints.affinity.as_ref().map(|a| &a.target)
        {
            // Its buffer's node would index another runtime's topology.
            if d.0.runtime != self.run().runtime_id {
                let error = Error::ForeignData {
                    task: name.to_string(),
                    data: d.0.name.clone(),
                };
                self.run().fail(error.clone());
                return Err(error);
            }
        }
        if hints.team.is_none() {
            hints.team = self.team.clone();
        }
        if let Some(team) = &hints.team {
            if team.runtime() != self.run().runtime_id {
                let error = Error::Declaration {
                    task: name.to_string(),
                    message: "its team belongs to another runtime".into(),
                };
                self.run().fail(error.clone());
                return Err(error);
            }
            if hints.affinity.is_none() {
                let hint = Affinity::node(team.next_node());
                hints.affinity = Some(if team.is_strict() {
                    hint.strict()
                } else {
                    hint
                });
            }
        }
        let submitted = if declared.is_empty() {
            // The lean path: nothing to bind (`submit::submit_lean`).
            forget_empty(declared);
            with_executor((name, hints.boxed(), body), |ex, (name, hints, body)| {
                submit_lean(ex, run, throttle, owner, name, hints, body)
            })
            .map_err(|(name, ..)| name)
        } else {
            with_executor(
                (name, hints.boxed(), declared, body),
                |ex, (name, hints, declared, body)| {
                    submit(ex, run, throttle, owner, name, hints, declared, body)
                },
            )
            .map_err(|(name, ..)| name)
        };
        submitted.unwrap_or_else(|name| Err(outside_a_worker(&name)))
    }
}

/// The error of a task spawned from a thread that is no worker.
fn outside_a_worker(name: &str) -> Error {
    Error::Config(format!("task `{name}`: spawned outside a worker thread"))
}

/// Runs other tasks on the calling worker while `blocked` holds.
fn help_while(blocked: &dyn Fn() -> bool) {
    if current_executor(|ex| ex.help_while(blocked)).is_none() {
        // Not on a worker: cannot happen for a task body; wait politely.
        while blocked() {
            std::thread::yield_now();
        }
    }
}

/// What a task body knows about where it runs, and its nested scope.
pub struct TaskCtx {
    scope: Scope,
    worker: usize,
    node: usize,
    /// The task whose body this is, for errors that name it; held by `start` until the
    /// body has returned (the contract of [`TaskCtx::new`]).
    task: std::ptr::NonNull<crate::graph::TaskRef>,
}

impl TaskCtx {
    /// The context of `task`'s body, about to run in the task's run.
    ///
    /// # Safety
    ///
    /// `task` (so its run) outlives the context: the caller holds it until the body has
    /// returned and the context is dropped (the context is neither `Send` nor
    /// cloneable, and the body gets it by reference only).
    pub(crate) unsafe fn new(
        task: &crate::graph::TaskRef,
        worker: usize,
        node: usize,
        throttle: Throttle,
        owner: Option<Owner>,
        team: Option<super::Team>,
    ) -> Self {
        TaskCtx {
            // SAFETY: the caller's contract.
            scope: unsafe { Scope::new(task.run, throttle, owner, team) },
            worker,
            node,
            task: std::ptr::NonNull::from(task),
        }
    }

    /// The name of the task whose body this is.
    pub fn task_name(&self) -> &str {
        // SAFETY: the task outlives its context (the contract of `new`).
        unsafe { &self.task.as_ref().name }
    }

    /// The scope for spawning child tasks. A task's children bind to its *domain*: the
    /// data it declared (strongly, or weakly with [`Data::weak_read`] and the like) and
    /// the data created in this scope, and the task's successors see what its children
    /// wrote. A control task's children go to its parent's scope instead (see
    /// [`Scope::spawn_control`]).
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Waits until every child spawned so far is complete (taskwait). The calling
    /// worker runs other tasks meanwhile, so a wait never blocks a thread; waits nest on
    /// the worker's stack, one frame per task waiting on it at once.
    ///
    /// The run's control program (the closure given to
    /// [`Runtime::run`](crate::Runtime::run)) gets a [`Scope`], not a context, and
    /// cannot wait: it reads its tasks' results after the run
    /// ([`Runtime::fetch`](crate::Runtime::fetch)), or spawns a task that reads them.
    ///
    /// Errors: children that need this task's own outputs cannot run before its body
    /// returns, so waiting for them is refused (declare the access weak instead, or do
    /// not wait); a control task (spawned with [`Scope::spawn_control`]) cannot wait
    /// (its children are its parent's); after a failed run, [`Error::RunFailed`].
    pub fn wait(&self) -> Result<(), Error> {
        let run = self.scope.run();
        match &self.scope.owner {
            None if self.scope.throttle == Throttle::Wait => {
                // The root: every task but itself, and but those its worker holds
                // back (`run::Finished`).
                help_while(&|| {
                    let n = current_executor(|ex| run.outstanding_seen_from(ex));
                    n.unwrap_or_else(|| run.outstanding()) > 1
                });
            }
            Some(owner) if owner.is_own() => {
                if let Some(domain) = owner.existing_domain() {
                    if let Some(data) = domain.children_wait_for_owner() {
                        return Err(Error::Declaration {
                            task: owner.task().name.to_string(),
                            message: format!(
                                "waits for children that read `{data}`, which this task \
                                 writes: they can start only once its body returns; declare \
                                 the access weak, or do not wait"
                            ),
                        });
                    }
                    help_while(&|| domain.children_open());
                }
            }
            _ => {
                return Err(Error::Declaration {
                    task: self.task_name().to_string(),
                    message: "is a control task (spawned with `spawn_control`): its \
                              children belong to its parent's scope, and it cannot wait \
                              for them; spawn it with `spawn`, declaring what its children \
                              access (a weak access is enough), to wait for them"
                        .into(),
                })
            }
        }
        if run.is_failed() {
            return Err(Error::RunFailed {
                task: "wait".into(),
            });
        }
        Ok(())
    }

    /// Waits for the children (as [`wait`](Self::wait)), then returns a copy of
    /// `data` as they left it: a datum created in this task's scope, or one the task
    /// declared (weakly or not) and that its children wrote. This is how a child's
    /// result flows back to its parent (recursive divide and conquer).
    ///
    /// ```
    /// # use locus::Runtime;
    /// let rt = Runtime::builder().build()?;
    /// let out = rt.data::<u64>("out", 1);
    /// rt.run(|s| {
    ///     s.spawn("parent", out.write(), |ctx, out| {
    ///         let half = ctx.scope().data::<u64>("half", 1);
    ///         ctx.scope().spawn("child", half.write(), |_, h| h[0] = 21).unwrap();
    ///         out[0] = 2 * ctx.fetch(&half).unwrap()[0];
    ///     })
    ///     .unwrap();
    /// })?;
    /// assert_eq!(rt.fetch(&out)?, vec![42]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fetch<T: Element>(&self, data: &Data<T>) -> Result<Vec<T>, Error> {
        self.wait()?;
        let inner = &data.inner;
        let refuse = |message: String| Error::Declaration {
            task: "fetch".into(),
            message,
        };
        if inner.is_partitioned() {
            return Err(refuse(format!(
                "`{}` is partitioned: read it in a child task instead",
                inner.name
            )));
        }
        let version = match &self.scope.owner {
            None => {
                // Every task but the root has finished (the wait above), so an open
                // reduction group can be combined here.
                let combined = current_executor(|ex| {
                    // SAFETY: no task of the run is running but this root, which
                    // writes nothing.
                    unsafe { inner.combine_now(ex.pools(), ex.node()) }
                });
                if let Some(Err(e)) = combined {
                    return Err(e.into_error("fetch", inner));
                }
                inner.current()
            }
            Some(owner) => {
                let Some(domain) = owner.existing_domain() else {
                    return Err(refuse(format!(
                        "`{}` was neither written by a child nor created in this scope",
                        inner.name
                    )));
                };
                let entries = domain.entries();
                let Some(entry) = super::domain::find(&entries, inner.id) else {
                    return Err(refuse(format!(
                        "`{}` is not declared by this task nor created in its scope",
                        inner.name
                    )));
                };
                if entry
                    .start
                    .as_ref()
                    .is_some_and(|s| VersionRef::ptr_eq(s, &entry.current))
                {
                    return Err(refuse(format!(
                        "`{}` is this task's own output and no child wrote it: read it \
                         through the task's view",
                        inner.name
                    )));
                }
                entry.current.clone()
            }
        };
        if let Some(task) = inner.poisoned_by() {
            return Err(Error::Poisoned {
                data: inner.name.clone(),
                task,
            });
        }
        // SAFETY: every child is complete (the wait above) and the version is theirs
        // or older, so no task writes its buffer while this task's body runs: later
        // writers of the datum are this task's successors, or children it has not
        // spawned yet.
        unsafe { inner.copy_out(&version) }
    }

    /// Runs other ready tasks on the calling worker while `blocked` returns true: the
    /// wait of a front-end that tracks completion itself (the OpenMP runtime's
    /// barriers, taskwaits and taskgroups, crate `locus-omp`). Like [`wait`](Self::wait)
    /// it never blocks the thread; unlike it, it waits for whatever `blocked` says, so
    /// a `blocked` that never turns false never returns.
    #[cfg(feature = "frontend")]
    pub fn help_while(&self, blocked: &dyn Fn() -> bool) {
        help_while(blocked);
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
