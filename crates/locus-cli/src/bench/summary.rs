//! The summary of a benchmark matrix: one row per kernel and configuration with the
//! medians over its repetitions, the speedup over `dsa-base`, the peak memory and, for
//! memory-bound kernels on the threads engine, the bandwidth achieved as a fraction of
//! the STREAM triad. Rendered as a text table (stdout) and as `summary.json`.
//!
//! A run whose task bodies were skipped (paper sizes in the simulator) computed no
//! result, so it is never counted as verified: it is `skipped`, neither verified nor
//! failed.

use std::fmt::Write as _;

use locus_bench::KernelOutcome;
use serde_json::{json, Value};

/// The configuration speedups are measured against (paper 1, Figure 9).
pub const BASELINE: &str = "dsa-base";

/// The kernels whose speed is bounded by memory bandwidth: the stencils and the
/// blur/edge filter stream their blocks once per iteration with little arithmetic.
pub const MEMORY_BOUND: &[&str] = &[
    "jacobi-1d",
    "jacobi-2d",
    "jacobi-3d",
    "seidel-1d",
    "seidel-2d",
    "seidel-3d",
    "blur-roberts",
];

/// One run of the matrix.
pub struct Run {
    /// The kernel's name (one of `locus_bench::KERNELS`).
    pub kernel: &'static str,
    /// The configuration's name.
    pub config: String,
    /// The kernel's outcome, or why the run could not be carried out.
    pub outcome: Result<KernelOutcome, String>,
}

/// What a run established about its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The result equals the sequential reference.
    Verified,
    /// The task bodies were skipped: there is no result to verify.
    Skipped,
    /// The result differs from the sequential reference.
    Mismatch,
    /// The run could not be carried out.
    Error,
}

impl Verdict {
    /// Whether the run failed: a mismatch or an error (a skipped run did not fail).
    pub fn failed(self) -> bool {
        matches!(self, Verdict::Mismatch | Verdict::Error)
    }
}

impl Run {
    /// What the run established about its result.
    pub fn verdict(&self) -> Verdict {
        match &self.outcome {
            Err(_) => Verdict::Error,
            Ok(o) if !o.checked => Verdict::Skipped,
            Ok(o) if o.verified => Verdict::Verified,
            Ok(_) => Verdict::Mismatch,
        }
    }
}

/// Bytes a run read and wrote through runtime-managed buffers.
pub fn bytes_moved(report: &locus::Report) -> u64 {
    let l = &report.locality;
    l.read_local_bytes + l.read_remote_bytes + l.write_local_bytes + l.write_remote_bytes
}

/// The summary of one kernel under one configuration.
#[derive(Clone, Debug, Default)]
pub struct Row {
    /// Kernel.
    pub kernel: String,
    /// Configuration.
    pub config: String,
    /// Repetitions run.
    pub runs: usize,
    /// Repetitions verified against the sequential reference.
    pub verified: usize,
    /// Repetitions whose task bodies were skipped (not verified, not failed).
    pub skipped: usize,
    /// Median (wall or simulated) time in seconds over the finished repetitions.
    pub median_s: Option<f64>,
    /// Median time of `dsa-base` over this row's median time.
    pub speedup: Option<f64>,
    /// Median `r_loc_rt`.
    pub r_loc_rt: Option<f64>,
    /// Largest peak of live bytes over the repetitions.
    pub peak_bytes: Option<u64>,
    /// Bytes read and written over the median time (memory-bound kernels only).
    pub bytes_per_s: Option<f64>,
    /// `bytes_per_s` over the STREAM triad's bandwidth.
    pub stream_fraction: Option<f64>,
    /// The traffic matrix of the repetition whose time is the median.
    pub traffic: Vec<Vec<u64>>,
    /// The first error of a repetition that could not run.
    pub error: Option<String>,
}

impl Row {
    /// Whether no repetition failed: every one ran and was verified or skipped its
    /// bodies.
    pub fn ok(&self) -> bool {
        self.runs > 0 && self.verified + self.skipped == self.runs
    }

    /// `Some(true)` when every repetition was verified, `Some(false)` when one failed,
    /// `None` when none failed but some skipped their bodies (nothing to verify).
    pub fn verified(&self) -> Option<bool> {
        if !self.ok() {
            Some(false)
        } else if self.skipped > 0 {
            None
        } else {
            Some(true)
        }
    }

