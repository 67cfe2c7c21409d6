//! Charts of a benchmark matrix as SVG: grouped bars (paper 1, Figures 7-10: one group
//! per kernel, one bar per configuration, error bars from the shortest to the longest
//! repetition, dashed reference lines such as a speedup of 1 or the 1/N locality of
//! interleaving) and node-to-node traffic as small multiples on one shared colour scale.
//! Every chart has a title, axis titles with units, and a legend (class `legend`); axis
//! titles carry class `axis-title`, error bars class `error-bar`. Widths follow the
//! text they hold, so no text leaves the canvas (the bench tests render every picture
//! and check it).

use std::fmt::Write as _;

/// Series colours, one per series: saturated and dark enough to tell ten apart on
/// white, on screen and in print (no pastel, no yellow).
pub const PALETTE: &[&str] = &[
    "#1f5fa8", "#e66100", "#1b9e77", "#c2185b", "#6a3d9a", "#b8860b", "#d62728", "#00838f",
    "#6d4c41", "#4d4d4d",
];

/// The widest picture, in pixels: the page of `report.html`, where pictures are shown at
/// their own size. Charts narrow their plots, and titles their font, to fit.
pub const MAX_WIDTH: f64 = 1400.0;

/// The title's font size: 16 px, smaller (down to 9 px) when that would not fit `width`.
fn title_size(title: &str, width: f64) -> f64 {
    let wide = text_width(title, 1.0);
    if wide <= 0.0 {
        return 16.0;
    }
    ((width - 20.0) / wide).clamp(9.0, 16.0)
}

/// The low and high end of an error bar.
pub type Range = (f64, f64);

/// A grouped bar chart: `values[group][series]`, `None` where there is no bar.
pub struct GroupedBars<'a> {
    /// The chart's title.
    pub title: &'a str,
    /// Label of the horizontal axis (what the groups are).
    pub x_label: &'a str,
    /// Label of the vertical axis (what a bar measures).
    pub y_label: &'a str,
    /// One name per group, along the horizontal axis.
    pub groups: &'a [String],
    /// One name per bar in a group, shown in the legend.
    pub series: &'a [String],
    /// The legend's title (what the series are, e.g. `configuration`).
    pub legend_title: &'a str,
    /// Bar heights.
    pub values: &'a [Vec<Option<f64>>],
    /// Error bars, `errors[group][series] = (low, high)`, if any.
    pub errors: Option<&'a [Vec<Option<Range>>]>,
    /// What an error bar spans, for the legend (e.g. `min-max of 5 runs`).
    pub error_label: &'a str,
    /// Top of the vertical axis, if fixed (e.g. 1 for a ratio).
    pub y_max: Option<f64>,
    /// Horizontal reference lines (e.g. speedup 1), each with its legend text.
    pub references: &'a [(f64, String)],
}

/// Roughly how wide `text` is at `size` px in a sans-serif font (an upper bound for
/// the digits, letters and punctuation of the charts: 0.62 em per character).
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.62
}

/// Escapes text for XML content and attributes.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A step of 1, 2 or 5 times a power of ten giving about five ticks up to `max`.
pub fn tick_step(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / 5.0;
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let m = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * p
}

fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{v:.decimals$}")
}

/// The opening of a picture of `width` x `height` px: a white canvas and the title.
pub fn header(out: &mut String, width: f64, height: f64, title: &str) {
    // Whole pixels, so that the PNG has exactly the SVG's size.
    let (width, height) = (width.ceil(), height.ceil());
    let _ = writeln!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">
<title>{t}</title>
<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>
<text x="{cx}" y="24" text-anchor="middle" font-size="{size:.1}" font-weight="bold">{t}</text>"#,
        t = escape(title),
        cx = width / 2.0,
        size = title_size(title, width)
    );
}

