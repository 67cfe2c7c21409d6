//! Explicit problem sizes: every workload runs and verifies at sizes other than its
//! named ones, the options land on the documented fields, and parameters a kernel
//! cannot run are an `Error::Params` naming the option, never a panic.

use locus::{Config, Runtime, Topology};
use locus_bench::{run_sized, Control, Error, Size, SizeSpec, Workload, BENCHES};
use proptest::prelude::*;

fn runtime() -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .config(Config::DsaOpt)
        .build()
        .unwrap()
}

/// `--size`, `--blocks`, `--block-len`, `--iterations` on top of `base`, then `--param`s.
fn spec(
    base: Size,
    size: Option<usize>,
    blocks: Option<usize>,
    block_len: Option<usize>,
    iterations: Option<usize>,
    fields: &[(&str, &str)],
) -> SizeSpec {
    SizeSpec {
        base,
        size,
        blocks,
        block_len,
        iterations,
        fields: fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// For every workload: explicit sizes unlike any named size, and the fields they must
/// give (a subset of the report's `params`).
fn explicit() -> Vec<(&'static str, SizeSpec, serde_json::Value)> {
    use serde_json::json;
    let tiny = Size::Tiny;
    vec![
        (
            "random-dag",
            spec(
                tiny,
                Some(150),
                None,
                None,
                None,
                &[("data", "10"), ("hints", "true")],
            ),
            json!({"tasks": 150, "data": 10, "max_len": 64, "hints": true}),
        ),
        (
            "overhead",
            spec(
                tiny,
                Some(30),
                None,
                None,
                Some(7),
                &[("chains", "3"), ("fan", "5")],
            ),
            json!({"chains": 3, "length": 30, "rounds": 7, "fan": 5}),
        ),
        (
            "jacobi-1d",
            spec(tiny, Some(60), Some(5), None, Some(4), &[]),
            json!({"blocks": 5, "block_len": 12, "iterations": 4}),
        ),
        (
            "jacobi-2d",
            spec(
                tiny,
                Some(24),
                None,
                Some(6),
                Some(2),
                &[("block_cols", "8")],
            ),
            json!({"rows": 24, "cols": 24, "block_rows": 6, "block_cols": 8, "iterations": 2}),
        ),
        (
            "jacobi-3d",
            spec(tiny, Some(6), Some(2), None, Some(3), &[]),
            json!({"depth": 6, "rows": 6, "cols": 6, "block_depth": 3, "block_rows": 3,
                   "block_cols": 3, "iterations": 3}),
        ),
        (
            "seidel-1d",
            spec(tiny, None, Some(6), Some(5), Some(2), &[]),
            json!({"len": 30, "block_len": 5, "iterations": 2}),
        ),
        (
            "seidel-2d",
            spec(
                tiny,
                Some(20),
                Some(4),
                None,
                Some(2),
                &[("cols", "12"), ("block_cols", "3")],
            ),
            json!({"rows": 20, "cols": 12, "block_rows": 5, "block_cols": 3, "iterations": 2}),
        ),
        (
            "seidel-3d",
            spec(
                tiny,
                None,
                None,
                None,
                None,
                &[("depth", "6"), ("block_depth", "2"), ("iterations", "3")],
            ),
            json!({"depth": 6, "rows": 8, "cols": 8, "block_depth": 2, "block_rows": 4,
                   "block_cols": 4, "iterations": 3}),
        ),
        (
            "kmeans",
            spec(
                tiny,
                Some(120),
                Some(6),
                None,
                Some(2),
                &[("clusters", "5"), ("dims", "2")],
            ),
            json!({"points": 120, "block_points": 20, "clusters": 5, "dims": 2, "iterations": 2}),
        ),
        (
            "blur-roberts",
            spec(tiny, Some(18), None, Some(6), None, &[("block_cols", "9")]),
            json!({"rows": 18, "cols": 18, "block_rows": 6, "block_cols": 9}),
        ),
        (
            "bitonic",
            spec(tiny, Some(256), Some(4), None, None, &[("seed", "7")]),
            json!({"len": 256, "block_len": 64, "seed": 7}),
        ),
        (
            "sparselu",
            spec(tiny, Some(15), None, Some(3), None, &[("layout", "1")]),
            json!({"blocks": 5, "block_len": 3, "layout": 1}),
        ),
        (
            "cholesky",
            spec(tiny, Some(30), Some(3), None, None, &[]),
            json!({"n": 30, "tile": 10}),
        ),
        (
            "spmv",
            spec(tiny, Some(6), None, None, Some(4), &[("partitions", "5")]),
            json!({"mesh": 6, "partitions": 5, "products": 4}),
        ),
        (
            "bicgstab",
            spec(
                tiny,
                Some(5),
                None,
                None,
                Some(500),
                &[("tolerance_digits", "6")],
            ),
            json!({"mesh": 5, "partitions": 4, "max_iterations": 500, "tolerance_digits": 6}),
        ),
        (
            "stream",
            spec(tiny, Some(1000), Some(4), None, Some(2), &[]),
            json!({"len": 1000, "block_len": 250, "iterations": 2}),
        ),
        (
            "nested-stream",
            spec(tiny, Some(1000), None, Some(100), Some(1), &[]),
            json!({"len": 1000, "block_len": 100, "iterations": 1}),
        ),
        (
            "twisted-stream",
            spec(
                tiny,
                Some(800),
                None,
                Some(96),
                Some(3),
                &[("remote_vectors", "2"), ("--migrate", "mixed")],
            ),
            json!({"len": 800, "block_len": 96, "iterations": 3, "remote_vectors": 2, "migrate": "mixed"}),
        ),
    ]
}

#[test]
fn every_workload_verifies_at_explicit_sizes() {
    let rt = runtime();
    let cases = explicit();
    assert_eq!(cases.len(), BENCHES.len());
    for (name, spec, want) in cases {
        for control in Control::ALL {
            let out = run_sized(name, &rt, &spec, control)
                .unwrap_or_else(|e| panic!("{name} ({control}): {e}"));
            assert!(out.verified && out.checked, "{name} ({control})");
            for (field, value) in want.as_object().unwrap() {
                assert_eq!(
                    &out.params[field], value,
                    "{name}: {field} in {}",
                    out.params
                );
            }
        }
    }
}

#[test]
fn the_task_counts_follow_the_explicit_sizes() {
    let rt = runtime();
    let tasks = |name: &str, spec: &SizeSpec| {
        run_sized(name, &rt, spec, Control::Sequential)
            .unwrap()
            .report
            .tasks
    };
    // 24 × 24 in 6 × 8 blocks: 4 × 3 blocks, 2 iterations.
    let (_, j2, _) = &explicit()[3];
    assert_eq!(tasks("jacobi-2d", j2), 12 * 2);
    // 120 points in 6 blocks, 2 iterations: 6 block tasks and one reduction each.
    let (_, k, _) = &explicit()[8];
    assert_eq!(tasks("kmeans", k), (6 + 1) * 2);
}

#[test]
fn blocks_of_one_element_verify() {
    let rt = runtime();
    let one = |size: usize| spec(Size::Tiny, Some(size), None, Some(1), None, &[]);
    for (name, size) in [
        ("jacobi-1d", 5),
        ("seidel-1d", 5),
        ("jacobi-2d", 3),
        ("seidel-2d", 3),
        ("jacobi-3d", 2),
        ("seidel-3d", 2),
        ("kmeans", 6),
        ("blur-roberts", 3),
        ("bitonic", 4),
    ] {
        let out = run_sized(name, &rt, &one(size), Control::Sequential)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(out.verified, "{name}");
    }
    // One block holding the whole problem.
    for name in [
        "jacobi-2d",
        "seidel-3d",
        "bitonic",
        "blur-roberts",
        "kmeans",
    ] {
        let whole = spec(Size::Tiny, None, Some(1), None, None, &[]);
        let out = run_sized(name, &rt, &whole, Control::Parallel).unwrap();
        assert!(out.verified, "{name}");
    }
}

#[test]
fn the_named_sizes_are_unchanged() {
    for &name in BENCHES {
        for size in [Size::Tiny, Size::Small, Size::Paper] {
            let w = Workload::new(name, &SizeSpec::from(size), Control::Sequential)
                .unwrap_or_else(|e| panic!("{name} at {size:?}: {e}"));
            assert!(w.data_bytes() > 0);
            assert_eq!(w.name(), name);
        }
    }
    let paper = Workload::new(
        "jacobi-2d",
        &SizeSpec::from(Size::Paper),
        Control::Sequential,
    )
    .unwrap();
    assert_eq!(paper.params()["rows"], 1 << 14);
    assert_eq!(paper.data_bytes(), 2 << 30);
    // Paper sizes, then overrides.
    let fewer = spec(Size::Paper, None, None, None, Some(2), &[]);
    let w = Workload::new("jacobi-2d", &fewer, Control::Sequential).unwrap();
    assert_eq!(w.params()["iterations"], 2);
    assert_eq!(w.params()["block_rows"], 1 << 10);
}

/// The message of the error `spec` gives for `name`.
fn error(name: &str, spec: &SizeSpec) -> String {
    match Workload::new(name, spec, Control::Sequential) {
        Err(Error::Params(message)) => message,
        Err(other) => panic!("{name}: {other:?} is not a parameter error"),
        Ok(w) => panic!("{name}: {} was accepted", w.params()),
    }
}

#[test]
fn invalid_sizes_are_errors_naming_the_option() {
    let s = Size::Small;
    let cases: Vec<(&str, SizeSpec, &str)> = vec![
        // A block count whose product with the block extent overflows: said so, not
        // as a `--blocks` the user did not give.
        (
            "jacobi-1d",
            spec(
                s,
                None,
                None,
                None,
                None,
                &[("blocks", "9223372036854775807")],
            ),
            "blocks 9223372036854775807 × block_len",
        ),
        // A block extent that does not divide the extent.
        (
            "jacobi-2d",
            spec(s, None, None, Some(100), None, &[]),
            "--block-len",
        ),
        (
            "jacobi-2d",
            spec(s, Some(100), None, None, None, &[]),
            "--size",
        ),
        (
            "jacobi-3d",
            spec(s, None, Some(3), None, None, &[]),
            "--blocks 3",
        ),
        (
            "seidel-1d",
            spec(s, Some(1000), Some(3), None, None, &[]),
            "--blocks 3",
        ),
        (
            "blur-roberts",
            spec(s, None, None, None, None, &[("block_rows", "300")]),
            "block_rows",
        ),
        (
            "kmeans",
            spec(s, Some(1000), None, Some(300), None, &[]),
            "block_points",
        ),
        (
            "jacobi-1d",
            spec(s, Some(1000), None, None, None, &[]),
            "--size 1000",
        ),
        (
            "jacobi-1d",
            spec(s, Some(12), Some(3), Some(5), None, &[]),
            "--blocks 3",
        ),
        // Zeros.
        (
            "jacobi-2d",
            spec(s, Some(0), None, None, None, &[]),
            "--size must be at least 1",
        ),
        (
            "seidel-2d",
            spec(s, None, None, None, Some(0), &[]),
            "--iterations",
        ),
        (
            "kmeans",
            spec(s, None, None, None, None, &[("clusters", "0")]),
            "clusters",
        ),
        (
            "jacobi-1d",
            spec(s, None, None, None, None, &[("block_len", "0")]),
            "block_len",
        ),
        (
            "overhead",
            spec(s, None, None, None, None, &[("fan", "0")]),
            "fan",
        ),
        (
            "random-dag",
            spec(s, None, None, None, None, &[("data", "1")]),
            "data",
        ),
        // Kernel constraints.
        (
            "bitonic",
            spec(s, Some(1000), None, None, None, &[]),
            "power of two",
        ),
        (
            "bitonic",
            spec(s, None, Some(3), None, None, &[]),
            "--blocks 3",
        ),
        (
            "bitonic",
            spec(s, Some(64), None, Some(128), None, &[]),
            "block_len",
        ),
        (
            "kmeans",
            spec(s, Some(10), Some(1), None, None, &[]),
            "clusters",
        ),
        // Limits that would overflow.
        (
            "jacobi-3d",
            spec(s, Some(1 << 20), Some(1), None, None, &[]),
            "2^48",
        ),
        (
            "blur-roberts",
            spec(s, Some(1 << 17), Some(1), None, None, &[]),
            "2^32",
        ),
        (
            "jacobi-1d",
            spec(s, None, Some(usize::MAX), Some(2), None, &[]),
            "overflows",
        ),
        // Unknown fields, bad values, options that mean nothing.
        (
            "jacobi-2d",
            spec(s, None, None, None, None, &[("depth", "4")]),
            "unknown --param `depth`",
        ),
        (
            "jacobi-2d",
            spec(s, None, None, None, None, &[("rows", "many")]),
            "--param rows=many",
        ),
        (
            "jacobi-2d",
            spec(s, None, None, None, None, &[("rows", "-4")]),
            "--param rows=-4",
        ),
        (
            "random-dag",
            spec(s, None, None, None, None, &[("hints", "yes")]),
            "--param hints=yes",
        ),
        (
            "kmeans",
            spec(s, None, None, None, None, &[("control", "parallel")]),
            "--control",
        ),
        (
            "blur-roberts",
            spec(s, None, None, None, Some(3), &[]),
            "--iterations",
        ),
        (
            "bitonic",
            spec(s, None, None, None, Some(3), &[]),
            "--iterations",
        ),
        (
            "random-dag",
            spec(s, None, Some(4), None, None, &[]),
            "--blocks",
        ),
        (
            "overhead",
            spec(s, None, None, Some(4), None, &[]),
            "--block-len",
        ),
        // `--param` wins, and the result is checked.
        (
            "jacobi-2d",
            spec(s, Some(64), None, None, None, &[("rows", "100")]),
            "rows (--size) = 100",
        ),
    ];
    for (name, spec, needle) in cases {
        let message = error(name, &spec);
        assert!(
            message.contains(needle) && message.starts_with(name),
            "{name} {spec:?}: {message:?} should name {needle:?}"
        );
        assert_eq!(message.lines().count(), 1, "{message:?}");
    }
    assert!(matches!(
        Workload::new("quicksort", &SizeSpec::default(), Control::Sequential),
        Err(Error::UnknownBench(_))
    ));
}

#[test]
fn kernels_called_directly_refuse_bad_parameters() {
    let rt = runtime();
    let mut p = locus_bench::jacobi_2d::Params::tiny();
    p.block_cols = 5;
    let e = locus_bench::jacobi_2d::run(&rt, &p).unwrap_err();
    assert!(
        matches!(&e, Error::Params(m) if m.contains("block_cols")),
        "{e}"
    );
    let mut p = locus_bench::bitonic::Params::tiny();
    p.len = 100;
    assert!(matches!(
        locus_bench::bitonic::run(&rt, &p),
        Err(Error::Params(_))
    ));
    let p = locus_bench::jacobi_1d::Params {
        blocks: 0,
        block_len: 8,
        iterations: 1,
    };
    assert!(matches!(
        locus_bench::jacobi_1d::run(&rt, &p),
        Err(Error::Params(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Any combination of small options either is refused with a one-line message that
    /// starts with the workload's name (when the workload is built, or when it runs on
    /// a machine it does not fit), or runs and verifies: never a panic.
    #[test]
    fn any_small_size_is_refused_or_verifies(
        bench in 0..BENCHES.len(),
        size in proptest::option::of(0usize..40),
        blocks in proptest::option::of(0usize..6),
        block_len in proptest::option::of(0usize..12),
        iterations in proptest::option::of(0usize..4),
        parallel in any::<bool>(),
    ) {
        let name = BENCHES[bench];
        let spec = spec(Size::Tiny, size, blocks, block_len, iterations, &[]);
        let control = if parallel { Control::Parallel } else { Control::Sequential };
        match Workload::new(name, &spec, control) {
            Err(Error::Params(m)) => {
                prop_assert!(m.starts_with(name) && m.lines().count() == 1, "{m:?}");
            }
            Err(e) => prop_assert!(false, "{name}: {e:?}"),
            Ok(w) => match w.run(&runtime()) {
                Ok(out) => prop_assert!(out.verified, "{name} {}", w.params()),
                // Sizes that depend on the machine (the STREAM family needs an element
                // per node with workers) are refused when the run sees the machine.
                Err(Error::Params(m)) => {
                    prop_assert!(m.starts_with(name) && m.lines().count() == 1, "{m:?}");
                }
                Err(e) => prop_assert!(false, "{name}: {e:?}"),
            },
        }
    }
}

#[test]
fn a_param_wins_over_the_generic_options_for_its_field() {
    let params = |name: &str, spec: &SizeSpec| {
        Workload::new(name, spec, Control::Sequential)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .params()
    };
    let s = Size::Small;
    let p = params(
        "jacobi-2d",
        &spec(s, Some(256), None, None, None, &[("rows", "128")]),
    );
    assert_eq!(
        (p["rows"].as_u64(), p["cols"].as_u64()),
        (Some(128), Some(256))
    );
    let p = params(
        "jacobi-2d",
        &spec(s, None, Some(4), None, None, &[("rows", "64")]),
    );
    assert_eq!(p["block_rows"], 16);
    assert_eq!(p["block_cols"], 128);
    let p = params(
        "jacobi-1d",
        &spec(s, Some(64), None, None, None, &[("blocks", "4")]),
    );
    assert_eq!(
        (p["blocks"].as_u64(), p["block_len"].as_u64()),
        (Some(4), Some(16))
    );
    let p = params(
        "jacobi-1d",
        &spec(s, Some(64), None, None, None, &[("block_len", "8")]),
    );
    assert_eq!(
        (p["blocks"].as_u64(), p["block_len"].as_u64()),
        (Some(8), Some(8))
    );
}

/// Work that cannot finish is refused before anything runs, with the limit: `--iterations
/// 2^62` (tasks), `overhead --size 2^40` (tasks), one huge block swept for many
/// iterations (bytes); every named size stays well inside both limits.
#[test]
fn work_that_cannot_finish_is_refused_with_the_limit() {
    let s = Size::Small;
    for (name, spec, want) in [
        (
            "jacobi-1d",
            spec(s, None, None, None, Some(1 << 62), &[]),
            "2^32",
        ),
        (
            "jacobi-2d",
            spec(s, None, None, None, Some(1 << 62), &[]),
            "2^32",
        ),
        (
            "kmeans",
            spec(s, None, None, None, Some(1 << 62), &[]),
            "2^32",
        ),
        (
            "spmv",
            spec(s, None, None, None, Some(1 << 62), &[]),
            "2^32",
        ),
        (
            "overhead",
            spec(s, Some(1 << 40), None, None, None, &[]),
            "2^32",
        ),
        (
            "overhead",
            spec(s, None, None, None, Some(1 << 40), &[]),
            "2^32",
        ),
        (
            "jacobi-1d",
            spec(s, Some(1 << 30), Some(1), None, Some(1 << 20), &[]),
            "bytes swept, more than the limit of 2^48",
        ),
    ] {
        let m = error(name, &spec);
        assert!(
            m.contains(want) && (m.contains("--iterations") || m.contains("--size")),
            "{name}: {m}"
        );
    }
    // Parameters made in code (`locus run --distributed` makes jacobi-2d's) are checked
    // by their `validate` the same way.
    let direct = locus_bench::jacobi_2d::Params {
        iterations: 1 << 62,
        ..Default::default()
    };
    let m = direct.validate().unwrap_err();
    assert!(m.contains("more than the limit of 2^32"), "{m}");
    let direct = locus_bench::overhead::Params {
        rounds: 1 << 40,
        ..Default::default()
    };
    assert!(direct.validate().unwrap_err().contains("2^32"));
    for name in BENCHES {
        for size in [Size::Paper, Size::PaperSgi] {
            Workload::new(name, &SizeSpec::from(size), Control::Sequential)
                .unwrap_or_else(|e| panic!("{name} at {size:?}: {e}"));
        }
    }
}
