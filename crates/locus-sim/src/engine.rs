//! The simulated engine: workers with the `threads` engine's queues and states, driven
//! by one event loop on the thread that calls [`Engine::run`].
//!
//! A worker is `Busy` (running a task, or stealing one), `Searching` (sweeping its
//! victims, spin round after spin round), `Asleep`, or `Waking` (woken, looking for
//! work after the wake-up latency). Its queues are the real engine's: a deque (the
//! owner takes the newest, thieves the oldest), a bounded mailbox of pushed tasks, a
//! private queue (strict worker hints, the root), and one strict queue per node
//! (`queues.rs`). The find-work chain, the routing of activated tasks and the choice
//! of whom to wake are not here: they are [`Mechanism`]'s, the code the `threads`
//! engine runs too, driven over the modelled queues; this file carries their effects
//! out in simulated time, so that the two engines fill their reports alike.
//!
//! A task's life in simulated time (README, "A task's time"):
//!
//! 1. it becomes visible in a queue (`Arrive`) when its activator has paid for the
//!    decision (and the creation, when a body spawned it);
//! 2. a worker takes it (`Look`; after the steal attempts it made, `Begin`), runs or
//!    skips its body inline at that instant, and pays the start and allocation costs;
//! 3. its memory flows run one after another on the controllers of its data's nodes
//!    (`Memory`, `FlowEnd`), its compute part alongside;
//! 4. it ends (`End`): its outputs are published, which activates its successors.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use locus::engine::mechanism::Queue;
use locus::engine::{
    finish, start, Activated, Bodies, CurrentExecutor, Engine, EngineEvent, EngineSetup, Executor,
    Mechanism, StackGuard, Started, TaskRef,
};
use locus::observe::{
    guarded, Both, EngineView, Observer, Ready, TaskBytes, TaskSpan, TraceRecorder,
};
use locus::sched::Domain;
use locus::{Error, Topology};
use locus_mem::pool::Pools;
use locus_topo::NodeId;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::builder::{BodiesChoice, Sim};
use crate::cache::Caches;
use crate::costs::{Costs, TaskPath};
use crate::events::EventQueue;
use crate::memory::{rate_of, Memory, Path, UNITS_PER_BYTE};
use crate::probe::{Probe, Span, Summary};
use crate::queues::{Charges, Effects, Model, Recorded};

/// What does not change during a run.
struct Shared {
    seed: u64,
    bodies: BodiesChoice,
    costs: Costs,
    /// Sees every task (`RuntimeBuilder::observer` or `trace`, and the recorder of
    /// [`Sim::trace`]), in simulated time.
    observer: Option<Arc<dyn Observer>>,
    probe: Option<Probe>,
    topology: Topology,
    worker_node: Vec<usize>,
    /// Routing, find-work and wake-up choices: the `threads` engine's.
    mechanism: Mechanism,
    /// What the queue operations cost.
    charges: Charges,
    /// Access-cost factors `[executing node][data node]`.
    read_factor: Vec<Vec<f64>>,
    write_factor: Vec<Vec<f64>>,
    /// Whether a flow of a core of `[node]` to the memory of `[data node]` takes the
    /// data node's far port (`Costs::far_link_bandwidth_gb_s`).
    far: Vec<Vec<bool>>,
    pools: Arc<Pools>,
    /// Bytes of stack of the thread a run is simulated on
    /// (`RuntimeBuilder::worker_stack_size`): every body runs there, nested when one
    /// waits.
    stack_bytes: usize,
}

/// A started simulator; runs happen inside [`Engine::run`].
pub(crate) struct SimEngine {
    shared: Arc<Shared>,
    /// Runs so far: run `k` is seeded with `seed + k`.
    runs: Mutex<u64>,
}

