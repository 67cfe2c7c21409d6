//! The interleaved runs: for every kernel and Locus configuration, each repetition runs
//! Locus once and then every built peer once, so that all of them see the machine in
//! the same state; a [`Row`] collects the times.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::{size_args, Built, Peer, Prepared, Size};
use crate::bench::summary::median;

/// One timed run: wall time and whether the result was verified.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    /// Seconds.
    pub wall_s: f64,
    /// Whether the result equals the sequential reference.
    pub verified: bool,
}

/// Runs `built`'s program for `kernel` once at `size` on `threads` threads; `out` is the
/// output directory (the peers' scratch space is under it); `config` is the row's Locus
/// configuration, which the `locus-c` and `openmp-locus` peers run under too; `replay`
/// says that Locus's runs replay recorded graphs ([`size_args`]).
#[allow(clippy::too_many_arguments)]
pub fn run_peer(
    built: &Built,
    out: &Path,
    kernel: &str,
    size: Size,
    threads: usize,
    config: &str,
    replay: bool,
) -> Result<Timed, String> {
    let Some((program, mut args)) = built.program(kernel) else {
        return Err(format!("{} has no program for {kernel}", built.peer));
    };
    args.extend(size_args(kernel, size, replay));
    let home = out.join("peers").join("starpu-home");
    if built.peer == Peer::Starpu {
        std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    }
    let mut command = Command::new(&program);
    command.args(&args).envs(built.peer.env(threads, &home));
    if built.peer == Peer::LocusC {
        command.env("LOCUS_CONFIG", config);
    }
    // The report Locus's OpenMP runtime writes at exit: its presence shows that the
    // program ran on that runtime, not on a libgomp found elsewhere.
    let omp_report = program.with_extension("report.json");
    if built.peer == Peer::OpenmpLocus {
        // As `locus omp --config CONFIG -- PROGRAM` runs it.
        let dir = crate::cmd::omp::library_dir(locus_omp::env::LIBRARY_FILE)
            .map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(&omp_report);
        command
            .env("LD_LIBRARY_PATH", dir)
            .env(locus_omp::env::CONFIG, config)
            .env(locus_omp::env::REPORT, &omp_report);
    }
    let result = command
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if built.peer == Peer::OpenmpLocus && !omp_report.is_file() {
        return Err(format!(
            "{} did not run on Locus's OpenMP runtime (it wrote no report to {}); status {}",
            program.display(),
            omp_report.display(),
            result.status
        ));
    }
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    // The JSON line is the program's last line on stdout.
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'));
    let parsed: Option<Value> = line.and_then(|l| serde_json::from_str(l).ok());
    let Some(line) = parsed else {
        return Err(format!(
            "{} exited with {} and printed no JSON line; stderr: {}",
            program.display(),
            result.status,
            stderr.trim()
        ));
    };
    let wall_s = line["wall_s"]
        .as_f64()
        .ok_or_else(|| format!("{}: no wall_s in {line}", program.display()))?;
    Ok(Timed {
        wall_s,
        verified: result.status.success() && line["verified"] == json!(true),
    })
}

/// What one peer did in one row.
#[derive(Debug)]
pub enum PeerRuns {
    /// It ran: its times (of the runs that finished) and errors.
    Ran {
        /// Wall times of the runs that finished.
        times: Vec<f64>,
        /// Every run finished and verified.
        verified: bool,
        /// Errors, one per failed run.
        errors: Vec<String>,
    },
    /// It was skipped (missing packages); the reason.
    Skipped(String),
    /// Its build failed; the reason.
    BuildFailed(String),
}

/// One row of the peer table: a kernel under one Locus configuration against every peer.
#[derive(Debug)]
pub struct Row {
    /// Kernel.
    pub kernel: &'static str,
    /// Locus configuration.
    pub config: String,
    /// Locus's wall times (of the runs that finished).
    pub locus_s: Vec<f64>,
    /// Every Locus run finished and was verified.
    pub locus_verified: bool,
    /// Locus's errors, one per failed run.
    pub locus_errors: Vec<String>,
    /// Each peer, in [`Peer::ALL`] order.
    pub peers: Vec<(Peer, PeerRuns)>,
}

impl Row {
    /// Median Locus time.
    pub fn locus_median(&self) -> Option<f64> {
        median(&mut self.locus_s.clone())
    }

    /// Median time of `peer`, when it ran and verified every time.
    pub fn peer_median(&self, peer: Peer) -> Option<f64> {
        match self.runs(peer)? {
            PeerRuns::Ran {
                times,
                verified: true,
                errors,
            } if errors.is_empty() => median(&mut times.clone()),
            _ => None,
        }
    }