/// Renders a grouped bar chart.
pub fn grouped_bars(chart: &GroupedBars<'_>) -> String {
    let longest_group = chart
        .groups
        .iter()
        .map(|g| text_width(g, 12.0))
        .fold(0.0, f64::max);
    // Group labels are turned by 35 degrees: sin 35 = 0.57, cos 35 = 0.82.
    let (left, top) = (70.0f64.max(longest_group * 0.82 - 10.0), 44.0);
    let bottom = 40.0 + longest_group * 0.57;
    let legend_w = chart
        .series
        .iter()
        .map(|s| text_width(s, 12.0) + 18.0)
        .chain(
            chart
                .references
                .iter()
                .map(|(_, l)| text_width(l, 12.0) + 26.0),
        )
        .chain([
            text_width(chart.legend_title, 12.0),
            if chart.errors.is_some() {
                text_width(chart.error_label, 12.0) + 18.0
            } else {
                0.0
            },
        ])
        .fold(0.0, f64::max);
    let right = legend_w + 32.0;
    let slot = (chart.series.len().max(1) as f64 * 12.0 + 16.0).max(40.0);
    let plot_w = (chart.groups.len().max(1) as f64 * slot).max(300.0);
    let plot_w = plot_w
        .max(text_width(chart.title, 16.0) + 20.0 - left - right)
        .min(MAX_WIDTH - left - right);
    let slot = plot_w / chart.groups.len().max(1) as f64;
    let plot_h = 320.0f64.max(text_width(chart.y_label, 13.0) + 10.0);
    let (width, height) = (left + plot_w + right, top + plot_h + bottom);
    let error_max = chart
        .errors
        .into_iter()
        .flatten()
        .flatten()
        .flatten()
        .map(|e| e.1);
    let data_max = chart
        .values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .chain(error_max)
        .chain(chart.references.iter().map(|r| r.0))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let step = tick_step(chart.y_max.unwrap_or(data_max * 1.05));
    let y_max = chart
        .y_max
        .unwrap_or_else(|| ((data_max * 1.05) / step).ceil().max(1.0) * step);
    // Values spanning more than a decade (ratios of 0.01 to 0.3, speedups of 0.5 to
    // 12) get a logarithmic axis, on which the small ones stay readable.
    let log = chart.y_max.is_none().then(|| log_range(chart)).flatten();
    let y = |v: f64| match log {
        Some((d0, d1)) => {
            let t = if v > 0.0 { v.log10().clamp(d0, d1) } else { d0 };
            top + plot_h - (t - d0) / (d1 - d0) * plot_h
        }
        None => top + plot_h - (v.clamp(0.0, y_max) / y_max) * plot_h,
    };

    let mut out = String::new();
    header(&mut out, width, height, chart.title);
    // Grid and vertical axis ticks.
    let ticks: Vec<(f64, String)> = match log {
        Some((d0, d1)) => (d0 as i32..=d1 as i32)
            .flat_map(|d| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(d)))
            .filter(|&v| v.log10() <= d1 + 1e-9)
            .map(|v| (v, format!("{}", (v * 1e6).round() / 1e6)))
            .collect(),
        None => {
            let mut ticks = Vec::new();
            let mut v = 0.0;
            while v <= y_max + step * 1e-6 {
                ticks.push((v, tick_label(v, step)));
                v += step;
            }
            ticks
        }
    };
    for (v, label) in ticks {
        let yy = y(v);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{x2}" y2="{yy:.1}" stroke="#e0e0e0"/>
<text x="{tx}" y="{ty:.1}" text-anchor="end">{label}</text>"##,
            x2 = left + plot_w,
            tx = left - 6.0,
            ty = yy + 4.0,
        );
    }
    // Bars.
    let bar_w = (slot - 12.0) / chart.series.len().max(1) as f64;
    for (g, name) in chart.groups.iter().enumerate() {
        let x0 = left + g as f64 * slot + 6.0;
        for (s, series) in chart.series.iter().enumerate() {
            let Some(Some(v)) = chart.values.get(g).and_then(|row| row.get(s)) else {
                continue;
            };
            if !v.is_finite() {
                continue;
            }
            let x = x0 + s as f64 * bar_w;
            let yy = y(*v);
            let _ = writeln!(
                out,
                r#"<rect x="{x:.1}" y="{yy:.1}" width="{w:.1}" height="{h:.1}" fill="{c}"><title>{n} {sn}: {v:.3}</title></rect>"#,
                w = (bar_w - 1.0).max(1.0),
                h = top + plot_h - yy,
                c = PALETTE[s % PALETTE.len()],
                n = escape(name),
                sn = escape(series)
            );
            if let Some(Some((lo, hi))) = chart
                .errors
                .and_then(|e| e.get(g))
                .and_then(|row| row.get(s))
            {
                let cx = x + (bar_w - 1.0).max(1.0) / 2.0;
                let (y_lo, y_hi) = (y(*lo), y(*hi));
                let cap = ((bar_w - 1.0) / 3.0).clamp(1.5, 5.0);
                let _ = writeln!(
                    out,
                    r##"<g class="error-bar" stroke="#222" stroke-width="1.2"><title>{n} {sn}: {lo:.3} to {hi:.3}</title><line x1="{cx:.1}" y1="{y_lo:.1}" x2="{cx:.1}" y2="{y_hi:.1}"/><line x1="{a:.1}" y1="{y_lo:.1}" x2="{b:.1}" y2="{y_lo:.1}"/><line x1="{a:.1}" y1="{y_hi:.1}" x2="{b:.1}" y2="{y_hi:.1}"/></g>"##,
                    a = cx - cap,
                    b = cx + cap,
                    n = escape(name),
                    sn = escape(series)
                );
            }
        }
        let cx = left + (g as f64 + 0.5) * slot;
        let ly = top + plot_h + 14.0;
        let _ = writeln!(
            out,
            r#"<text x="{cx:.1}" y="{ly:.1}" text-anchor="end" transform="rotate(-35 {cx:.1} {ly:.1})">{}</text>"#,
            escape(name)
        );
    }
    for (k, (r, _)) in chart.references.iter().enumerate() {
        let yy = y(*r);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{x2}" y2="{yy:.1}" stroke="{c}" stroke-width="1.5" stroke-dasharray="{d}"/>"##,
            x2 = left + plot_w,
            c = REFERENCE_COLOURS[k % REFERENCE_COLOURS.len()].0,
            d = REFERENCE_COLOURS[k % REFERENCE_COLOURS.len()].1,
        );
    }
    // Axes and their labels.
    let _ = writeln!(
        out,
        r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{b}" stroke="#000"/>
<line x1="{left}" y1="{b}" x2="{r}" y2="{b}" stroke="#000"/>
<text class="axis-title" x="{cx}" y="{xl}" text-anchor="middle" font-size="13">{xlabel}</text>
<text class="axis-title" x="18" y="{cy}" text-anchor="middle" font-size="13" transform="rotate(-90 18 {cy})">{ylabel}</text>"##,
        b = top + plot_h,
        r = left + plot_w,
        cx = left + plot_w / 2.0,
        xl = height - 12.0,
        cy = top + plot_h / 2.0,
        xlabel = escape(chart.x_label),
        ylabel = escape(&if log.is_some() {
            log_label(chart.y_label)
        } else {
            chart.y_label.to_string()
        })
    );
    legend(&mut out, left + plot_w + 16.0, top, chart);
    out.push_str("</svg>\n");
    out
}

