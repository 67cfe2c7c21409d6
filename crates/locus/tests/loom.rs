//! Loom models of Locus's own synchronisation protocols: each runs the runtime's real
//! protocol code (built on loom's types by `--cfg loom`, module `sync`) under every
//! interleaving loom explores, up to a preemption bound. What each model checks and how
//! to run them: `tests/README.md`.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p locus --test loom --release
//! ```
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use locus::completion::Completion;
use locus::counts::{Readers, VersionCounts};
use locus::sleep::Sleep;
use locus::task_state::TaskState;

/// Preemptions explored when `LOOM_MAX_PREEMPTIONS` does not say.
const DEFAULT_PREEMPTIONS: usize = 3;

/// Checks `f` under loom, bounded by `LOOM_MAX_PREEMPTIONS` or [`DEFAULT_PREEMPTIONS`].
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(DEFAULT_PREEMPTIONS);
    }
    builder.check(f);
}

// ---- The task state word (graph/task_state.rs) ----

/// What the activator of a ready task does before and while running it: the placement
/// policy reads the job (`Activated::describe`), then a worker takes it.
fn activate(task: &TaskState<Vec<u32>>, activations: &AtomicUsize) {
    activations.fetch_add(1, Ordering::Relaxed);
    // SAFETY: this thread made the task ready and has not handed it to anyone.
    assert_eq!(unsafe { task.job_unshared() }, &[7, 8]);
    assert_eq!(task.take_job().as_deref(), Some(&[7, 8][..]));
}

/// Two dependences of a task are satisfied on two threads while its submitter still
/// reads the job (registering it with its versions) and then releases its guard:
/// exactly one of the three sees the task become ready, and its take of the job is
/// ordered after the submitter's read (loom checks every access to the job's cell).
#[test]
fn dependences_satisfied_concurrently_activate_once() {
    model(|| {
        let task = Arc::new(TaskState::new(vec![7u32, 8], 2));
        let activations = Arc::new(AtomicUsize::new(0));
        let producers: Vec<_> = (0..2)
            .map(|_| {
                let (task, activations) = (task.clone(), activations.clone());
                thread::spawn(move || {
                    if task.satisfy_one() {
                        activate(&task, &activations);
                    }
                })
            })
            .collect();
        // The submitter: it reads the job while it holds the guard, then releases it.
        // SAFETY: the guard (the `+ 1` of `new`) is still held.
        assert_eq!(unsafe { task.job_unshared() }.len(), 2);
        if task.satisfy_one() {
            activate(&task, &activations);
        }
        for p in producers {
            p.join().unwrap();
        }
        assert_eq!(activations.load(Ordering::Relaxed), 1);
        assert_eq!(task.take_job(), None, "the job is taken once");
    });
}

/// The submitter finds one of a task's two dependences satisfied as it registers
/// them and releases it with its guard in one count (`satisfy(2)`), while a producer
/// satisfies the other: exactly one of the two sees the task become ready, and its
/// take of the job is ordered after the submitter's read.
#[test]
fn dependences_released_with_the_guard_activate_once() {
    model(|| {
        let task = Arc::new(TaskState::new(vec![7u32, 8], 2));
        let activations = Arc::new(AtomicUsize::new(0));
        let producer = {
            let (task, activations) = (task.clone(), activations.clone());
            thread::spawn(move || {
                if task.satisfy_one() {
                    activate(&task, &activations);
                }
            })
        };
        // SAFETY: the guard (the `+ 1` of `new`) is still held.
        assert_eq!(unsafe { task.job_unshared() }.len(), 2);
        if task.satisfy(2) {
            activate(&task, &activations);
        }
        producer.join().unwrap();
        assert_eq!(activations.load(Ordering::Relaxed), 1);
        assert_eq!(task.take_job(), None, "the job is taken once");
    });
}