impl SimEngine {
    pub(crate) fn new(sim: Sim, setup: EngineSetup) -> Result<Self, Error> {
        let mut pools = setup.pools;
        if sim.bodies == BodiesChoice::Fixed(Bodies::Skip) {
            // No body touches a buffer: blocks are only accounted and hold no memory.
            pools.accounting_only = true;
            pools.bind = false;
            pools.first_touch = sim.first_touch;
        }
        let pools = Pools::new(pools)
            .map_err(|e| Error::Config(format!("cannot create the memory pools: {e}")))?;
        let topology = setup.topology;
        let costs = sim
            .costs
            .unwrap_or_else(|| Costs::for_topology(topology.name()));
        let nodes = topology.num_nodes();
        let factor = |f: fn(&Topology, NodeId, NodeId) -> f64| -> Vec<Vec<f64>> {
            (0..nodes)
                .map(|i| {
                    (0..nodes)
                        .map(|j| f(&topology, NodeId(i as u32), NodeId(j as u32)))
                        .collect()
                })
                .collect()
        };
        let read_factor = factor(Topology::read_cost);
        let write_factor = factor(Topology::write_cost);
        let far = far_pairs(&read_factor, costs.far_link_bandwidth_gb_s > 0.0);
        let attempt_ns: Vec<Vec<u64>> = read_factor
            .iter()
            .map(|row| {
                row.iter()
                    .map(|f| (costs.steal_attempt_ns as f64 * f).round() as u64)
                    .collect()
            })
            .collect();
        let mechanism = Mechanism::new(
            &topology,
            &setup.worker_node,
            setup.ready_policy,
            setup.steal,
            setup.last_victim_first,
            setup.steal_half,
        );
        let stack_bytes = setup.worker_stack_bytes;
        let worker_node = setup.worker_node;
        let workers = worker_node.len();
        let plans = (0..workers).map(|w| mechanism.plan(w));
        let charges = Charges {
            sweep_ns: plans
                .clone()
                .enumerate()
                .map(|(w, plan)| {
                    plan.classes()
                        .iter()
                        .flatten()
                        .map(|&v| attempt_ns[worker_node[w]][worker_node[v]])
                        .sum()
                })
                .collect(),
            victims: plans.map(|plan| plan.len()).collect(),
            attempt_ns,
            push_ns: costs.push_ns,
            mailbox_capacity: costs.mailbox_capacity,
        };
        if let Some(path) = &sim.trace {
            // Fails at `build`, clearly, rather than after the run; a trace already
            // there stays until the run replaces it.
            locus::observe::check_replaceable(path).map_err(|e| {
                Error::Config(format!("cannot write the trace to {}: {e}", path.display()))
            })?;
        }
        // `Sim::trace` records through the runtime's trace recorder: one format, the
        // same arguments, from both engines.
        let observer: Option<Arc<dyn Observer>> = match (setup.observer, &sim.trace) {
            (observer, None) => observer,
            (None, Some(path)) => Some(Arc::new(TraceRecorder::to_file(path.clone()))),
            (Some(observer), Some(path)) => Some(Arc::new(Both(
                observer,
                Arc::new(TraceRecorder::to_file(path.clone())),
            ))),
        };
        if let Some(observer) = &observer {
            observer
                .attach(&EngineView {
                    engine: "sim",
                    topology: topology.name(),
                    worker_node: &worker_node,
                    pools: Some(&pools),
                })
                .map_err(Error::Config)?;
        }
        Ok(SimEngine {
            shared: Arc::new(Shared {
                seed: sim.seed,
                bodies: sim.bodies,
                costs,
                observer,
                probe: sim.probe,
                topology,
                worker_node,
                mechanism,
                charges,
                read_factor,
                write_factor,
                far,
                pools,
                stack_bytes,
            }),
            runs: Mutex::new(0),
        })
    }
}

/// `[node][data node]`: whether a core of `node` reaches the memory of `data node`
/// through the data node's far port, that is, when the machine has far ports
/// (`with_far_ports`) and `node` is not one of the data node's nearest nodes (those at
/// the smallest read factor from it: on the SGI UV2000, the other socket of its blade).
fn far_pairs(read_factor: &[Vec<f64>], with_far_ports: bool) -> Vec<Vec<bool>> {
    let nodes = read_factor.len();
    let mut far = vec![vec![false; nodes]; nodes];
    if !with_far_ports {
        return far;
    }
    for data in 0..nodes {
        let nearest = (0..nodes)
            .filter(|&n| n != data)
            .map(|n| read_factor[n][data])
            .fold(f64::INFINITY, f64::min);
        for (node, row) in far.iter_mut().enumerate() {
            row[data] = node != data && read_factor[node][data] > nearest;
        }
    }
    far
}

// SAFETY: `run` steps the simulation until no event is left. Every activated task is
// queued as an arrival event and run by a simulated worker, inline on this thread, with
// `start` and then `finish`; a task not ready yet waits for one of those. So when the
// event queue is empty every task of the run has finished (the runtime checks it too).
unsafe impl Engine for SimEngine {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn worker_node(&self) -> &[usize] {
        &self.shared.worker_node
    }

    fn pools(&self) -> &Arc<Pools> {
        &self.shared.pools
    }

    fn skips_bodies(&self) -> bool {
        self.shared.bodies == BodiesChoice::Fixed(Bodies::Skip)
    }

    /// Simulates the run to its end; returns the simulated time at which the last task
    /// ended. The run is simulated on a thread of its own with the workers' stack size:
    /// every body runs there, nested when one waits, and nesting that would leave less
    /// than a quarter of the stack (at most 1 MiB) fails the run, as on `threads`.
    fn run(&self, root: TaskRef) -> f64 {
        let stack = self.shared.stack_bytes;
        std::thread::scope(|scope| {
            let spawned = std::thread::Builder::new()
                .name("locus-sim".into())
                .stack_size(stack)
                .spawn_scoped(scope, || {
                    self.run_here(root.clone(), StackGuard::here(stack))
                });
            match spawned {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|payload| std::panic::resume_unwind(payload)),
                // No thread to be had: the calling thread, whose stack is not known.
                Err(_) => self.run_here(root.clone(), StackGuard::unknown()),
            }
        })
    }
}

impl SimEngine {
    /// Simulates the run on the calling thread, whose stack `stack` guards.
    fn run_here(&self, root: TaskRef, stack: StackGuard) -> f64 {
        let run = {
            let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
            *runs += 1;
            *runs - 1
        };
        let machine = Rc::new(Machine::new(self.shared.clone(), run, stack));
        if let Some(observer) = &self.shared.observer {
            if let Err(e) = guarded("run_started", || observer.run_started(0)) {
                root.fail_run_with(e);
            }
        }
        let root_task = root.clone();
        machine.inject_root(root);
        while machine.step() {}
        let (summary, spans) = machine.conclude();
        let makespan = summary.makespan_ns;
        if let Some(observer) = &self.shared.observer {
            if let Err(e) = guarded("run_finished", || observer.run_finished(makespan)) {
                root_task.fail_run_with(e);
            }
        }
        if let Some(probe) = &self.shared.probe {
            probe.publish(summary, spans.filter(|_| probe.keeps_spans()));
        }
        makespan as f64 * 1e-9
    }
}

