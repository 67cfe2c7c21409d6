//! Every paper-1 kernel verifies at tiny sizes under every configuration of the threads
//! engine, on the host and on one, two and four virtual nodes, with sequential and parallel control
//! programs; one runtime per (topology, configuration) serves every kernel.

use locus::{Config, Runtime, Topology};
use locus_bench::{run_kernel, Control, Error, Size, BENCHES, KERNELS};

/// Every configuration (`Config::ALL`; `docs/guide.md`, "Choosing a configuration").
const CONFIGS: [Config; 10] = Config::ALL;

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

/// Tasks of each kernel at the tiny size under sequential control (creators excluded).
fn tiny_tasks(name: &str) -> u64 {
    match name {
        "jacobi-1d" | "seidel-1d" => 8 * 3,
        "jacobi-2d" | "seidel-2d" => 8 * 3,
        "jacobi-3d" | "seidel-3d" => 8 * 2,
        "kmeans" => (8 + 1) * 3,
        "blur-roberts" => 12 * 2,
        // 8 blocks: one sort step, then stages 5, 6, 7 with 1, 2, 3 pair steps of 4
        // tasks and a merge step each.
        "bitonic" => 8 + 3 * 8 + 6 * 4,
        _ => unreachable!("{name}"),
    }
}

#[test]
fn every_kernel_verifies_under_every_config_and_control() {
    for spec in ["host", "1x2", "2x1", "4x1"] {
        for config in CONFIGS {
            let rt = runtime(spec, config);
            for &name in KERNELS {
                for control in Control::ALL {
                    let out = run_kernel(name, &rt, Size::Tiny, control).unwrap_or_else(|e| {
                        panic!("{name} ({control}) under {config} on {spec}: {e}")
                    });
                    assert!(
                        out.verified && out.mismatch.is_none(),
                        "{name} ({control}) under {config} on {spec}: {}",
                        out.mismatch
                            .map_or("not verified".into(), |m| m.to_string())
                    );
                    assert_eq!(
                        out.params["control"],
                        serde_json::to_value(control).unwrap()
                    );
                    let tasks = tiny_tasks(name);
                    match control {
                        Control::Sequential => assert_eq!(out.report.tasks, tasks, "{name}"),
                        // Creators come on top of the kernel's own tasks.
                        Control::Parallel => assert!(out.report.tasks > tasks, "{name}"),
                    }
                    if config.alloc_mode() == locus::AllocMode::Deferred {
                        assert_eq!(
                            out.report.locality.write_remote_bytes, 0,
                            "{name} under {config}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn halos_are_counted_as_what_is_read() {
    let rt = runtime("2x1", Config::DsaBase);
    // jacobi-2d tiny: 16 × 16 in 4 × 8 blocks (4 × 2 blocks), 3 iterations. Per
    // iteration every block is read whole (256 elements in all), plus its halos: 6
    // north-south boundaries of one 8-element row read from both sides, and 4 west-east
    // boundaries of one 4-element column read from both sides.
    let out = run_kernel("jacobi-2d", &rt, Size::Tiny, Control::Sequential).unwrap();
    let l = &out.report.locality;
    assert_eq!(
        l.read_local_bytes + l.read_remote_bytes,
        3 * (256 + 2 * 6 * 8 + 2 * 4 * 4) * 8
    );
    // Writes: every block and its two edge columns.
    assert_eq!(
        l.write_local_bytes + l.write_remote_bytes,
        3 * (256 + 8 * 2 * 4) * 8
    );
}

#[test]
fn other_workloads_run_through_the_dispatch() {
    let rt = runtime("2x1", Config::Dfa);
    for &name in BENCHES.iter().filter(|n| !KERNELS.contains(n)) {
        let out = run_kernel(name, &rt, Size::Tiny, Control::Sequential).unwrap();
        assert!(out.verified, "{name}: {:?}", out.mismatch);
    }
    assert!(matches!(
        run_kernel("quicksort", &rt, Size::Tiny, Control::Sequential),
        Err(Error::UnknownBench(_))
    ));
}

#[test]
fn paper_sizes_are_table_3() {
    use locus_bench::{
        bitonic, blur_roberts, jacobi_2d, jacobi_3d, kmeans, seidel_1d, seidel_2d, seidel_3d,
    };
    let j2 = jacobi_2d::Params::paper();
    assert_eq!(
        (
            j2.rows,
            j2.cols,
            j2.block_rows,
            j2.block_cols,
            j2.iterations
        ),
        (1 << 14, 1 << 14, 1 << 10, 1 << 6, 60)
    );
    let s2 = seidel_2d::Params::paper();
    assert_eq!((s2.block_rows, s2.block_cols), (1 << 8, 1 << 8));
    let j3 = jacobi_3d::Params::paper();
    assert_eq!((j3.depth, j3.rows, j3.cols), (1 << 10, 1 << 9, 1 << 9));
    assert_eq!(
        (j3.block_depth, j3.block_rows, j3.block_cols),
        (1 << 5, 1 << 6, 1 << 5)
    );
    let s3 = seidel_3d::Params::paper();
    assert_eq!(
        (s3.block_depth, s3.block_rows, s3.block_cols),
        (1 << 6, 1 << 5, 1 << 5)
    );
    let s1 = seidel_1d::Params::paper();
    assert_eq!(
        (s1.len, s1.block_len, s1.iterations),
        (1 << 28, 1 << 16, 60)
    );
    let k = kmeans::Params::paper();
    assert_eq!(
        (k.points, k.dims, k.clusters, k.block_points),
        (40_960_000, 10, 11, 10_000)
    );
    let b = blur_roberts::Params::paper();
    assert_eq!(
        (b.rows, b.cols, b.block_rows, b.block_cols),
        (1 << 15, 1 << 15, 1 << 9, 1 << 6)
    );
    let s = bitonic::Params::paper();
    assert_eq!((s.len, s.block_len), (1 << 28, 1 << 16));
}

/// The kernels beyond paper 1 (`sparselu` of paper 4, `cholesky`) verify at tiny sizes under every
/// configuration on the host and on two and four virtual nodes, under both control
/// programs and in each of their data layouts, and run exactly the tasks their program
/// describes.
#[test]
fn linear_algebra_kernels_verify_under_every_config_and_control() {
    use locus_bench::{SizeSpec, Workload};
    for spec in ["host", "2x1", "4x1"] {
        for config in CONFIGS {
            let rt = runtime(spec, config);
            for (name, layouts) in [
                ("sparselu", &["0", "1", "2", "3"][..]),
                ("cholesky", &[][..]),
            ] {
                let layouts = if layouts.is_empty() {
                    &["-"][..]
                } else {
                    layouts
                };
                for &layout in layouts {
                    for control in Control::ALL {
                        let fields = match layout {
                            "-" => vec![],
                            _ => vec![("layout".into(), layout.into())],
                        };
                        let size = SizeSpec {
                            fields,
                            ..SizeSpec::from(Size::Tiny)
                        };
                        let at =
                            format!("{name} (layout {layout}, {control}) under {config} on {spec}");
                        let w = Workload::new(name, &size, control).unwrap();
                        let out = w.run(&rt).unwrap_or_else(|e| panic!("{at}: {e}"));
                        assert!(
                            out.verified && out.checked && out.mismatch.is_none(),
                            "{at}: {:?}",
                            out.mismatch
                        );
                        assert_eq!(
                            out.report.tasks - out.report.control_tasks,
                            w.kernel_tasks()
                        );
                    }
                }
            }
        }
    }
}

/// sparselu at 7 × 7 blocks, counted by hand from BOTS's pattern (rows `xxx.x.x`,
/// `xxx....`, `xxxx...`, `..xxx..`, `x..xxx.`, `....xxx`, `x....xx`) and its fill-in:
/// 7 `lu0`; `fwd` and `bdiv` 4 + 3 + 3 + 2 + 2 + 1 each over steps 0-5; `bmod`
/// 16 + 9 + 9 + 4 + 4 + 1.
#[test]
fn sparselu_runs_the_tasks_of_the_bots_pattern() {
    let rt = runtime("2x1", Config::DsaBase);
    let out = run_kernel("sparselu", &rt, Size::Tiny, Control::Sequential).unwrap();
    assert!(out.verified);
    assert_eq!(out.report.tasks, 7 + 2 * 15 + 43);
}

/// The STREAM family (paper 2) verifies at its tiny size under every configuration on
/// the host and on two and four virtual nodes, every twisted-stream policy with three
/// and with two remote vectors; the policies that migrate move pages, the others none.
#[test]
fn the_stream_family_verifies_under_every_config() {
    use locus_bench::twisted_stream::Policy;
    use locus_bench::{SizeSpec, Workload};
    for spec in ["host", "2x1", "4x1"] {
        for config in CONFIGS {
            let rt = runtime(spec, config);
            for name in ["stream", "nested-stream"] {
                let out = run_kernel(name, &rt, Size::Tiny, Control::Sequential)
                    .unwrap_or_else(|e| panic!("{name} under {config} on {spec}: {e}"));
                assert!(
                    out.verified,
                    "{name} under {config} on {spec}: {:?}",
                    out.mismatch
                );
                assert!(out.figures["triad"]["best_mb_s"].as_f64().unwrap() > 0.0);
            }
            for policy in Policy::ALL {
                for remote in [2, 3] {
                    let size = SizeSpec {
                        fields: vec![
                            ("--migrate".into(), policy.name().into()),
                            ("remote_vectors".into(), remote.to_string()),
                        ],
                        ..SizeSpec::from(Size::Tiny)
                    };
                    let w = Workload::new("twisted-stream", &size, Control::Sequential).unwrap();
                    let out = w.run(&rt).unwrap_or_else(|e| {
                        panic!("twisted-stream {policy} {remote} under {config} on {spec}: {e}")
                    });
                    let what = format!("twisted-stream {policy} {remote} under {config} on {spec}");
                    assert!(out.verified, "{what}: {:?}", out.mismatch);
                    let m = out.report.migration;
                    let moved = m.now_pages + m.next_touch_pages;
                    let migrates = match policy {
                        // `auto` leaves it to the runtime, whose setting is `none` here.
                        Policy::None | Policy::Tasks | Policy::Auto => false,
                        Policy::Mixed => remote == 2,
                        _ => true,
                    };
                    // One node: nothing is ever remote.
                    let nodes = rt.topology().num_nodes();
                    assert_eq!(moved > 0, migrates && nodes > 1, "{what}: {m:?}");
                    if nodes > 1 && matches!(policy, Policy::Now | Policy::NextTouch) {
                        let l = &out.report.locality;
                        // Phase 2 is all local after the migration; phase 1 always is.
                        assert_eq!(l.read_remote_bytes + l.write_remote_bytes, 0, "{what}");
                    }
                }
            }
        }
    }
}
