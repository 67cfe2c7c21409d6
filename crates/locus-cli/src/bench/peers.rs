//! `locus bench --peers`: Locus's kernels written for the runtimes users compare it with
//! (`peers/`, described in `peers/README.md`), built into the output directory and run
//! alternately with Locus's run of the same kernel; a table of ratios (peer median over
//! Locus median) and `peers.json`.
//!
//! The peers: OpenMP tasks with `depend` built by gcc (libgomp) and by clang (libomp),
//! the gcc-built programs again on Locus's own OpenMP runtime (`locus omp`, under the
//! row's configuration), oneTBB flow graphs, StarPU, rayon fork-join, and Locus itself through its C API
//! (`locus-c`: the cost of the binding). Each peer program verifies its own
//! result against a sequential reference and prints one JSON line (`wall_s`, `tasks`,
//! `verified`).
//!
//! - [`toolchain`]: which Debian packages a peer needs, installing them, building it;
//! - [`compare`]: the interleaved runs and their rows;
//! - [`report`]: the table and `peers.json`.

pub mod compare;
pub mod report;
pub mod toolchain;

use std::path::{Path, PathBuf};

pub use compare::{compare, Timed};
pub use report::{report, table};
pub use toolchain::{build_all, Built, Prepared};

/// Where the peer sources are, relative to this crate.
const SOURCES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../peers");

/// The kernels with peers, in table order. Not every peer has every kernel
/// ([`Peer::has`]).
pub const KERNELS: &[&str] = &[
    "jacobi-2d",
    "seidel-2d",
    "kmeans",
    "bitonic",
    "overhead",
    "sparselu",
    "cholesky",
    "spmv",
    "bicgstab",
];

/// A peer runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// `peers/openmp` built by gcc: libgomp.
    OpenmpGcc,
    /// `peers/openmp` built by clang: LLVM's libomp.
    OpenmpClang,
    /// `peers/openmp` built by gcc and run on Locus's OpenMP runtime (crate
    /// `locus-omp`, as `locus omp` runs it) under the row's configuration: unmodified
    /// OpenMP programs on Locus, beside the same programs on libgomp.
    OpenmpLocus,
    /// `peers/tbb`: oneTBB flow graphs.
    Tbb,
    /// `peers/starpu`: StarPU tasks on registered data.
    Starpu,
    /// `peers/rayon`: rayon fork-join.
    Rayon,
    /// `peers/locus-c`: Locus's own kernels in C over its C API (`crates/locus-capi`),
    /// under the row's configuration.
    LocusC,
}

impl Peer {
    /// Every peer, in table order.
    pub const ALL: [Peer; 7] = [
        Peer::OpenmpGcc,
        Peer::OpenmpClang,
        Peer::OpenmpLocus,
        Peer::Tbb,
        Peer::Starpu,
        Peer::Rayon,
        Peer::LocusC,
    ];