/// The decades (log10 of the lowest and highest tick) of a logarithmic vertical axis
/// for `chart`, when its positive values (bars, error bars, reference lines) span more
/// than a factor of 10; `None` for a linear axis.
fn log_range(chart: &GroupedBars<'_>) -> Option<(f64, f64)> {
    let errors = chart
        .errors
        .into_iter()
        .flatten()
        .flatten()
        .flatten()
        .flat_map(|e| [e.0, e.1]);
    let (lo, hi) = chart
        .values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .chain(errors)
        .chain(chart.references.iter().map(|r| r.0))
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    // From the decade below the lowest value (a tenth of a decade above the axis at
    // least: a bar, not a line) to a little above the highest.
    (lo.is_finite() && hi / lo > 10.0).then(|| ((lo.log10() - 0.1).floor(), hi.log10() + 0.1))
}

/// An axis title `what (unit)` as `what (unit, log scale)`.
fn log_label(label: &str) -> String {
    match label.strip_suffix(')') {
        Some(open) => format!("{open}, log scale)"),
        None => format!("{label} (log scale)"),
    }
}

/// Stroke colour and dash pattern of the reference lines, in order.
const REFERENCE_COLOURS: [(&str, &str); 3] =
    [("#333", "5,3"), ("#c0392b", "2,2"), ("#7f8c8d", "8,3,2,3")];