/// What the simulator keeps about a queued task.
#[derive(Clone, Copy, Debug)]
struct Meta {
    id: u64,
    activated_by: Option<u64>,
    /// Spawned by its activator's body (rather than made ready by its end).
    spawned: bool,
    ready_ns: u64,
    /// Declares no access: a control program, whose body always runs.
    control: bool,
    /// The runtime path it takes, for its costs per task.
    path: TaskPath,
    /// Buffers its start will allocate (outputs with deferred allocation, initial
    /// versions read first).
    allocs: u64,
}

#[derive(Clone)]
struct Queued {
    task: TaskRef,
    meta: Meta,
}

impl Recorded for Queued {
    fn record(&self, worker: usize, event: EngineEvent) {
        self.task.record(worker, event);
    }

    fn fail_run(&self, message: String) {
        self.task.fail_run(message);
    }
}

enum Event {
    /// A task becomes visible in a queue.
    Arrive(Queue, Queued),
    /// A worker looks for work (spin round `round` since it last had some).
    Look { worker: usize, round: u32 },
    /// A worker takes a task it stole.
    Begin { worker: usize, task: Queued },
    /// A worker's task starts moving its bytes.
    Memory { worker: usize },
    /// A controller's earliest flow may have ended.
    FlowEnd { node: usize, epoch: u64 },
    /// A worker's task ends.
    End { worker: usize },
    /// A worker waiting in a body has paid for what that body and the tasks it helped
    /// did so far (`Machine::catch_up`): nothing happens, time reaches it.
    Paid,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Activity {
    Busy,
    Searching,
    Asleep,
    Waking,
}

/// What a running task moves to or from one node in one direction.
#[derive(Clone, Copy, Debug)]
struct Segment {
    node: usize,
    /// Memory units.
    volume: u64,
    /// Most units per ns the core draws from that node (latency-bound).
    cap: u64,
    /// From a core of this node or another, reading or writing.
    path: Path,
}

/// A task between its start and its end.
struct Running {
    meta: Meta,
    started: Started,
    start_ns: u64,
    compute_ns: u64,
    /// When its compute part ends: it overlaps the memory part.
    compute_until: u64,
    /// Its flows, started together when its memory part starts.
    segments: Vec<Segment>,
    /// Flows started and not ended.
    flows_left: usize,
    isolated_ns: u64,
    data_node: usize,
    bytes: u64,
    body_ran: bool,
}

struct WorkerState {
    activity: Activity,
    running: Option<Running>,
    /// When the worker is done with the `finish` of the last task it ran (activating
    /// its successors costs it time after the task's end).
    finished_at: u64,
}

struct State {
    now: u64,
    events: EventQueue<Event>,
    rng: SmallRng,
    workers: Vec<WorkerState>,
    /// Every worker's queues, and who sleeps.
    queues: Model<Queued>,
    memory: Memory,
    caches: Caches,
    next_id: u64,
    skipping: bool,
    last_end: u64,
    summary: Summary,
    spans: Option<Vec<Span>>,
    /// When each submitted, not yet activated task was created, and what its creation
    /// was charged, by task address: a task cannot become ready before its creation,
    /// even if its inputs were produced earlier in simulated time. Only looked up and
    /// removed, never iterated.
    created_at: std::collections::HashMap<usize, (u64, u64)>,
    /// The run has activated a replayed task: it is a replay's run, whose control
    /// program submits replayed tasks only, each charged the replay's creation.
    replaying: bool,
}

/// The code of a task (its body, or its `finish`) running inline: whose it is and the
/// simulated time it has used so far.
struct Inline {
    worker: usize,
    task: u64,
    cursor: u64,
    in_body: bool,
}

/// One run's machine.
struct Machine {
    shared: Arc<Shared>,
    state: RefCell<State>,
    /// Nested when a body helps (`help_while`) and so runs other tasks' code.
    inline: RefCell<Vec<Inline>>,
    /// How deep bodies may nest on the simulation's thread (`SimEngine::run`).
    stack: StackGuard,
}

/// A worker as the dependence tracker sees it; made for each piece of inline code.
struct SimWorker {
    index: usize,
    node: usize,
    machine: Rc<Machine>,
}

impl Executor for SimWorker {
    fn worker(&self) -> usize {
        self.index
    }

    fn node(&self) -> usize {
        self.node
    }

    fn pools(&self) -> &Arc<Pools> {
        &self.machine.shared.pools
    }

    fn activate(&self, task: Activated) {
        self.machine.activate(self.index, task);
    }

    fn help_while(&self, blocked: &dyn Fn() -> bool) {
        self.machine.help_while(self.index, blocked);
    }

