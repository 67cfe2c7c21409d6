//! The pictures of a benchmark matrix, written into the output directory as SVG and
//! PNG, each answering one question:
//!
//! - `speedup.svg`: how much faster is each configuration than the baseline, per kernel
//!   and as a geometric mean (paper 1, Figures 9-10), with error bars from the longest
//!   to the shortest repetition; where times cannot show locality (one real node,
//!   virtual nodes) it is titled as what it measures there, allocation and scheduling
//!   cost;
//! - `locality.svg`: what fraction of the bytes each configuration accessed was local
//!   (`r_loc_rt`, paper 1, Figures 7-8), against the 1/N of interleaving;
//! - `traffic.svg`: where the bytes went, one node-to-node matrix per configuration on
//!   one shared scale, in percent of that configuration's bytes (every kernel weighs the
//!   same), the local fraction in each title.
//!
//! A picture that would carry no information is not drawn, and [`Figures::not_drawn`]
//! says why: on one node every access is local (no locality or traffic picture), and
//! without the baseline among the configurations, or with the baseline alone, there is
//! no speedup to show.

use std::path::{Path, PathBuf};

use crate::bench::summary::{Row, GEOMEAN};
use crate::bench::svg::{grouped_bars, traffic_panels, GroupedBars, TrafficPanels};

/// What the pictures show.
pub struct Matrix<'a> {
    /// The summary rows (kernel rows and geometric-mean rows).
    pub rows: &'a [Row],
    /// Kernels, in order.
    pub kernels: &'a [String],
    /// Configurations, in order.
    pub configs: &'a [String],
    /// The configuration speedups are measured against.
    pub baseline: &'a str,
    /// The topology's and engine's names, for the titles.
    pub machine: &'a str,
    /// NUMA nodes of the topology.
    pub nodes: usize,
    /// Whether times can show locality (the simulator, or two or more real nodes,
    /// [`crate::render::times_show_locality`]); when not, the speedup picture is titled
    /// as what it measures: allocation and scheduling cost.
    pub locality: bool,
    /// Repetitions per kernel and configuration (error bars when above 1).
    pub repetitions: usize,
}

