//! Property tests of the size options (`--size`, `--blocks`, `--block-len`,
//! `--iterations`, `--param FIELD=VALUE`, `--param size=...`): whatever numbers and text
//! they are given (zero, one, huge values near `usize::MAX`, negative or unicode text,
//! nothing), `Workload::new` either accepts parameters whose arrays, bytes and blocks
//! fit within Locus's limits (computed here with checked arithmetic) or refuses them
//! with one non-empty line that starts with the workload's name; it never panics.

use locus_bench::size::{MAX_BLOCKS, MAX_ELEMENTS};
use locus_bench::{Control, Error, Size, SizeSpec, Workload, BENCHES};
use proptest::prelude::*;
use serde_json::Value;

/// Numbers as a user might give them: small, powers of two, at the limits, huge.
fn number() -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => 0usize..70,
        2 => (0u32..64).prop_map(|k| 1usize << k),
        1 => Just(usize::MAX),
        1 => Just(usize::MAX - 1),
        1 => Just(usize::MAX / 2 + 1),
        1 => Just(1 << 24),
        1 => Just((1 << 24) + 1),
        1 => Just(1 << 48),
        1 => Just((1 << 32) + 1),
        1 => any::<usize>(),
    ]
}

/// Every field some workload has, the size names, and keys no workload has.
fn key() -> impl Strategy<Value = String> {
    let known = vec![
        "rows",
        "cols",
        "depth",
        "block_rows",
        "block_cols",
        "block_depth",
        "len",
        "block_len",
        "blocks",
        "iterations",
        "points",
        "block_points",
        "clusters",
        "dims",
        "seed",
        "tasks",
        "data",
        "max_len",
        "max_inputs",
        "hints",
        "chains",
        "length",
        "rounds",
        "fan",
        "control",
    ];
    prop_oneof![
        6 => prop::sample::select(known).prop_map(str::to_string),
        1 => "\\PC{0,6}",
        1 => Just(String::new()),
        1 => Just("rows\nrows".to_string()),
    ]
}

/// Values: numbers in every spelling, booleans, and text that is not a number.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => number().prop_map(|n| n.to_string()),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => Just("18446744073709551616".to_string()),
        1 => prop::sample::select(vec![
            "", "true", "false", "-0", "+5", " 7", "1e3", "0x10", "٣", "1\n2", "tiny", "paper",
        ])
        .prop_map(str::to_string),
        1 => "\\PC{0,6}",
    ]
}

fn spec() -> impl Strategy<Value = SizeSpec> {
    (
        prop::sample::select(vec![Size::Tiny, Size::Small, Size::Paper]),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::collection::vec((key(), value()), 0..4),
    )
        .prop_map(
            |(base, size, blocks, block_len, iterations, fields)| SizeSpec {
                base,
                size,
                blocks,
                block_len,
                iterations,
                fields,
            },
        )
}

fn field(params: &Value, name: &str) -> usize {
    params[name]
        .as_u64()
        .and_then(|v| usize::try_from(v).ok())
        .unwrap_or_else(|| panic!("{name} in {params}"))
}

/// Arrays of a workload: element size in bytes, extent fields.
type Arrays = &'static [(u128, &'static [&'static str])];
/// Blocked axes: extent field, block extent field.
type Axes = &'static [(&'static str, &'static str)];

/// The arrays of a workload, its blocked axes (`jacobi-1d`'s one axis is a block
/// count), and the fields counting what it creates up front.
struct Shape {
    arrays: Arrays,
    axes: Axes,
    counts: &'static [&'static str],
}