    fn submitted(&self, task: &locus::engine::Task) {
        self.machine.submitted(self.index, task);
    }
}

/// What the find-work chain found.
enum Found {
    /// A task, and the time spent stealing it.
    Task(Queued, u64),
    /// Nothing, after this much time spent trying.
    Nothing(u64),
}

impl Machine {
    fn new(shared: Arc<Shared>, run: u64, stack: StackGuard) -> Self {
        let nodes = shared.topology.num_nodes();
        let keep_spans = shared.probe.as_ref().is_some_and(Probe::keeps_spans);
        let state = State {
            now: 0,
            events: EventQueue::new(),
            rng: SmallRng::seed_from_u64(shared.seed.wrapping_add(run)),
            workers: shared
                .worker_node
                .iter()
                .map(|_| WorkerState {
                    activity: Activity::Searching,
                    running: None,
                    finished_at: 0,
                })
                .collect(),
            queues: Model::new(&shared.worker_node, nodes),
            memory: Memory::new(
                nodes,
                shared.costs.node_bandwidth_gb_s,
                shared.costs.link_bandwidth_gb_s,
                shared.costs.far_link_bandwidth_gb_s,
                shared.costs.write_occupancy,
            )
            .with_link_packets(
                shared.costs.line_bytes,
                shared.costs.link_header_bytes,
                shared.costs.link_back_bytes,
            ),
            caches: Caches::new(nodes, shared.costs.llc_bytes),
            next_id: 1,
            skipping: false,
            last_end: 0,
            summary: Summary::default(),
            spans: keep_spans.then(Vec::new),
            created_at: std::collections::HashMap::new(),
            replaying: false,
        };
        Machine {
            shared,
            state: RefCell::new(state),
            inline: RefCell::new(Vec::new()),
            stack,
        }
    }

    /// The root goes to worker 0's private queue at time 0, as on `threads`; every
    /// worker starts looking for work then.
    fn inject_root(&self, root: TaskRef) {
        let mut st = self.state.borrow_mut();
        let meta = Meta {
            id: 0,
            activated_by: None,
            spawned: false,
            ready_ns: 0,
            control: true,
            path: TaskPath::Lean,
            allocs: 0,
        };
        st.queues.sent(Queue::Private(0));
        st.events.push(
            0,
            Event::Arrive(Queue::Private(0), Queued { task: root, meta }),
        );
        for w in 0..self.shared.worker_node.len() {
            st.events.push(
                0,
                Event::Look {
                    worker: w,
                    round: 0,
                },
            );
        }
    }

    /// Processes the earliest event; `false` when none is left.
    fn step(self: &Rc<Self>) -> bool {
        let event = {
            let mut st = self.state.borrow_mut();
            match st.events.pop() {
                None => return false,
                Some((at, event)) => {
                    debug_assert!(at >= st.now, "events go forward in time");
                    st.now = at;
                    st.summary.events += 1;
                    event
                }
            }
        };
        match event {
            Event::Arrive(queue, task) => self.arrive(queue, task),
            Event::Look { worker, round } => self.look(worker, round),
            Event::Begin { worker, task } => self.begin(worker, task),
            Event::Memory { worker } => self.start_flows(worker),
            Event::FlowEnd { node, epoch } => self.flow_end(node, epoch),
            Event::End { worker } => self.end(worker),
            Event::Paid => {}
        }
        true
    }

    /// A task becomes visible in `queue` and wakes the sleeper nearest to it that may
    /// take it (the mechanism's choice, as on `threads`).
    fn arrive(&self, queue: Queue, task: Queued) {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        st.queues.arrive(queue, task);
        let owner = match queue {
            Queue::NodePrivate(n) => self.shared.mechanism.workers_of_node(n)[0],
            Queue::Deque(w)
            | Queue::Mailbox(w)
            | Queue::Private(w)
            | Queue::Global(w)
            | Queue::Next(w) => w,
        };
        let mut view = st.queues.view(owner, &mut st.rng, &self.shared.charges);
        self.shared
            .mechanism
            .wake_for(&mut view, self.shared.mechanism.wakes(queue));
        let effects = view.done();
        let now = st.now;
        self.carry_out(st, now, 0, effects);
    }

    /// Carries out what a call of the mechanism by a worker, started at `at`, left:
    /// pushed tasks arrive once paid for (never before `created`, when the task was
    /// created), woken workers look for work after the wake-up latency.
    fn carry_out(&self, st: &mut State, at: u64, created: u64, effects: Effects<Queued>) {
        st.summary.steal_attempts += effects.steal_attempts;
        for (after, queue, mut task) in effects.arrivals {
            // A task made ready by a producer that finished before the task was created
            // (in simulated time) arrives when it is created.
            let arrive = (at + after).max(created);
            task.meta.ready_ns = arrive;
            if let Some(observer) = &self.shared.observer {
                // A task queued again (pushed on) is ready already: the first call counts.
                let observed = guarded("ready", || {
                    observer.ready(&Ready {
                        task: task.meta.id,
                        by: task.meta.activated_by,
                        at_ns: arrive,
                    })
                });
                if let Err(e) = observed {
                    task.task.fail_run_with(e);
                }
            }
            st.events.push(arrive, Event::Arrive(queue, task));
        }
        for (w, after) in effects.woken {
            self.wake(st, w, at + after);
        }
    }

    /// Sleeping worker `w`, woken at time `at`, looks for work after the latency.
    fn wake(&self, st: &mut State, w: usize, at: u64) {
        st.workers[w].activity = Activity::Waking;
        st.summary.wakeups += 1;
        st.events.push(
            at + self.shared.costs.wake_ns,
            Event::Look {
                worker: w,
                round: 0,
            },
        );
    }

