//! Paper 3's workloads in the simulator: `spmv`, `bicgstab` and `jacobi-2d`'s KASTORS
//! variants run with their bodies skipped (as at paper size) and with them run; strict
//! affinity keeps the products on their partitions' nodes.

use locus::engine::Bodies;
use locus::{Config, Runtime, Topology};
use locus_bench::{bicgstab, run_sized, Control, Size, SizeSpec};
use locus_sim::Sim;

fn runtime(spec: &str, config: Config, sim: Sim) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .engine(sim)
        .build()
        .unwrap()
}

fn spec(mode: &str) -> SizeSpec {
    SizeSpec {
        fields: vec![("--affinity".into(), mode.into())],
        ..SizeSpec::from(Size::Tiny)
    }
}

#[test]
fn skipped_bodies_run_the_whole_program_unchecked() {
    let rt = runtime("4x2", Config::Dfa, Sim::new().bodies(Bodies::Skip));
    for name in ["spmv", "bicgstab", "jacobi-2d"] {
        for mode in ["none", "init", "strict", "non-strict"] {
            // The run itself checks that it ran every task its program describes.
            let out = run_sized(name, &rt, &spec(mode), Control::Sequential)
                .unwrap_or_else(|e| panic!("{name} {mode}: {e}"));
            assert!(!out.checked && !out.verified, "{name} {mode}");
        }
    }
    // Without values to test, the solve runs a fixed number of iterations.
    let out = run_sized("bicgstab", &rt, &spec("strict"), Control::Sequential).unwrap();
    let p = bicgstab::Params::tiny();
    let per_iteration = 7 * p.partitions as u64 + 3;
    let init = 2 * p.partitions as u64 + 1;
    assert_eq!(
        out.report.tasks,
        init + per_iteration * bicgstab::ITERATIONS_WITHOUT_BODIES as u64
    );
}

#[test]
fn bodies_run_and_verify_in_the_simulator() {
    let rt = runtime("4x2", Config::DsaOpt, Sim::new());
    for name in ["spmv", "bicgstab", "jacobi-2d"] {
        for mode in ["none", "strict"] {
            let out = run_sized(name, &rt, &spec(mode), Control::Sequential).unwrap();
            assert!(
                out.checked && out.verified,
                "{name} {mode}: {:?}",
                out.mismatch
            );
        }
    }
}

#[test]
fn strict_products_stay_on_their_nodes() {
    let rt = runtime("4x2", Config::Dfa, Sim::new().bodies(Bodies::Skip));
    let sized = |mode: &str| SizeSpec {
        size: Some(64),
        iterations: Some(10),
        fields: vec![
            ("--affinity".into(), mode.into()),
            ("partitions".into(), "16".into()),
        ],
        ..SizeSpec::from(Size::Tiny)
    };
    let strict = run_sized("spmv", &rt, &sized("strict"), Control::Sequential).unwrap();
    let none = run_sized("spmv", &rt, &sized("none"), Control::Sequential).unwrap();
    let (s, n) = (&strict.report.locality, &none.report.locality);
    assert_eq!(s.write_remote_bytes, 0);
    assert!(s.r_loc_rt > 0.95, "strict: {}", s.r_loc_rt);
    assert!(
        s.r_loc_rt > n.r_loc_rt,
        "strict {} none {}",
        s.r_loc_rt,
        n.r_loc_rt
    );
}
