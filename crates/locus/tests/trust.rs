//! Soundness and honesty at the edges of the API: an engine that breaks its contract,
//! `fetch` racing with a run, sizes that overflow, closures that panic when dropped,
//! control tasks, and random programs of any declarations, which end and free
//! everything.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use locus::engine::{Engine, EngineFactory, EngineSetup, TaskRef, Threads};
use locus::{Config, Error, RegionPolicy, Runtime, Topology};
use locus_mem::pool::Pools;

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

/// Runs the test named `name` of this binary again in a child process with
/// `LOCUS_TEST_CHILD` set, and returns its exit status and standard error.
fn in_child(name: &str) -> (std::process::ExitStatus, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("LOCUS_TEST_CHILD", "1")
        .output()
        .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn is_child() -> bool {
    std::env::var_os("LOCUS_TEST_CHILD").is_some()
}

/// An engine that breaks the contract of [`Engine::run`]: it returns at once, leaving
/// the root task unrun.
struct ReturnsEarly(Box<dyn Engine>);

// SAFETY: deliberately broken, to show that the runtime aborts rather than go on. The
// root task is dropped unrun, so its body (which borrows the caller's stack) is never
// called after `run` returns.
unsafe impl Engine for ReturnsEarly {
    fn name(&self) -> &'static str {
        "returns-early"
    }
    fn worker_node(&self) -> &[usize] {
        self.0.worker_node()
    }
    fn pools(&self) -> &Arc<Pools> {
        self.0.pools()
    }
    fn run(&self, _root: TaskRef) -> f64 {
        0.0
    }
}

struct ReturnsEarlyFactory;

impl EngineFactory for ReturnsEarlyFactory {
    fn prepare_topology(&self, topology: Topology) -> Result<Topology, Error> {
        Threads.prepare_topology(topology)
    }
    fn start(self: Box<Self>, setup: EngineSetup) -> Result<Box<dyn Engine>, Error> {
        Ok(Box::new(ReturnsEarly(Box::new(Threads).start(setup)?)))
    }
}

#[test]
fn an_engine_that_returns_early_aborts_the_process() {
    if is_child() {
        let rt = Runtime::builder()
            .topology(Topology::from_spec("1x1").unwrap())
            .engine(ReturnsEarlyFactory)
            .build()
            .unwrap();
        let ran = AtomicBool::new(false);
        let _ = rt.run(|_| ran.store(true, Ordering::SeqCst));
        // Never reached: `run` must not return.
        println!("run returned; root ran: {}", ran.load(Ordering::SeqCst));
        std::process::exit(0);
    }
    let (status, stderr) = in_child("an_engine_that_returns_early_aborts_the_process");
    assert!(!status.success(), "the process went on: {stderr}");
    assert!(
        stderr.contains("engine `returns-early` broke its contract"),
        "no message: {stderr}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc_sigabrt()), "{stderr}");
    }
}

#[cfg(unix)]
fn libc_sigabrt() -> i32 {
    6
}

#[test]
fn fetch_from_another_thread_never_sees_a_partial_write() {
    for shared in [true, false] {
        let rt = runtime("2x1", Config::DsaOpt);
        let len = 1 << 14;
        let x = if shared {
            rt.shared::<u64>("x", len, RegionPolicy::Interleave)
                .unwrap()
        } else {
            rt.data::<u64>("x", len)
        };
        let done = AtomicBool::new(false);
        std::thread::scope(|t| {
            t.spawn(|| {
                for round in 1..=40u64 {
                    rt.run(|s| {
                        s.spawn("fill", x.write(), move |_, v| {
                            for e in v.iter_mut() {
                                *e = round;
                                std::hint::black_box(&*e);
                            }
                        })
                        .unwrap();
                    })
                    .unwrap();
                }
                done.store(true, Ordering::SeqCst);
            });
            let mut fetches = 0;
            while !done.load(Ordering::SeqCst) || fetches < 10 {
                // Refused while a run is in progress, never torn.
                let v = match rt.fetch(&x) {
                    Err(Error::RunInProgress { .. }) => continue,
                    v => v.unwrap(),
                };
                let first = v[0];
                assert!(
                    v.iter().all(|&e| e == first),
                    "shared: {shared}: torn contents: {first} then {:?}",
                    v.iter().find(|&&e| e != first)
                );
                fetches += 1;
            }
        });
        assert_eq!(rt.fetch(&x).unwrap(), vec![40; len]);
    }
}