/// Two workers call `take_job` on one task while its last dependence is satisfied:
/// neither takes it before it is ready, and exactly one call, theirs or a late one
/// after both, gets the job.
#[test]
fn take_job_race_gives_the_job_to_one_caller() {
    model(|| {
        let task = Arc::new(TaskState::new(String::from("body"), 1));
        assert!(!task.satisfy_one(), "the guard is not the last count");
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let task = task.clone();
                thread::spawn(move || task.take_job())
            })
            .collect();
        assert!(
            task.satisfy_one(),
            "the last dependence makes the task ready"
        );
        let taken: Vec<String> = workers
            .into_iter()
            .filter_map(|w| w.join().unwrap())
            .collect();
        let late = task.take_job();
        assert_eq!(taken.len() + usize::from(late.is_some()), 1);
        assert_eq!(taken.first().or(late.as_ref()).unwrap(), "body");
    });
}

// ---- The end of a run (graph/completion.rs) ----

/// A task panics and fails the run while another task finishes, and the thread that
/// ran the program waits for the run: the waiter wakes (never sleeps forever), then
/// sees the run failed with the panic's error and nothing outstanding; exactly one of
/// the two tasks is the last and wakes it.
#[test]
fn failed_run_drains_and_wakes_the_waiter_once() {
    model(|| {
        let run = Arc::new(Completion::<&'static str>::default());
        run.task_submitted();
        run.task_submitted();
        let panicked = {
            let run = run.clone();
            thread::spawn(move || {
                // `exec::start`: the body's panic is caught and fails the run.
                run.fail("task `a` panicked");
                run.task_finished()
            })
        };
        let other = {
            let run = run.clone();
            thread::spawn(move || {
                // `exec::start`: a task of a failed run skips its body, but finishes.
                let _skipped = run.is_failed();
                run.task_finished()
            })
        };
        run.wait_done();
        assert_eq!(run.outstanding(), 0);
        assert!(run.is_failed(), "the waiter sees the failure");
        assert_eq!(run.take_error(), Some("task `a` panicked"));
        let last = [panicked.join().unwrap(), other.join().unwrap()];
        assert_eq!(last.iter().filter(|&&l| l).count(), 1, "{last:?}");
    });
}

/// Two tasks fail the run at once: the first error recorded is kept, the other dropped,
/// and the run drains.
#[test]
fn concurrent_failures_keep_one_error() {
    model(|| {
        let run = Arc::new(Completion::<usize>::default());
        run.task_submitted();
        run.task_submitted();
        let tasks: Vec<_> = (0..2)
            .map(|i| {
                let run = run.clone();
                thread::spawn(move || {
                    run.fail(i);
                    run.task_finished()
                })
            })
            .collect();
        run.wait_done();
        assert!(run.is_failed());
        assert!(matches!(run.take_error(), Some(0 | 1)));
        assert_eq!(run.take_error(), None);
        let last: Vec<bool> = tasks.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(last.iter().filter(|&&l| l).count(), 1);
    });
}

/// Two tasks finish at once while a third submits a child before finishing, as tasks
/// holding no reference count on their run do: exactly one of them, the last, is
/// asked to keep the run alive, and before its decrement (the waiter has not woken
/// yet); the waiter wakes once every task has finished.
#[test]
fn only_the_last_finisher_keeps_the_run_alive() {
    model(|| {
        let run = Arc::new(Completion::<()>::default());
        run.task_submitted();
        run.task_submitted();
        let kept = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..2)
            .map(|i| {
                let (run, kept) = (run.clone(), kept.clone());
                thread::spawn(move || {
                    if i == 0 {
                        // A running task submits a child, which finishes after it.
                        run.task_submitted();
                    }
                    let last = run.task_finished_with(|| {
                        assert_ne!(run.outstanding(), 0, "kept before the last decrement");
                        kept.fetch_add(1, Ordering::Relaxed);
                    });
                    if i == 0 {
                        // The child.
                        return last
                            | run.task_finished_with(|| {
                                kept.fetch_add(1, Ordering::Relaxed);
                            });
                    }
                    last
                })
            })
            .collect();
        one_last_finisher(&run, tasks, &kept);
    });
}

