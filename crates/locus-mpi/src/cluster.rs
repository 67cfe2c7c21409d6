//! One Locus runtime per rank, running one SPMD program: the [`Cluster`] carries the
//! [`Plan`]'s decisions out with ordinary tasks.
//!
//! Every rank calls [`Cluster::run`] with the same program. For each distributed task
//! the plan says which rank runs it and which versions must travel; on this rank that
//! becomes, in program order:
//!
//! - a **send task** for each message this rank sends: it reads the version (or the
//!   range) like any reader, copies it into a message and hands it to the transport,
//!   which sends it without blocking the worker;
//! - a **receive task** and an **unpack task** for each message this rank receives.
//!   The receive task is strict to the rank's *communication worker* (the runtime's
//!   last worker) and waits there for the message, so compute workers never wait for
//!   the network, and the receives of a rank complete in program order, which keeps
//!   every rank's waits acyclic: the message a receive waits for depends only on tasks
//!   earlier in the program, on every rank. The unpack task then writes the received
//!   bytes as a new version of the datum (a whole datum) or of a copy of the range: an
//!   ordinary version. It runs on its reader's home node (below; a strict node hint:
//!   any worker of that node), so under deferred allocation the received buffer is
//!   allocated on that node, whoever steals what;
//! - the task itself, if this rank runs it, reading its local versions and the copies
//!   received. Other ranks skip it entirely.
//!
//! Within a rank of several nodes, the data the rank owns are cut into one run per
//! node ([`Cluster::home`]), and a task, with the versions received for it, carries a
//! non-strict affinity hint (paper 3) to the home node of the first datum it writes.
//!
//! Failure: a task that panics tells every other rank through the transport before the
//! panic unwinds; their pending receives fail with its message, so every rank's run
//! ends with an error instead of waiting forever. At the end of each run the ranks
//! exchange their status, so that no rank reports success when another failed.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use locus::{Affinity, Data, Element, Read, ReadWrite, Runtime, Scope, TaskCtx, Write};
use serde::Serialize;

use crate::plan::{Extent, Plan, Purpose, Refused, Route, Transfer};
use crate::transport::{Tag, Transport};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What can go wrong in a distributed program.
#[derive(Debug)]
pub enum Error {
    /// The runtime or the transport cannot run a distributed program.
    Config(String),
    /// A task's declaration was refused by the plan.
    Refused {
        /// The task.
        task: String,
        /// Why.
        message: String,
    },
    /// The runtime failed (on this rank).
    Locus(locus::Error),
    /// This rank's run failed: the runtime's error, with its report.
    Run(Box<locus::RunError>),
    /// Another rank failed.
    Remote(String),
    /// The program's own work on this rank failed outside the runtime: the sequential
    /// reference or the verification could not be computed (their buffers could not
    /// be allocated).
    Workload(String),
}

impl Error {
    /// A workload's error: parameters it cannot run are [`Error::Config`] (a usage
    /// error), anything else [`Error::Workload`].
    pub fn of_workload(e: locus_bench::Error) -> Error {
        match e {
            locus_bench::Error::Params(m) => Error::Config(m),
            other => Error::Workload(other.to_string()),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Config(m) | Error::Remote(m) | Error::Workload(m) => f.write_str(m),
            Error::Refused { task, message } => write!(f, "task `{task}`: {message}"),
            Error::Locus(e) => write!(f, "{e}"),
            Error::Run(e) => write!(f, "{}", e.error),
        }
    }
}

impl std::error::Error for Error {}

impl From<locus::Error> for Error {
    fn from(e: locus::Error) -> Self {
        Error::Locus(e)
    }
}