    /// Worker `w` looks for work; finding none, it spins (sweeps again after a pause)
    /// and, after the last round, sleeps.
    fn look(self: &Rc<Self>, w: usize, round: u32) {
        if self
            .inline
            .borrow()
            .iter()
            .any(|f| f.worker == w && f.in_body)
        {
            // `w` is in a body that helps (`help_while`) and ran a task in place.
            return;
        }
        if self.state.borrow().workers[w].running.is_some() {
            // A look left from a task `w` ran while helping: `w` is busy with the task
            // whose body was waiting, and looks again when that one ends.
            return;
        }
        let found = {
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            st.workers[w].activity = Activity::Searching;
            let found = self.find_work(st, w);
            match &found {
                Found::Task(..) => st.workers[w].activity = Activity::Busy,
                Found::Nothing(spent) => {
                    // A worker searches (counted, as on `threads`) after its first look
                    // finds nothing, if few enough search, or from its wake-up; one
                    // that may not search sleeps at once.
                    let searching =
                        st.queues.is_searching(w) || (round == 0 && st.queues.start_searching(w));
                    if searching && round < self.shared.costs.spin_rounds {
                        let at = st.now + spent + self.shared.costs.yield_ns;
                        st.events.push(
                            at,
                            Event::Look {
                                worker: w,
                                round: round + 1,
                            },
                        );
                    } else {
                        st.workers[w].activity = Activity::Asleep;
                        st.queues.fall_asleep(w);
                    }
                }
            }
            found
        };
        if let Found::Task(task, spent) = found {
            if spent == 0 {
                self.begin(w, task);
            } else {
                let mut st = self.state.borrow_mut();
                let at = st.now + spent;
                st.events.push(at, Event::Begin { worker: w, task });
            }
        }
    }

    /// Worker `w` runs the mechanism's find-work chain over the modelled queues; the
    /// task found is taken at once and the thief starts it when its steal attempts are
    /// paid.
    fn find_work(&self, st: &mut State, w: usize) -> Found {
        let mut view = st.queues.view(w, &mut st.rng, &self.shared.charges);
        let found = self.shared.mechanism.find_work(&mut view);
        let effects = view.done();
        let spent = effects.spent;
        let now = st.now;
        self.carry_out(st, now, 0, effects);
        match found {
            Some(task) => Found::Task(task, spent),
            None => Found::Nothing(spent),
        }
    }

    /// Whether the next body to start runs or is skipped.
    fn bodies_for(&self, st: &mut State, meta: &Meta) -> Bodies {
        if meta.control {
            return Bodies::Run;
        }
        match self.shared.bodies {
            BodiesChoice::Fixed(b) => b,
            BodiesChoice::Auto { skip_above_bytes } => {
                if st.summary.declared_bytes > skip_above_bytes {
                    st.skipping = true;
                }
                if st.skipping {
                    Bodies::Skip
                } else {
                    Bodies::Run
                }
            }
        }
    }