    /// Whether the task bodies ran: `run`, `skipped`, or `partly skipped`.
    pub fn bodies(&self) -> &'static str {
        match self.skipped {
            0 => "run",
            s if s == self.runs => "skipped",
            _ => "partly skipped",
        }
    }

    /// The verdict as the table shows it: `yes`, `skipped`, `NO (2/3)`, `ERROR`.
    pub fn verdict(&self) -> String {
        if !self.ok() {
            if self.error.is_some() && self.verified == 0 {
                "ERROR".to_string()
            } else {
                format!("NO ({}/{})", self.verified, self.runs)
            }
        } else if self.skipped == self.runs {
            "skipped".to_string()
        } else if self.skipped > 0 {
            format!(
                "yes ({}/{}), {} skipped",
                self.verified, self.runs, self.skipped
            )
        } else {
            "yes".to_string()
        }
    }
}

/// The median of `values` (the lower middle one for an even count, so that it is a
/// value some run really had).
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[(values.len() - 1) / 2])
}

/// One row per kernel and configuration, in the order given. `stream_bytes_per_s` is the
/// STREAM triad bandwidth, if measured.
pub fn rows(
    runs: &[Run],
    kernels: &[&str],
    configs: &[String],
    stream_bytes_per_s: Option<f64>,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for &kernel in kernels {
        let first = rows.len();
        for config in configs {
            let mine: Vec<&Run> = runs
                .iter()
                .filter(|r| r.kernel == kernel && &r.config == config)
                .collect();
            let done: Vec<&KernelOutcome> = mine
                .iter()
                .filter_map(|r| r.outcome.as_ref().ok())
                .collect();
            let mut times: Vec<f64> = done.iter().map(|o| o.report.wall_s).collect();
            let median_s = median(&mut times);
            let mut locs: Vec<f64> = done.iter().map(|o| o.report.locality.r_loc_rt).collect();
            let representative = median_s.and_then(|m| done.iter().find(|o| o.report.wall_s == m));
            let bytes_per_s = representative
                .filter(|o| MEMORY_BOUND.contains(&kernel) && o.report.wall_s > 0.0)
                .map(|o| bytes_moved(&o.report) as f64 / o.report.wall_s);
            rows.push(Row {
                kernel: kernel.to_string(),
                config: config.clone(),
                runs: mine.len(),
                verified: mine
                    .iter()
                    .filter(|r| r.verdict() == Verdict::Verified)
                    .count(),
                skipped: mine
                    .iter()
                    .filter(|r| r.verdict() == Verdict::Skipped)
                    .count(),
                median_s,
                speedup: None,
                r_loc_rt: median(&mut locs),
                peak_bytes: done.iter().map(|o| o.report.memory.peak_bytes).max(),
                bytes_per_s,
                stream_fraction: bytes_per_s.zip(stream_bytes_per_s).map(|(b, s)| b / s),
                traffic: representative
                    .map(|o| o.report.traffic.clone())
                    .unwrap_or_default(),
                error: mine.iter().find_map(|r| r.outcome.as_ref().err().cloned()),
            });
        }
        let base = rows[first..]
            .iter()
            .find(|r| r.config == BASELINE)
            .and_then(|r| r.median_s);
        for row in &mut rows[first..] {
            row.speedup = base
                .zip(row.median_s)
                .filter(|&(_, t)| t > 0.0)
                .map(|(b, t)| b / t);
        }
    }
    rows
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1u64 << 20) as f64)
}

fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".to_string())
}

