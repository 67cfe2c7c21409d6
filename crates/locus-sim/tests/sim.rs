//! Whole-run behaviour of the simulator: determinism, invariants checked on every run,
//! verified results in executed mode, deferred allocation, contention.

use locus::engine::Bodies;
use locus::{Config, Report, Runtime, Topology};
use locus_bench::{jacobi_1d, random_dag};
use locus_sim::{Costs, Probe, Sim, Span};

const TOPOLOGIES: [&str; 3] = ["2x1", "4x2", "opteron-64"];

fn runtime(spec: &str, config: Config, sim: Sim) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        // Small enough that small graphs exercise pushing.
        .push_threshold(256)
        .engine(sim)
        .build()
        .unwrap()
}

/// Earliest possible end of every task with no runtime overhead and no contention,
/// following the activation edges the simulator recorded: a task made ready by
/// another's end starts after that end, one spawned by a body after that body's start.
fn critical_path(spans: &[Span]) -> u64 {
    let mut by_id: Vec<Option<&Span>> = vec![None; spans.len()];
    for s in spans {
        by_id[s.id as usize] = Some(s);
    }
    let mut start = vec![0u64; spans.len()];
    let mut end = vec![0u64; spans.len()];
    for (id, s) in by_id.iter().enumerate() {
        let s = s.expect("task ids are contiguous");
        start[id] = match s.activated_by {
            None => 0,
            Some(a) if s.spawned => start[a as usize],
            Some(a) => end[a as usize],
        };
        end[id] = start[id] + s.isolated_ns;
    }
    end.into_iter().max().unwrap_or(0)
}

/// The invariants every simulated run must keep.
fn check_invariants(report: &Report, probe: &Probe, tasks: u64) {
    assert_eq!(report.engine, "sim");
    assert_eq!(report.tasks, tasks, "every submitted task counted");
    let summary = probe.summary();
    assert_eq!(
        summary.bodies_run + summary.bodies_skipped,
        tasks + 1,
        "every task (and the root) started exactly once"
    );
    let spans = probe.spans().expect("the probe keeps spans");
    assert_eq!(
        spans.len() as u64,
        tasks + 1,
        "every task ended exactly once"
    );
    let mut ids: Vec<u64> = spans.iter().map(|s| s.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), spans.len(), "no task ran twice");
    let cp = critical_path(&spans);
    assert!(
        summary.makespan_ns >= cp,
        "makespan {} below the critical path {cp}",
        summary.makespan_ns
    );
    assert_eq!(report.wall_s, summary.makespan_ns as f64 * 1e-9);
    let loc = &report.locality;
    let counted = loc.read_local_bytes
        + loc.read_remote_bytes
        + loc.write_local_bytes
        + loc.write_remote_bytes;
    assert_eq!(
        counted, summary.declared_bytes,
        "bytes accounted equal bytes declared"
    );
    assert_eq!(counted, summary.accessed_bytes);
    let traffic: u64 = report.traffic.iter().flatten().sum();
    assert_eq!(traffic, counted);
    for s in &spans {
        assert!(s.ready_ns <= s.start_ns && s.start_ns <= s.end_ns, "{s:?}");
        assert!(s.end_ns - s.start_ns >= s.isolated_ns, "{s:?}");
    }
}

fn small_dag(seed: u64) -> random_dag::Params {
    random_dag::Params {
        tasks: 60,
        data: 10,
        max_len: 300,
        max_inputs: 3,
        seed,
        hints: true,
    }
}

#[test]
fn one_seed_gives_identical_reports_and_traces() {
    let dir = std::env::temp_dir();
    let run = |seed: u64, name: &str| {
        let path = dir.join(format!(
            "locus-sim-determinism-{}-{name}.json",
            std::process::id()
        ));
        let rt = runtime("4x2", Config::DsaOpt, Sim::new().seed(seed).trace(&path));
        let out = random_dag::run(&rt, &small_dag(5)).unwrap();
        assert!(out.verified);
        let report = serde_json::to_string(&out.report).unwrap();
        let trace = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        (report, trace)
    };
    let a = run(11, "a");
    let b = run(11, "b");
    assert_eq!(a.0, b.0, "same seed, same report");
    assert!(a.1 == b.1, "same seed, byte-identical trace");
    // The trace is valid JSON with one complete event per task, the root included.
    let v: serde_json::Value = serde_json::from_slice(&a.1).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let tasks = events.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(tasks, 61);
    let rows = events.iter().filter(|e| e["name"] == "thread_name").count();
    assert_eq!(rows, 8, "one row per worker");
    // Another seed may differ, and still verifies (checked inside `run`).
    let _ = run(12, "c");
}

