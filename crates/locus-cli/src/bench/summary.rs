//! The summary of a benchmark matrix: one row per kernel and configuration with the
//! medians over its repetitions, the speedup over `dsa-base`, the peak memory and, for
//! memory-bound kernels on the threads engine, the bandwidth achieved as a fraction of
//! the STREAM triad. Rendered as a text table (stdout) and as `summary.json`.

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

impl Run {
    /// Whether the run finished with a result equal to the sequential reference.
    pub fn verified(&self) -> bool {
        // Runs whose bodies were skipped (paper sizes in the simulator) have nothing to
        // verify and count as passed; their reports say `"verified": null`.
        matches!(&self.outcome, Ok(o) if o.verified || !o.checked)
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
    /// Whether every repetition ran and was verified.
    pub fn ok(&self) -> bool {
        self.runs > 0 && self.verified == self.runs
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
                verified: mine.iter().filter(|r| r.verified()).count(),
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
        line.push(if r.ok() {
            "yes".to_string()
        } else if r.error.is_some() && r.verified == 0 {
            "ERROR".to_string()
        } else {
            format!("NO ({}/{})", r.verified, r.runs)
        });
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

/// A row as an object of `summary.json`.
pub fn row_json(r: &Row) -> Value {
    json!({
        "bench": r.kernel,
        "config": r.config,
        "runs": r.runs,
        "verified_runs": r.verified,
        "verified": r.ok(),
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
}