/// Waits for `run`, whose finishers are `threads` (each returning whether it was the
/// last): exactly one was, and it alone kept the run alive (`kept`).
fn one_last_finisher(
    run: &Completion<()>,
    threads: Vec<thread::JoinHandle<bool>>,
    kept: &AtomicUsize,
) {
    run.wait_done();
    assert_eq!(run.outstanding(), 0);
    let last: Vec<bool> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(last.iter().filter(|&&l| l).count(), 1, "{last:?}");
    assert_eq!(kept.load(Ordering::Relaxed), 1);
}

/// One worker gives back two finished tasks it held back (`graph::run`, `Finished`) in
/// one decrement while another finishes a task at once: exactly one of them, the last,
/// keeps the run alive and wakes the waiter, once both have.
#[test]
fn finished_tasks_given_back_at_once_end_the_run_once() {
    model(|| {
        let run = Arc::new(Completion::<()>::default());
        for _ in 0..3 {
            run.task_submitted();
        }
        let kept = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = [2, 1]
            .into_iter()
            .map(|k| {
                let (run, kept) = (run.clone(), kept.clone());
                thread::spawn(move || {
                    run.tasks_finished_with(k, || {
                        assert_ne!(run.outstanding(), 0, "kept before the last decrement");
                        kept.fetch_add(1, Ordering::Relaxed);
                    })
                })
            })
            .collect();
        one_last_finisher(&run, workers, &kept);
    });
}

// ---- Sleeping and waking workers (engine/threads/sleep.rs) ----

/// One queued task: a producer publishes it, a worker takes it.
struct OneTask(AtomicBool);

impl OneTask {
    fn publish(&self) {
        // Release, as a queue push: the task's contents before it. A read-modify-write
        // rather than a store: loom can let a later `swap` read a value older than a
        // plain store that happens before it (tokio-rs/loom#254, a false alarm).
        self.0.swap(true, Ordering::Release);
    }

    fn take(&self) -> bool {
        self.0.swap(false, Ordering::Acquire)
    }
}

/// The idle loop of a worker (`WorkerThread::idle`, README "Going to sleep"), one
/// search round long, until `take` gives it a task: search first if `search` and it
/// may, and register as a sleeper on finding nothing; a sleeper looks once more, then
/// stays awake or waits; a woken worker searches. Finding work, a searcher stops
/// searching and, the last one while a worker sleeps, wakes one, as the mechanism does
/// (`Mechanism::found_work`). Returns `false` if `done` ended its wait instead.
fn idle_until_it_runs(
    sleep: &Sleep,
    w: usize,
    search: bool,
    take: impl Fn() -> bool,
    done: &AtomicBool,
) -> bool {
    let mut searching = search && sleep.start_searching();
    loop {
        if searching && take() {
            if sleep.stop_searching() {
                sleep.wake_any();
            }
            return true;
        }
        sleep.prepare(w, searching);
        if take() {
            if sleep.cancel(w) {
                sleep.wake_any();
            }
            return true;
        }
        searching = sleep.wait(w, done, true);
        if done.load(Ordering::Acquire) {
            if searching {
                sleep.stop_searching();
            }
            return false;
        }
    }
}

/// [`idle_until_it_runs`] without searching first, over one task.
fn worker_until_it_runs(sleep: &Sleep, w: usize, work: &OneTask, terminate: &AtomicBool) {
    assert!(idle_until_it_runs(
        sleep,
        w,
        false,
        || work.take(),
        terminate
    ));
}

/// A worker goes to sleep while a producer publishes a task and announces it (as a
/// deque push with `owner` `None`, or a mailbox push to the worker): the worker wakes or
/// sees the task, so it always runs it. A lost wake-up leaves the worker asleep forever,
/// which loom reports as a deadlock.
fn no_lost_wake_up(announce: fn(&Sleep)) {
    model(move || {
        let sleep = Arc::new(Sleep::new(1));
        let terminate = Arc::new(AtomicBool::new(false));
        let work = Arc::new(OneTask(AtomicBool::new(false)));
        let worker = {
            let (sleep, work, terminate) = (sleep.clone(), work.clone(), terminate.clone());
            thread::spawn(move || worker_until_it_runs(&sleep, 0, &work, &terminate))
        };
        work.publish();
        announce(&sleep);
        worker.join().unwrap();
    });
}