#[test]
fn random_dags_verify_on_every_topology_and_config() {
    let configs = [
        Config::Ws,
        Config::DsaBase,
        Config::PushIn,
        Config::PushWeighted,
        Config::Dfa,
        Config::DsaOpt,
        Config::Home,
    ];
    for spec in TOPOLOGIES {
        for (i, config) in configs.into_iter().enumerate() {
            let probe = Probe::with_spans();
            let rt = runtime(
                spec,
                config,
                Sim::new()
                    .seed(i as u64)
                    .bodies(Bodies::Run)
                    .probe(probe.clone()),
            );
            let params = small_dag(i as u64 + 100);
            let out = random_dag::run(&rt, &params).unwrap();
            assert!(
                out.verified,
                "{spec} {config}: {} mismatches",
                out.mismatches
            );
            check_invariants(&out.report, &probe, params.tasks as u64);
        }
    }
}

#[test]
fn jacobi_1d_verifies_and_deferred_allocation_writes_locally() {
    let p = jacobi_1d::Params {
        blocks: 8,
        block_len: 512,
        iterations: 6,
    };
    for spec in TOPOLOGIES {
        for config in [Config::DsaBase, Config::Dfa, Config::DsaOpt] {
            let probe = Probe::with_spans();
            let rt = runtime(spec, config, Sim::new().probe(probe.clone()));
            let out = jacobi_1d::run(&rt, &p).unwrap();
            assert!(out.verified, "{spec} {config}");
            check_invariants(&out.report, &probe, (p.blocks * p.iterations) as u64);
            assert_eq!(probe.summary().bodies_skipped, 0);
            if config != Config::DsaBase {
                assert_eq!(out.report.locality.write_remote_bytes, 0, "{spec} {config}");
            }
        }
    }
}

/// A chain of stencils over data created empty (no `data_from`, no `fetch`, so that it
/// also runs on accounting-only pools); returns the report and the simulator's summary.
fn stencils(
    sim: Sim,
    blocks: usize,
    len: usize,
    iterations: usize,
) -> (Report, locus_sim::Summary) {
    let probe = Probe::with_spans();
    let rt = runtime("4x2", Config::DsaOpt, sim.seed(3).probe(probe.clone()));
    let cur: Vec<_> = (0..blocks)
        .map(|b| rt.data::<f64>(format!("a{b}"), len))
        .collect();
    let next: Vec<_> = (0..blocks)
        .map(|b| rt.data::<f64>(format!("b{b}"), len))
        .collect();
    let finished = rt
        .run(|s| -> Result<(), locus::Error> {
            for t in 0..iterations {
                let (src, dst) = if t % 2 == 0 {
                    (&cur, &next)
                } else {
                    (&next, &cur)
                };
                for b in 0..blocks {
                    let halos: Vec<_> = (b > 0)
                        .then(|| src[b - 1].read_range(len - 1..len))
                        .into_iter()
                        .chain((b + 1 < blocks).then(|| src[b + 1].read_range(0..1)))
                        .collect();
                    s.spawn(
                        "stencil",
                        (src[b].read(), halos, dst[b].write()),
                        |_, (m, _, o)| jacobi_1d::step_block(m, None, None, o),
                    )?;
                }
            }
            Ok(())
        })
        .unwrap();
    finished.value.unwrap();
    check_invariants(&finished.report, &probe, (blocks * iterations) as u64);
    (finished.report, probe.summary())
}

