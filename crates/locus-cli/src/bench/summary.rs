//! The summary of a benchmark matrix: one row per kernel and configuration with the
//! minimum, median and maximum over its repetitions, the speedup over a baseline
//! configuration (`dsa-base` unless `--baseline` names another) with its range, the peak
//! memory and, for memory-bound kernels on the threads engine, the bandwidth achieved as
//! a fraction of the STREAM triad; then one geometric-mean row per configuration.
//! Rendered as a text table (stdout) and as `summary.json`.
//!
//! A run whose task bodies were skipped (paper sizes in the simulator) computed no
//! result, so it is never counted as verified: it is `skipped`, neither verified nor
//! failed.

use std::fmt::Write as _;

use locus_bench::KernelOutcome;
use serde_json::{json, Value};

/// The configuration speedups are measured against by default (paper 1, Figure 9).
pub const BASELINE: &str = "dsa-base";

/// Runs shorter than this are dominated by start-up and timer noise: the table warns.
pub const SHORT_RUN_S: f64 = 0.010;

/// The name of the geometric-mean rows, in the kernel column.
pub const GEOMEAN: &str = "geomean";

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
    /// Minor page faults of the process during the run (threads engine): the pages the
    /// run touched for the first time, what immediate allocation costs on one node.
    pub minor_faults: Option<u64>,
}

/// Minor page faults of this process so far (getrusage(2)), `None` if unknown.
pub fn minor_faults() -> Option<u64> {
    // SAFETY: `usage` is a plain struct getrusage fills; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a writable `rusage`.
    let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    (status == 0).then_some(usage.ru_minflt as u64)
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
    /// Shortest time over the finished repetitions.
    pub min_s: Option<f64>,
    /// Longest time over the finished repetitions.
    pub max_s: Option<f64>,
    /// Median time of the baseline over this row's median time.
    pub speedup: Option<f64>,
    /// The speedup's range: the baseline's median over this row's longest and shortest
    /// times.
    pub speedup_range: Option<(f64, f64)>,
    /// Median `r_loc_rt`.
    pub r_loc_rt: Option<f64>,
    /// Lowest and highest `r_loc_rt` over the repetitions.
    pub r_loc_rt_range: Option<(f64, f64)>,
    /// Largest peak of live bytes over the repetitions.
    pub peak_bytes: Option<u64>,
    /// Median minor page faults over the repetitions (threads engine).
    pub minor_faults: Option<u64>,
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
    /// `(max - min) / median` of the times, the run-to-run spread.
    pub fn spread(&self) -> Option<f64> {
        match (self.min_s, self.median_s, self.max_s) {
            (Some(lo), Some(m), Some(hi)) if m > 0.0 => Some((hi - lo) / m),
            _ => None,
        }
    }

    /// Whether this is a geometric-mean row rather than a kernel's.
    pub fn is_geomean(&self) -> bool {
        self.kernel == GEOMEAN
    }

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

/// One row per kernel and configuration, in the order given, then one geometric-mean
/// row per configuration (speedups only). `baseline` is the configuration speedups are
/// measured against; `stream_bytes_per_s` is the STREAM triad bandwidth, if measured.
pub fn rows(
    runs: &[Run],
    kernels: &[&str],
    configs: &[String],
    baseline: &str,
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
            let r_loc_rt = median(&mut locs);
            let representative = median_s.and_then(|m| done.iter().find(|o| o.report.wall_s == m));
            let mut faults: Vec<f64> = mine
                .iter()
                .filter(|r| r.outcome.is_ok())
                .filter_map(|r| r.minor_faults.map(|f| f as f64))
                .collect();
            let minor_faults = median(&mut faults).map(|f| f as u64);
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
                min_s: times.first().copied(),
                max_s: times.last().copied(),
                speedup: None,
                speedup_range: None,
                r_loc_rt,
                r_loc_rt_range: locs.first().copied().zip(locs.last().copied()),
                peak_bytes: done.iter().map(|o| o.report.memory.peak_bytes).max(),
                minor_faults,
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
            .find(|r| r.config == baseline)
            .and_then(|r| r.median_s);
        for row in &mut rows[first..] {
            row.speedup = base
                .zip(row.median_s)
                .filter(|&(_, t)| t > 0.0)
                .map(|(b, t)| b / t);
            row.speedup_range = match (base, row.min_s, row.max_s) {
                (Some(b), Some(lo), Some(hi)) if lo > 0.0 => Some((b / hi, b / lo)),
                _ => None,
            };
        }
    }
    for config in configs {
        let mine: Vec<&Row> = rows.iter().filter(|r| &r.config == config).collect();
        let speedup = geomean(mine.iter().map(|r| r.speedup));
        let low = geomean(mine.iter().map(|r| r.speedup_range.map(|s| s.0)));
        let high = geomean(mine.iter().map(|r| r.speedup_range.map(|s| s.1)));
        rows.push(Row {
            kernel: GEOMEAN.to_string(),
            config: config.clone(),
            runs: mine.iter().map(|r| r.runs).sum(),
            verified: mine.iter().map(|r| r.verified).sum(),
            skipped: mine.iter().map(|r| r.skipped).sum(),
            speedup,
            speedup_range: low.zip(high),
            r_loc_rt: geomean(mine.iter().map(|r| r.r_loc_rt)),
            ..Row::default()
        });
    }
    rows
}

