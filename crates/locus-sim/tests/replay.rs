//! Recorded graphs in the simulator: a replay submits each iteration's tasks bound to
//! their recorded homes, so the simulator models the recorded placement; results equal
//! the threads engine's, and the stencils' replays verify at small sizes.

use locus::engine::Bodies;
use locus::{Config, Data, Runtime, Topology};
use locus_sim::costs::{Costs, TaskPath};
use locus_sim::Sim;

fn runtime(spec: &str, sim: Option<Sim>) -> Runtime {
    let b = Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(Config::DsaOpt);
    match sim {
        Some(sim) => b.engine(sim).build().unwrap(),
        None => b.build().unwrap(),
    }
}

/// A ping-pong of 4 blocks between two sets; returns the first set after `n`
/// iterations, and the report of the replay.
fn ping_pong(rt: &Runtime, n: u64) -> (Vec<Vec<f64>>, locus::Report) {
    let a: Vec<Data<f64>> = (0..4)
        .map(|k| rt.data_from(format!("a{k}"), &[k as f64; 16]).unwrap())
        .collect();
    let b: Vec<Data<f64>> = (0..4).map(|k| rt.data(format!("b{k}"), 16)).collect();
    let mut g = rt
        .record("ping-pong", |r| {
            for k in 0..4 {
                r.spawn(
                    "to-b",
                    (a[k].read(), a[(k + 1) % 4].read_range(0..1), b[k].write()),
                    |it, (x, next, y)| {
                        for v in y.iter_mut().zip(x) {
                            *v.0 = v.1 + next[0] + it.index() as f64;
                        }
                    },
                )?;
            }
            for k in 0..4 {
                r.spawn("to-a", (b[k].read(), a[k].write()), |_, (y, x)| {
                    x.iter_mut().zip(y).for_each(|(x, y)| *x = y / 2.0)
                })?;
            }
            Ok(())
        })
        .unwrap();
    let report = rt.replay(&mut g, n).unwrap();
    (a.iter().map(|d| rt.fetch(d).unwrap()).collect(), report)
}

#[test]
fn a_replay_in_the_simulator_computes_what_the_threads_engine_does() {
    let (want, _) = ping_pong(&runtime("2x1", None), 5);
    let (got, report) = ping_pong(&runtime("2x2", Some(Sim::new())), 5);
    assert_eq!(got, want);
    assert_eq!(report.engine, "sim");
    assert_eq!(report.tasks, 5 * 8);
    let settings = &report.settings.0;
    assert!(settings
        .iter()
        .any(|(k, v)| k == "replayed_iterations" && v == "5"));
    assert!(settings.iter().any(|(k, _)| k == "replay_mode"));
    assert!(report.wall_s > 0.0);
}

#[test]
fn replayed_stencils_verify_in_the_simulator_and_run_with_skipped_bodies() {
    let rt = runtime("4x2", Some(Sim::new()));
    for bench in ["jacobi-2d", "seidel-2d"] {
        let w = locus_bench::Workload::new(
            bench,
            &locus_bench::SizeSpec::from(locus_bench::Size::Tiny),
            locus_bench::Control::Sequential,
        )
        .unwrap();
        let out = w.run_replay(&rt).unwrap();
        assert!(out.verified, "{bench}");
        assert_eq!(out.report.engine, "sim");
    }
    let skipping = runtime("4x2", Some(Sim::new().bodies(Bodies::Skip)));
    let (_, report) = {
        let a = skipping.data::<f64>("a", 1 << 20);
        let b = skipping.data::<f64>("b", 1 << 20);
        let mut g = skipping
            .record("big", |r| {
                r.spawn("to-b", (a.read(), b.write()), |_, _| ())?;
                r.spawn("to-a", (b.read(), a.write()), |_, _| ())
            })
            .unwrap();
        ((), skipping.replay(&mut g, 3).unwrap())
    };
    assert_eq!(report.tasks, 6);
    assert!(report.locality.r_loc_rt > 0.0);
}

/// Simulated ns per task of 10 iterations of 64 tasks, each writing a datum of its own,
/// on one worker with a window of 16 and `costs`: replayed (`replay` true) or submitted
/// by a dynamic run.
fn one_worker_ns_per_task(costs: Costs, replay: bool) -> f64 {
    let rt = Runtime::builder()
        .topology(Topology::from_spec("1x1").unwrap())
        .config(Config::DsaOpt)
        .window(16)
        .engine(Sim::new().costs(costs))
        .build()
        .unwrap();
    let data: Vec<Data<u64>> = (0..64).map(|k| rt.data(format!("d{k}"), 1)).collect();
    let iterations = 10;
    let report = if replay {
        let mut g = rt
            .record("writes", |r| {
                for d in &data {
                    r.spawn("write", d.write(), |it, v| v[0] = it.index())?;
                }
                Ok(())
            })
            .unwrap();
        rt.replay(&mut g, iterations).unwrap()
    } else {
        let finished = rt
            .run(|s| -> Result<(), locus::Error> {
                for i in 0..iterations {
                    for d in &data {
                        s.task("write", d.write()).spawn(move |_, v| v[0] = i)?;
                    }
                }
                Ok(())
            })
            .unwrap();
        finished.value.unwrap();
        finished.report
    };
    assert_eq!(report.tasks, iterations * 64);
    for d in &data {
        assert_eq!(rt.fetch(d).unwrap(), vec![iterations - 1]);
    }
    report.wall_s * 1e9 / report.tasks as f64
}

/// A replayed task costs the runtime what a replay costs (`replay_task_percent` of the
/// costs per task: no dependence analysis, no allocation), not what the dynamic path
/// costs: on one worker, which pays every cost in turn, a replayed graph's time per task
/// is that share of the dynamic run's costs, with no buffer allocated, plus the few
/// bytes each task writes. The
/// share is set here (10%), apart from the measured one.
#[test]
fn replayed_tasks_pay_the_replays_cost_per_task() {
    let c = Costs {
        replay_task_percent: 10,
        ..Costs::default()
    };
    let full = c.task_create_ns + c.activate_ns + c.task_start_ns;
    let replayed = [c.task_create_ns, c.activate_ns, c.task_start_ns]
        .iter()
        .map(|&ns| c.per_task_ns(ns, TaskPath::Replayed))
        .sum::<u64>() as f64;
    let dynamic = one_worker_ns_per_task(c, false);
    let replay = one_worker_ns_per_task(c, true);
    // What a task moves and computes (8 bytes written) is the same in both runs; the
    // dynamic run also allocates each output's buffer as its task starts, which a
    // replay does once, at its first iteration.
    let work = dynamic - full as f64 - c.alloc_ns as f64;
    assert!((0.0..10.0).contains(&work), "dynamic {dynamic} ns per task");
    assert!(
        (replay - replayed - work).abs() < 5.0,
        "replay {replay} ns per task, {replayed} + {work} expected"
    );
}
