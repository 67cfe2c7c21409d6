//! The `threads` engine: one pinned OS thread per worker, each with a Chase-Lev deque
//! (crossbeam-deque), a bounded multi-producer mailbox for pushed tasks, and a
//! sleep/wake protocol (`README.md` beside this file).
//!
//! # Startup
//!
//! 1. The runtime chooses the CPUs of the workers (one worker per CPU) and their nodes.
//! 2. Each worker gets a LIFO deque; its stealer and an empty mailbox go to the
//!    registry.
//! 3. The policy computes each worker's steal plan from the topology.
//! 4. The registry (pool-wide state) is built and shared.
//! 5. One thread per worker starts: it pins itself to its CPU (the real CPU a virtual
//!    CPU maps to), installs itself as the thread's executor, reports success or the
//!    error, and enters its main loop, where it soon sleeps.
//! 6. The engine waits for every report; if one failed, it shuts the started workers
//!    down and returns the error.
//! 7. The observer, if any, is attached ([`Observer::attach`]); if it refuses, the
//!    workers are shut down and the error returned.
//!
//! # Observation
//!
//! With an [`Observer`] installed, a worker reads the clock before [`start`] and after
//! it (the body) and calls [`Observer::task`] before [`finish`] publishes the task's
//! outputs, so every call of a run happens before the run ends. Without one, the only
//! cost is one predictable branch per task (`WorkerThread::run_task`). Times are
//! nanoseconds since the engine's workers started.
//!
//! [`start`]: crate::engine::start
//! [`finish`]: crate::engine::finish
//!
//! # Shutdown
//!
//! Runs when the runtime is dropped; no run is in progress then (`run` borrows the
//! runtime until its last task has finished), so every queue is empty.
//!
//! 1. Set `terminate` (SeqCst).
//! 2. Wake every sleeping worker; one about to wait sees `terminate` under its slot's
//!    lock and does not.
//! 3. Each worker finds no work, sees `terminate`, and leaves its loop.
//! 4. Join every thread.

pub(crate) mod sleep;
mod worker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_deque::{Stealer, Worker};
use crossbeam_queue::{ArrayQueue, SegQueue};
use crossbeam_utils::CachePadded;
use locus_mem::pool::Pools;

use super::mechanism::Mechanism;
use super::{Engine, EngineSetup};
use crate::error::Error;
use crate::graph::{CurrentExecutor, TaskRef};
use crate::observe::{EngineView, Observer};
use crate::sched::LoadView;
use sleep::Sleep;
use worker::WorkerThread;

/// Capacity of each worker's mailbox of pushed tasks.
pub(crate) const MAILBOX_CAPACITY: usize = 1024;

/// What other workers see of a worker (its own thread's state is in `WorkerThread`).
pub(crate) struct WorkerShared {
    /// The stealing end of the worker's deque.
    stealer: Stealer<TaskRef>,
    /// Tasks pushed to this worker (work-pushing, non-strict hints); thieves may take
    /// them too.
    mailbox: ArrayQueue<TaskRef>,
    /// Tasks only this worker may run (strict worker hints, the root of a run).
    private: SegQueue<TaskRef>,
}

/// Pool-wide state, shared by all workers.
pub(crate) struct Registry {
    /// Routing, find-work and wake-up choices, shared with the simulator
    /// ([`Mechanism`]); the topology, the node of each worker, the steal plans and the
    /// placement policy are its.
    mechanism: Mechanism,
    /// Tasks only workers of the node may run (strict node hints).
    node_private: Vec<CachePadded<SegQueue<TaskRef>>>,
    /// The global queue of breadth-first scheduling.
    global: CachePadded<SegQueue<TaskRef>>,
    shared: Vec<CachePadded<WorkerShared>>,
    /// Who sleeps and who searches (`README.md`; at most half the workers search, at
    /// least one).
    sleep: Sleep,
    pools: Arc<Pools>,
    terminate: AtomicBool,
    /// Who sees every task, if anyone (module doc, "Observation").
    observer: Option<Arc<dyn Observer>>,
    /// The origin of the observer's times.
    clock: Instant,
}

impl Registry {
    /// Nanoseconds since the workers started (the observer's clock).
    fn now_ns(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }
}

/// A started `threads` engine; dropping it shuts the workers down.
pub(crate) struct ThreadsEngine {
    registry: Arc<Registry>,
    handles: Vec<JoinHandle<()>>,
}

/// Aborts the process if a worker unwinds: user panics are caught at the task boundary,
/// so an unwinding worker is a runtime bug, and aborting beats a deadlock.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        eprintln!("locus: a worker thread panicked inside the runtime; aborting");
        std::process::abort();
    }
}