/// The geometric mean of the values, `None` when any is missing or not positive (a
/// mean over part of the kernels would compare configurations on different sets).
pub fn geomean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut sum = 0.0;
    let mut n = 0usize;
    for v in values {
        let v = v.filter(|&v| v > 0.0 && v.is_finite())?;
        sum += v.ln();
        n += 1;
    }
    (n > 0).then(|| (sum / n as f64).exp())
}

/// The rows of kernels (not geometric means) whose median time is under
/// [`SHORT_RUN_S`].
pub fn short_rows(rows: &[Row]) -> Vec<&Row> {
    rows.iter()
        .filter(|r| !r.is_geomean() && r.median_s.is_some_and(|t| t < SHORT_RUN_S))
        .collect()
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1u64 << 20) as f64)
}

fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".to_string())
}

/// The names of the table's columns, shared by `locus run`, `locus sim`, `locus bench`
/// and `locus demo`: `time (s)` is wall time on the threads engine and simulated time in
/// the simulator (the heading above the table says which).
pub mod column {
    /// The median time.
    pub const TIME: &str = "time (s)";
    /// The shortest time.
    pub const MIN: &str = "min (s)";
    /// The longest time.
    pub const MAX: &str = "max (s)";
    /// `(max - min) / median`.
    pub const SPREAD: &str = "spread";
    /// `r_loc_rt`, paper 1's R_loc^RT.
    pub const R_LOC_RT: &str = "r_loc_rt";
    /// Peak live bytes, MiB.
    pub const PEAK: &str = "peak (MiB)";
    /// Minor page faults during the run.
    pub const FAULTS: &str = "minor faults";
}

/// The summary table: left-aligned names, right-aligned figures; min / median / max
/// time and the spread of every row, the speedup over `baseline` with its range (the
/// baseline's median over this row's longest and shortest times), the geometric-mean
/// rows under a rule. The minor page faults appear when any row has them (threads
/// engine), the bandwidth columns when any row has one.
pub fn table(rows: &[Row], baseline: &str) -> String {
    let (cells, rule_before) = table_cells(rows, baseline);
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
    let rule = "-".repeat(widths.iter().sum::<usize>() + 2 * (cols - 1));
    let mut out = String::new();
    for (k, row) in cells.iter().enumerate() {
        if Some(k) == rule_before {
            let _ = writeln!(out, "{rule}");
        }
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
            let _ = writeln!(out, "{rule}");
        }
    }
    out
}