    /// The peer's name in tables and reports.
    pub fn name(self) -> &'static str {
        match self {
            Peer::OpenmpGcc => "openmp-gcc",
            Peer::OpenmpClang => "openmp-clang",
            Peer::OpenmpLocus => "openmp-locus",
            Peer::Tbb => "tbb",
            Peer::Starpu => "starpu",
            Peer::Rayon => "rayon",
            Peer::LocusC => "locus-c",
        }
    }

    /// The directory of its sources.
    pub fn sources(self) -> PathBuf {
        let dir = match self {
            Peer::OpenmpGcc | Peer::OpenmpClang | Peer::OpenmpLocus => "openmp",
            Peer::Tbb => "tbb",
            Peer::Starpu => "starpu",
            Peer::Rayon => "rayon",
            Peer::LocusC => "locus-c",
        };
        Path::new(SOURCES).join(dir)
    }

    /// Whether the peer has a program for `kernel`: its source is in
    /// [`sources`](Self::sources).
    pub fn has(self, kernel: &str) -> bool {
        let source = match self {
            Peer::OpenmpGcc
            | Peer::OpenmpClang
            | Peer::OpenmpLocus
            | Peer::Starpu
            | Peer::LocusC => {
                format!("{}.c", file_stem(kernel))
            }
            Peer::Tbb => format!("{}.cpp", file_stem(kernel)),
            Peer::Rayon => format!("src/{}.rs", file_stem(kernel)),
        };
        self.sources().join(source).is_file()
    }

    /// The environment of a run on `threads` threads; `home` is the peer's scratch
    /// directory (StarPU's `STARPU_HOME`).
    pub fn env(self, threads: usize, home: &Path) -> Vec<(&'static str, String)> {
        let n = threads.to_string();
        match self {
            Peer::OpenmpGcc | Peer::OpenmpClang | Peer::OpenmpLocus => {
                vec![("OMP_NUM_THREADS", n), ("OMP_PROC_BIND", "true".into())]
            }
            Peer::Tbb => vec![("TBB_NUM_THREADS", n)],
            Peer::Starpu => vec![
                ("STARPU_NCPU", n),
                ("STARPU_NCUDA", "0".into()),
                ("STARPU_NOPENCL", "0".into()),
                ("STARPU_SILENT", "1".into()),
                ("STARPU_HOME", home.display().to_string()),
            ],
            Peer::Rayon => vec![("RAYON_NUM_THREADS", n)],
            Peer::LocusC => vec![("LOCUS_THREADS", n)],
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The peer kernels among `selected` (all of them when `selected` is empty), in table
/// order.
pub fn kernels(selected: &[&str]) -> Vec<&'static str> {
    KERNELS
        .iter()
        .copied()
        .filter(|k| selected.is_empty() || selected.contains(k))
        .collect()
}

/// `jacobi-2d` → `jacobi_2d`: the name of a peer's source and program.
fn file_stem(kernel: &str) -> String {
    kernel.replace('-', "_")
}

/// How big a peer run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Locus's default (small) size: what `locus bench --peers` compares.
    Small,
    /// Locus's test size: for checking that a peer builds and verifies.
    Tiny,
}