fn legend(out: &mut String, x: f64, top: f64, chart: &GroupedBars<'_>) {
    let series = chart.series;
    let _ = writeln!(
        out,
        r#"<g class="legend"><text x="{x}" y="{y}" font-weight="bold">{t}</text>"#,
        y = top + 4.0,
        t = escape(chart.legend_title)
    );
    for (s, name) in series.iter().enumerate() {
        let y = top + 14.0 + s as f64 * 18.0;
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="{y}" width="12" height="12" fill="{c}"/><text x="{tx}" y="{ty}">{n}</text>"#,
            c = PALETTE[s % PALETTE.len()],
            tx = x + 18.0,
            ty = y + 10.0,
            n = escape(name)
        );
    }
    let mut y = top + 14.0 + series.len() as f64 * 18.0 + 6.0;
    for (k, (_, label)) in chart.references.iter().enumerate() {
        let (c, d) = REFERENCE_COLOURS[k % REFERENCE_COLOURS.len()];
        let _ = writeln!(
            out,
            r#"<line x1="{x}" y1="{ly}" x2="{x2}" y2="{ly}" stroke="{c}" stroke-width="1.5" stroke-dasharray="{d}"/><text x="{tx}" y="{ty}">{l}</text>"#,
            ly = y + 6.0,
            x2 = x + 20.0,
            tx = x + 26.0,
            ty = y + 10.0,
            l = escape(label)
        );
        y += 18.0;
    }
    if chart.errors.is_some() {
        let _ = writeln!(
            out,
            r##"<g stroke="#222" stroke-width="1.2"><line x1="{cx}" y1="{y}" x2="{cx}" y2="{y2}"/><line x1="{a}" y1="{y}" x2="{b}" y2="{y}"/><line x1="{a}" y1="{y2}" x2="{b}" y2="{y2}"/></g><text x="{tx}" y="{ty}">{l}</text>"##,
            cx = x + 6.0,
            a = x + 2.0,
            b = x + 10.0,
            y2 = y + 12.0,
            tx = x + 18.0,
            ty = y + 10.0,
            l = escape(chart.error_label)
        );
    }
    out.push_str("</g>\n");
}

/// Node-to-node traffic as small multiples: one square matrix per panel (rows: node of
/// the task, columns: node of the data), every panel on one colour scale, each cell
/// labelled with its percentage.
pub struct TrafficPanels<'a> {
    /// The figure's title.
    pub title: &'a str,
    /// One `(title, cells)` per panel; `cells[i][j]` is a fraction of the panel's bytes.
    pub panels: &'a [(String, Vec<Vec<f64>>)],
    /// What a cell's fraction is of, for the legend.
    pub scale_label: &'a str,
}

/// White to dark blue, `t` in `[0, 1]`.
fn shade(t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let lerp = |from: f64, to: f64| (from + (to - from) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        lerp(255.0, 8.0),
        lerp(255.0, 48.0),
        lerp(255.0, 107.0)
    )
}