#[test]
fn skipped_bodies_leave_the_timing_unchanged() {
    let (ran, ran_summary) = stencils(Sim::new().bodies(Bodies::Run), 16, 2048, 8);
    let (skipped, skipped_summary) = stencils(Sim::new().bodies(Bodies::Skip), 16, 2048, 8);
    assert_eq!(ran_summary.bodies_skipped, 0);
    assert_eq!(
        skipped_summary.bodies_run, 1,
        "only the control program ran"
    );
    assert_eq!(ran.wall_s, skipped.wall_s);
    assert_eq!(ran_summary.makespan_ns, skipped_summary.makespan_ns);
    assert_eq!(
        serde_json::to_string(&ran.locality).unwrap(),
        serde_json::to_string(&skipped.locality).unwrap()
    );
    // Accounting-only pools count the same peak as real ones.
    assert_eq!(ran.memory.peak_bytes, skipped.memory.peak_bytes);
    // Automatic choice: once the declared bytes pass the bound, bodies are skipped.
    let (_, auto) = stencils(Sim::new().skip_above_bytes(2 << 20), 16, 2048, 8);
    assert!(auto.bodies_skipped > 0 && auto.bodies_run > 1, "{auto:?}");
    assert_eq!(auto.makespan_ns, ran_summary.makespan_ns);
}

#[test]
fn a_chain_takes_at_least_the_sum_of_its_tasks() {
    let probe = Probe::with_spans();
    let rt = runtime("2x1", Config::DsaBase, Sim::new().probe(probe.clone()));
    let x = rt.data::<u64>("x", 1);
    let finished = rt
        .run(|s| -> Result<(), locus::Error> {
            for _ in 0..20 {
                s.task("step", x.read_write())
                    .cost(1_000)
                    .spawn(|_, v| v[0] += 1)?;
            }
            Ok(())
        })
        .unwrap();
    finished.value.unwrap();
    assert_eq!(rt.fetch(&x).unwrap(), vec![20]);
    check_invariants(&finished.report, &probe, 20);
    assert!(probe.summary().makespan_ns >= 20 * 1_000);
}

/// Durations of the tasks named `scan`, with two of them at once or one alone.
fn scan_durations(concurrent: usize) -> Vec<u64> {
    let probe = Probe::with_spans();
    // Controller bandwidth equal to one core's (10 lines of 64 B in flight over 80 ns:
    // 8 GB/s): two readers share it. No cache: both read from memory.
    let costs = Costs {
        node_bandwidth_gb_s: 8.0,
        llc_bytes: 0,
        outstanding_lines: 10,
        line_bytes: 64,
        read_latency_ns: 80.0,
        ..Costs::default()
    }
    .without_runtime_overhead();
    let rt = runtime(
        "1x2",
        Config::DsaBase,
        Sim::new().costs(costs).probe(probe.clone()),
    );
    let data = rt.data_from("x", &vec![1u64; 1 << 17]).unwrap();
    let finished = rt
        .run(|s| -> Result<(), locus::Error> {
            for _ in 0..concurrent {
                s.task("scan", data.read()).cost(0).spawn(|_, _| ())?;
            }
            Ok(())
        })
        .unwrap();
    finished.value.unwrap();
    check_invariants(&finished.report, &probe, concurrent as u64);
    let spans = probe.spans().unwrap();
    let scans: Vec<&Span> = spans.iter().filter(|s| s.name == "scan").collect();
    if concurrent == 2 {
        assert_ne!(scans[0].worker, scans[1].worker, "both workers scanned");
        assert_eq!(scans[0].start_ns, scans[1].start_ns, "at the same time");
    }
    scans.iter().map(|s| s.end_ns - s.start_ns).collect()
}

#[test]
fn two_tasks_reading_one_node_at_once_take_longer_than_one_alone() {
    let alone = scan_durations(1);
    let together = scan_durations(2);
    // 1 MiB at 8 GB/s alone; at 4 GB/s each when sharing the controller.
    assert_eq!(alone, vec![131_072]);
    assert_eq!(together, vec![262_144, 262_144]);
}