    /// `peer`'s median time over Locus's (above 1: Locus is faster), when both ran and
    /// verified.
    pub fn ratio(&self, peer: Peer) -> Option<f64> {
        if !self.locus_verified {
            return None;
        }
        Some(self.peer_median(peer)? / self.locus_median()?)
    }

    /// The least and the largest of `peer`'s per-repetition ratios: each repetition
    /// runs Locus and then the peer, so repetition `i` pairs the `i`-th time of each
    /// (a pair shares the machine's state of that moment). `None` without a ratio.
    pub fn ratio_range(&self, peer: Peer) -> Option<(f64, f64)> {
        self.ratio(peer)?;
        let Some(PeerRuns::Ran { times, .. }) = self.runs(peer) else {
            return None;
        };
        if times.len() != self.locus_s.len() {
            return None;
        }
        let ratios = times.iter().zip(&self.locus_s).map(|(p, l)| p / l);
        let (lo, hi) = ratios.fold((f64::INFINITY, 0.0f64), |(lo, hi), r| {
            (lo.min(r), hi.max(r))
        });
        Some((lo, hi))
    }

    /// The least and the largest time of `peer`, when it ran and verified.
    pub fn peer_range(&self, peer: Peer) -> Option<(f64, f64)> {
        self.peer_median(peer)?;
        match self.runs(peer)? {
            PeerRuns::Ran { times, .. } => range(times),
            _ => None,
        }
    }

    /// The least and the largest Locus time.
    pub fn locus_range(&self) -> Option<(f64, f64)> {
        range(&self.locus_s)
    }

    /// What `peer` did in this row.
    pub fn runs(&self, peer: Peer) -> Option<&PeerRuns> {
        self.peers.iter().find(|(p, _)| *p == peer).map(|(_, r)| r)
    }

    /// The peers that ran but did not verify every time (or failed a run).
    pub fn unverified_peers(&self) -> Vec<Peer> {
        self.peers
            .iter()
            .filter(|(_, r)| {
                matches!(r, PeerRuns::Ran { verified, errors, .. } if !verified || !errors.is_empty())
            })
            .map(|&(p, _)| p)
            .collect()
    }

    /// Locus and every peer that ran verified every time, and no build failed.
    pub fn ok(&self) -> bool {
        self.locus_verified
            && self.locus_errors.is_empty()
            && self.unverified_peers().is_empty()
            && !self
                .peers
                .iter()
                .any(|(_, r)| matches!(r, PeerRuns::BuildFailed(_)))
    }
}

/// Runs every kernel under every configuration `repetitions` times at Locus's small
/// size, each Locus run followed by one run of every built peer. `locus(kernel, config)`
/// runs Locus once (replaying recorded graphs with `replay`); `progress` is told what
/// runs.
#[allow(clippy::too_many_arguments)]
pub fn compare(
    built: &[Built],
    out: &Path,
    kernels: &[&'static str],
    configs: &[String],
    repetitions: usize,
    threads: usize,
    replay: bool,
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
                locus_verified: true,
                locus_errors: Vec::new(),
                peers: built
                    .iter()
                    .map(|b| {
                        let runs = match &b.state {
                            Prepared::Ready { .. } if !b.peer.has(kernel) => {
                                PeerRuns::Skipped(format!("no {} program for {kernel}", b.peer))
                            }
                            Prepared::Ready { .. } => PeerRuns::Ran {
                                times: Vec::new(),
                                verified: true,
                                errors: Vec::new(),
                            },
                            Prepared::Skipped(why) => PeerRuns::Skipped(why.clone()),
                            Prepared::Failed(why) => PeerRuns::BuildFailed(why.clone()),
                        };
                        (b.peer, runs)
                    })
                    .collect(),
            };
            for repetition in 1..=repetitions {
                progress(&format!("{kernel} {config} vs peers #{repetition}"));
                match locus(kernel, config) {
                    Ok(t) => {
                        row.locus_s.push(t.wall_s);
                        row.locus_verified &= t.verified;
                    }
                    Err(e) => {
                        row.locus_verified = false;
                        row.locus_errors.push(e);
                    }
                }
                for (b, (_, runs)) in built.iter().zip(row.peers.iter_mut()) {
                    let PeerRuns::Ran {
                        times,
                        verified,
                        errors,
                    } = runs
                    else {
                        continue;
                    };
                    match run_peer(b, out, kernel, Size::Small, threads, config, replay) {
                        Ok(t) => {
                            times.push(t.wall_s);
                            *verified &= t.verified;
                        }
                        Err(e) => {
                            *verified = false;
                            errors.push(e);
                        }
                    }
                }
            }
            rows.push(row);
        }
    }
    rows
}

/// The least and the largest of `times`, if any.
fn range(times: &[f64]) -> Option<(f64, f64)> {
    let lo = times.iter().copied().reduce(f64::min)?;
    let hi = times.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}
