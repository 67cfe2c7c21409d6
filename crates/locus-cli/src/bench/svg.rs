//! Charts of a benchmark matrix as hand-written SVG: grouped bars (paper 1, Figures
//! 7-9: one group per kernel, one bar per configuration) and a node-to-node heatmap of
//! a traffic matrix. Every chart has a title, axis labels and a legend.

use std::fmt::Write as _;

/// Bar colours, one per series, distinguishable in print.
const PALETTE: &[&str] = &[
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

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
    /// Bar heights.
    pub values: &'a [Vec<Option<f64>>],
    /// Top of the vertical axis, if fixed (e.g. 1 for a ratio).
    pub y_max: Option<f64>,
    /// A horizontal reference line (e.g. speedup 1).
    pub reference: Option<f64>,
}

/// Escapes text for XML content and attributes.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A step of 1, 2 or 5 times a power of ten giving about five ticks up to `max`.
fn tick_step(max: f64) -> f64 {
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

fn header(out: &mut String, width: f64, height: f64, title: &str) {
    let _ = writeln!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">
<title>{t}</title>
<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>
<text x="{cx}" y="24" text-anchor="middle" font-size="16" font-weight="bold">{t}</text>"#,
        t = escape(title),
        cx = width / 2.0
    );
}

/// Renders a grouped bar chart.
pub fn grouped_bars(chart: &GroupedBars<'_>) -> String {
    let (left, right, top, bottom) = (70.0, 170.0, 44.0, 90.0);
    let slot = (chart.series.len().max(1) as f64 * 12.0 + 16.0).max(40.0);
    let plot_w = (chart.groups.len().max(1) as f64 * slot).max(300.0);
    let slot = plot_w / chart.groups.len().max(1) as f64;
    let plot_h = 320.0;
    let (width, height) = (left + plot_w + right, top + plot_h + bottom);
    let data_max = chart
        .values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .fold(chart.reference.unwrap_or(0.0), f64::max);
    let step = tick_step(chart.y_max.unwrap_or(data_max * 1.05));
    let y_max = chart
        .y_max
        .unwrap_or_else(|| ((data_max * 1.05) / step).ceil().max(1.0) * step);
    let y = |v: f64| top + plot_h - (v.clamp(0.0, y_max) / y_max) * plot_h;

    let mut out = String::new();
    header(&mut out, width, height, chart.title);
    // Grid and vertical axis ticks.
    let mut v = 0.0;
    while v <= y_max + step * 1e-6 {
        let yy = y(v);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{x2}" y2="{yy:.1}" stroke="#e0e0e0"/>
<text x="{tx}" y="{ty:.1}" text-anchor="end">{label}</text>"##,
            x2 = left + plot_w,
            tx = left - 6.0,
            ty = yy + 4.0,
            label = tick_label(v, step)
        );
        v += step;
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
        }
        let cx = left + (g as f64 + 0.5) * slot;
        let ly = top + plot_h + 14.0;
        let _ = writeln!(
            out,
            r#"<text x="{cx:.1}" y="{ly:.1}" text-anchor="end" transform="rotate(-35 {cx:.1} {ly:.1})">{}</text>"#,
            escape(name)
        );
    }
    if let Some(r) = chart.reference {
        let yy = y(r);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{x2}" y2="{yy:.1}" stroke="#333" stroke-dasharray="5,3"/>"##,
            x2 = left + plot_w
        );
    }
    // Axes and their labels.
    let _ = writeln!(
        out,
        r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{b}" stroke="#000"/>
<line x1="{left}" y1="{b}" x2="{r}" y2="{b}" stroke="#000"/>
<text x="{cx}" y="{xl}" text-anchor="middle" font-size="13">{xlabel}</text>
<text x="18" y="{cy}" text-anchor="middle" font-size="13" transform="rotate(-90 18 {cy})">{ylabel}</text>"##,
        b = top + plot_h,
        r = left + plot_w,
        cx = left + plot_w / 2.0,
        xl = height - 12.0,
        cy = top + plot_h / 2.0,
        xlabel = escape(chart.x_label),
        ylabel = escape(chart.y_label)
    );
    legend(&mut out, left + plot_w + 16.0, top, chart.series);
    out.push_str("</svg>\n");
    out
}