/// Messages and bytes this rank sent and received in one run, measured by its send and
/// receive tasks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CommReport {
    /// Messages sent for tasks of other ranks.
    pub sent_messages: u64,
    /// Bytes sent for tasks of other ranks.
    pub sent_bytes: u64,
    /// Messages received for this rank's tasks.
    pub received_messages: u64,
    /// Bytes received for this rank's tasks.
    pub received_bytes: u64,
    /// Bytes sent to collect results on another rank ([`DistScope::collect`]).
    pub collect_sent_bytes: u64,
    /// Bytes received to collect results on this rank.
    pub collect_received_bytes: u64,
    /// Bytes sent (tasks and collection), by the node of the worker that read them.
    pub sent_bytes_per_node: Vec<u64>,
    /// Bytes received (tasks and collection), by the node of the worker that wrote
    /// them into their version.
    pub received_bytes_per_node: Vec<u64>,
}

#[derive(Default)]
struct Counts {
    sent_messages: AtomicU64,
    sent_bytes: AtomicU64,
    received_messages: AtomicU64,
    received_bytes: AtomicU64,
    collect_sent_bytes: AtomicU64,
    collect_received_bytes: AtomicU64,
    per_node: Mutex<(Vec<u64>, Vec<u64>)>,
}

impl Counts {
    fn sent(&self, node: usize, bytes: u64, purpose: Purpose) {
        match purpose {
            Purpose::Compute => {
                self.sent_messages.fetch_add(1, Ordering::Relaxed);
                self.sent_bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            Purpose::Collect => {
                self.collect_sent_bytes.fetch_add(bytes, Ordering::Relaxed);
            }
        }
        lock(&self.per_node).0[node] += bytes;
    }

    fn received(&self, node: usize, bytes: u64, purpose: Purpose) {
        match purpose {
            Purpose::Compute => {
                self.received_messages.fetch_add(1, Ordering::Relaxed);
                self.received_bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            Purpose::Collect => {
                self.collect_received_bytes
                    .fetch_add(bytes, Ordering::Relaxed);
            }
        }
        lock(&self.per_node).1[node] += bytes;
    }

    /// The counts so far, and zero again.
    fn take(&self, nodes: usize) -> CommReport {
        let t = |a: &AtomicU64| a.swap(0, Ordering::Relaxed);
        let mut per_node = lock(&self.per_node);
        let (sent, received) = std::mem::replace(&mut *per_node, (vec![0; nodes], vec![0; nodes]));
        CommReport {
            sent_messages: t(&self.sent_messages),
            sent_bytes: t(&self.sent_bytes),
            received_messages: t(&self.received_messages),
            received_bytes: t(&self.received_bytes),
            collect_sent_bytes: t(&self.collect_sent_bytes),
            collect_received_bytes: t(&self.collect_received_bytes),
            sent_bytes_per_node: sent,
            received_bytes_per_node: received,
        }
    }
}

/// A distributed datum: its number in the plan, this rank's Locus datum (which holds
/// the versions this rank writes or receives whole), and the copies of ranges it
/// received.
pub struct DistData<T: Element> {
    id: usize,
    name: String,
    local: Data<T>,
    /// Received ranges of the current version, by range.
    copies: Mutex<HashMap<(usize, usize), Data<T>>>,
}

impl<T: Element> DistData<T> {
    /// Its number in the plan (in creation order, the same on every rank).
    pub fn id(&self) -> usize {
        self.id
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.local.len()
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.local.is_empty()
    }

    /// This rank's Locus datum.
    pub fn local(&self) -> &Data<T> {
        &self.local
    }
}

/// A program's result on one rank.
pub struct DistFinished<R> {
    /// What the program returned.
    pub value: R,
    /// This rank's runtime report.
    pub report: locus::Report,
    /// This rank's messages.
    pub comm: CommReport,
}

/// One rank of a distributed program: its runtime, its transport and the plan.
pub struct Cluster {
    rt: Runtime,
    transport: Arc<dyn Transport>,
    plan: Mutex<Plan>,
    comm_worker: usize,
    counts: Arc<Counts>,
    runs: AtomicU64,
    /// The home node of each datum this rank owns, by plan number (see
    /// [`Cluster::home`]); computed when a run starts.
    homes: Mutex<Vec<usize>>,
}

impl Cluster {
    /// This rank of the program `transport` joins, running on `rt`. The runtime needs
    /// versioned data (not `shm-base`) and at least two workers: its last worker is the
    /// rank's communication worker.
    pub fn new(rt: Runtime, transport: Arc<dyn Transport>) -> Result<Cluster, Error> {
        if rt.config().shared_data() {
            return Err(Error::Config(format!(
                "distributed runs need versioned data; configuration `{}` updates shared \
                 data in place",
                rt.config().name()
            )));
        }
        if rt.workers() < 2 {
            return Err(Error::Config(
                "a distributed rank needs at least two workers: one computes, the last \
                 one also receives messages"
                    .into(),
            ));
        }
        let nodes = rt.topology().num_nodes();
        let counts = Arc::new(Counts::default());
        counts.take(nodes);
        Ok(Cluster {
            comm_worker: rt.workers() - 1,
            plan: Mutex::new(Plan::new(transport.ranks())),
            rt,
            transport,
            counts,
            runs: AtomicU64::new(0),
            homes: Mutex::default(),
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.transport.rank()
    }

    /// Ranks in the program.
    pub fn ranks(&self) -> usize {
        self.transport.ranks()
    }

    /// This rank's runtime.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// The worker that runs this rank's receive tasks.
    pub fn comm_worker(&self) -> usize {
        self.comm_worker
    }

    /// The node of this rank's runtime that datum `d` calls home: the data this rank
    /// owns, in creation order, are cut into one contiguous run per node (a block
    /// distribution within the rank, as the ranks' distribution is across them). Tasks
    /// writing a datum, and the versions received for them, are hinted towards its
    /// home node when the runtime has several nodes.
    pub fn home(&self, d: usize) -> usize {
        lock(&self.homes).get(d).copied().unwrap_or(0)
    }

    /// The hint towards `home`, when this rank's runtime has several nodes.
    fn hint(&self, home: usize) -> Option<Affinity> {
        (self.rt.topology().num_nodes() > 1).then(|| Affinity::node(home))
    }

    fn compute_homes(&self) {
        let plan = lock(&self.plan);
        let me = self.rank();
        let nodes = self.rt.topology().num_nodes();
        let n = plan.len();
        let owned = (0..n).filter(|&d| plan.owner(d) == me).count().max(1);
        let mut k = 0;
        let homes = (0..n)
            .map(|d| {
                if plan.owner(d) != me {
                    return 0;
                }
                k += 1;
                (k - 1) * nodes / owned
            })
            .collect();
        *lock(&self.homes) = homes;
    }

    /// A copy of the plan (what every rank has decided so far).
    pub fn plan(&self) -> Plan {
        lock(&self.plan).clone()
    }

    /// A distributed datum of `len` elements owned by `owner`, zero until written.
    /// Every rank creates the same data in the same order.
    pub fn data<T: Element>(
        &self,
        name: impl Into<String>,
        len: usize,
        owner: usize,
    ) -> Result<DistData<T>, Error> {
        let name = name.into();
        let id = self.add::<T>(&name, len, owner)?;
        let local = self.rt.data::<T>(name.clone(), len);
        Ok(DistData {
            id,
            name,
            local,
            copies: Mutex::default(),
        })
    }

    /// A distributed datum owned by `owner` with initial contents `init()`, which only
    /// the owner calls (the other ranks create it empty, of length `len`).
    pub fn data_with<T: Element>(
        &self,
        name: impl Into<String>,
        len: usize,
        owner: usize,
        init: impl FnOnce() -> Vec<T>,
    ) -> Result<DistData<T>, Error> {
        let name = name.into();
        let id = self.add::<T>(&name, len, owner)?;
        let local = if owner == self.rank() {
            let values = init();
            if values.len() != len {
                return Err(Error::Config(format!(
                    "`{name}`: {} initial values for {len} elements",
                    values.len()
                )));
            }
            self.rt.data_from(name.clone(), &values)?
        } else {
            self.rt.data::<T>(name.clone(), len)
        };
        Ok(DistData {
            id,
            name,
            local,
            copies: Mutex::default(),
        })
    }

    fn add<T>(&self, name: &str, len: usize, owner: usize) -> Result<usize, Error> {
        lock(&self.plan)
            .add(owner, len, std::mem::size_of::<T>())
            .map_err(|e| Error::Config(format!("`{name}`: {e}")))
    }

    /// Whether this rank holds the current version of `d` (written or received whole).
    pub fn holds<T: Element>(&self, d: &DistData<T>) -> bool {
        lock(&self.plan).holds(d.id, self.rank())
    }

    /// The current contents of `d`, on a rank that holds them ([`DistScope::collect`]
    /// brings them to a rank).
    pub fn fetch<T: Element>(&self, d: &DistData<T>) -> Result<Vec<T>, Error> {
        if !self.holds(d) {
            return Err(Error::Config(format!(
                "`{}`: rank {} does not hold its current version (collect it first)",
                d.name,
                self.rank()
            )));
        }
        Ok(self.rt.fetch(&d.local)?)
    }

    /// Runs `program` on this rank; every rank runs the same program. Returns this
    /// rank's result once every rank has finished the run, or the first error: this
    /// rank's, or another rank's ([`Error::Remote`]).
    pub fn run<R, F>(&self, program: F) -> Result<DistFinished<R>, Error>
    where
        F: FnOnce(&mut DistScope<'_>) -> Result<R, Error> + Send,
        R: Send,
    {
        let run_no = self.runs.fetch_add(1, Ordering::Relaxed);
        self.compute_homes();
        let nodes = self.rt.topology().num_nodes();
        self.counts.take(nodes);
        let finished = self.rt.run(|s| {
            let mut ds = DistScope {
                scope: s,
                cluster: self,
            };
            program(&mut ds)
        });
        let comm = self.counts.take(nodes);
        let outcome = match finished {
            Ok(f) => match f.value {
                Ok(value) => Ok(DistFinished {
                    value,
                    report: f.report,
                    comm,
                }),
                Err(e) => Err(e),
            },
            Err(e) => Err(Error::Run(Box::new(e))),
        };
        self.agree(run_no, outcome)
    }

    /// The end of a run: every rank tells every other whether it succeeded; a rank
    /// that failed tells them why first ([`Transport::fail`]).
    fn agree<R>(&self, run_no: u64, outcome: Result<R, Error>) -> Result<R, Error> {
        let (me, ranks) = (self.rank(), self.ranks());
        if let Err(e) = &outcome {
            if !matches!(e, Error::Remote(_)) {
                self.transport.fail(&e.to_string());
            }
            return outcome;
        }
        for r in (0..ranks).filter(|&r| r != me) {
            self.transport.send(r, Tag::Status(run_no), vec![1]);
        }
        for r in (0..ranks).filter(|&r| r != me) {
            let arrival = self.transport.expect(r, Tag::Status(run_no), 1);
            loop {
                match arrival.wait_for(Duration::from_millis(100)) {
                    None => continue,
                    Some(Ok(_)) => break,
                    Some(Err(message)) => return Err(Error::Remote(message)),
                }
            }
        }
        outcome
    }
}

/// The scope of a distributed program on one rank: where its tasks are declared.
pub struct DistScope<'a> {
    scope: &'a Scope,
    cluster: &'a Cluster,
}

/// The views a distributed task's body gets, in declaration order within each kind.
pub struct Views<'a, T> {
    /// What it reads ([`DistTask::read`], [`DistTask::read_range`]).
    pub reads: Vec<&'a [T]>,
    /// What it writes whole ([`DistTask::write`]).
    pub writes: Vec<&'a mut [T]>,
    /// What it updates ([`DistTask::read_write`]).
    pub read_writes: Vec<&'a mut [T]>,
}

enum Access {
    Read(usize, Extent),
    Write(usize),
    ReadWrite(usize),
}

/// A distributed task being declared; [`spawn`](Self::spawn) submits it.
#[must_use = "a task is submitted only by `spawn`"]
pub struct DistTask<'s, 'a, T: Element> {
    ds: &'s mut DistScope<'a>,
    name: Cow<'static, str>,
    data: Vec<&'s DistData<T>>,
    accesses: Vec<Access>,
}

impl<'s, 'a, T: Element> DistTask<'s, 'a, T> {
    /// Reads `d` whole.
    pub fn read(mut self, d: &'s DistData<T>) -> Self {
        self.data.push(d);
        self.accesses
            .push(Access::Read(self.data.len() - 1, Extent::Whole));
        self
    }

    /// Reads the elements `range` of `d`: only they travel to another rank.
    pub fn read_range(mut self, d: &'s DistData<T>, range: Range<usize>) -> Self {
        self.data.push(d);
        self.accesses
            .push(Access::Read(self.data.len() - 1, Extent::Range(range)));
        self
    }

    /// Writes `d` whole (a new version).
    pub fn write(mut self, d: &'s DistData<T>) -> Self {
        self.data.push(d);
        self.accesses.push(Access::Write(self.data.len() - 1));
        self
    }

    /// Reads and writes `d` whole.
    pub fn read_write(mut self, d: &'s DistData<T>) -> Self {
        self.data.push(d);
        self.accesses.push(Access::ReadWrite(self.data.len() - 1));
        self
    }

    /// Submits the task on every rank: the owner of the first datum it writes runs
    /// `body`, the messages it needs are sent and received, the other ranks skip it.
    pub fn spawn<F>(self, body: F) -> Result<(), Error>
    where
        F: for<'v> FnOnce(&TaskCtx, Views<'v, T>) + Send + 'static,
    {
        let DistTask {
            ds,
            name,
            data,
            accesses,
        } = self;
        ds.submit(name, &data, &accesses, body)
    }
}

impl<'a> DistScope<'a> {
    /// This rank.
    pub fn rank(&self) -> usize {
        self.cluster.rank()
    }

    /// Ranks in the program.
    pub fn ranks(&self) -> usize {
        self.cluster.ranks()
    }

    /// This rank's Locus scope, for tasks of its own (not distributed).
    pub fn local(&self) -> &Scope {
        self.scope
    }

    /// Starts declaring a distributed task over elements of type `T`.
    pub fn task<'s, T: Element>(
        &'s mut self,
        name: impl Into<Cow<'static, str>>,
    ) -> DistTask<'s, 'a, T> {
        DistTask {
            ds: self,
            name: name.into(),
            data: Vec::new(),
            accesses: Vec::new(),
        }
    }

    /// Brings the current version of `d` to `rank` (one message, unless it holds it
    /// already), so that [`Cluster::fetch`] finds it there after the run.
    pub fn collect<T: Element>(&mut self, d: &DistData<T>, rank: usize) -> Result<(), Error> {
        if rank >= self.ranks() {
            return Err(Error::Refused {
                task: format!("collect `{}`", d.name),
                message: Refused::Rank(rank).to_string(),
            });
        }
        let route = lock(&self.cluster.plan).read(d.id, Extent::Whole, rank, Purpose::Collect);
        if let Route::Transfer(t) = route {
            let home = self.cluster.home(d.id);
            self.carry(&t, d, home)?;
        }
        Ok(())
    }

    fn submit<T: Element, F>(
        &mut self,
        name: Cow<'static, str>,
        data: &[&DistData<T>],
        accesses: &[Access],
        body: F,
    ) -> Result<(), Error>
    where
        F: for<'v> FnOnce(&TaskCtx, Views<'v, T>) + Send + 'static,
    {
        let refused = |e: Refused| Error::Refused {
            task: name.to_string(),
            message: e.to_string(),
        };
        let me = self.rank();
        // The plan, the same on every rank: executor, routes, new versions.
        let (exec, routes) = {
            let mut plan = lock(&self.cluster.plan);
            let written: Vec<usize> = accesses
                .iter()
                .filter_map(|a| match a {
                    Access::Write(i) | Access::ReadWrite(i) => Some(data[*i].id),
                    Access::Read(..) => None,
                })
                .collect();
            let exec = plan.executor(&written).map_err(refused)?;
            for a in accesses {
                if let Access::Read(i, e) = a {
                    plan.check(data[*i].id, e).map_err(refused)?;
                }
            }
            let mut routes = Vec::with_capacity(accesses.len());
            for a in accesses {
                routes.push(match a {
                    Access::Read(i, e) => {
                        Some(plan.read(data[*i].id, e.clone(), exec, Purpose::Compute))
                    }
                    Access::ReadWrite(i) => {
                        Some(plan.read(data[*i].id, Extent::Whole, exec, Purpose::Compute))
                    }
                    Access::Write(_) => None,
                });
            }
            for &d in &written {
                plan.write(d, exec);
            }
            (exec, routes)
        };
        // This rank's part: messages it sends or receives, and the task if it runs it
        // (towards the home node of the first datum it writes).
        let home = accesses
            .iter()
            .find_map(|a| match a {
                Access::Write(i) | Access::ReadWrite(i) => Some(self.cluster.home(data[*i].id)),
                Access::Read(..) => None,
            })
            .unwrap_or(0);
        for (a, route) in accesses.iter().zip(&routes) {
            if let Some(Route::Transfer(t)) = route {
                let i = match a {
                    Access::Read(i, _) | Access::ReadWrite(i) | Access::Write(i) => *i,
                };
                self.carry(t, data[i], home)?;
            }
        }
        if exec != me {
            return Ok(());
        }
        let mut reads: Vec<Read<T>> = Vec::new();
        let mut writes: Vec<Write<T>> = Vec::new();
        let mut read_writes: Vec<ReadWrite<T>> = Vec::new();
        for (a, route) in accesses.iter().zip(&routes) {
            match a {
                Access::Read(i, extent) => {
                    let d = data[*i];
                    let copy = match route {
                        Some(Route::Received(Extent::Range(r))) => Some(r.clone()),
                        Some(Route::Transfer(t)) => match &t.extent {
                            Extent::Range(r) => Some(r.clone()),
                            Extent::Whole => None,
                        },
                        _ => None,
                    };
                    reads.push(match (copy, extent) {
                        (Some(r), _) => {
                            let copies = lock(&d.copies);
                            copies
                                .get(&(r.start, r.end))
                                .expect("a received range has its copy")
                                .read()
                        }
                        (None, Extent::Whole) => d.local.read(),
                        (None, Extent::Range(r)) => d.local.read_range(r.clone()),
                    });
                }
                Access::Write(i) => writes.push(data[*i].local.write()),
                Access::ReadWrite(i) => read_writes.push(data[*i].local.read_write()),
            }
        }
        // A new version here: copies of ranges of the old one are stale.
        for a in accesses {
            if let Access::Write(i) | Access::ReadWrite(i) = a {
                lock(&data[*i].copies).clear();
            }
        }
        let transport = self.cluster.transport.clone();
        let task_name = name.to_string();
        self.scope.spawn(
            name,
            (reads, writes, read_writes),
            move |ctx, (r, w, rw)| {
                let views = Views {
                    reads: r,
                    writes: w,
                    read_writes: rw,
                };
                // A panic here ends every rank's run: tell them before unwinding.
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| body(ctx, views))) {
                    let message = panic_message(&*panic);
                    transport.fail(&format!("task `{task_name}` panicked: {message}"));
                    resume_unwind(panic);
                }
            },
        )?;
        Ok(())
    }

    /// Submits this rank's side of transfer `t` of datum `d`: a send task on the
    /// sender, a receive task on the receiver.
    fn carry<T: Element>(
        &mut self,
        t: &Transfer,
        d: &DistData<T>,
        home: usize,
    ) -> Result<(), Error> {
        let me = self.rank();
        let counts = self.cluster.counts.clone();
        let transport = self.cluster.transport.clone();
        let (bytes, purpose, tag) = (t.bytes, t.purpose, Tag::Data(t.seq));
        if me == t.from {
            let to = t.to;
            let source = match &t.extent {
                Extent::Whole => d.local.read(),
                Extent::Range(r) => d.local.read_range(r.clone()),
            };
            self.scope
                .spawn(format!("send {}", d.name), source, move |ctx, v| {
                    let message = bytemuck::cast_slice::<T, u8>(v).to_vec();
                    counts.sent(ctx.node(), bytes, purpose);
                    transport.send(to, tag, message);
                })?;
        } else if me == t.to {
            let target = match &t.extent {
                Extent::Whole => {
                    lock(&d.copies).clear();
                    d.local.write()
                }
                Extent::Range(r) => {
                    let copy = self
                        .cluster
                        .rt
                        .data::<T>(format!("{}[{}..{}]", d.name, r.start, r.end), r.len());
                    let w = copy.write();
                    lock(&d.copies).insert((r.start, r.end), copy);
                    w
                }
            };
            let arrival = transport.expect(t.from, tag, bytes as usize);
            let (from, name) = (t.from, d.name.clone());
            // The wait, on the communication worker: it ends when the message is in
            // (or a rank failed), and hands the bytes over through `slot`.
            let token = self.cluster.rt.data::<u8>(format!("arrived {}", d.name), 1);
            let slot: Arc<Mutex<Vec<u8>>> = Arc::default();
            let filled = slot.clone();
            let waiter_transport = transport.clone();
            self.scope
                .task(format!("recv {}", d.name), token.write())
                .affinity(Affinity::worker(self.cluster.comm_worker).strict())
                .spawn(move |ctx, _| {
                    // Fails the task, and so the run, without a panic message: the
                    // run's error says why.
                    let fail = |message: String| -> ! {
                        std::panic::resume_unwind(Box::new(locus::TaskFailure(message)))
                    };
                    let message = loop {
                        if let Some(m) = arrival.wait_for(Duration::from_millis(5)) {
                            break m;
                        }
                        if ctx.scope().has_failed() {
                            waiter_transport.fail(&format!("rank {me}: the run failed"));
                            fail(format!(
                                "rank {me}: the run failed while `{name}` was awaited"
                            ));
                        }
                    };
                    match message {
                        Ok(m) if m.len() as u64 == bytes => *lock(&filled) = m,
                        Ok(m) => {
                            let message = format!(
                                "`{name}` from rank {from}: {} bytes, {bytes} expected",
                                m.len()
                            );
                            waiter_transport.fail(&message);
                            fail(message);
                        }
                        Err(message) => fail(message),
                    }
                })?;
            // The new version, written by an ordinary task placed like any other:
            // towards the home node of the task that reads it, so that under deferred
            // allocation the received buffer is allocated on its reader's node.
            let unpack = self
                .scope
                .task(format!("unpack {}", d.name), (token.read(), target));
            // Strict to the node (any of its workers): the copy is cheap, and a thief
            // of another node would allocate the received buffer on its own node.
            let unpack = match self.cluster.hint(home) {
                Some(a) => unpack.affinity(a.strict()),
                None => unpack,
            };
            unpack.spawn(move |ctx, (_, out)| {
                let m = std::mem::take(&mut *lock(&slot));
                bytemuck::cast_slice_mut::<T, u8>(out).copy_from_slice(&m);
                counts.received(ctx.node(), bytes, purpose);
            })?;
        }
        Ok(())
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

#[cfg(test)]
mod tests {
    use super::Error;

    /// A reference that cannot be allocated is a failure of the run (status 1 from the
    /// launcher), not a usage error (status 2); parameters the workload refuses are.
    #[test]
    fn workload_errors_are_failures_unless_they_are_parameters() {
        let oom = Error::of_workload(locus_bench::Error::OutOfMemory {
            what: "the sequential reference".into(),
            bytes: 1 << 40,
        });
        assert!(matches!(oom, Error::Workload(_)), "{oom:?}");
        assert!(
            oom.to_string().contains("the sequential reference"),
            "{oom}"
        );
        let params = Error::of_workload(locus_bench::Error::Params("--size: 0".into()));
        assert!(
            matches!(params, Error::Config(ref m) if m == "--size: 0"),
            "{params:?}"
        );
    }
}