#[test]
fn sleep_no_lost_wake_up_deque_push() {
    no_lost_wake_up(|sleep| sleep.new_work(None));
}

#[test]
fn sleep_no_lost_wake_up_mailbox_push() {
    no_lost_wake_up(|sleep| sleep.new_work(Some(0)));
}

#[test]
fn sleep_no_lost_wake_up_strict_queue() {
    no_lost_wake_up(|sleep| sleep.new_work_for(&[0]));
}

/// Two workers go to sleep while a producer publishes two tasks, one at a time, each
/// announced to any worker: each worker runs one, so no announcement is lost even when
/// the other worker is asleep or about to be.
#[test]
fn sleep_two_workers_two_tasks() {
    model(|| {
        let sleep = Arc::new(Sleep::new(2));
        let terminate = Arc::new(AtomicBool::new(false));
        let tasks = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let (sleep, tasks, terminate) = (sleep.clone(), tasks.clone(), terminate.clone());
                thread::spawn(move || {
                    let take = || {
                        tasks
                            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                            .is_ok()
                    };
                    assert!(idle_until_it_runs(&sleep, w, false, take, &terminate));
                })
            })
            .collect();
        for _ in 0..2 {
            tasks.fetch_add(1, Ordering::Release);
            sleep.new_work(None);
        }
        for w in workers {
            w.join().unwrap();
        }
    });
}

/// [`idle_until_it_runs`], searching first, over one task; the worker that runs it
/// ends the model's run: `done`, then every sleeper woken. Returns whether it ran it.
fn idle_worker(sleep: &Sleep, w: usize, work: &OneTask, done: &AtomicBool) -> bool {
    if !idle_until_it_runs(sleep, w, true, || work.take(), done) {
        return false;
    }
    done.store(true, Ordering::Release);
    sleep.wake_all();
    true
}

/// Two idle workers, of which at most one searches, while a producer publishes one
/// task any worker may take and announces it (`announce(true)`: no wake-up while a
/// worker searches). Whatever the interleaving, a worker runs the task: when the
/// announcement saw a searcher and skipped the wake-up, the searcher's move to the
/// sleepers is followed by a look that finds the task. A lost wake-up leaves both
/// workers asleep, which loom reports as a deadlock.
#[test]
fn sleep_no_wake_up_while_searching_loses_none() {
    model(|| {
        let sleep = Arc::new(Sleep::new(2));
        let done = Arc::new(AtomicBool::new(false));
        let work = Arc::new(OneTask(AtomicBool::new(false)));
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let (sleep, work, done) = (sleep.clone(), work.clone(), done.clone());
                thread::spawn(move || idle_worker(&sleep, w, &work, &done))
            })
            .collect();
        work.publish();
        sleep.new_work(None);
        let ran: usize = workers
            .into_iter()
            .map(|w| usize::from(w.join().unwrap()))
            .sum();
        assert_eq!(ran, 1);
    });
}

/// A worker going to sleep while the runtime shuts down (sets `terminate`, then
/// `wake_all`) never sleeps through the shutdown.
#[test]
fn sleep_termination_wakes_every_worker() {
    model(|| {
        let sleep = Arc::new(Sleep::new(1));
        let terminate = Arc::new(AtomicBool::new(false));
        let worker = {
            let (sleep, terminate) = (sleep.clone(), terminate.clone());
            thread::spawn(move || loop {
                sleep.prepare(0, false);
                if terminate.load(Ordering::SeqCst) {
                    sleep.cancel(0);
                    return;
                }
                sleep.wait(0, &terminate, false);
            })
        };
        terminate.store(true, Ordering::SeqCst);
        sleep.wake_all();
        worker.join().unwrap();
    });
}