/// Every kernel of the suite, bodies executed on a paper machine, verifies as on the
/// `threads` engine, and deferred allocation keeps every write local there too.
#[test]
fn every_kernel_verifies_in_the_simulator() {
    for &kernel in locus_bench::KERNELS {
        for config in [Config::DsaBase, Config::DsaOpt] {
            let rt = Runtime::builder()
                .topology(Topology::from_spec("opteron-64").unwrap())
                .config(config)
                .engine(Sim::new().seed(3))
                .build()
                .unwrap();
            let out = locus_bench::run_kernel(
                kernel,
                &rt,
                locus_bench::Size::Tiny,
                locus_bench::Control::Sequential,
            )
            .unwrap();
            assert!(out.checked && out.verified, "{kernel} under {config}");
            if config == Config::DsaOpt {
                assert_eq!(out.report.locality.write_remote_bytes, 0, "{kernel}");
            }
        }
    }
}

/// With skipped bodies a parallel control program still runs its creators (control
/// tasks), so it submits every task of the kernel, as the sequential one does, and its
/// simulated time stays close to the sequential control's.
#[test]
fn parallel_control_simulates_every_task_when_bodies_are_skipped() {
    use locus_bench::{Control, Size, SizeSpec, Workload, KERNELS};
    for &name in KERNELS {
        let mut times = Vec::new();
        for control in Control::ALL {
            let rt = runtime(
                "opteron-64",
                Config::DsaOpt,
                Sim::new().bodies(Bodies::Skip),
            );
            let workload = Workload::new(name, &SizeSpec::from(Size::Small), control).unwrap();
            // `run` fails when the run ran another number of tasks than the program
            // describes.
            let out = workload
                .run(&rt)
                .unwrap_or_else(|e| panic!("{name} ({control}): {e}"));
            assert!(!out.checked, "{name}: bodies were skipped");
            let r = &out.report;
            assert_eq!(r.tasks - r.control_tasks, workload.kernel_tasks(), "{name}");
            match control {
                Control::Sequential => assert_eq!(r.control_tasks, 0, "{name}"),
                Control::Parallel => assert!(r.control_tasks > 0, "{name}"),
            }
            times.push(r.wall_s);
        }
        let ratio = times[1] / times[0];
        assert!(
            (0.5..=2.0).contains(&ratio),
            "{name}: parallel control {:.6} s against sequential {:.6} s",
            times[1],
            times[0]
        );
    }
}

/// Nested tasks that join run in the simulator as on threads: recursive Fibonacci with
/// taskwait, its result verified, every task counted.
#[test]
fn nested_tasks_that_join_run_in_the_simulator() {
    fn fib_task(ctx: &locus::TaskCtx, n: u64, out: &mut [u64]) {
        if n < 2 {
            out[0] = n;
            return;
        }
        let a = ctx.scope().data::<u64>("a", 1);
        let b = ctx.scope().data::<u64>("b", 1);
        ctx.scope()
            .spawn("fib", a.write(), move |ctx, a| fib_task(ctx, n - 1, a))
            .unwrap();
        ctx.scope()
            .spawn("fib", b.write(), move |ctx, b| fib_task(ctx, n - 2, b))
            .unwrap();
        out[0] = ctx.fetch(&a).unwrap()[0] + ctx.fetch(&b).unwrap()[0];
    }
    for spec in TOPOLOGIES {
        for config in [Config::DsaOpt, Config::DsaBase, Config::Home] {
            let rt = runtime(spec, config, Sim::new());
            let out = rt.data::<u64>("out", 1);
            let finished = rt
                .run(|s| s.spawn("fib", out.write(), |ctx, o| fib_task(ctx, 12, o)))
                .unwrap();
            finished.value.unwrap();
            assert_eq!(rt.fetch(&out).unwrap(), vec![144], "{config} on {spec}");
            // fib(12) makes 2 * fib(13) - 1 = 465 tasks.
            assert_eq!(finished.report.tasks, 465, "{config} on {spec}");
            assert!(finished.report.wall_s > 0.0);
        }
    }
}

