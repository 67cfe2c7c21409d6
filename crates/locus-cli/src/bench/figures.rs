//! The pictures of a benchmark matrix, written into the output directory:
//! `speedup.svg` (paper 1, Figure 9), `locality.svg` (Figures 7-8) and one
//! `traffic-<config>.svg` heatmap per configuration.

use std::path::{Path, PathBuf};

use crate::bench::summary::{Row, BASELINE};
use crate::bench::svg::{grouped_bars, heatmap, GroupedBars, Heatmap};

/// `values[kernel][config]` of one field of the rows.
fn by_kernel(
    rows: &[Row],
    kernels: &[String],
    configs: &[String],
    field: impl Fn(&Row) -> Option<f64>,
) -> Vec<Vec<Option<f64>>> {
    kernels
        .iter()
        .map(|k| {
            configs
                .iter()
                .map(|c| {
                    rows.iter()
                        .find(|r| &r.kernel == k && &r.config == c)
                        .and_then(&field)
                })
                .collect()
        })
        .collect()
}

/// Writes every picture; returns the paths written. `machine` names the topology and
/// engine in the titles.
pub fn write_all(
    dir: &Path,
    rows: &[Row],
    kernels: &[String],
    configs: &[String],
    machine: &str,
) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let mut write = |name: String, svg: String| -> std::io::Result<()> {
        let path = dir.join(name);
        crate::cmd::bench::write_whole(&path, &svg)?;
        written.push(path);
        Ok(())
    };

    let speedups = by_kernel(rows, kernels, configs, |r| r.speedup);
    write(
        "speedup.svg".into(),
        grouped_bars(&GroupedBars {
            title: &format!("Speedup over {BASELINE} ({machine})"),
            x_label: "kernel",
            y_label: &format!("speedup over {BASELINE} (median time)"),
            groups: kernels,
            series: configs,
            values: &speedups,
            y_max: None,
            reference: Some(1.0),
        }),
    )?;

    let locality = by_kernel(rows, kernels, configs, |r| r.r_loc_rt);
    write(
        "locality.svg".into(),
        grouped_bars(&GroupedBars {
            title: &format!("Runtime locality R_loc^RT ({machine})"),
            x_label: "kernel",
            y_label: "r_loc_rt (local bytes / all bytes)",
            groups: kernels,
            series: configs,
            values: &locality,
            y_max: Some(1.0),
            reference: None,
        }),
    )?;

    const MIB: f64 = (1u64 << 20) as f64;
    for config in configs {
        let mut sum: Vec<Vec<f64>> = Vec::new();
        for row in rows.iter().filter(|r| &r.config == config) {
            for (i, line) in row.traffic.iter().enumerate() {
                if sum.len() <= i {
                    sum.resize(i + 1, Vec::new());
                }
                if sum[i].len() < line.len() {
                    sum[i].resize(line.len(), 0.0);
                }
                for (j, &bytes) in line.iter().enumerate() {
                    sum[i][j] += bytes as f64 / MIB;
                }
            }
        }
        write(
            format!("traffic-{config}.svg"),
            heatmap(&Heatmap {
                title: &format!("Traffic under {config}, all kernels ({machine})"),
                y_label: "node of the task",
                x_label: "node of the data",
                cells: &sum,
                unit: "MiB",
            }),
        )?;
    }
    Ok(written)
}