fn legend(out: &mut String, x: f64, top: f64, series: &[String]) {
    let _ = writeln!(
        out,
        r#"<g class="legend"><text x="{x}" y="{y}" font-weight="bold">configuration</text>"#,
        y = top + 4.0
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
    out.push_str("</g>\n");
}

/// A node-to-node heatmap: `cells[i][j]` is what tasks on node `i` moved in memory of
/// node `j`.
pub struct Heatmap<'a> {
    /// The chart's title.
    pub title: &'a str,
    /// Label of the rows' axis.
    pub y_label: &'a str,
    /// Label of the columns' axis.
    pub x_label: &'a str,
    /// The matrix (square).
    pub cells: &'a [Vec<f64>],
    /// Unit of a cell, for the legend.
    pub unit: &'a str,
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

/// Renders a heatmap with a colour scale as its legend.
pub fn heatmap(map: &Heatmap<'_>) -> String {
    let n = map.cells.len().max(1);
    let cell = (480.0 / n as f64).clamp(14.0, 60.0);
    let (left, top) = (80.0, 50.0);
    let side = cell * n as f64;
    let (width, height) = (left + side + 140.0, top + side + 60.0);
    let max = map.cells.iter().flatten().copied().fold(0.0f64, f64::max);
    let mut out = String::new();
    header(&mut out, width, height, map.title);
    for (i, row) in map.cells.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            let t = if max > 0.0 { v / max } else { 0.0 };
            let (x, y) = (left + j as f64 * cell, top + i as f64 * cell);
            let _ = writeln!(
                out,
                r##"<rect x="{x:.1}" y="{y:.1}" width="{cell:.1}" height="{cell:.1}" fill="{f}" stroke="#ccc"><title>n{i} -&gt; n{j}: {v:.2} {u}</title></rect>"##,
                f = shade(t),
                u = escape(map.unit)
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{x}" y="{y:.1}" text-anchor="end">n{i}</text>"#,
            x = left - 6.0,
            y = top + (i as f64 + 0.5) * cell + 4.0
        );
    }
    for j in 0..map.cells.len() {
        let _ = writeln!(
            out,
            r#"<text x="{x:.1}" y="{y}" text-anchor="middle">n{j}</text>"#,
            x = left + (j as f64 + 0.5) * cell,
            y = top + side + 16.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{cx}" y="{xl}" text-anchor="middle" font-size="13">{xlabel}</text>
<text x="18" y="{cy}" text-anchor="middle" font-size="13" transform="rotate(-90 18 {cy})">{ylabel}</text>"#,
        cx = left + side / 2.0,
        xl = top + side + 40.0,
        cy = top + side / 2.0,
        xlabel = escape(map.x_label),
        ylabel = escape(map.y_label)
    );
    // Legend: the colour scale from 0 to the largest cell.
    let (lx, lh) = (left + side + 30.0, side.min(240.0));
    let steps = 10;
    let _ = writeln!(
        out,
        r#"<g class="legend"><text x="{lx}" y="{y}" font-weight="bold">{u}</text>"#,
        y = top - 6.0,
        u = escape(map.unit)
    );
    for k in 0..steps {
        let t = 1.0 - k as f64 / (steps - 1) as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{lx}" y="{y:.1}" width="16" height="{h:.1}" fill="{f}"/>"#,
            y = top + k as f64 * lh / steps as f64,
            h = lh / steps as f64 + 0.5,
            f = shade(t)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{tx}" y="{y0}">{max:.1}</text><text x="{tx}" y="{y1:.1}">0</text></g>"#,
        tx = lx + 22.0,
        y0 = top + 10.0,
        y1 = top + lh
    );
    out.push_str("</svg>\n");
    out
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
            values: &[vec![Some(1.5)]],
            y_max: None,
            reference: Some(1.0),
        });
        assert!(svg.contains("a&lt;b") && svg.contains("x&amp;y") && svg.contains("&quot;q"));
        assert!(!svg.contains("a<b"));
    }

    #[test]
    fn shades_run_from_white() {
        assert_eq!(shade(0.0), "#ffffff");
        assert_eq!(shade(1.0), "#08306b");
    }
}