/// The modelled machine's nodes hold what the topology says (8 GiB each on the
/// Opteron-64): buffers allocated on a full node come from the nearest node with room,
/// counted as fallbacks, and no node holds more than its memory.
#[test]
fn a_full_node_falls_back_to_its_nearest_neighbour() {
    const GIB: usize = 1 << 30;
    let rt = runtime(
        "opteron-64",
        Config::DsaBase,
        Sim::new().bodies(Bodies::Skip),
    );
    // Ten 1 GiB outputs written by tasks the root creates: immediate allocation puts
    // them on the root's node 0 until it is full.
    let data: Vec<locus::Data<u8>> = (0..10).map(|i| rt.data(format!("d{i}"), GIB)).collect();
    let finished = rt
        .run(|s| -> Result<(), locus::Error> {
            for d in &data {
                s.spawn("fill", d.write(), |_, _| ())?;
            }
            Ok(())
        })
        .unwrap();
    finished.value.unwrap();
    let m = &finished.report.memory;
    assert!(m.fallbacks >= 2, "{m:?}");
    assert!(
        m.peak_bytes_per_node.iter().all(|&b| b <= 8 << 30),
        "{:?}",
        m.peak_bytes_per_node
    );
    // Node 0's nearest neighbour is the other die of its package, node 1.
    assert!(
        m.peak_bytes_per_node[1] >= 2 << 30,
        "{:?}",
        m.peak_bytes_per_node
    );
}

/// One level of a recursion that waits for its child at every level: each wait runs
/// the child on the waiting worker's stack (the simulator's one thread), so the levels
/// nest there.
fn waiting_level(ctx: &locus::TaskCtx, token: locus::Data<u64>, level: usize) {
    if level == 0 {
        return;
    }
    let next = token.clone();
    let spawned = ctx
        .scope()
        .spawn("level", token.weak_read(), move |ctx, ()| {
            waiting_level(ctx, next, level - 1)
        });
    if spawned.is_ok() {
        // Err once the run has failed: the child then drains unrun.
        let _ = ctx.wait();
    }
}

/// Waits nest on a worker's stack, and in the simulator on the one thread every body
/// runs on. A recursion deeper than the stack allows ends the run with
/// `StackExhausted` and frees everything, on both engines, instead of overflowing the
/// stack (which aborted the process); a shallow one runs, and a bigger stack takes more.
#[test]
fn waits_nested_deeper_than_the_stack_allows_fail_the_run() {
    use locus::Error;
    let deep = |sim: bool, stack: usize, levels: usize| {
        let builder = Runtime::builder()
            .topology(Topology::from_spec("1x1").unwrap())
            .worker_stack_size(stack);
        let rt = if sim {
            builder.engine(Sim::new())
        } else {
            builder
        }
        .build()
        .unwrap();
        let token = rt.data::<u64>("token", 1);
        let outcome = rt.run(|s| {
            let t = token.clone();
            s.spawn("level", token.weak_read(), move |ctx, ()| {
                waiting_level(ctx, t, levels)
            })
            .unwrap();
        });
        assert_eq!(rt.pool_bytes_in_use(), 0);
        outcome.map(|f| f.report.tasks).map_err(|e| e.error)
    };
    for sim in [false, true] {
        match deep(sim, locus::MIN_WORKER_STACK, 1_000_000) {
            Err(Error::StackExhausted {
                worker,
                stack_bytes,
                ..
            }) => assert_eq!((worker, stack_bytes), (0, locus::MIN_WORKER_STACK)),
            other => panic!("sim {sim}: expected StackExhausted, got {other:?}"),
        }
        assert_eq!(deep(sim, locus::DEFAULT_WORKER_STACK, 100).unwrap(), 101);
        assert_eq!(deep(sim, 64 << 20, 1000).unwrap(), 1001);
        assert!(matches!(
            deep(sim, locus::DEFAULT_WORKER_STACK, 1_000_000),
            Err(Error::StackExhausted { .. })
        ));
    }
    assert!(Runtime::builder().worker_stack_size(4096).build().is_err());
}