/// What [`write_all`] did.
#[derive(Debug, Default)]
pub struct Figures {
    /// Files written (SVG and PNG).
    pub written: Vec<PathBuf>,
    /// Pictures not drawn, each with the reason.
    pub not_drawn: Vec<(&'static str, String)>,
}

/// `values[group][config]` of one field of the rows; the groups are the kernels, then
/// the geometric mean when `with_geomean`.
fn by_kernel<T>(
    m: &Matrix<'_>,
    with_geomean: bool,
    field: impl Fn(&Row) -> Option<T>,
) -> Vec<Vec<Option<T>>> {
    let geomean = [GEOMEAN.to_string()];
    let groups = m
        .kernels
        .iter()
        .chain(geomean.iter().filter(|_| with_geomean));
    groups
        .map(|k| {
            m.configs
                .iter()
                .map(|c| {
                    m.rows
                        .iter()
                        .find(|r| &r.kernel == k && &r.config == c)
                        .and_then(&field)
                })
                .collect()
        })
        .collect()
}

/// The picture names [`write_all`] may write (each as `.svg` and `.png`).
pub const NAMES: [&str; 3] = ["speedup", "locality", "traffic"];

/// Writes every picture that carries information; returns the paths written and the
/// pictures left out with the reason.
pub fn write_all(dir: &Path, m: &Matrix<'_>) -> std::io::Result<Figures> {
    let mut figures = Figures::default();
    let mut write = |name: &str, svg: String| write_picture(dir, name, &svg, &mut figures.written);
    let errors = m.repetitions > 1;
    let error_label = format!("min to max of {} runs", m.repetitions);

    let mut not_drawn = Vec::new();
    if !m.configs.iter().any(|c| c == m.baseline) {
        not_drawn.push((
            "speedup",
            format!(
                "the baseline {} is not among the configurations (add it to --configs or choose another with --baseline)",
                m.baseline
            ),
        ));
    } else if m.configs.len() == 1 {
        not_drawn.push((
            "speedup",
            format!("only the baseline {} ran: every speedup is 1", m.baseline),
        ));
    } else {
        let mut groups = m.kernels.to_vec();
        groups.push(GEOMEAN.to_string());
        let speedups = by_kernel(m, true, |r| r.speedup);
        let ranges = by_kernel(m, true, |r| r.speedup_range);
        write(
            "speedup",
            grouped_bars(&GroupedBars {
                title: &speedup_title(m),
                x_label: "kernel (geomean: geometric mean over the kernels)",
                y_label: &if m.locality {
                    format!("speedup over {} (x, median time)", m.baseline)
                } else {
                    format!("time of {} / time (x, medians)", m.baseline)
                },
                groups: &groups,
                series: m.configs,
                legend_title: "configuration",
                values: &speedups,
                errors: errors.then_some(&ranges[..]),
                error_label: &error_label,
                y_max: None,
                references: &[(1.0, format!("{} (1x)", m.baseline))],
            }),
        )?;
    }

    if m.nodes < 2 {
        let why = "one NUMA node: every access is local (r_loc_rt = 1) and all traffic stays on node 0; use --topology NxC for virtual nodes".to_string();
        not_drawn.push(("locality", why.clone()));
        not_drawn.push(("traffic", why));
    } else {
        let locality = by_kernel(m, false, |r| r.r_loc_rt);
        let ranges = by_kernel(m, false, |r| r.r_loc_rt_range);
        write(
            "locality",
            grouped_bars(&GroupedBars {
                title: &format!("Runtime locality r_loc_rt ({})", m.machine),
                x_label: "kernel",
                y_label: "r_loc_rt (local bytes / all bytes, 0-1)",
                groups: m.kernels,
                series: m.configs,
                legend_title: "configuration",
                values: &locality,
                errors: errors.then_some(&ranges[..]),
                error_label: &error_label,
                y_max: Some(1.0),
                references: &[(
                    1.0 / m.nodes as f64,
                    format!("interleaved: 1/{} nodes", m.nodes),
                )],
            }),
        )?;

        let panels: Vec<(String, Vec<Vec<f64>>)> = m
            .configs
            .iter()
            .filter_map(|c| {
                let cells = traffic_share(m.rows.iter().filter(|r| &r.config == c))?;
                let local: f64 = (0..cells.len()).map(|i| cells[i][i]).sum();
                Some((format!("{c}: {:.0}% local", local * 100.0), cells))
            })
            .collect();
        if panels.is_empty() {
            not_drawn.push(("traffic", "no run recorded traffic".to_string()));
        } else {
            write(
                "traffic",
                traffic_panels(&TrafficPanels {
                    title: &format!(
                        "Traffic by node, % of each configuration's bytes, kernels weighted equally ({})",
                        m.machine
                    ),
                    panels: &panels,
                    scale_label: "% of bytes",
                }),
            )?;
        }
    }
    figures.not_drawn = not_drawn;
    Ok(figures)
}

/// The speedup picture's title: what it measures, and on what.
fn speedup_title(m: &Matrix<'_>) -> String {
    if m.locality {
        format!("Speedup over {} ({})", m.baseline, m.machine)
    } else {
        format!(
            "Allocation and scheduling cost, not locality: time of {} / time ({})",
            m.baseline, m.machine
        )
    }
}

/// Writes the picture `name` into `dir` as SVG and as PNG, each whole or not at all,
/// and adds both paths to `written`.
pub fn write_picture(
    dir: &Path,
    name: &str,
    svg: &str,
    written: &mut Vec<std::path::PathBuf>,
) -> std::io::Result<()> {
    let path = dir.join(format!("{name}.svg"));
    crate::cmd::bench::write_whole(&path, svg)?;
    written.push(path);
    let png = dir.join(format!("{name}.png"));
    let bytes = to_png(svg).map_err(std::io::Error::other)?;
    locus::observe::replace_file(&png, |out| std::io::Write::write_all(out, &bytes))?;
    written.push(png);
    Ok(())
}

/// The mean over kernels of each kernel's traffic matrix as fractions of its own bytes:
/// every kernel weighs the same, whatever its size. `None` when no row has traffic.
pub fn traffic_share<'a>(rows: impl Iterator<Item = &'a Row>) -> Option<Vec<Vec<f64>>> {
    let mut sum: Vec<Vec<f64>> = Vec::new();
    let mut kernels = 0usize;
    for row in rows {
        let total: u64 = row.traffic.iter().flatten().sum();
        if total == 0 {
            continue;
        }
        kernels += 1;
        let n = row.traffic.len();
        if sum.len() < n {
            sum.resize(n, Vec::new());
        }
        for (i, line) in row.traffic.iter().enumerate() {
            if sum[i].len() < n {
                sum[i].resize(n, 0.0);
            }
            for (j, &bytes) in line.iter().enumerate() {
                sum[i][j] += bytes as f64 / total as f64;
            }
        }
    }
    (kernels > 0).then(|| {
        for line in &mut sum {
            for v in line.iter_mut() {
                *v /= kernels as f64;
            }
        }
        sum
    })
}