    /// Worker `w` takes `task` now: runs or skips its body inline, then pays its start
    /// and allocation costs before its bytes move.
    fn begin(self: &Rc<Self>, w: usize, task: Queued) {
        let Queued { task, meta } = task;
        // Every body runs on this thread, nested when one waits.
        self.stack.admit(&task, w);
        let (bodies, now) = {
            let mut st = self.state.borrow_mut();
            let bodies = self.bodies_for(&mut st, &meta);
            match bodies {
                Bodies::Run => st.summary.bodies_run += 1,
                Bodies::Skip => st.summary.bodies_skipped += 1,
            }
            (bodies, st.now)
        };
        let costs = &self.shared.costs;
        let node = self.shared.worker_node[w];
        self.inline.borrow_mut().push(Inline {
            worker: w,
            task: meta.id,
            cursor: now + costs.per_task_ns(costs.task_start_ns, meta.path),
            in_body: true,
        });
        let worker = SimWorker {
            index: w,
            node,
            machine: self.clone(),
        };
        let started = {
            // SAFETY: `worker` lives on this stack frame until after the guard, which
            // is dropped at the end of this block, on this thread.
            let _current = unsafe { CurrentExecutor::enter(&worker) };
            start(&worker, task, bodies)
        };
        let frame = self
            .inline
            .borrow_mut()
            .pop()
            .expect("the frame pushed above");
        // A replay allocates no buffer per task: its rotated versions' buffers were
        // allocated once, at its first iteration (docs/guide.md, "Recorded graphs").
        let allocs = if meta.path == TaskPath::Replayed {
            0
        } else {
            meta.allocs
        };
        let ready_at = frame.cursor + allocs * costs.alloc_ns;
        let mut st = self.state.borrow_mut();
        let Some(started) = started else {
            // The job was taken already: nothing to run.
            st.events.push(
                ready_at,
                Event::Look {
                    worker: w,
                    round: 0,
                },
            );
            return;
        };
        // Pages that moved as the task started (next touch, or a migration task) cost
        // the topology's migration model (Broquedis et al., MaMI: `a + b x pages`,
        // measured as the time of one `move_pages` call) on this worker, before its
        // accesses: the call returns once the pages are in place.
        let migrated = started.migrated_pages();
        let ready_at = if migrated == 0 {
            ready_at
        } else {
            st.summary.migrated_pages += migrated;
            let ns = self
                .shared
                .topology
                .migration_cost_ns(migrated * locus_mem::region::PAGE as u64);
            ready_at + ns.round() as u64
        };
        let nodes = self.shared.topology.num_nodes();
        // Bytes per (node, direction): `[node][0]` read, `[node][1]` written.
        let mut moved = vec![[0u64; 2]; nodes];
        let mut bytes_on = vec![0u64; nodes];
        let mut bytes = 0u64;
        let mut hits = 0u64;
        let accesses: Vec<_> = started.keyed_accesses().collect();
        // Reads first, then writes: a task's reads see its node's cache as it was
        // before the task, its writes leave the new contents there.
        for input in [true, false] {
            for &(a, key) in accesses.iter().filter(|(a, _)| a.input == input) {
                let data = a.node.unwrap_or(node);
                let to_memory = if input {
                    let hit = st.caches.read(node, key, a.bytes);
                    hits += hit;
                    a.bytes - hit
                } else {
                    st.caches.write(node, key, a.bytes);
                    if costs.write_allocate {
                        // The lines are read for ownership before they are written.
                        moved[data][0] += a.bytes;
                    }
                    a.bytes
                };
                moved[data][usize::from(!input)] += to_memory;
                bytes_on[data] += a.bytes;
                bytes += a.bytes;
            }
        }
        st.summary.accessed_bytes += bytes;
        st.summary.cache_hit_bytes += hits;
        let compute_ns = started
            .cost_hint()
            .unwrap_or_else(|| costs.compute_ns(started.name(), bytes));
        // One flow per node and direction, each capped by the core's misses in flight
        // at its latency.
        let mut segments = Vec::new();
        for dir in 0..2 {
            for (data, m) in moved.iter().enumerate() {
                if m[dir] == 0 {
                    continue;
                }
                let latency = if dir == 0 {
                    costs.read_latency_ns * self.shared.read_factor[node][data]
                } else {
                    costs.write_latency_ns * self.shared.write_factor[node][data]
                };
                segments.push(Segment {
                    node: data,
                    volume: m[dir] * UNITS_PER_BYTE,
                    cap: rate_of(costs.core_bandwidth_gb_s(latency)),
                    path: Path::of(node, data, dir == 1, self.shared.far[node][data]),
                });
            }
        }
        // The flows run together, as a core's loads and stores interleave in its loop:
        // the core's misses in flight are shared by its streams in proportion to their
        // volumes (Little's law over the mixed latencies), so alone they all end
        // together, after the sum of each one's time at its own cap.
        let together_ns: f64 = segments
            .iter()
            .map(|g| g.volume as f64 / g.cap as f64)
            .sum();
        for g in &mut segments {
            g.cap = ((g.volume as f64 / together_ns).ceil() as u64).max(1);
        }
        let memory_alone = st
            .memory
            .alone_ns(segments.iter().map(|g| (g.node, g.volume, g.cap, g.path)));
        let data_node = (0..nodes)
            .max_by_key(|&n| (bytes_on[n], std::cmp::Reverse(n)))
            .filter(|&n| bytes_on[n] > 0)
            .unwrap_or(node);
        st.workers[w].running = Some(Running {
            meta,
            started,
            start_ns: now,
            compute_ns,
            compute_until: 0,
            segments,
            flows_left: 0,
            isolated_ns: compute_ns.max(memory_alone),
            data_node,
            bytes,
            body_ran: bodies == Bodies::Run,
        });
        st.events.push(ready_at, Event::Memory { worker: w });
    }

    /// Starts the memory part of worker `w`'s task (all its flows) and its compute
    /// part, which overlaps it.
    fn start_flows(&self, w: usize) {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let now = st.now;
        let running = st.workers[w].running.as_mut().expect("a task is running");
        running.compute_until = now + running.compute_ns;
        let segments = std::mem::take(&mut running.segments);
        running.flows_left = segments.len();
        if segments.is_empty() {
            let at = now.max(running.compute_until);
            st.events.push(at, Event::End { worker: w });
            return;
        }
        for g in segments {
            let c = st.memory.start(g.node, g.volume, g.cap, g.path, w, now);
            st.events.push(
                c.at,
                Event::FlowEnd {
                    node: g.node,
                    epoch: c.epoch,
                },
            );
        }
    }

    /// One of worker `w`'s flows ended: when it was the last, its task ends once its
    /// compute part is done too.
    fn flow_done(st: &mut State, w: usize) {
        let now = st.now;
        let running = st.workers[w].running.as_mut().expect("a task is running");
        running.flows_left -= 1;
        if running.flows_left == 0 {
            let at = now.max(running.compute_until);
            st.events.push(at, Event::End { worker: w });
        }
    }

    /// A controller's earliest flows may have ended; a task whose last flow it was ends
    /// (once its compute part is done).
    fn flow_end(&self, node: usize, epoch: u64) {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let now = st.now;
        let mut ended = Vec::new();
        if let Some(c) = st.memory.complete(node, epoch, now, &mut ended) {
            st.events.push(
                c.at,
                Event::FlowEnd {
                    node,
                    epoch: c.epoch,
                },
            );
        }
        for w in ended {
            Self::flow_done(st, w);
        }
    }

