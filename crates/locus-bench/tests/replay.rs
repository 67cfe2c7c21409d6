//! `--replay`: every replayable kernel, run as a recorded graph, verifies bit for bit
//! against the reference its dynamic run verifies against (so both agree to the bit),
//! under every configuration, on one, two and four virtual nodes, with an even and an
//! odd number of iterations; the others are refused with a clear error.

use locus::{Config, Runtime, Topology};
use locus_bench::replay::REPLAYABLE;
use locus_bench::{Control, Error, Size, SizeSpec, Workload};

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

fn workload(name: &str, iterations: usize) -> Workload {
    let mut spec = SizeSpec::from(Size::Tiny);
    spec.iterations = Some(iterations);
    if matches!(name, "spmv" | "bicgstab") {
        // A recorded graph places its tasks itself: no affinity hints.
        spec.fields.push(("--affinity".into(), "none".into()));
    }
    Workload::new(name, &spec, Control::Sequential).unwrap()
}

#[test]
fn replayed_kernels_verify_like_their_dynamic_runs_under_every_config() {
    for topology in ["1x2", "2x1", "4x1"] {
        for config in Config::ALL {
            let rt = runtime(topology, config);
            for &name in REPLAYABLE {
                // The overhead graph: one round per iteration, 50 steps in 10 rounds.
                for iterations in [3, 4] {
                    let w = workload(name, if name == "overhead" { 10 } else { iterations });
                    let dynamic = w.run(&rt).unwrap();
                    let replayed = w.run_replay(&rt).unwrap();
                    let at = format!("{name} x{iterations} under {config} on {topology}");
                    assert!(dynamic.verified, "dynamic {at}");
                    assert!(replayed.verified, "replayed {at}: {:?}", replayed.mismatch);
                    // The dynamic bicgstab has one more task: the solver submitting the
                    // iterations, which the replay's control program replaces.
                    let solver = u64::from(name == "bicgstab");
                    assert_eq!(replayed.report.tasks + solver, dynamic.report.tasks, "{at}");
                    let settings = &replayed.report.settings.0;
                    assert!(
                        settings.iter().any(|(k, v)| k == "replay" && !v.is_empty()),
                        "{at}: {settings:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn other_kernels_and_parallel_control_are_refused() {
    let rt = runtime("2x1", Config::DsaOpt);
    let refusal = |w: Workload| match w.run_replay(&rt) {
        Err(Error::Params(message)) => message,
        Err(other) => panic!("not a usage error: {other}"),
        Ok(_) => panic!("should have been refused"),
    };
    let bitonic = Workload::new("bitonic", &SizeSpec::from(Size::Tiny), Control::Sequential);
    let m = refusal(bitonic.unwrap());
    assert!(
        m.contains("bitonic does not run as a recorded graph"),
        "{m}"
    );
    let spec = SizeSpec::from(Size::Tiny);
    let parallel = Workload::new("jacobi-2d", &spec, Control::Parallel).unwrap();
    assert!(refusal(parallel).contains("sequential control"));
    let mut spec = SizeSpec::from(Size::Tiny);
    spec.iterations = Some(7);
    let uneven = Workload::new("overhead", &spec, Control::Sequential).unwrap();
    assert!(refusal(uneven).contains("multiple of rounds"));
    for name in ["spmv", "bicgstab"] {
        let hinted = Workload::new(name, &SizeSpec::from(Size::Tiny), Control::Sequential);
        let m = refusal(hinted.unwrap());
        assert!(m.contains("affinity hints are not recorded"), "{name}: {m}");
    }
    let parallel = Workload::new("cholesky", &SizeSpec::from(Size::Tiny), Control::Parallel);
    assert!(refusal(parallel.unwrap()).contains("sequential control"));
}

/// Repeated factorisations: each one verified, in the dynamic run and in the replay,
/// and a wrong reference caught in either.
#[test]
fn repeated_cholesky_factorisations_are_each_verified() {
    let rt = runtime("2x1", Config::DsaOpt);
    let mut spec = SizeSpec::from(Size::Tiny);
    spec.iterations = Some(3);
    let w = Workload::new("cholesky", &spec, Control::Sequential).unwrap();
    let once = Workload::new("cholesky", &SizeSpec::from(Size::Tiny), Control::Sequential);
    let once = once.unwrap().run(&rt).unwrap();
    for replay in [false, true] {
        let out = if replay {
            w.run_replay(&rt)
        } else {
            w.run(&rt)
        }
        .unwrap();
        assert!(out.verified, "replay {replay}: {:?}", out.mismatch);
        // Three factorisations, each after resetting the 10 tiles.
        assert_eq!(
            out.report.tasks,
            3 * (once.report.tasks + 10),
            "replay {replay}"
        );
    }
}

/// bicgstab's control program tests the residual between replays: it stops where the
/// dynamic solve stops (the verification compares the iteration count with the
/// reference's), one replayed iteration per solver iteration.
#[test]
fn replayed_bicgstab_stops_when_it_converges() {
    let rt = runtime("2x1", Config::DsaOpt);
    let mut spec = SizeSpec::from(Size::Tiny);
    spec.fields.push(("--affinity".into(), "none".into()));
    let w = Workload::new("bicgstab", &spec, Control::Sequential).unwrap();
    let dynamic = w.run(&rt).unwrap();
    let replayed = w.run_replay(&rt).unwrap();
    assert!(
        dynamic.verified && replayed.verified,
        "{:?}",
        replayed.mismatch
    );
    assert_eq!(replayed.report.tasks + 1, dynamic.report.tasks);
    let settings = &replayed.report.settings.0;
    let iterations = settings
        .iter()
        .find(|(k, _)| k == "replayed_iterations")
        .map(|(_, v)| v.parse::<u64>().unwrap())
        .unwrap();
    // Per iteration 7 tasks per partition (4 partitions) and 3 combines.
    assert_eq!(iterations * 31, replayed.report.tasks - 9, "{settings:?}");
    assert!(iterations > 4 && iterations < 2000, "{iterations}");
}
