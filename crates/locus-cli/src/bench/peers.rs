//! `locus bench --peers`: the kernels that have a peer in `peers/openmp` (the same
//! kernels as OpenMP tasks with `depend` clauses, gcc's libgomp), built with
//! `gcc -O2 -fopenmp` into the output directory and run alternately with Locus's run of
//! the same kernel; a table of median times and `peers.json`.
//!
//! Each peer verifies its own result against a sequential reference and prints one JSON
//! line (`wall_s`, `tasks`, `verified`); see `peers/openmp/README.md`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::bench::summary::median;

/// Where the peer sources are, relative to this crate.
const SOURCES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../peers/openmp");

/// The kernels with an OpenMP peer, in table order.
pub const KERNELS: &[&str] = &["jacobi-2d", "seidel-2d", "kmeans", "bitonic", "overhead"];

/// The peer's name in tables and reports.
pub const PEER: &str = "openmp-gcc";

/// Whether `gcc` can be run: the peers need it.
pub fn gcc_available() -> bool {
    Command::new("gcc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
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

/// Builds the peers of `kernels` into `dir/peers/` with `gcc -O2 -fopenmp`; returns that
/// directory.
pub fn build(dir: &Path, kernels: &[&str]) -> Result<PathBuf, String> {
    let bin = dir.join("peers");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    for kernel in kernels {
        let source = Path::new(SOURCES).join(format!("{}.c", file_stem(kernel)));
        let out = Command::new("gcc")
            .args(["-O2", "-fopenmp", "-o"])
            .arg(bin.join(file_stem(kernel)))
            .arg(&source)
            .output()
            .map_err(|e| format!("gcc: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "gcc could not build {}: {}",
                source.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    Ok(bin)
}

/// `jacobi-2d` → `jacobi_2d`: the name of a peer's source and program.
fn file_stem(kernel: &str) -> String {
    kernel.replace('-', "_")
}

/// The size arguments that make a peer run Locus's default (small) size. The stencils,
/// `kmeans` and `bitonic` default to it; `overhead` needs its shape spelled out.
fn size_args(kernel: &str) -> Vec<String> {
    if kernel == "overhead" {
        let p = locus_bench::overhead::Params::default();
        [p.chains, p.length, p.rounds, p.fan]
            .iter()
            .map(ToString::to_string)
            .collect()
    } else {
        Vec::new()
    }
}

/// One timed run: wall time and whether the result was verified.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    /// Seconds.
    pub wall_s: f64,
    /// Whether the result equals the sequential reference.
    pub verified: bool,
}

/// Runs the peer of `kernel` once from `bin` with one OpenMP thread per CPU, bound.
fn run_peer(bin: &Path, kernel: &str, threads: usize) -> Result<Timed, String> {
    let program = bin.join(file_stem(kernel));
    let out = Command::new(&program)
        .args(size_args(kernel))
        .env("OMP_NUM_THREADS", threads.to_string())
        .env("OMP_PROC_BIND", "true")
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line: Value = serde_json::from_str(stdout.trim()).map_err(|e| {
        format!(
            "{}: no JSON line ({e}); stderr: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    let wall_s = line["wall_s"]
        .as_f64()
        .ok_or_else(|| format!("{}: no wall_s", program.display()))?;
    Ok(Timed {
        wall_s,
        verified: out.status.success() && line["verified"] == json!(true),
    })
}

/// One row of the peer table: a kernel under one Locus configuration against its peer.
#[derive(Debug)]
pub struct Row {
    /// Kernel.
    pub kernel: &'static str,
    /// Locus configuration.
    pub config: String,
    /// Locus's wall times (of the runs that finished).
    pub locus_s: Vec<f64>,
    /// The peer's wall times.
    pub peer_s: Vec<f64>,
    /// Every Locus run finished and was verified.
    pub locus_verified: bool,
    /// Every peer run finished and was verified.
    pub peer_verified: bool,
    /// Errors, one per failed run.
    pub errors: Vec<String>,
}

impl Row {
    /// Median Locus time.
    pub fn locus_median(&self) -> Option<f64> {
        median(&mut self.locus_s.clone())
    }

    /// Median peer time.
    pub fn peer_median(&self) -> Option<f64> {
        median(&mut self.peer_s.clone())
    }

    /// Peer time over Locus time (above 1: Locus is faster).
    pub fn ratio(&self) -> Option<f64> {
        Some(self.peer_median()? / self.locus_median()?)
    }

    /// Both sides ran and verified every time.
    pub fn ok(&self) -> bool {
        self.locus_verified && self.peer_verified && self.errors.is_empty()
    }
}

/// Runs every kernel under every configuration `repetitions` times, each Locus run
/// followed by a peer run, so that both see the machine in the same state.
/// `locus(kernel, config)` runs Locus once; `progress` is told what runs.
pub fn compare(
    bin: &Path,
    kernels: &[&'static str],
    configs: &[String],
    repetitions: usize,
    threads: usize,
    mut locus: impl FnMut(&str, &str) -> Result<Timed, String>,
    mut progress: impl FnMut(&str),
) -> Vec<Row> {
    let mut rows = Vec::new();
    for &kernel in kernels {
        for config in configs {
            let mut row = Row {
                kernel,
                config: config.clone(),
                locus_s: Vec::new(),
                peer_s: Vec::new(),
                locus_verified: true,
                peer_verified: true,
                errors: Vec::new(),
            };
            for repetition in 1..=repetitions {
                progress(&format!("{kernel} {config} vs {PEER} #{repetition}"));
                match locus(kernel, config) {
                    Ok(t) => {
                        row.locus_s.push(t.wall_s);
                        row.locus_verified &= t.verified;
                    }
                    Err(e) => {
                        row.locus_verified = false;
                        row.errors.push(format!("locus: {e}"));
                    }
                }
                match run_peer(bin, kernel, threads) {
                    Ok(t) => {
                        row.peer_s.push(t.wall_s);
                        row.peer_verified &= t.verified;
                    }
                    Err(e) => {
                        row.peer_verified = false;
                        row.errors.push(format!("{PEER}: {e}"));
                    }
                }
            }
            rows.push(row);
        }
    }
    rows
}

fn seconds(s: Option<f64>) -> String {
    s.map_or_else(|| "-".into(), |s| format!("{:.2} ms", s * 1e3))
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "NO"
    }
}

/// The peer table: kernel, configuration, median times, ratio, verification.
pub fn table(rows: &[Row]) -> String {
    let header = [
        "kernel".to_string(),
        "locus config".into(),
        "locus median".into(),
        format!("{PEER} median"),
        format!("{PEER}/locus"),
        "verified (locus, peer)".into(),
    ];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.kernel.to_string(),
                r.config.clone(),
                seconds(r.locus_median()),
                seconds(r.peer_median()),
                r.ratio().map_or_else(|| "-".into(), |x| format!("{x:.2}")),
                format!("{}, {}", yes_no(r.locus_verified), yes_no(r.peer_verified)),
            ]
        })
        .collect();
    let mut width = header.clone().map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&cells) {
        let line: Vec<String> = row
            .iter()
            .zip(&width)
            .enumerate()
            .map(|(i, (c, &w))| {
                if i < 2 || i == 5 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// `peers.json`: the peer, how it ran and one object per row.
pub fn report(rows: &[Row], repetitions: usize, threads: usize) -> Value {
    json!({
        "peer": PEER,
        "build": "gcc -O2 -fopenmp",
        "env": {"OMP_NUM_THREADS": threads, "OMP_PROC_BIND": "true"},
        "repetitions": repetitions,
        "rows": rows.iter().map(|r| json!({
            "kernel": r.kernel,
            "config": r.config,
            "locus_median_s": r.locus_median(),
            "peer_median_s": r.peer_median(),
            "ratio_peer_over_locus": r.ratio(),
            "locus_s": r.locus_s,
            "peer_s": r.peer_s,
            "locus_verified": r.locus_verified,
            "peer_verified": r.peer_verified,
            "errors": r.errors,
        })).collect::<Vec<_>>(),
    })
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
        for k in KERNELS {
            let source = Path::new(SOURCES).join(format!("{}.c", file_stem(k)));
            assert!(source.is_file(), "{}", source.display());
        }
    }

    #[test]
    fn table_has_ratio_and_verification() {
        let row = Row {
            kernel: "bitonic",
            config: "dsa-opt".into(),
            locus_s: vec![0.02, 0.01, 0.03],
            peer_s: vec![0.04, 0.02, 0.06],
            locus_verified: true,
            peer_verified: true,
            errors: Vec::new(),
        };
        assert_eq!(row.ratio(), Some(2.0));
        let t = table(&[row]);
        assert!(
            t.contains("bitonic") && t.contains("2.00") && t.contains("yes, yes"),
            "{t}"
        );
    }
}