/// The summary table: left-aligned names, right-aligned figures. `simulated` names the
/// time column accordingly; the bandwidth column appears when any row has one.
pub fn table(rows: &[Row], simulated: bool) -> String {
    let with_bw = rows.iter().any(|r| r.stream_fraction.is_some());
    let mut cells: Vec<Vec<String>> = vec![[
        "kernel",
        "config",
        if simulated { "sim time s" } else { "time s" },
        "speedup",
        "r_loc_rt",
        "peak MiB",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()];
    if with_bw {
        cells[0].push("GB/s".into());
        cells[0].push("of STREAM".into());
    }
    cells[0].push("verified".into());
    for r in rows {
        let mut line = vec![
            r.kernel.clone(),
            r.config.clone(),
            or_dash(r.median_s.map(|t| format!("{t:.4}"))),
            or_dash(r.speedup.map(|s| format!("{s:.2}x"))),
            or_dash(r.r_loc_rt.map(|l| format!("{l:.3}"))),
            or_dash(r.peak_bytes.map(mib)),
        ];
        if with_bw {
            line.push(or_dash(r.bytes_per_s.map(|b| format!("{:.2}", b / 1e9))));
            line.push(or_dash(
                r.stream_fraction.map(|f| format!("{:.0}%", f * 100.0)),
            ));
        }
        line.push(r.verdict());
        cells.push(line);
    }
    let cols = cells[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (k, row) in cells.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let w = widths[c];
            if c < 2 {
                let _ = write!(line, "{cell:<w$}  ");
            } else {
                let _ = write!(line, "{cell:>w$}  ");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
        if k == 0 {
            let _ = writeln!(
                out,
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * (cols - 1))
            );
        }
    }
    out
}

/// A row as an object of `summary.json`: `verified` is `true` only when every
/// repetition was verified, `null` (with `bodies` saying `skipped`) when bodies were
/// skipped and none failed.
pub fn row_json(r: &Row) -> Value {
    json!({
        "bench": r.kernel,
        "config": r.config,
        "runs": r.runs,
        "verified_runs": r.verified,
        "skipped_runs": r.skipped,
        "verified": r.verified(),
        "bodies": r.bodies(),
        "median_s": r.median_s,
        "speedup_over_dsa_base": r.speedup,
        "r_loc_rt": r.r_loc_rt,
        "peak_bytes": r.peak_bytes,
        "bytes_per_s": r.bytes_per_s,
        "stream_fraction": r.stream_fraction,
        "traffic": r.traffic,
        "error": r.error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_is_a_value_of_the_set() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.0));
    }

    #[test]
    fn table_marks_failed_rows() {
        let rows = vec![
            Row {
                kernel: "bitonic".into(),
                config: "dsa-base".into(),
                runs: 3,
                verified: 3,
                median_s: Some(0.5),
                speedup: Some(1.0),
                ..Row::default()
            },
            Row {
                kernel: "bitonic".into(),
                config: "dfa".into(),
                runs: 3,
                verified: 2,
                median_s: Some(0.25),
                speedup: Some(2.0),
                ..Row::default()
            },
        ];
        let t = table(&rows, true);
        assert!(t.starts_with("kernel"), "{t}");
        assert!(t.contains("sim time s"));
        assert!(t.contains("2.00x") && t.contains("NO (2/3)"), "{t}");
        assert!(!t.contains("STREAM"));
    }

    /// A run of `kernel` at the tiny size in the simulator, its bodies run or skipped.
    fn simulated(kernel: &'static str, config: &str, bodies: locus::engine::Bodies) -> Run {
        let rt = locus::Runtime::builder()
            .topology(locus::Topology::from_spec("2x1").unwrap())
            .config(config.parse().unwrap())
            .engine(locus_sim::Sim::new().bodies(bodies))
            .build()
            .unwrap();
        let outcome = locus_bench::run_kernel(
            kernel,
            &rt,
            locus_bench::Size::Tiny,
            locus_bench::Control::Sequential,
        )
        .map_err(|e| e.to_string());
        Run {
            kernel,
            config: config.to_string(),
            outcome,
        }
    }

    #[test]
    fn skipped_bodies_are_never_verified() {
        use locus::engine::Bodies::{Run as Ran, Skip};
        let runs = vec![
            simulated("kmeans", "dsa-base", Skip),
            simulated("kmeans", "dsa-opt", Ran),
            simulated("kmeans", "dfa", Skip),
            simulated("kmeans", "dfa", Ran),
        ];
        let verdicts: Vec<Verdict> = runs.iter().map(Run::verdict).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Skipped,
                Verdict::Verified,
                Verdict::Skipped,
                Verdict::Verified
            ]
        );
        assert!(!Verdict::Skipped.failed());
        let configs = ["dsa-base", "dsa-opt", "dfa"].map(String::from);
        let rows = rows(&runs, &["kmeans"], &configs, None);
        let t = table(&rows, true);
        let line = |config: &str| {
            t.lines()
                .find(|l| l.split_whitespace().nth(1) == Some(config))
                .unwrap()
                .trim_end()
                .to_string()
        };
        assert!(line("dsa-base").ends_with("  skipped"), "{t}");
        assert!(line("dsa-opt").ends_with("  yes"), "{t}");
        assert!(line("dfa").ends_with("yes (1/2), 1 skipped"), "{t}");
        let json: Vec<Value> = rows.iter().map(row_json).collect();
        assert_eq!(json[0]["verified"], Value::Null);
        assert_eq!(json[0]["bodies"], "skipped");
        assert_eq!(json[0]["skipped_runs"], 1);
        assert_eq!(json[0]["verified_runs"], 0);
        assert_eq!(json[1]["verified"], true);
        assert_eq!(json[1]["bodies"], "run");
        assert_eq!(json[2]["verified"], Value::Null);
        assert_eq!(json[2]["bodies"], "partly skipped");
        assert!(rows.iter().all(Row::ok));
    }
}