/// Renders the panels side by side (wrapping after four), with one continuous colour
/// scale from 0 to the largest cell of any panel as the legend.
pub fn traffic_panels(fig: &TrafficPanels<'_>) -> String {
    let n = fig
        .panels
        .iter()
        .map(|p| p.1.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let cell = (240.0 / n as f64).clamp(22.0, 44.0);
    let side = cell * n as f64;
    let label_w = text_width(&format!("n{}", n - 1), 11.0) + 8.0;
    let panel_w = (side + label_w + 16.0).max(
        fig.panels
            .iter()
            .map(|p| text_width(&p.0, 12.0) + 12.0)
            .fold(0.0, f64::max),
    );
    let panel_h = side + 70.0;
    let per_line = fig.panels.len().clamp(1, 4);
    let lines = fig.panels.len().div_ceil(per_line).max(1);
    let (left, top) = (40.0, 48.0);
    let legend_w = text_width(fig.scale_label, 12.0).max(70.0) + 20.0;
    let width = (left + per_line as f64 * panel_w + legend_w + 20.0)
        .max(text_width(fig.title, 16.0) + 20.0)
        .min(MAX_WIDTH);
    let height = top + lines as f64 * panel_h + 10.0;
    let max = fig
        .panels
        .iter()
        .flat_map(|p| p.1.iter().flatten())
        .copied()
        .fold(0.0f64, f64::max);
    let mut out = String::new();
    header(&mut out, width, height, fig.title);
    let _ = writeln!(
        out,
        r##"<defs><linearGradient id="scale" x1="0" y1="1" x2="0" y2="0"><stop offset="0" stop-color="{lo}"/><stop offset="1" stop-color="{hi}"/></linearGradient></defs>
<text class="axis-title" x="14" y="{cy}" text-anchor="middle" font-size="13" transform="rotate(-90 14 {cy})">node of the task (row)</text>"##,
        lo = shade(0.0),
        hi = shade(1.0),
        cy = top + (lines as f64 * panel_h) / 2.0
    );
    for (k, (title, cells)) in fig.panels.iter().enumerate() {
        let px = left + (k % per_line) as f64 * panel_w;
        let py = top + (k / per_line) as f64 * panel_h;
        let x0 = px + label_w;
        let y0 = py + 22.0;
        let _ = writeln!(
            out,
            r#"<text x="{tx:.1}" y="{ty:.1}" text-anchor="middle" font-weight="bold">{t}</text>"#,
            tx = px + panel_w / 2.0,
            ty = py + 12.0,
            t = escape(title)
        );
        for (i, row) in cells.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                let t = if max > 0.0 { v / max } else { 0.0 };
                let (x, y) = (x0 + j as f64 * cell, y0 + i as f64 * cell);
                let _ = writeln!(
                    out,
                    r##"<rect x="{x:.1}" y="{y:.1}" width="{cell:.1}" height="{cell:.1}" fill="{f}" stroke="#999" stroke-width="0.5"><title>n{i} -&gt; n{j}: {p:.1}%</title></rect>"##,
                    f = shade(t),
                    p = v * 100.0
                );
                let text = if v == 0.0 {
                    String::new()
                } else if v * 100.0 < 0.5 {
                    "&lt;1".to_string()
                } else {
                    format!("{:.0}", v * 100.0)
                };
                if !text.is_empty() && cell >= 18.0 {
                    let _ = writeln!(
                        out,
                        r#"<text x="{cx:.1}" y="{cy:.1}" text-anchor="middle" font-size="{fs:.0}" fill="{c}">{text}</text>"#,
                        cx = x + cell / 2.0,
                        cy = y + cell / 2.0 + 4.0,
                        fs = (cell * 0.4).min(12.0),
                        c = if t > 0.5 { "white" } else { "black" }
                    );
                }
            }
            let _ = writeln!(
                out,
                r#"<text x="{x:.1}" y="{y:.1}" text-anchor="end" font-size="11">n{i}</text>"#,
                x = x0 - 4.0,
                y = y0 + (i as f64 + 0.5) * cell + 4.0
            );
        }
        for j in 0..cells.len() {
            let _ = writeln!(
                out,
                r#"<text x="{x:.1}" y="{y:.1}" text-anchor="middle" font-size="11">n{j}</text>"#,
                x = x0 + (j as f64 + 0.5) * cell,
                y = y0 + side + 13.0
            );
        }
        let _ = writeln!(
            out,
            r#"<text class="axis-title" x="{x:.1}" y="{y:.1}" text-anchor="middle" font-size="11">node of the data (column)</text>"#,
            x = x0 + side / 2.0,
            y = y0 + side + 28.0
        );
    }
    // Legend: the shared scale, a continuous bar with a border, 0 to the largest cell.
    let lx = left + per_line as f64 * panel_w + 10.0;
    let lh = (lines as f64 * panel_h - 40.0).min(160.0);
    let _ = writeln!(
        out,
        r##"<g class="legend"><text x="{lx}" y="{y}" font-weight="bold">{u}</text>
<rect x="{lx}" y="{y0}" width="16" height="{lh}" fill="url(#scale)" stroke="#333" stroke-width="0.8"/>
<text x="{tx}" y="{ya:.1}">{max:.0}%</text><text x="{tx}" y="{yb:.1}">{half:.0}%</text><text x="{tx}" y="{yc:.1}">0%</text></g>"##,
        y = top + 12.0,
        y0 = top + 22.0,
        u = escape(fig.scale_label),
        tx = lx + 22.0,
        ya = top + 22.0 + 10.0,
        yb = top + 22.0 + lh / 2.0 + 4.0,
        yc = top + 22.0 + lh,
        max = max * 100.0,
        half = max * 50.0
    );
    out.push_str("</svg>\n");
    out
}