/// The most pixels a PNG is rendered with (2^25, 128 MiB of RGBA): a chart sized by
/// absurd input (thousands of bars) is refused rather than exhausting memory. The
/// pictures of `locus bench` stay far below it.
const MAX_PNG_PIXELS: u64 = 1 << 25;

/// Renders an SVG to PNG at its own size, with the system's fonts (`sans-serif` is
/// DejaVu Sans, Liberation Sans, Arial, Noto Sans or FreeSans, whichever is installed
/// first; a system without fonts gives pictures without text).
pub fn to_png(svg: &str) -> Result<Vec<u8>, String> {
    let tree = parse_svg(svg)?;
    let size = tree.size().to_int_size();
    let pixels = u64::from(size.width()) * u64::from(size.height());
    if pixels > MAX_PNG_PIXELS {
        return Err(format!(
            "the picture is {} x {} pixels, too large for a PNG (at most 2^25 pixels)",
            size.width(),
            size.height()
        ));
    }
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or("the picture has no area")?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| e.to_string())
}

/// Parses an SVG with text laid out in the system's fonts (loaded once).
pub fn parse_svg(svg: &str) -> Result<resvg::usvg::Tree, String> {
    static FONTS: std::sync::OnceLock<std::sync::Arc<resvg::usvg::fontdb::Database>> =
        std::sync::OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        let mut db = resvg::usvg::fontdb::Database::new();
        db.load_system_fonts();
        // `sans-serif` means Arial to fontdb; take a sans-serif face this system has.
        let families: Vec<String> = db
            .faces()
            .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
            .collect();
        let sans = [
            "DejaVu Sans",
            "Liberation Sans",
            "Arial",
            "Noto Sans",
            "FreeSans",
        ]
        .into_iter()
        .find(|want| families.iter().any(|f| f == want))
        .map(str::to_string)
        .or_else(|| families.first().cloned());
        if let Some(family) = sans {
            db.set_sans_serif_family(family);
        }
        std::sync::Arc::new(db)
    });
    let options = resvg::usvg::Options {
        fontdb: fonts.clone(),
        ..resvg::usvg::Options::default()
    };
    resvg::usvg::Tree::from_str(svg, &options).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_weighs_the_same_in_the_traffic_share() {
        let row = |traffic: Vec<Vec<u64>>| Row {
            traffic,
            ..Row::default()
        };
        // A large kernel all local, a small one all remote: 50% each way.
        let rows = [
            row(vec![vec![1_000_000, 0], vec![0, 0]]),
            row(vec![vec![0, 10], vec![0, 0]]),
            row(vec![vec![0, 0], vec![0, 0]]),
        ];
        let share = traffic_share(rows.iter()).unwrap();
        assert_eq!(share, vec![vec![0.5, 0.5], vec![0.0, 0.0]]);
        assert!(traffic_share(rows[2..].iter()).is_none());
    }
}