/// The size arguments of a peer program for `kernel` (the same for every peer: the
/// positional arguments of `peers/README.md`). With `replay` they are those beside
/// Locus's recorded graph of `kernel`, which runs without affinity hints
/// ([`locus_bench::replay::without_default_hints`]): the peers get the mode `none`
/// too, so that both sides run the same program.
pub fn size_args(kernel: &str, size: Size, replay: bool) -> Vec<String> {
    use locus_bench::affinity::AffinityMode;
    use locus_bench::{
        bicgstab, bitonic, cholesky, jacobi_2d, kmeans, overhead, seidel_2d, sparselu, spmv,
    };
    let mode = |default: AffinityMode| if replay { AffinityMode::None } else { default };
    let tiny = size == Size::Tiny;
    let numbers: Vec<usize> = match kernel {
        "jacobi-2d" | "seidel-2d" => {
            let (rows, cols, br, bc, it) = if kernel == "jacobi-2d" {
                let p = if tiny {
                    jacobi_2d::Params::tiny()
                } else {
                    jacobi_2d::Params::default()
                };
                (p.rows, p.cols, p.block_rows, p.block_cols, p.iterations)
            } else {
                let p = if tiny {
                    seidel_2d::Params::tiny()
                } else {
                    seidel_2d::Params::default()
                };
                (p.rows, p.cols, p.block_rows, p.block_cols, p.iterations)
            };
            vec![rows, cols, br, bc, it]
        }
        "kmeans" => {
            let p = if tiny {
                kmeans::Params::tiny()
            } else {
                kmeans::Params::default()
            };
            vec![p.points, p.dims, p.clusters, p.block_points, p.iterations]
        }
        "bitonic" => {
            let p = if tiny {
                bitonic::Params::tiny()
            } else {
                bitonic::Params::default()
            };
            vec![p.len, p.block_len]
        }
        "overhead" => {
            let p = if tiny {
                overhead::Params::tiny()
            } else {
                overhead::Params::default()
            };
            vec![p.chains, p.length, p.rounds, p.fan]
        }
        "sparselu" => {
            let p = if tiny {
                sparselu::Params::tiny()
            } else {
                sparselu::Params::default()
            };
            vec![p.blocks, p.block_len]
        }
        "cholesky" => {
            let p = if tiny {
                cholesky::Params::tiny()
            } else {
                cholesky::Params::default()
            };
            vec![p.n, p.tile]
        }
        // The mode of affinity hints last, as Locus runs them (strict by default).
        "spmv" => {
            let p = if tiny {
                spmv::Params::tiny()
            } else {
                spmv::Params::default()
            };
            let mut args: Vec<String> = [p.mesh, p.partitions, p.products]
                .iter()
                .map(ToString::to_string)
                .collect();
            args.push(mode(p.affinity).name().to_string());
            return args;
        }
        "bicgstab" => {
            let p = if tiny {
                bicgstab::Params::tiny()
            } else {
                bicgstab::Params::default()
            };
            let mut args: Vec<String> =
                [p.mesh, p.partitions, p.tolerance_digits, p.max_iterations]
                    .iter()
                    .map(ToString::to_string)
                    .collect();
            args.push(mode(p.affinity).name().to_string());
            return args;
        }
        _ => Vec::new(),
    };
    numbers.iter().map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_keep_table_order() {
        assert_eq!(kernels(&[]), KERNELS);
        assert_eq!(
            kernels(&["bitonic", "jacobi-1d", "kmeans"]),
            ["kmeans", "bitonic"]
        );
    }

    #[test]
    fn every_peer_kernel_has_a_source() {
        // Every peer has paper 1's kernels and the overhead graph; the OpenMP peers
        // have every kernel, oneTBB and StarPU cholesky too.
        for peer in Peer::ALL {
            for k in &KERNELS[..5] {
                assert!(peer.has(k), "{peer}: {k}");
            }
        }
        for k in KERNELS {
            assert!(
                Peer::OpenmpGcc.has(k) && Peer::OpenmpClang.has(k) && Peer::OpenmpLocus.has(k),
                "{k}"
            );
        }
        assert!(Peer::Tbb.has("cholesky") && Peer::Starpu.has("cholesky"));
        assert!(Peer::Starpu.has("spmv") && !Peer::Tbb.has("bicgstab"));
        assert!(!Peer::Rayon.has("cholesky") && !Peer::Tbb.has("sparselu"));
    }

    #[test]
    fn every_kernel_has_sizes() {
        for k in KERNELS {
            for size in [Size::Small, Size::Tiny] {
                assert!(!size_args(k, size, false).is_empty(), "{k}");
            }
        }
        assert_eq!(size_args("bitonic", Size::Small, false), ["262144", "4096"]);
        // The mode of hints last: Locus's default beside its dynamic runs, none beside
        // its recorded graphs.
        for k in ["spmv", "bicgstab"] {
            let dynamic = size_args(k, Size::Small, false);
            let replayed = size_args(k, Size::Small, true);
            assert_eq!(dynamic.last().map(String::as_str), Some("strict"), "{k}");
            assert_eq!(replayed.last().map(String::as_str), Some("none"), "{k}");
            assert_eq!(dynamic[..dynamic.len() - 1], replayed[..replayed.len() - 1]);
        }
        assert_eq!(size_args("bitonic", Size::Small, true), ["262144", "4096"]);
    }

    /// Every peer that this machine can build builds warning-free and verifies at the
    /// tiny size; a peer whose packages are missing is skipped with the reason printed
    /// (a failure when `LOCUS_PEERS_REQUIRED=1`, as in CI).
    #[test]
    fn every_peer_builds_and_verifies_tiny() {
        let required = std::env::var("LOCUS_PEERS_REQUIRED").is_ok_and(|v| v == "1");
        let dir = std::env::temp_dir().join(format!("locus-peers-check-{}", std::process::id()));
        let built = build_all(&dir, KERNELS, false, |_| {});
        let mut ran = 0;
        for b in &built {
            match &b.state {
                Prepared::Skipped(why) => {
                    println!("note: {} skipped: {why}", b.peer);
                    assert!(!required, "{}: {why}", b.peer);
                }
                Prepared::Failed(why) => panic!("{}: {why}", b.peer),
                Prepared::Ready { warnings, .. } => {
                    assert!(warnings.is_empty(), "{}: {warnings:?}", b.peer);
                    for k in KERNELS.iter().filter(|k| b.peer.has(k)) {
                        let t = compare::run_peer(b, &dir, k, Size::Tiny, 2, "dsa-opt", false)
                            .unwrap_or_else(|e| panic!("{} {k}: {e}", b.peer));
                        assert!(t.verified, "{} {k} does not verify", b.peer);
                        ran += 1;
                    }
                }
            }
        }
        println!("{ran} peer programs verified at the tiny size");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