/// The cells of [`table`], its header first, and the index of the first geometric-mean
/// row (a rule goes above it).
pub fn table_cells(rows: &[Row], baseline: &str) -> (Vec<Vec<String>>, Option<usize>) {
    let with_bw = rows.iter().any(|r| r.stream_fraction.is_some());
    let with_faults = rows.iter().any(|r| r.minor_faults.is_some());
    let speedup_head = format!("speedup over {baseline}");
    let mut head: Vec<String> = [
        "kernel",
        "config",
        column::TIME,
        column::MIN,
        column::MAX,
        column::SPREAD,
        &speedup_head,
        "speedup range",
        column::R_LOC_RT,
        column::PEAK,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if with_faults {
        head.push(column::FAULTS.into());
    }
    if with_bw {
        head.push("GB/s".into());
        head.push("of STREAM".into());
    }
    head.push("verified".into());
    let mut cells: Vec<Vec<String>> = vec![head];
    let secs = |t: Option<f64>| or_dash(t.map(|t| format!("{t:.4}")));
    let mut rule_before = None;
    for r in rows {
        if r.is_geomean() && rule_before.is_none() {
            rule_before = Some(cells.len());
        }
        let mut line = vec![
            r.kernel.clone(),
            r.config.clone(),
            secs(r.median_s),
            secs(r.min_s),
            secs(r.max_s),
            or_dash(r.spread().map(|f| format!("{:.0}%", f * 100.0))),
            or_dash(r.speedup.map(|s| format!("{s:.2}x"))),
            or_dash(r.speedup_range.map(|(lo, hi)| format!("{lo:.2}-{hi:.2}"))),
            or_dash(r.r_loc_rt.map(|l| format!("{l:.3}"))),
            or_dash(r.peak_bytes.map(mib)),
        ];
        if with_faults {
            line.push(or_dash(r.minor_faults.map(|f| f.to_string())));
        }
        if with_bw {
            line.push(or_dash(r.bytes_per_s.map(|b| format!("{:.2}", b / 1e9))));
            line.push(or_dash(
                r.stream_fraction.map(|f| format!("{:.0}%", f * 100.0)),
            ));
        }
        line.push(if r.is_geomean() {
            "-".to_string()
        } else {
            r.verdict()
        });
        cells.push(line);
    }
    (cells, rule_before)
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
        "min_s": r.min_s,
        "max_s": r.max_s,
        "spread": r.spread(),
        "speedup": r.speedup,
        "speedup_min": r.speedup_range.map(|s| s.0),
        "speedup_max": r.speedup_range.map(|s| s.1),
        "r_loc_rt": r.r_loc_rt,
        "r_loc_rt_min": r.r_loc_rt_range.map(|s| s.0),
        "r_loc_rt_max": r.r_loc_rt_range.map(|s| s.1),
        "peak_bytes": r.peak_bytes,
        "minor_faults": r.minor_faults,
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
    fn geomean_needs_every_value() {
        let g = geomean([Some(2.0), Some(8.0)].into_iter()).unwrap();
        assert!((g - 4.0).abs() < 1e-12);
        assert_eq!(geomean([Some(2.0), None].into_iter()), None);
        assert_eq!(geomean([Some(2.0), Some(0.0)].into_iter()), None);
        assert_eq!(geomean(std::iter::empty()), None);
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
                min_s: Some(0.4),
                max_s: Some(0.9),
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
        let t = table(&rows, "dsa-base");
        assert!(t.starts_with("kernel"), "{t}");
        assert!(t.contains("time (s)") && t.contains("speedup over dsa-base"));
        // min / median / max and the spread (0.9 - 0.4) / 0.5.
        assert!(
            t.contains("0.4000") && t.contains("0.9000") && t.contains("100%"),
            "{t}"
        );
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
            minor_faults: None,
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
        let rows = rows(&runs, &["kmeans"], &configs, BASELINE, None);
        let t = table(&rows, BASELINE);
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