fn shape(name: &str) -> Shape {
    const PLANE: Axes = &[("rows", "block_rows"), ("cols", "block_cols")];
    const CUBE: Axes = &[
        ("depth", "block_depth"),
        ("rows", "block_rows"),
        ("cols", "block_cols"),
    ];
    let (arrays, axes, counts): (Arrays, Axes, &'static [&'static str]) = match name {
        "random-dag" => (&[(8, &["data", "max_len"])], &[], &["tasks", "data"]),
        "overhead" => (&[], &[], &["chains", "fan"]),
        "jacobi-1d" => (&[(8, &["blocks", "block_len"])], &[], &["blocks"]),
        "jacobi-2d" | "seidel-2d" | "blur-roberts" => (&[(8, &["rows", "cols"])], PLANE, &[]),
        "jacobi-3d" | "seidel-3d" => (&[(8, &["depth", "rows", "cols"])], CUBE, &[]),
        "seidel-1d" | "bitonic" => (&[(8, &["len"])], &[("len", "block_len")], &[]),
        "kmeans" => (
            &[(4, &["points", "dims"])],
            &[("points", "block_points")],
            &[],
        ),
        // The dense check holds the whole matrix of (blocks × block_len)².
        "sparselu" => (
            &[(4, &["blocks", "block_len", "blocks", "block_len"])],
            &[],
            &["blocks"],
        ),
        "cholesky" => (&[(8, &["n", "n"])], &[("n", "tile")], &[]),
        // The matrix of the mesh: its rows, and the partitions of them.
        "spmv" | "bicgstab" => (&[(8, &["mesh", "mesh"])], &[], &["partitions"]),
        // The STREAM family's vectors; the last block may be shorter (no divisibility).
        "stream" | "nested-stream" | "twisted-stream" => (&[(8, &["len"])], &[], &[]),
        other => panic!("no shape for {other}"),
    };
    Shape {
        arrays,
        axes,
        counts,
    }
}

/// What accepted parameters must satisfy: every array's elements and bytes computed
/// without overflow and within the limits, every block extent dividing its extent, the
/// blocks and created data within [`MAX_BLOCKS`].
fn check_accepted(w: &Workload) -> Result<(), TestCaseError> {
    let name = w.name();
    let params = w.params();
    let s = shape(name);
    for (element, fields) in s.arrays {
        let elements = fields
            .iter()
            .try_fold(1u128, |acc, f| acc.checked_mul(field(&params, f) as u128));
        prop_assert!(
            elements.is_some_and(|e| e <= MAX_ELEMENTS),
            "{name}: {elements:?} elements accepted: {params}"
        );
        let bytes = elements.and_then(|e| e.checked_mul(*element));
        prop_assert!(
            bytes.is_some_and(|b| usize::try_from(b).is_ok()),
            "{name}: {bytes:?} bytes accepted: {params}"
        );
    }
    let mut blocks = 1u128;
    for (n, b) in s.axes {
        let (n, b) = (field(&params, n), field(&params, b));
        prop_assert!(b >= 1 && n % b == 0, "{name}: {params}");
        blocks = blocks.saturating_mul((n / b) as u128);
    }
    prop_assert!(blocks <= MAX_BLOCKS, "{name}: {blocks} blocks: {params}");
    for c in s.counts {
        let v = field(&params, c);
        prop_assert!(
            v >= 1 && v as u128 <= MAX_BLOCKS,
            "{name}: {c} = {v}: {params}"
        );
    }
    let data = w.data_bytes();
    prop_assert!(
        data > 0 && u128::from(data) <= MAX_ELEMENTS * 8,
        "{name}: {data} data bytes"
    );
    Ok(())
}