/// A line chart: one line per series through `(xs[i], values[series][i])`, the
/// horizontal axis in powers of two (paper 2's Figures 2 and 3: time against STREAM
/// iterations), the vertical axis logarithmic or linear.
pub struct LineChart<'a> {
    /// The chart's title.
    pub title: &'a str,
    /// Label of the horizontal axis.
    pub x_label: &'a str,
    /// Label of the vertical axis, with its unit.
    pub y_label: &'a str,
    /// The abscissae, positive and increasing.
    pub xs: &'a [f64],
    /// One name per line, shown in the legend.
    pub series: &'a [String],
    /// `values[series][i]`, `None` where the point is missing.
    pub values: &'a [Vec<Option<f64>>],
    /// Whether the vertical axis is logarithmic (base 2).
    pub log_y: bool,
}

/// Renders a line chart.
pub fn line_chart(chart: &LineChart<'_>) -> String {
    let legend_w = chart
        .series
        .iter()
        .map(|s| text_width(s, 12.0) + 30.0)
        .fold(0.0, f64::max);
    let (left, top, bottom, right) = (80.0, 44.0, 56.0, legend_w + 32.0);
    let plot_w = 420.0f64
        .max(text_width(chart.title, 16.0) + 20.0 - left - right)
        .min(MAX_WIDTH - left - right);
    let plot_h = 320.0f64.max(text_width(chart.y_label, 13.0) + 10.0);
    let (width, height) = (left + plot_w + right, top + plot_h + bottom);
    let mut out = String::new();
    header(&mut out, width, height, chart.title);
    let points: Vec<f64> = chart.values.iter().flatten().flatten().copied().collect();
    let positive = |v: &f64| v.is_finite() && *v > 0.0;
    let (lo, hi) = points
        .iter()
        .filter(|v| positive(v))
        .fold((f64::INFINITY, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (1.0, 2.0) };
    // The vertical scale: powers of two around the values, or 0 to a rounded maximum.
    let (y0, y1) = if chart.log_y {
        (
            lo.log2().floor(),
            hi.log2().ceil().max(lo.log2().floor() + 1.0),
        )
    } else {
        let step = tick_step(hi);
        (0.0, (hi / step).ceil() * step)
    };
    let y_of = |v: f64| {
        let t = if chart.log_y { v.log2() } else { v };
        top + plot_h - (t - y0) / (y1 - y0) * plot_h
    };
    let (x0, x1) = match (chart.xs.first(), chart.xs.last()) {
        (Some(&a), Some(&b)) if b > a && a > 0.0 => (a.log2(), b.log2()),
        _ => (0.0, 1.0),
    };
    let x_of = |v: f64| left + (v.log2() - x0) / (x1 - x0) * plot_w;
    // Axes, ticks and grid.
    let _ = writeln!(
        out,
        r##"<line x1="{left}" y1="{b}" x2="{r}" y2="{b}" stroke="black"/>
<line x1="{left}" y1="{top}" x2="{left}" y2="{b}" stroke="black"/>"##,
        b = top + plot_h,
        r = left + plot_w
    );
    for &x in chart.xs {
        let px = x_of(x);
        let _ = writeln!(
            out,
            r##"<line x1="{px:.1}" y1="{b}" x2="{px:.1}" y2="{b5}" stroke="black"/><text x="{px:.1}" y="{ty}" text-anchor="middle">{x}</text>"##,
            b = top + plot_h,
            b5 = top + plot_h + 5.0,
            ty = top + plot_h + 18.0
        );
    }
    let ticks: Vec<f64> = if chart.log_y {
        (y0 as i32..=y1 as i32).map(|e| 2f64.powi(e)).collect()
    } else {
        let step = tick_step(y1);
        (0..=((y1 / step).round() as usize))
            .map(|k| k as f64 * step)
            .collect()
    };
    for t in ticks {
        let py = y_of(t);
        let label = if t >= 1.0 || t == 0.0 {
            format!("{t}")
        } else {
            format!("{t:.4}").trim_end_matches('0').to_string()
        };
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{py:.1}" x2="{r}" y2="{py:.1}" stroke="#dddddd"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{label}</text>"##,
            r = left + plot_w,
            tx = left - 6.0,
            ty = py + 4.0
        );
    }
    axis_titles(
        &mut out,
        (left + plot_w / 2.0, top + plot_h + 42.0),
        chart.x_label,
        (18.0, top + plot_h / 2.0),
        chart.y_label,
    );
    // The lines, then the legend.
    for (s, (name, values)) in chart.series.iter().zip(chart.values).enumerate() {
        let colour = PALETTE[s % PALETTE.len()];
        let path: Vec<String> = chart
            .xs
            .iter()
            .zip(values)
            .filter_map(|(&x, v)| v.filter(positive).map(|v| (x, v)))
            .map(|(x, v)| format!("{:.1},{:.1}", x_of(x), y_of(v)))
            .collect();
        let dash = DASHES[s % DASHES.len()];
        let _ = writeln!(
            out,
            r##"<polyline fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}" points="{}"><title>{}</title></polyline>"##,
            path.join(" "),
            escape(name)
        );
        for p in &path {
            let (x, y) = p.split_once(',').expect("x,y");
            let (x, y) = (x.parse().unwrap_or(0.0), y.parse().unwrap_or(0.0));
            out.push_str(&marker(s, x, y, colour));
        }
        let ly = top + 10.0 + s as f64 * 18.0;
        let lx = left + plot_w + 16.0;
        let _ = writeln!(
            out,
            r##"<g class="legend"><line x1="{lx}" y1="{ly}" x2="{lx2}" y2="{ly}" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>{m}<text x="{tx}" y="{ty}">{}</text></g>"##,
            escape(name),
            lx2 = lx + 20.0,
            tx = lx + 26.0,
            ty = ly + 4.0,
            m = marker(s, lx + 10.0, ly, colour)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// The two axis titles (class `axis-title`): `x_title` centred at `x_at`, `y_title`
/// turned upright and centred at `y_at`.
pub fn axis_titles(
    out: &mut String,
    x_at: (f64, f64),
    x_title: &str,
    y_at: (f64, f64),
    y_title: &str,
) {
    let _ = writeln!(
        out,
        r##"<text class="axis-title" x="{}" y="{}" text-anchor="middle" font-size="13">{}</text>
<text class="axis-title" x="{x}" y="{y}" text-anchor="middle" font-size="13" transform="rotate(-90 {x} {y})">{}</text>"##,
        x_at.0,
        x_at.1,
        escape(x_title),
        escape(y_title),
        x = y_at.0,
        y = y_at.1,
    );
}

/// A legend entry (class `legend`) at (`x`, `y`): a line of `colour` and `dash`, then
/// `text`.
pub fn legend_entry(out: &mut String, x: f64, y: f64, colour: &str, dash: &str, text: &str) {
    let _ = writeln!(
        out,
        r##"<g class="legend"><line x1="{x}" y1="{y}" x2="{x2}" y2="{y}" stroke="{colour}" stroke-width="2.5" stroke-dasharray="{dash}"/><text x="{tx}" y="{ty}">{}</text></g>"##,
        escape(text),
        x2 = x + 24.0,
        tx = x + 30.0,
        ty = y + 4.0
    );
}

/// Dash patterns of line series, in order (solid first), so that lines differ without
/// colour too.
const DASHES: [&str; 4] = ["none", "6,3", "2,2", "8,3,2,3"];

/// The marker of line series `s` at (`x`, `y`): circle, square, triangle, diamond,
/// inverted triangle, cross, one per series before they repeat, so that lines differ
/// without colour too.
fn marker(s: usize, x: f64, y: f64, colour: &str) -> String {
    let polygon = |points: &[(f64, f64)]| {
        let p: Vec<String> = points
            .iter()
            .map(|(dx, dy)| format!("{:.1},{:.1}", x + dx, y + dy))
            .collect();
        format!(
            r#"<polygon class="marker" points="{}" fill="{colour}"/>"#,
            p.join(" ")
        )
    };
    let shape = match s % 6 {
        0 => format!(r#"<circle class="marker" cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{colour}"/>"#),
        1 => polygon(&[(-3.5, -3.5), (3.5, -3.5), (3.5, 3.5), (-3.5, 3.5)]),
        2 => polygon(&[(0.0, -4.5), (4.0, 3.0), (-4.0, 3.0)]),
        3 => polygon(&[(0.0, -4.5), (4.5, 0.0), (0.0, 4.5), (-4.5, 0.0)]),
        4 => polygon(&[(0.0, 4.5), (4.0, -3.0), (-4.0, -3.0)]),
        _ => format!(
            r#"<path class="marker" d="M{a:.1},{b:.1}L{c:.1},{d:.1}M{a:.1},{d:.1}L{c:.1},{b:.1}" stroke="{colour}" stroke-width="2.5"/>"#,
            a = x - 4.0,
            b = y - 4.0,
            c = x + 4.0,
            d = y + 4.0
        ),
    };
    shape + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_one_two_five() {
        assert_eq!(tick_step(10.0), 2.0);
        assert_eq!(tick_step(1.0), 0.2);
        assert_eq!(tick_step(3.0), 1.0);
        assert_eq!(tick_step(0.0), 1.0);
    }

    #[test]
    fn text_is_escaped() {
        let groups = vec!["a<b".to_string()];
        let series = vec!["x&y".to_string()];
        let svg = grouped_bars(&GroupedBars {
            title: "t \"q\"",
            x_label: "x",
            y_label: "y",
            groups: &groups,
            series: &series,
            legend_title: "configuration",
            values: &[vec![Some(1.5)]],
            errors: None,
            error_label: "",
            y_max: None,
            references: &[(1.0, "speedup 1".to_string())],
        });
        assert!(svg.contains("a&lt;b") && svg.contains("x&amp;y") && svg.contains("&quot;q"));
        assert!(!svg.contains("a<b"));
    }

    fn ratio_chart(values: Vec<Vec<Option<f64>>>) -> String {
        let groups: Vec<String> = (0..values.len()).map(|g| format!("k{g}")).collect();
        let series = vec!["a".to_string(), "b".to_string()];
        grouped_bars(&GroupedBars {
            title: "t",
            x_label: "kernel",
            y_label: "time B / A (x)",
            groups: &groups,
            series: &series,
            legend_title: "configuration",
            values: &values,
            errors: None,
            error_label: "",
            y_max: None,
            references: &[(1.0, "as fast".to_string())],
        })
    }

    #[test]
    fn values_spanning_decades_get_a_log_axis() {
        // Ratios of 0.01 to 0.27 and the reference at 1: two decades, on a log axis
        // whose ticks reach from 0.001 to 1.
        let svg = ratio_chart(vec![vec![Some(0.01), Some(0.27)], vec![Some(0.05), None]]);
        assert!(svg.contains("time B / A (x, log scale)"), "{svg}");
        for tick in [">0.01</text>", ">0.1</text>", ">1</text>", ">0.02</text>"] {
            assert!(svg.contains(tick), "{tick}: {svg}");
        }
        // The smallest bar is still a bar: taller than a pixel.
        let heights: Vec<f64> = svg
            .split("<rect x=")
            .skip(1)
            .filter_map(|r| r.split("height=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        assert!(heights.iter().all(|&h| h >= 10.0), "{heights:?}");
        // Within a decade: linear, from 0.
        let svg = ratio_chart(vec![vec![Some(0.5), Some(1.2)]]);
        assert!(
            !svg.contains("log scale") && svg.contains(">0.0</text>"),
            "{svg}"
        );
    }

    #[test]
    fn shades_run_from_white() {
        assert_eq!(shade(0.0), "#ffffff");
        assert_eq!(shade(1.0), "#08306b");
    }

    #[test]
    fn ten_configurations_of_ten_kernels_fit_the_report_page() {
        let groups: Vec<String> = (0..10).map(|g| format!("kernel-{g}")).collect();
        let series: Vec<String> = (0..10).map(|s| format!("configuration-{s}")).collect();
        let values = vec![vec![Some(1.0); 10]; 10];
        let svg = grouped_bars(&GroupedBars {
            title: &"a long title ".repeat(20),
            x_label: "kernel",
            y_label: "value (x)",
            groups: &groups,
            series: &series,
            legend_title: "configuration",
            values: &values,
            errors: None,
            error_label: "",
            y_max: None,
            references: &[],
        });
        let width: f64 = svg
            .split("width=\"")
            .nth(1)
            .and_then(|w| w.split('"').next())
            .and_then(|w| w.parse().ok())
            .unwrap();
        assert!(width <= MAX_WIDTH, "{width}");
        // Ten distinct colours.
        let mut colours = PALETTE.to_vec();
        colours.sort_unstable();
        colours.dedup();
        assert_eq!(colours.len(), 10);
    }

    #[test]
    fn line_series_differ_by_marker_and_dash() {
        let shapes: Vec<String> = (0..6).map(|s| marker(s, 0.0, 0.0, "#000")).collect();
        for (a, x) in shapes.iter().enumerate() {
            for y in &shapes[a + 1..] {
                assert_ne!(x, y);
            }
        }
        assert_eq!(DASHES[0], "none");
    }
}