// ---- Counts of versions and readers (data/counts.rs) ----

/// Versions created and dropped on two threads: the live count returns to what it was,
/// and the peak is at least every live count a creator saw and at most the true
/// maximum. (Under loom every thread counts in the shared atomics: the per-thread
/// slots, a load and a store of one thread, are not a protocol between threads.)
#[test]
fn version_counts_live_and_peak() {
    model(|| {
        let counts = Arc::new(VersionCounts::default());
        counts.version_created(true);
        let creators: Vec<_> = (0..2)
            .map(|_| {
                let counts = counts.clone();
                thread::spawn(move || {
                    counts.version_created(true);
                    let seen = counts.live();
                    counts.version_dropped();
                    seen
                })
            })
            .collect();
        let seen: Vec<usize> = creators.into_iter().map(|c| c.join().unwrap()).collect();
        assert_eq!(counts.live(), 1);
        assert_eq!(counts.created(), 3);
        let peak = counts.peak();
        assert!(
            seen.iter().all(|&s| s <= peak) && peak <= 3,
            "{seen:?} {peak}"
        );
    });
}

/// A run starts (resetting the peak) while another thread creates a version, with one
/// version alive and the peak at `peak` before: the peak never ends below the versions
/// alive.
fn reset_racing_with_creation(peak: usize) {
    model(move || {
        let counts = Arc::new(VersionCounts::default());
        for _ in 0..peak {
            counts.version_created(true);
        }
        for _ in 1..peak {
            counts.version_dropped();
        }
        let creator = {
            let counts = counts.clone();
            thread::spawn(move || counts.version_created(true))
        };
        counts.reset_peak();
        creator.join().unwrap();
        assert_eq!(counts.live(), 2);
        assert!(counts.peak() >= 2, "peak {} below live 2", counts.peak());
    });
}

/// The creation raises the peak (one version alive, peak one).
#[test]
fn version_counts_reset_racing_with_creation() {
    reset_racing_with_creation(1);
}

/// The old peak already covers the creation, which skips raising it: the reset still
/// leaves the peak at the versions alive.
#[test]
fn version_counts_reset_racing_with_creation_below_peak() {
    reset_racing_with_creation(2);
}

/// The last readers of a shared version finish while the writer that supersedes it is
/// submitted (registers as waiting for them, then releases its guard): exactly one of
/// them releases the writer, which becomes ready once, never twice and never not at
/// all.
#[test]
fn last_reader_and_next_writer_release_it_once() {
    model(|| {
        let readers = Arc::new(Readers::<Arc<TaskState<&'static str>>>::default());
        // Two readers bound under the datum's lock, before the writer supersedes it.
        readers.add_reader();
        readers.add_reader();
        // The writer waits for the readers (one dependence) and its guard.
        let writer = Arc::new(TaskState::new("write", 1));
        let activations = Arc::new(AtomicUsize::new(0));
        let release = |w: &TaskState<&str>, activations: &AtomicUsize| {
            if w.satisfy_one() {
                activations.fetch_add(1, Ordering::Relaxed);
                assert_eq!(w.take_job(), Some("write"));
            }
        };
        let finishing: Vec<_> = (0..2)
            .map(|_| {
                let (readers, activations) = (readers.clone(), activations.clone());
                thread::spawn(move || {
                    // `exec::finish` of a reader.
                    for w in readers.reader_done() {
                        release(&w, &activations);
                    }
                })
            })
            .collect();
        // `exec::submit` of the writer.
        if !readers.add_release_waiter(writer.clone()) {
            assert!(!writer.satisfy_one(), "the guard is still held");
        }
        release(&writer, &activations);
        for f in finishing {
            f.join().unwrap();
        }
        assert_eq!(activations.load(Ordering::Relaxed), 1);
        assert_eq!(writer.take_job(), None);
        // No reader is left: a later writer does not wait.
        assert!(!readers.add_release_waiter(writer.clone()));
    });
}