fn check(name: &str, spec: &SizeSpec, control: Control) -> Result<(), TestCaseError> {
    match Workload::new(name, spec, control) {
        Ok(w) => check_accepted(&w),
        Err(Error::Params(m)) => {
            prop_assert!(
                m.starts_with(name) && m.len() > name.len() + 2,
                "{name}: {m:?}"
            );
            prop_assert!(
                !m.contains('\n') && !m.contains('\r'),
                "{name} {spec:?}: {m:?} is more than one line"
            );
            Ok(())
        }
        Err(other) => Err(TestCaseError::fail(format!("{name}: {other:?}"))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Any combination of options, for every workload.
    #[test]
    fn any_options_give_valid_parameters_or_one_line(spec in spec(), parallel in any::<bool>()) {
        let control = if parallel { Control::Parallel } else { Control::Sequential };
        for &name in BENCHES {
            check(name, &spec, control)?;
        }
    }

    /// The options that set a field, also set directly by `--param`, one field at a
    /// time with any number.
    #[test]
    fn any_single_field(bench in 0..BENCHES.len(), key in key(), n in number()) {
        let name = BENCHES[bench];
        let spec = SizeSpec {
            fields: vec![(key, n.to_string())],
            ..SizeSpec::from(Size::Small)
        };
        check(name, &spec, Control::Sequential)?;
    }

    /// `--param size=...` parses a size name or refuses the text in one line.
    #[test]
    fn size_names(text in "\\PC{0,8}|[\\s\\S]{0,6}|tiny|small|paper") {
        match text.parse::<Size>() {
            Ok(_) => prop_assert!(["tiny", "small", "paper"].contains(&text.as_str())),
            Err(m) => prop_assert!(!m.is_empty() && !m.contains('\n'), "{m:?}"),
        }
    }
}

/// The message of the error `spec` gives for `name`.
fn error(name: &str, spec: SizeSpec) -> String {
    match Workload::new(name, &spec, Control::Sequential) {
        Err(Error::Params(message)) => message,
        Err(other) => panic!("{name}: {other:?} is not a parameter error"),
        Ok(w) => panic!("{name}: {} was accepted", w.params()),
    }
}

#[test]
fn sizes_past_the_limits_name_the_fields_and_the_values() {
    let small = SizeSpec::from(Size::Small);
    // Elements: the fields and their values.
    let m = error(
        "jacobi-3d",
        SizeSpec {
            size: Some(1 << 20),
            blocks: Some(1),
            ..small.clone()
        },
    );
    assert!(
        m.contains("depth (--size) × rows (--size) × cols (--size)")
            && m.contains("1048576 × 1048576 × 1048576")
            && m.contains("2^48"),
        "{m}"
    );
    // A product beyond 128 bits.
    let m = error(
        "jacobi-3d",
        SizeSpec {
            fields: vec![
                ("depth".into(), usize::MAX.to_string()),
                ("rows".into(), usize::MAX.to_string()),
                ("cols".into(), usize::MAX.to_string()),
                ("block_depth".into(), "1".into()),
                ("block_rows".into(), "1".into()),
                ("block_cols".into(), "1".into()),
            ],
            ..small.clone()
        },
    );
    assert!(
        m.contains("more than 2^128") && m.contains("elements"),
        "{m}"
    );
    // A field plus one that would overflow.
    let m = error(
        "kmeans",
        SizeSpec {
            fields: vec![("dims".into(), usize::MAX.to_string())],
            ..small.clone()
        },
    );
    assert!(
        m.contains("dims (--param dims)") && m.contains(&usize::MAX.to_string()),
        "{m}"
    );
    // Blocks: 2^13 × 2^13 blocks of one element.
    let m = error(
        "jacobi-2d",
        SizeSpec {
            size: Some(1 << 13),
            block_len: Some(1),
            ..small.clone()
        },
    );
    assert!(
        m.contains("rows (--size) / block_rows (--block-len)")
            && m.contains("8192 × 8192 = 67108864 blocks")
            && m.contains("2^24"),
        "{m}"
    );
    // What random-dag creates before it runs.
    let m = error(
        "random-dag",
        SizeSpec {
            size: Some(usize::MAX),
            ..small.clone()
        },
    );
    assert!(
        m.contains("tasks (--size)") && m.contains("tasks, more than"),
        "{m}"
    );
    let m = error(
        "overhead",
        SizeSpec {
            fields: vec![("chains".into(), (1usize << 30).to_string())],
            ..small
        },
    );
    assert!(m.contains("chains (--param chains) = 1073741824"), "{m}");
}

#[test]
fn zero_blocks_set_by_param_are_refused() {
    for size in [None, Some(64)] {
        let m = error(
            "jacobi-1d",
            SizeSpec {
                size,
                fields: vec![("blocks".into(), "0".into())],
                ..SizeSpec::from(Size::Small)
            },
        );
        assert!(m.contains("blocks") && m.contains("at least 1"), "{m}");
    }
}

#[test]
fn text_that_would_break_the_line_is_escaped() {
    let m = error(
        "jacobi-2d",
        SizeSpec {
            fields: vec![("rows".into(), "1\n2".into())],
            ..SizeSpec::from(Size::Small)
        },
    );
    assert!(m.contains(r"--param rows=1\n2"), "{m}");
    let m = error(
        "jacobi-2d",
        SizeSpec {
            fields: vec![("ro\rws".into(), "1".into())],
            ..SizeSpec::from(Size::Small)
        },
    );
    assert!(m.contains(r"unknown --param `ro\rws`"), "{m}");
    let e = "pa\nper".parse::<Size>().unwrap_err();
    assert!(e.contains(r"`pa\nper`"), "{e}");
}