    /// Worker `w`'s task ends: its outputs are published (activating its successors,
    /// each paid for by `w`), then `w` looks for work.
    fn end(self: &Rc<Self>, w: usize) {
        let (running, now) = {
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            let now = st.now;
            let running = st.workers[w].running.take().expect("a task is running");
            st.last_end = st.last_end.max(now);
            if let Some(observer) = &self.shared.observer {
                let node = self.shared.worker_node[w];
                let observed = guarded("task", || {
                    observer.task(&TaskSpan {
                        id: running.meta.id,
                        name: running.started.name(),
                        worker: w,
                        node,
                        start_ns: running.start_ns,
                        end_ns: now,
                        bytes: TaskBytes::of(node, running.started.accesses()),
                    })
                });
                if let Err(e) = observed {
                    running.started.task().fail_run_with(e);
                }
            }
            if let Some(spans) = &mut st.spans {
                spans.push(Span {
                    id: running.meta.id,
                    name: running.started.name().to_string(),
                    worker: w,
                    node: self.shared.worker_node[w],
                    activated_by: running.meta.activated_by,
                    spawned: running.meta.spawned,
                    ready_ns: running.meta.ready_ns,
                    start_ns: running.start_ns,
                    end_ns: now,
                    isolated_ns: running.isolated_ns,
                    data_node: running.data_node,
                    bytes: running.bytes,
                    body_ran: running.body_ran,
                });
            }
            (running, now)
        };
        self.inline.borrow_mut().push(Inline {
            worker: w,
            task: running.meta.id,
            cursor: now,
            in_body: false,
        });
        let worker = SimWorker {
            index: w,
            node: self.shared.worker_node[w],
            machine: self.clone(),
        };
        finish(&worker, running.started);
        let frame = self
            .inline
            .borrow_mut()
            .pop()
            .expect("the frame pushed above");
        let mut st = self.state.borrow_mut();
        st.workers[w].finished_at = frame.cursor;
        st.events.push(
            frame.cursor,
            Event::Look {
                worker: w,
                round: 0,
            },
        );
    }

    /// A task became ready in code running inline on worker `w` (a body spawning it,
    /// or a `finish` publishing its input): the mechanism places and routes it, as on
    /// `threads`, and it arrives in its queue once `w` has paid for it.
    fn activate(&self, w: usize, task: Activated) {
        let shared = &*self.shared;
        let costs = &shared.costs;
        let ready = task.describe(true);
        let mut inline = self.inline.borrow_mut();
        let frame = inline.last_mut().expect("activation from inline code");
        debug_assert_eq!(frame.worker, w);
        // Only a replay submits tasks with a home (`Domain::Home`): the run is a
        // replay's, whose control program submits nothing else (`submitted`).
        let replayed = matches!(ready.affinity, Some((Domain::Home(_), _)));
        let path = TaskPath::of(ready.accesses.len(), replayed);
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        st.replaying |= replayed;
        let mut created = st
            .created_at
            .remove(&(&*task as *const locus::engine::Task as usize));
        if let Some((at, charged)) = created.filter(|&(at, _)| at == frame.cursor) {
            // Submitted just now in this frame (`submitted` cannot see the task's
            // declarations or hint): a task declaring nothing was submitted by the lean
            // path, the first replayed task of a run by the replay's.
            let refund = charged.saturating_sub(costs.per_task_ns(costs.task_create_ns, path));
            frame.cursor -= refund;
            created = Some((at - refund, charged));
        }
        frame.cursor += costs.per_task_ns(costs.activate_ns, path);
        let bytes: u64 = ready.accesses.iter().map(|a| a.bytes).sum();
        st.summary.declared_bytes += bytes;
        let id = st.next_id;
        st.next_id += 1;
        let meta = Meta {
            id,
            activated_by: Some(frame.task),
            spawned: frame.in_body,
            ready_ns: 0,
            control: ready.accesses.is_empty(),
            path,
            allocs: ready.accesses.iter().filter(|a| a.node.is_none()).count() as u64,
        };
        let mut view = st.queues.view(w, &mut st.rng, &shared.charges);
        if !frame.in_body {
            // Made ready by a finishing task: it may become `w`'s next task.
            view = view.finishing();
        }
        shared
            .mechanism
            .activate_described(&mut view, task, &ready, |task| Queued { task, meta });
        let effects = view.done();
        let at = frame.cursor;
        frame.cursor += effects.spent;
        self.carry_out(st, at, created.map_or(0, |(at, _)| at), effects);
    }

    /// A body (or the control program) on worker `w` submitted `task`: the creation
    /// costs `w` time, and the task cannot be ready before it.
    fn submitted(&self, w: usize, task: &locus::engine::Task) {
        let mut inline = self.inline.borrow_mut();
        let frame = inline.last_mut().expect("submission from inline code");
        debug_assert_eq!(frame.worker, w);
        // A task declaring nothing, which takes the lean path, or the first replayed
        // task of a run, is activated next in this frame, which gives the difference
        // back (`activate`).
        let mut st = self.state.borrow_mut();
        let path = if st.replaying {
            TaskPath::Replayed
        } else {
            TaskPath::Full
        };
        let charged = self
            .shared
            .costs
            .per_task_ns(self.shared.costs.task_create_ns, path);
        frame.cursor += charged;
        st.created_at.insert(
            task as *const locus::engine::Task as usize,
            (frame.cursor, charged),
        );
    }