impl ThreadsEngine {
    /// Starts one worker per entry of `setup.worker_node`, pinned to `worker_os_cpu`
    /// (startup steps in the module doc).
    pub(crate) fn start(
        setup: EngineSetup,
        worker_os_cpu: Vec<Option<usize>>,
        pools: Arc<Pools>,
    ) -> Result<Self, Error> {
        let mechanism = Mechanism::for_setup(&setup);
        let observer = setup.observer;
        let n = setup.worker_node.len();
        crate::graph::free_list::workers_started(n);
        let deques: Vec<Worker<TaskRef>> = (0..n).map(|_| Worker::new_lifo()).collect();
        let shared = deques
            .iter()
            .map(|d| {
                CachePadded::new(WorkerShared {
                    stealer: d.stealer(),
                    mailbox: ArrayQueue::new(MAILBOX_CAPACITY),
                    private: SegQueue::new(),
                })
            })
            .collect();
        let nodes = setup.topology.num_nodes();
        let registry = Arc::new(Registry {
            mechanism,
            node_private: (0..nodes)
                .map(|_| CachePadded::new(SegQueue::new()))
                .collect(),
            global: CachePadded::new(SegQueue::new()),
            shared,
            sleep: Sleep::new(n),
            pools,
            terminate: AtomicBool::new(false),
            observer,
            clock: Instant::now(),
        });

        let (report, reports) = mpsc::channel::<Result<(), Error>>();
        let mut engine = ThreadsEngine {
            registry: registry.clone(),
            handles: Vec::with_capacity(n),
        };
        for (index, deque) in deques.into_iter().enumerate() {
            let registry = registry.clone();
            let report = report.clone();
            let cpu = worker_os_cpu[index];
            let stack_bytes = setup.worker_stack_bytes;
            let spawned = std::thread::Builder::new()
                .name(format!("locus-worker-{index}"))
                .stack_size(stack_bytes)
                .spawn(move || {
                    let stack = crate::engine::StackGuard::here(stack_bytes);
                    if let Some(cpu) = cpu {
                        if let Err(e) = locus_mem::placement::pin_thread_to_cpu(cpu) {
                            let _ = report.send(Err(Error::Startup {
                                worker: index,
                                message: format!("cannot pin to CPU {cpu}: {e}"),
                            }));
                            return;
                        }
                    }
                    let worker = WorkerThread::new(index, deque, registry, stack);
                    // SAFETY: `worker` lives on this thread's stack until after the
                    // guard is dropped at the end of this closure.
                    let _current = unsafe { CurrentExecutor::enter(&worker) };
                    let _ = report.send(Ok(()));
                    drop(report);
                    let abort = AbortOnUnwind;
                    worker.main_loop();
                    std::mem::forget(abort);
                });
            match spawned {
                Ok(handle) => engine.handles.push(handle),
                Err(e) => {
                    return Err(Error::Startup {
                        worker: index,
                        message: e.to_string(),
                    })
                }
            }
        }
        drop(report);
        for _ in 0..n {
            match reports.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(Error::Startup {
                        worker: 0,
                        message: "a worker exited during startup".into(),
                    })
                }
            }
        }
        if let Some(observer) = &registry.observer {
            observer
                .attach(&EngineView {
                    engine: "threads",
                    topology: registry.mechanism.topology().name(),
                    worker_node: registry.mechanism.worker_node(),
                    pools: Some(&registry.pools),
                })
                .map_err(Error::Config)?;
        }
        Ok(engine)
    }
}

// SAFETY: `run` returns only after `wait_done`, i.e. once the run's outstanding count
// is zero: every task, the root included, has been finished by a worker.
unsafe impl Engine for ThreadsEngine {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn worker_node(&self) -> &[usize] {
        self.registry.mechanism.worker_node()
    }

    fn pools(&self) -> &Arc<Pools> {
        &self.registry.pools
    }

    /// Hands the root task to worker 0, strictly (the control program runs on a
    /// worker, as the root task of paper 1 section 2.1, on a known node), and waits.
    fn run(&self, root: TaskRef) -> f64 {
        let run = root.run;
        let observer = self.registry.observer.as_deref();
        let start = Instant::now();
        if let Some(o) = observer {
            let at_ns = start.duration_since(self.registry.clock).as_nanos() as u64;
            if let Err(e) = crate::observe::guarded("run_started", || o.run_started(at_ns)) {
                root.fail_run_with(e);
            }
        }
        self.registry.shared[0].private.push(root);
        // Only worker 0 may take it.
        if self.registry.sleep.announce(false) {
            self.registry.sleep.wake(0);
        }
        run.wait_done();
        let end = Instant::now();
        if let Some(o) = observer {
            // Every task called the observer before finishing (module doc), and
            // `wait_done` returned after the last one finished.
            let at_ns = end.duration_since(self.registry.clock).as_nanos() as u64;
            if let Err(e) = crate::observe::guarded("run_finished", || o.run_finished(at_ns)) {
                run.fail(e);
            }
        }
        end.duration_since(start).as_secs_f64()
    }
}

impl LoadView for Registry {
    /// Tasks queued for worker `w`: its deque, its mailbox and its private queue.
    fn load(&self, w: usize) -> usize {
        let s = &self.shared[w];
        s.stealer.len() + s.mailbox.len() + s.private.len()
    }
}

impl Drop for ThreadsEngine {
    fn drop(&mut self) {
        // Shutdown steps 1-4 (module doc).
        self.registry.terminate.store(true, Ordering::SeqCst);
        self.registry.sleep.wake_all();
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}