/// Makespan of 200 tasks of no cost on one worker, each declaring nothing or writing a
/// datum of its own, with tasks declaring nothing charged `lean_task_percent` of the
/// runtime's costs per task.
fn lean_makespan(lean_task_percent: u64, declare: bool) -> u64 {
    let probe = Probe::new();
    let costs = Costs {
        lean_task_percent,
        ..Costs::default()
    };
    let rt = runtime(
        "1x1",
        Config::DsaBase,
        Sim::new().costs(costs).probe(probe.clone()),
    );
    let data: Vec<_> = (0..200)
        .map(|i| rt.data::<u64>(&format!("d{i}"), 1))
        .collect();
    let finished = rt
        .run(|s| -> Result<(), locus::Error> {
            for d in &data {
                if declare {
                    s.task("write", d.write()).cost(0).spawn(|_, v| v[0] = 1)?;
                } else {
                    s.task("nothing", ()).cost(0).spawn(|_, ()| ())?;
                }
            }
            Ok(())
        })
        .unwrap();
    finished.value.unwrap();
    assert_eq!(finished.report.tasks, 200);
    probe.summary().makespan_ns
}

/// A task declaring nothing takes the runtime's lean path (docs/performance.md): the
/// simulator charges it `lean_task_percent` of a task's creation, activation and start,
/// and a task declaring data all of them.
#[test]
fn tasks_declaring_nothing_pay_the_lean_share_of_the_costs_per_task() {
    let full = lean_makespan(100, false);
    let lean = lean_makespan(31, false);
    assert!(
        lean * 100 <= full * 40 && lean * 100 >= full * 25,
        "lean {lean} ns, full {full} ns"
    );
    // Tasks declaring data pay the full costs: only the root, which declares nothing,
    // starts by the lean path.
    let start = Costs::default().task_start_ns;
    assert_eq!(
        lean_makespan(100, true) - lean_makespan(31, true),
        start - start * 31 / 100
    );
}

/// Makespan and tasks of `tasks` tasks of no cost on one worker with a window of 16,
/// each declaring nothing (`chain` false) or reading and writing one of two data in
/// turn (two chains interleaved: a task's finish makes the next but one ready while the
/// next is queued already), with
/// every runtime cost per task charged in full (no lean share) and no allocation cost.
fn one_worker_makespan(tasks: usize, chain: bool) -> u64 {
    let probe = Probe::new();
    let costs = Costs {
        lean_task_percent: 100,
        alloc_ns: 0,
        ..Costs::default()
    };
    let rt = Runtime::builder()
        .topology(Topology::from_spec("1x1").unwrap())
        .config(Config::DsaBase)
        .window(16)
        .engine(Sim::new().costs(costs).probe(probe.clone()))
        .build()
        .unwrap();
    let d = [rt.data::<u64>("a", 1), rt.data::<u64>("b", 1)];
    let finished = rt
        .run(|s| -> Result<(), locus::Error> {
            for i in 0..tasks {
                if chain {
                    s.task("step", d[i % 2].read_write())
                        .cost(0)
                        .spawn(|_, v| v[0] += 1)?;
                } else {
                    s.task("nothing", ()).cost(0).spawn(|_, ()| ())?;
                }
            }
            Ok(())
        })
        .unwrap();
    finished.value.unwrap();
    assert_eq!(finished.report.tasks, tasks as u64);
    probe.summary().makespan_ns
}

/// One worker both submits the tasks and runs them, one thing at a time, as the
/// `threads` engine's one thread does: its time per task is the sum of the costs per
/// task (creation, activation, start), never less. The root's submissions and the tasks
/// its worker helps with while the window is full do not overlap, nor does a helped
/// task's finish (activating its successor) and the next task it takes.
#[test]
fn one_worker_pays_every_cost_per_task_in_turn() {
    let c = Costs::default();
    let per_task = c.task_create_ns + c.activate_ns + c.task_start_ns;
    for chain in [false, true] {
        let tasks = 400;
        let makespan = one_worker_makespan(tasks, chain);
        let expected = tasks as u64 * per_task;
        // Beyond the costs per task: the root's start, and for the chain the few bytes
        // each task moves.
        let slack = if chain { tasks as u64 * 40 } else { 0 } + c.task_start_ns;
        assert!(
            makespan >= expected && makespan <= expected + slack,
            "chain {chain}: {makespan} ns for {tasks} tasks, {per_task} ns each expected"
        );
    }
}