    /// A body on worker `w` waits for the submission window: simulated time goes on
    /// (other workers run tasks) until `blocked` is false. When nothing else is left to
    /// happen, `w` runs one of its own queued tasks in place, as the `threads` engine's
    /// helping worker does.
    fn help_while(self: &Rc<Self>, w: usize, blocked: &dyn Fn() -> bool) {
        while blocked() {
            self.catch_up(w);
            // Between two events, a worker waiting in the outermost body it runs (a
            // control program throttled by the window) takes the work of its own queues
            // (tasks only it may run among them: strict hints, its mailbox) as the
            // `threads` engine's waiting worker does, instead of leaving them until the
            // rest of the machine is idle. Deeper waits (a task waiting for its children
            // while helping another) keep to helping when the machine is idle: bodies
            // run inline here, so helping from every depth would nest without bound.
            if self.inline.borrow().len() <= 1 && self.state.borrow().workers[w].running.is_none() {
                if let Some(task) = self.own_work(w) {
                    self.begin(w, task);
                    continue;
                }
            }
            if self.step() {
                continue;
            }
            if !self.help_in_place(w) {
                // Nothing can make progress: the window cannot drain. Submission goes
                // on over the bound rather than deadlocking.
                break;
            }
        }
        // A task `w` began while helping (its body ran, its memory and compute are
        // still in flight) ends before the waiting body resumes: a worker runs one
        // task at a time.
        while self.state.borrow().workers[w].running.is_some() {
            if !self.step() {
                break;
            }
        }
        let (now, finished_at) = {
            let st = self.state.borrow();
            (st.now, st.workers[w].finished_at)
        };
        let mut inline = self.inline.borrow_mut();
        let frame = inline.last_mut().expect("helping from inline code");
        frame.cursor = frame.cursor.max(now).max(finished_at);
    }

    /// Before worker `w`, waiting in a body, takes another task, simulated time reaches
    /// what it has paid for: the body's work so far (its submissions) and the `finish`
    /// of the last task it helped. One worker thread submits and runs tasks in turn
    /// (the `threads` engine's waiting worker helps on its own thread): a task it helps
    /// starts after its submissions, never beside them. Other workers' events up to
    /// then happen meanwhile.
    fn catch_up(self: &Rc<Self>, w: usize) {
        let paid = {
            let inline = self.inline.borrow();
            let frame = inline.last().expect("helping from inline code");
            debug_assert_eq!(frame.worker, w);
            let mut st = self.state.borrow_mut();
            let paid = frame.cursor.max(st.workers[w].finished_at);
            if paid <= st.now {
                return;
            }
            st.events.push(paid, Event::Paid);
            paid
        };
        while self.state.borrow().now < paid {
            if !self.step() {
                break;
            }
        }
    }

    /// A task of worker `w`'s own queues and its node's (no stealing), taken now.
    fn own_work(&self, w: usize) -> Option<Queued> {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let mut view = st.queues.view(w, &mut st.rng, &self.shared.charges);
        let found = self.shared.mechanism.find_own_work(&mut view);
        let effects = view.done();
        let now = st.now;
        self.carry_out(st, now, 0, effects);
        found
    }

    /// With no event left, worker `w` (busy in a body) runs a task of its own queues
    /// from start to end: nothing else is happening, so it runs alone and time jumps
    /// by its cost. Returns whether there was one.
    fn help_in_place(self: &Rc<Self>, w: usize) -> bool {
        let task = {
            let mut st = self.state.borrow_mut();
            match self.find_work(&mut st, w) {
                Found::Task(task, _) => Some(task),
                Found::Nothing(_) => None,
            }
        };
        let Some(task) = task else {
            return false;
        };
        // The helper's own running slot is free (its body has not become a running
        // task yet); run the helped task through the normal path, draining its events.
        self.begin(w, task);
        while self.state.borrow().workers[w].running.is_some() {
            if !self.step() {
                break;
            }
        }
        // The helped task's end scheduled a look for `w`; `look` drops it while `w` is
        // still in its body.
        true
    }

    /// The summary and spans of the finished run.
    fn conclude(&self) -> (Summary, Option<Vec<Span>>) {
        let mut st = self.state.borrow_mut();
        st.summary.makespan_ns = st.last_end;
        (st.summary.clone(), st.spans.take())
    }
}

#[cfg(test)]
mod tests {
    use super::far_pairs;

    #[test]
    fn the_far_port_serves_every_node_but_the_nearest() {
        // Nodes 0 and 1 form a pair (factor 2), node 2 is farther (3) from both.
        let f = vec![
            vec![1.0, 2.0, 3.0],
            vec![2.0, 1.0, 3.0],
            vec![3.0, 3.0, 1.0],
        ];
        let far = far_pairs(&f, true);
        assert!(!far[0][0] && !far[1][0] && far[2][0]);
        assert!(!far[0][1] && far[2][1]);
        // Node 2's nearest are 0 and 1, at the same factor: neither is far.
        assert!(!far[0][2] && !far[1][2]);
        // Without far ports no flow is far.
        assert!(far_pairs(&f, false).iter().flatten().all(|&x| !x));
    }
}