#[test]
fn fetch_inside_a_task_is_an_error_not_a_deadlock() {
    let rt = runtime("1x1", Config::DsaOpt);
    let x = rt.data_from("x", &[5u32; 4]).unwrap();
    let result = std::sync::Mutex::new(None);
    rt.run(|_| *result.lock().unwrap() = Some(rt.fetch(&x)))
        .unwrap();
    let err = result.into_inner().unwrap().unwrap().unwrap_err();
    assert!(err.to_string().contains("inside a task"), "{err}");
    assert_eq!(rt.fetch(&x).unwrap(), vec![5; 4]);
}

#[test]
fn sizes_that_overflow_are_errors_naming_the_datum() {
    let rt = runtime("2x1", Config::DsaOpt);
    let huge = rt.data::<u64>("huge", usize::MAX);
    let err = rt.fetch(&huge).unwrap_err();
    assert!(
        err.to_string().contains("huge") && err.to_string().contains(&usize::MAX.to_string()),
        "{err}"
    );
    let refused = rt.run(|s| s.spawn("touch", huge.read(), |_, _| {}));
    let err = refused.unwrap_err().error;
    assert!(err.to_string().contains("overflow"), "{err}");

    // 2^61 + 48 elements of 8 bytes wrap to 384 bytes without checking: a task reading
    // elements 1000..2000 would get a view outside the buffer.
    let wraps = rt.data::<u64>("wraps", (1 << 61) + 48);
    assert_eq!(wraps.bytes(), usize::MAX);
    let outcome = rt.run(|s| {
        s.spawn("read", wraps.read_range(1000..2000), |_, v| {
            std::hint::black_box(v.iter().sum::<u64>());
        })
    });
    let err = outcome.unwrap_err().error;
    assert!(err.to_string().contains("wraps"), "{err}");

    for len in [usize::MAX, usize::MAX / 8, (isize::MAX as usize) + 1] {
        let err = rt
            .shared::<u8>("big-shared", len, RegionPolicy::Interleave)
            .unwrap_err();
        assert!(err.to_string().contains("big-shared"), "{err}");
    }
    let err = rt
        .shared::<u64>("big-shared", usize::MAX, RegionPolicy::Interleave)
        .unwrap_err();
    assert!(matches!(err, Error::Size { .. }), "{err}");
}

