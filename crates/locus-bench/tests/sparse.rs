//! Paper 3's workloads: `spmv` and `bicgstab` verify at tiny size under every
//! configuration, on the host and on two and four virtual nodes, with every affinity
//! mode, on the generated Laplacian and on Matrix Market files written here
//! (symmetric, general, pattern); malformed files are one error naming the line;
//! `jacobi-2d`'s KASTORS variants verify alike and place their blocks as the mode says.

use std::path::PathBuf;

use locus::{Config, Runtime, Topology};
use locus_bench::affinity::AffinityMode;
use locus_bench::{run_sized, Control, Error, Size, SizeSpec, Workload};

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

/// The tiny size with `--affinity mode` and, if given, `--matrix path`.
fn tiny(mode: AffinityMode, matrix: Option<&str>) -> SizeSpec {
    let mut fields = vec![("--affinity".to_string(), mode.name().to_string())];
    if let Some(m) = matrix {
        fields.push(("--matrix".into(), m.into()));
    }
    SizeSpec {
        fields,
        ..SizeSpec::from(Size::Tiny)
    }
}

fn scratch(name: &str, text: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sparse-mtx");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// A symmetric positive definite matrix of 30 rows: a 1-D Laplacian (2, -1) with a
/// long-range coupling every 7 rows, written as the lower triangle.
fn symmetric_file() -> String {
    let n = 30;
    let mut entries = Vec::new();
    for i in 1..=n {
        entries.push(format!("{i} {i} 4.0"));
        if i > 1 {
            entries.push(format!("{i} {} -1", i - 1));
        }
        if i > 7 {
            entries.push(format!("{i} {} -0.5", i - 7));
        }
    }
    let text = format!(
        "%%MatrixMarket matrix coordinate real symmetric\n% written by the test\n{n} {n} {}\n{}\n",
        entries.len(),
        entries.join("\n")
    );
    scratch("symmetric.mtx", &text)
}

/// A non-symmetric, diagonally dominant matrix of 25 rows with integer entries.
fn general_file() -> String {
    let n = 25;
    let mut entries = Vec::new();
    for i in 1..=n {
        entries.push(format!("{i} {i} 6"));
        entries.push(format!("{i} {} -2", (i % n) + 1));
        entries.push(format!("{i} {} 1", ((i + 11) % n) + 1));
    }
    let text = format!(
        "%%MatrixMarket matrix coordinate integer general\n{n} {n} {}\n{}\n",
        entries.len(),
        entries.join("\n")
    );
    scratch("general.mtx", &text)
}

/// A pattern matrix (every entry 1) of 20 rows: the diagonal and both neighbours,
/// plus a duplicate-free corner.
fn pattern_file() -> String {
    let n = 20;
    let mut entries = Vec::new();
    for i in 1..=n {
        entries.push(format!("{i} {i}"));
        if i > 1 {
            entries.push(format!("{i} {}", i - 1));
        }
        if i < n {
            entries.push(format!("{i} {}", i + 1));
        }
    }
    entries.push(format!("1 {n}"));
    let text = format!(
        "%%MatrixMarket matrix coordinate pattern general\n{n} {n} {}\n{}\n",
        entries.len(),
        entries.join("\n")
    );
    scratch("pattern.mtx", &text)
}

#[test]
fn spmv_and_bicgstab_verify_under_every_config_and_affinity() {
    for spec in ["host", "2x1", "4x1"] {
        for config in Config::ALL {
            let rt = runtime(spec, config);
            for name in ["spmv", "bicgstab"] {
                for mode in AffinityMode::ALL {
                    let out = run_sized(name, &rt, &tiny(mode, None), Control::Sequential)
                        .unwrap_or_else(|e| panic!("{name} {mode} under {config} on {spec}: {e}"));
                    assert!(
                        out.verified && out.checked,
                        "{name} {mode} under {config} on {spec}: {:?}",
                        out.mismatch
                    );
                    assert_eq!(out.params["affinity"], mode.name());
                }
            }
        }
    }
}

#[test]
fn jacobi_2d_kastors_variants_verify_under_every_config() {
    for spec in ["host", "2x1", "4x1"] {
        for config in Config::ALL {
            let rt = runtime(spec, config);
            for mode in AffinityMode::ALL {
                for control in Control::ALL {
                    let w = Workload::new("jacobi-2d", &tiny(mode, None), control).unwrap();
                    let out = w.run(&rt).unwrap_or_else(|e| {
                        panic!("jacobi-2d {mode} ({control}) under {config} on {spec}: {e}")
                    });
                    assert!(
                        out.verified,
                        "jacobi-2d {mode} ({control}) under {config} on {spec}: {:?}",
                        out.mismatch
                    );
                }
            }
        }
    }
}

#[test]
fn jacobi_2d_with_affinity_at_paper_size_is_paper_3s_kastors_problem() {
    let paper = |fields: Vec<(String, String)>| {
        let spec = SizeSpec {
            fields,
            ..SizeSpec::from(Size::Paper)
        };
        Workload::new("jacobi-2d", &spec, Control::Sequential)
            .unwrap()
            .params()
    };
    let kastors = paper(vec![("--affinity".into(), "non-strict".into())]);
    assert_eq!(
        (kastors["rows"].as_u64(), kastors["block_rows"].as_u64()),
        (Some(49152), Some(1024))
    );
    assert_eq!(kastors["iterations"], 10);
    assert_eq!(kastors["affinity"], "non-strict");
    // Without a mode, paper 1's problem; explicit options still win over either.
    assert_eq!(paper(vec![])["rows"], 16384);
    let spec = SizeSpec {
        fields: vec![("--affinity".into(), "strict".into())],
        iterations: Some(3),
        ..SizeSpec::from(Size::Paper)
    };
    let w = Workload::new("jacobi-2d", &spec, Control::Sequential).unwrap();
    assert_eq!(w.params()["iterations"], 3);
}

#[test]
fn matrix_market_files_verify() {
    let files = [symmetric_file(), general_file(), pattern_file()];
    for spec in ["2x1", "4x1"] {
        for config in [Config::DsaOpt, Config::Ws, Config::ShmBase] {
            let rt = runtime(spec, config);
            for file in &files {
                for name in ["spmv", "bicgstab"] {
                    let out = run_sized(
                        name,
                        &rt,
                        &tiny(AffinityMode::Strict, Some(file)),
                        Control::Sequential,
                    )
                    .unwrap_or_else(|e| panic!("{name} on {file}: {e}"));
                    assert!(
                        out.verified,
                        "{name} on {file} under {config} on {spec}: {:?}",
                        out.mismatch
                    );
                    assert_eq!(out.params["matrix"], file.as_str());
                }
            }
        }
    }
}

/// Matrices the solver's first half step solves exactly (a multiple of the identity):
/// s = 0 there, so (t, t) = 0 and ω would be 0 / 0. The solve must end converged, not
/// with NaN.
#[test]
fn bicgstab_solves_a_system_its_half_step_solves_exactly() {
    let identity = scratch(
        "identity.mtx",
        "%%MatrixMarket matrix coordinate pattern general\n4 4 4\n1 1\n2 2\n3 3\n4 4\n",
    );
    let scaled = scratch(
        "scaled.mtx",
        "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 2.5\n2 2 2.5\n3 3 2.5\n",
    );
    for file in [identity, scaled] {
        for config in [Config::DsaOpt, Config::ShmBase] {
            let rt = runtime("2x1", config);
            let mut spec = tiny(AffinityMode::None, Some(&file));
            spec.fields.push(("partitions".into(), "2".into()));
            let out = run_sized("bicgstab", &rt, &spec, Control::Sequential)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(out.verified, "{file} under {config}: {:?}", out.mismatch);
        }
    }
}

#[test]
fn malformed_files_are_one_error_naming_the_line() {
    let cases = [
        (
            "count.mtx",
            "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1\n2 2 1\n3 3 1\n",
            ":6:",
        ),
        (
            "index.mtx",
            "%%MatrixMarket matrix coordinate real general\n% c\n3 3 2\n1 1 1\n4 2 1\n",
            ":5:",
        ),
        (
            "value.mtx",
            "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 1 x\n",
            ":3:",
        ),
        (
            "banner.mtx",
            "%%MatrixMarket matrix array real general\n2 2\n",
            ":1:",
        ),
    ];
    for (file, text, line) in cases {
        let path = scratch(file, text);
        for name in ["spmv", "bicgstab"] {
            match Workload::new(
                name,
                &tiny(AffinityMode::Strict, Some(&path)),
                Control::Sequential,
            ) {
                Err(Error::Params(m)) => {
                    assert!(m.contains(&format!("{path}{line}")), "{m}");
                    assert!(m.starts_with(name) && !m.contains('\n'), "{m}");
                }
                other => panic!("{name} {file}: {:?}", other.map(|w| w.params())),
            }
        }
    }
    // Not square, fewer rows than partitions, no such file.
    let rect = scratch(
        "rect.mtx",
        "%%MatrixMarket matrix coordinate real general\n2 3 1\n1 1 1\n",
    );
    let small = scratch(
        "small.mtx",
        "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n",
    );
    for (path, what) in [
        (rect.as_str(), "not square"),
        (small.as_str(), "more than the 2 rows"),
        ("/nonexistent/m.mtx", "cannot open"),
    ] {
        match Workload::new(
            "spmv",
            &tiny(AffinityMode::Strict, Some(path)),
            Control::Sequential,
        ) {
            Err(Error::Params(m)) => assert!(m.contains(what), "{m}"),
            other => panic!("{path}: {:?}", other.map(|w| w.params())),
        }
    }
}

#[test]
fn affinity_and_matrix_mean_nothing_elsewhere() {
    for name in ["jacobi-1d", "kmeans", "random-dag"] {
        match Workload::new(name, &tiny(AffinityMode::Init, None), Control::Sequential) {
            Err(Error::Params(m)) => assert!(m.contains("--affinity means nothing"), "{m}"),
            other => panic!("{name}: {:?}", other.map(|w| w.params())),
        }
    }
    let spec = SizeSpec {
        fields: vec![("matrix".into(), "x.mtx".into())],
        ..SizeSpec::from(Size::Tiny)
    };
    match Workload::new("spmv", &spec, Control::Sequential) {
        Err(Error::Params(m)) => assert!(m.contains("use --matrix"), "{m}"),
        other => panic!("{:?}", other.map(|w| w.params())),
    }
}

/// Strict affinity keeps every product on its partition's node: with deferred
/// allocation nothing is read remotely but the halos, and every write is local; with
/// no hints at all on a sequential control program, more is read remotely.
#[test]
fn strict_affinity_keeps_the_products_home() {
    let rt = runtime("4x1", Config::Dfa);
    let spec = |mode| SizeSpec {
        size: Some(16),
        iterations: Some(6),
        ..tiny(mode, None)
    };
    let strict = run_sized(
        "spmv",
        &rt,
        &spec(AffinityMode::Strict),
        Control::Sequential,
    )
    .unwrap();
    let l = &strict.report.locality;
    assert!(strict.verified);
    assert_eq!(l.write_remote_bytes, 0);
    // 16 x 16 mesh in 4 partitions of about 4 mesh rows: across each of the 3
    // boundaries a product reads one mesh row's span (16 values) in each direction,
    // 6 remote reads of 16 values per product, 6 products.
    assert_eq!(l.read_remote_bytes, 6 * 6 * 16 * 8);
    // Strict placement of the initialisation: each node holds one partition.
    let per_node = &strict.report.memory.peak_bytes_per_node;
    assert!(per_node.iter().all(|&b| b > 0), "{per_node:?}");
}

/// The KASTORS variants place the blocks' versions as the mode says: under `strict`
/// each block task runs on its owner, so with deferred allocation no block task
/// writes remotely, and only halos are read remotely.
#[test]
fn jacobi_2d_strict_blocks_stay_with_their_owner() {
    let rt = runtime("4x1", Config::Dfa);
    let out = run_sized(
        "jacobi-2d",
        &rt,
        &tiny(AffinityMode::Strict, None),
        Control::Sequential,
    )
    .unwrap();
    assert!(out.verified);
    let l = &out.report.locality;
    assert_eq!(l.write_remote_bytes, 0);
    // 16 x 16 in 4 x 8 blocks: 8 blocks, two per worker in block order (one block
    // row each). Per iteration the 3 boundaries between block rows are read from both
    // sides, one 8-element row each, twice per block row: all remote; the columns
    // between the two blocks of a row stay on the worker.
    assert_eq!(l.read_remote_bytes, 3 * (3 * 2 * 2 * 8 * 8));
}