#[test]
fn fetching_a_datum_larger_than_memory_is_an_error() {
    let rt = runtime("1x1", Config::DsaOpt);
    let never_written = rt.data::<u64>("never-written", 1 << 40);
    match rt.fetch(&never_written) {
        Err(Error::OutOfMemory { task, bytes, .. }) => {
            assert_eq!(bytes, 8 << 40);
            assert!(task.contains("never-written"), "{task}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}

/// Panics when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("drop of a captured value");
    }
}

#[test]
fn a_closure_that_panics_when_dropped_unrun_fails_the_run() {
    for config in [Config::DsaBase, Config::DsaOpt, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let x = rt.data::<u64>("x", 16);
        let outcome = rt.run(|s| {
            s.spawn("fails", x.write(), |_, _| panic!("first failure"))
                .unwrap();
            let guard = PanicsOnDrop;
            // Waits for `fails`: by the time it starts the run has failed, so its body
            // is dropped unrun, and the drop panics.
            let _ = s.spawn("skipped", x.read(), move |_, _| {
                let _keep = &guard;
            });
        });
        let err = outcome.unwrap_err();
        assert!(
            err.error.to_string().contains("first failure"),
            "{config}: {}",
            err.error
        );
        // Everything was released with the last handle.
        drop(x);
        assert_eq!(rt.pool_bytes_in_use(), 0, "{config}");
        assert_eq!(rt.shared_bytes_in_use(), 0, "{config}");
    }
}

#[test]
fn a_control_task_orders_its_children_and_sees_no_buffer() {
    let rt = runtime("2x1", Config::DsaOpt);
    let token = rt.data::<u64>("token", 1);
    let x = rt.data::<u64>("x", 4);
    let y = rt.data::<u64>("y", 4);
    rt.run(|s| {
        let x1 = x.clone();
        s.spawn_control("make-x", token.write(), move |ctx| {
            ctx.scope()
                .spawn("x", x1.write(), |_, v| v.fill(3))
                .unwrap();
        })
        .unwrap();
        let (x2, y2) = (x.clone(), y.clone());
        s.spawn_control("make-y", token.read(), move |ctx| {
            ctx.scope()
                .spawn("y", (x2.read(), y2.write()), |_, (x, y)| {
                    for (o, i) in y.iter_mut().zip(x) {
                        *o = i * 2;
                    }
                })
                .unwrap();
        })
        .unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&y).unwrap(), vec![6; 4]);
}

#[test]
fn the_library_defaults_to_dsa_opt_and_a_bounded_window() {
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .build()
        .unwrap();
    assert_eq!(rt.config(), Config::DsaOpt);
    assert_eq!(rt.allocation(), locus::AllocMode::Deferred);
    let window = (locus::DEFAULT_WINDOW_PER_WORKER * rt.workers()).max(locus::DEFAULT_WINDOW_MIN);
    let report = rt.run(|_| ()).unwrap().report;
    let settings = serde_json::to_value(&report.settings).unwrap();
    assert_eq!(settings["window"], window.to_string(), "{settings}");

    // The window bounds what a long control program holds: under immediate allocation
    // every submitted writer holds a buffer until it runs.
    let peak = |window: Option<Option<usize>>| {
        let mut b = Runtime::builder()
            .topology(Topology::from_spec("2x1").unwrap())
            .config(Config::DsaBase);
        if let Some(w) = window {
            b = b.window_bound(w);
        }
        let rt = b.build().unwrap();
        let x = rt.data::<u64>("x", 512);
        let other = rt.data::<u64>("other", 1);
        let report = rt
            .run(|s| {
                // Holds the chain back while the control program submits.
                s.spawn("gate", x.write(), |_, v| {
                    std::thread::sleep(std::time::Duration::from_millis(500));
                    v.fill(0)
                })
                .unwrap();
                // Each step makes a version of `x`: a step of one read-write would
                // continue the version of the step before it (`data::version`,
                // "Chains of read-writes"), one version for the whole chain.
                for _ in 0..5000 {
                    s.spawn("step", (other.read(), x.read_write()), |_, (_, v)| {
                        v[0] += 1
                    })
                    .unwrap();
                }
            })
            .unwrap()
            .report;
        assert_eq!(rt.fetch(&x).unwrap()[0], 5000);
        report.versions.peak_live
    };
    let bounded = peak(None);
    assert!(
        bounded <= window + 8,
        "default window: {bounded} versions alive"
    );
    let unbounded = peak(Some(None));
    assert!(unbounded > 4000, "no window: {unbounded} versions alive");
}

#[test]
fn a_task_writing_a_datum_larger_than_memory_fails_the_run_cleanly() {
    for config in [Config::DsaBase, Config::DsaOpt] {
        let rt = runtime("2x1", config);
        let big = rt.data::<u8>("big", (isize::MAX as usize) / 2);
        let err = rt
            .run(|s| s.spawn("fill", big.write(), |_, v| v[0] = 1))
            .unwrap_err()
            .error;
        match err {
            Error::OutOfMemory { task, bytes, .. } => {
                assert_eq!(task, "fill", "{config}");
                assert_eq!(bytes, (isize::MAX as usize) / 2, "{config}");
            }
            other => panic!("{config}: expected OutOfMemory, got {other:?}"),
        }
        drop(big);
        assert_eq!(rt.pool_bytes_in_use(), 0, "{config}");
    }
}

#[test]
fn a_program_sees_where_its_data_live() {
    let rt = runtime("2x1", Config::DsaOpt);
    let x = rt.data::<u64>("x", 1024);
    let g = rt
        .shared::<u64>("g", 4 * 4096, RegionPolicy::Interleave)
        .unwrap();
    assert_eq!(
        rt.node_of(&x).unwrap(),
        None,
        "no memory before the first write"
    );
    rt.try_run(|s| {
        s.task("on-node-1", x.write())
            .affinity(locus::Affinity::node(1).strict())
            .spawn(|_, v| v.fill(1))
    })
    .unwrap();
    // Deferred allocation: the writer's node.
    assert_eq!(rt.node_of(&x).unwrap(), Some(1));
    assert_eq!(rt.bytes_per_node(&x).unwrap(), vec![0, 8192]);
    // Interleaved pages: half on each node.
    assert_eq!(rt.bytes_per_node(&g).unwrap(), vec![65536, 65536]);
}

/// Where a datum lives is asked between runs, of its own runtime: from inside a task
/// the question would wait for the run the task belongs to (it hung), and a handle of
/// another runtime names nodes that runtime may not have (it panicked).
#[test]
fn where_data_live_is_refused_inside_a_task_and_for_another_runtimes_handle() {
    let rt = Arc::new(runtime("4x1", Config::DsaOpt));
    let x = rt.data_from("x", &[1u64; 512]).unwrap();
    rt.migrate(&x, 3).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let (rt2, rt3, x2) = (rt.clone(), rt.clone(), x.clone());
    let running = std::thread::spawn(move || {
        let outcome = rt2.run(|s| {
            s.spawn("ask", (), move |_, ()| {
                let asked = (rt3.node_of(&x2), rt3.bytes_per_node(&x2));
                tx.send(asked).unwrap();
            })
            .unwrap()
        });
        outcome.map(|_| ()).map_err(|e| e.error.to_string())
    });
    let (node, bytes) = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the questions returned");
    for refused in [node.map(|_| ()), bytes.map(|_| ())] {
        let message = refused.unwrap_err().to_string();
        assert!(message.contains("not from inside a task"), "{message}");
    }
    // Once the run is over (during it, the query is refused: `misuse.rs`).
    running.join().unwrap().unwrap();
    assert_eq!(rt.node_of(&x).unwrap(), Some(3));

    let other = runtime("1x1", Config::DsaOpt);
    for refused in [
        other.node_of(&x).map(|_| ()),
        other.bytes_per_node(&x).map(|_| ()),
    ] {
        assert!(
            matches!(refused, Err(Error::ForeignData { .. })),
            "{refused:?}"
        );
    }
}

/// Every worker keeps its steal victims in order: a topology of tens of thousands of
/// CPUs took minutes to plan (and would have needed gigabytes) before any error. It is
/// refused at once, and fewer workers over it are fine.
#[test]
fn more_workers_than_a_runtime_holds_are_refused_at_once() {
    let big = Topology::from_spec("1024x64").unwrap();
    let started = std::time::Instant::now();
    let err = Runtime::builder()
        .topology(big.clone())
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("at most 4096"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let rt = Runtime::builder()
        .topology(big)
        .threads(64)
        .build()
        .unwrap();
    assert_eq!(rt.workers(), 64);
}

#[test]
fn try_run_gives_one_result_and_idle_nodes_are_named() {
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .threads(1)
        .build()
        .unwrap();
    assert_eq!(rt.nodes_without_workers(), vec![1]);
    let x = rt.data::<u64>("x", 1);
    let finished = rt
        .try_run(|s| s.spawn("w", x.write(), |_, v| v[0] = 3))
        .unwrap();
    let settings = serde_json::to_value(&finished.report.settings).unwrap();
    assert_eq!(settings["nodes_without_workers"], "1");
    let err = rt
        .try_run(|s| -> Result<(), Error> {
            s.spawn("w", x.write(), |_, v| v[0] = 4)?;
            Err(Error::Config("the control program gave up".into()))
        })
        .unwrap_err();
    assert!(err.to_string().contains("gave up"), "{err}");
    assert_eq!(err.report.tasks, 1);
}

#[test]
fn errors_can_be_cloned() {
    let rt = runtime("1x1", Config::DsaOpt);
    let huge = rt.data::<u64>("huge", usize::MAX);
    let err = rt.fetch(&huge).unwrap_err();
    let copy = err.clone();
    assert_eq!(err.to_string(), copy.to_string());
    let topo = Topology::from_spec("2x1:@/nonexistent/distances").unwrap_err();
    let error = Error::from(topo);
    assert_eq!(error.clone().to_string(), error.to_string());
}

/// The access lists of the random programs below.
type Lists = (
    Vec<locus::Read<u64>>,
    Vec<locus::Write<u64>>,
    Vec<locus::ReadWrite<u64>>,
    Vec<locus::Weak>,
    Vec<locus::Reduce<u64>>,
);

/// One to three random accesses to distinct data among `h[pool]`, described in `said`:
/// reads (of a range, too), writes, read-writes, weak accesses and reductions (into
/// `h[single]`, data of one stored segment), with no care for clashes between
/// overlapping parts. The lists, and the data they name.
fn random_lists(
    rng: &mut impl rand::Rng,
    h: &[locus::Data<u64>],
    pool: &[usize],
    single: &[usize],
    said: &mut String,
) -> (Lists, Vec<usize>) {
    let mut l: Lists = Default::default();
    let mut named: Vec<usize> = Vec::new();
    // One access in half the tasks: the more a task declares, the likelier a clash
    // refuses it and ends the run.
    let accesses = [1, 1, 1, 2, 2, 3][rng.random_range(0..6)];
    for _ in 0..accesses {
        let k = pool[rng.random_range(0..pool.len())];
        if named.contains(&k) {
            continue;
        }
        named.push(k);
        let what = match rng.random_range(0..8) {
            0 => {
                let a = rng.random_range(0..h[k].len());
                let b = rng.random_range(a..=h[k].len());
                l.0.push(h[k].read_range(a..b));
                format!("read {k} {a}..{b}")
            }
            1 => {
                l.1.push(h[k].write());
                format!("write {k}")
            }
            2 => {
                l.2.push(h[k].read_write());
                format!("read-write {k}")
            }
            weak @ (3 | 4 | 6) => {
                let (access, kind) = match weak {
                    3 => (h[k].weak_write(), "write"),
                    4 => (h[k].weak_read(), "read"),
                    _ => (h[k].weak_read_write(), "read-write"),
                };
                l.3.push(access);
                format!("weak {kind} {k}")
            }
            // Reductions into data of one stored segment (others are refused, and
            // are tested by name elsewhere).
            5 if single.contains(&k) => {
                l.4.push(h[k].reduce(0, |a, b| *a = a.wrapping_add(*b)));
                format!("reduce {k}")
            }
            _ => {
                l.0.push(h[k].read());
                format!("read {k}")
            }
        };
        said.push_str(&what);
        said.push_str("; ");
    }
    (l, named)
}

fn random_body(
    reads: Vec<&[u64]>,
    writes: Vec<&mut [u64]>,
    updates: Vec<&mut [u64]>,
    reductions: Vec<&mut [u64]>,
) {
    let sum = reads
        .iter()
        .flat_map(|r| r.iter())
        .fold(0u64, |s, &e| s.wrapping_add(e));
    writes.into_iter().for_each(|w| w.fill(sum));
    for x in updates.into_iter().chain(reductions) {
        x.iter_mut().for_each(|e| *e += 1);
    }
}

/// Random programs that declare anything (accesses that clash, nested children that
/// name their parent's data, weak accesses, reductions, tasks that panic) over
/// versioned and shared data cut by overlapping partitions: under four configurations
/// each run ends, refusing what it must, and leaves no version and no byte behind. A
/// run that hangs fails the test (it runs on its own thread), and so does a generator
/// whose programs are nearly all refused. (The one clash found to hang a run, a range
/// of a whole inside one stored segment against that segment's part, is tested by name
/// in `tests/partitions.rs`.)
#[test]
fn random_programs_of_any_declarations_end_and_free_everything() {
    use locus::{Data, Partition};
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    let (mut ran, mut executed) = (0u64, 0u64);
    for seed in 0..500u64 {
        for config in [
            Config::ShmBase,
            Config::Dfa,
            Config::DsaBase,
            Config::DsaOpt,
        ] {
            let (done, finished) = std::sync::mpsc::channel();
            let program = Arc::new(std::sync::Mutex::new(String::new()));
            let said = program.clone();
            std::thread::spawn(move || {
                let rt = runtime("2x1", config);
                let v = if seed % 2 == 0 {
                    rt.data::<u64>("v", 24)
                } else {
                    rt.shared::<u64>("v", 24, RegionPolicy::Interleave).unwrap()
                };
                let blocks = rt.partition(&v, Partition::blocks(6)).unwrap();
                let ranges = rt
                    .partition(&v, Partition::ranges([3..9, 9..21, 0..2, 20..24]))
                    .unwrap();
                let mut h: Vec<Data<u64>> = vec![v.clone(), rt.data::<u64>("u", 4)];
                h.extend(blocks.iter().cloned());
                h.extend(ranges.iter().cloned());
                let mut rng = SmallRng::seed_from_u64(seed);
                let all: Vec<usize> = (0..h.len()).collect();
                // `u`, the block 12..18 and the range 0..2: one stored segment each.
                let single = [1, 4, 8];
                let outcome = rt.run(|s| {
                    for t in 0..rng.random_range(1..5) {
                        let mut text = format!("task {t}: ");
                        let (lists, named) = random_lists(&mut rng, &h, &all, &single, &mut text);
                        // Children name their parent's data (a part of what it names
                        // may still fall outside it: refused too).
                        let children: Vec<Lists> = (0..rng.random_range(0..3))
                            .map(|c| {
                                text.push_str(&format!("child {c}: "));
                                random_lists(&mut rng, &h, &named, &single, &mut text).0
                            })
                            .collect();
                        let panics = rng.random_bool(0.03);
                        if panics {
                            text.push_str("panics; ");
                        }
                        said.lock().unwrap().push_str(&text);
                        let _ = s.spawn("p", lists, move |ctx, (r, w, x, _, red)| {
                            for lists in children {
                                let _ = ctx.scope().spawn("c", lists, |_, (r, w, x, _, red)| {
                                    random_body(r, w, x, red)
                                });
                            }
                            assert!(!panics, "a task that panics");
                            random_body(r, w, x, red);
                        });
                    }
                });
                drop((h, blocks, ranges, v));
                let _ = done.send((
                    rt.live_versions(),
                    rt.pool_bytes_in_use() + rt.shared_bytes_in_use(),
                    outcome.map_or(0, |f| f.report.tasks),
                ));
            });
            let (versions, bytes, tasks) = finished
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| {
                    panic!(
                        "seed {seed}, {config}: the run hangs: {}",
                        program.lock().unwrap()
                    )
                });
            assert_eq!(
                (versions, bytes),
                (0, 0),
                "seed {seed}, {config}: {}",
                program.lock().unwrap()
            );
            ran += u64::from(tasks > 0);
            executed += tasks;
        }
    }
    // Refusals and panics end many runs early; enough of them ran whole.
    assert!(
        ran >= 300 && executed >= 1_000,
        "{ran} runs ran whole, {executed} tasks"
    );
}
