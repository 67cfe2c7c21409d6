//! `timeline.svg`: what each node did over one traced run of a kernel, drawn from the
//! counter tracks of its Chrome trace (the `locus::observe` module): the bytes its tasks
//! read and wrote in their own node's memory (local) and in other nodes' (remote),
//! cumulative, and the tasks ready and not started, per node. Starvz's memory and
//! ready curves and Aftermath's NUMA heat over time show the same; here they come with
//! every `locus bench` report.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::svg::{axis_titles, header, legend_entry, text_width, tick_step, MAX_WIDTH, PALETTE};

/// The picture's name.
pub const NAME: &str = "timeline";

/// One node's counters: (ns since the trace began, value) in time order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeSeries {
    /// Bytes read or written in the node's own memory, cumulative.
    pub local: Vec<(u64, f64)>,
    /// Bytes read or written in other nodes' memory, cumulative.
    pub remote: Vec<(u64, f64)>,
    /// Tasks ready and not started, counted on the node that ran them.
    pub ready: Vec<(u64, f64)>,
}

/// The nodes' counters of a Chrome trace written by `TraceRecorder`, node by node
/// (process `N + 1` is node `N`), and the end of the trace in ns (its last slice's end).
pub fn from_trace(trace: &Value) -> Result<(Vec<NodeSeries>, u64), String> {
    let events = trace["traceEvents"]
        .as_array()
        .ok_or("the trace has no traceEvents")?;
    let ns = |e: &Value, key: &str| (e[key].as_f64().unwrap_or(0.0) * 1000.0).round() as u64;
    let mut nodes: BTreeMap<u64, NodeSeries> = BTreeMap::new();
    let mut end = 0u64;
    for e in events {
        match e["ph"].as_str() {
            Some("X") => end = end.max(ns(e, "ts") + ns(e, "dur")),
            Some("C") => {
                let Some(pid) = e["pid"].as_u64().filter(|&p| p > 0) else {
                    continue;
                };
                let node = nodes.entry(pid - 1).or_default();
                let (series, key) = match e["name"].as_str() {
                    Some("local") => (&mut node.local, "bytes"),
                    Some("remote") => (&mut node.remote, "bytes"),
                    Some("ready") => (&mut node.ready, "tasks"),
                    _ => continue,
                };
                if let Some(v) = e["args"][key].as_f64() {
                    series.push((ns(e, "ts"), v));
                }
            }
            _ => {}
        }
    }
    if nodes.is_empty() {
        return Err("the trace has no counter tracks".into());
    }
    let count = nodes.keys().last().map_or(0, |&n| n as usize + 1);
    let mut out = vec![NodeSeries::default(); count];
    for (n, mut s) in nodes {
        for series in [&mut s.local, &mut s.remote, &mut s.ready] {
            series.sort_by_key(|p| p.0);
        }
        out[n as usize] = s;
    }
    Ok((out, end))
}

/// Slices of time the ready tasks are averaged over.
const BINS: usize = 100;

/// The mean over each of [`BINS`] equal slices of `0..end_ns` of the step function
/// `series` (each value holds until the next; 0 before the first), as (middle of the
/// slice, mean).
fn binned(series: &[(u64, f64)], end_ns: u64) -> Vec<(u64, f64)> {
    let end = end_ns.max(1) as f64;
    let width = end / BINS as f64;
    let mut sums = vec![0.0; BINS];
    let mut add = |from: f64, to: f64, v: f64| {
        let mut t = from;
        while t < to {
            let bin = ((t / width) as usize).min(BINS - 1);
            let bin_end = ((bin + 1) as f64 * width).min(to);
            sums[bin] += v * (bin_end - t).max(0.0);
            if bin_end <= t {
                break;
            }
            t = bin_end;
        }
    };
    let mut last = (0.0, 0.0);
    for &(ts, v) in series {
        let ts = (ts as f64).min(end);
        add(last.0, ts, last.1);
        last = (ts, v);
    }
    add(last.0, end, last.1);
    sums.iter()
        .enumerate()
        .map(|(b, sum)| (((b as f64 + 0.5) * width) as u64, sum / width))
        .collect()
}

/// A unit for values up to `max`: (name, divisor), from `units` (smallest first, each
/// with its size).
fn unit(max: f64, units: &[(&'static str, f64)]) -> (&'static str, f64) {
    units
        .iter()
        .rev()
        .find(|(_, size)| max >= *size)
        .or(units.first())
        .copied()
        .unwrap_or(("", 1.0))
}

const BYTES: [(&str, f64); 4] = [
    ("bytes", 1.0),
    ("KiB", 1024.0),
    ("MiB", 1048576.0),
    ("GiB", 1073741824.0),
];
const TIMES: [(&str, f64); 4] = [("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)];

/// The timeline of `nodes` up to `end_ns`, titled `title`; `one_node` says in the
/// picture that with one node every access is local (the remote lines lie on 0).
pub fn svg(title: &str, nodes: &[NodeSeries], end_ns: u64, one_node: Option<&str>) -> String {
    let names: Vec<String> = (0..nodes.len()).map(|n| format!("node {n}")).collect();
    let kinds = ["local bytes", "remote bytes"];
    let legend_w = names
        .iter()
        .map(String::as_str)
        .chain(kinds)
        .map(|s| text_width(s, 12.0) + 34.0)
        .fold(0.0, f64::max);
    let (left, top, right) = (84.0, 44.0, legend_w + 32.0);
    let plot_w = 640.0f64
        .max(text_width(title, 16.0) + 20.0 - left - right)
        .min(MAX_WIDTH - left - right);
    let (bytes_h, ready_h, gap, bottom) = (220.0, 150.0, 64.0, 58.0);
    let note_h = if one_node.is_some() { 22.0 } else { 0.0 };
    let width = left + plot_w + right;
    let height = top + note_h + bytes_h + gap + ready_h + bottom;
    let mut out = String::new();
    header(&mut out, width, height, title);
    let top = top + note_h;
    if let Some(note) = one_node {
        let _ = writeln!(
            out,
            r##"<text x="{x}" y="{y}" text-anchor="middle" font-size="{size:.1}" fill="#444444">{t}</text>"##,
            x = width / 2.0,
            y = top - 6.0,
            size = (12.0f64).min((width - 20.0) / text_width(note, 1.0).max(1.0)),
            t = super::report::escape(note)
        );
    }

    let end = end_ns.max(1) as f64;
    let (t_unit, t_div) = unit(end, &TIMES);
    let x_of = |ns: u64| left + ns as f64 / end * plot_w;
    let max_of = |f: &dyn Fn(&NodeSeries) -> &Vec<(u64, f64)>| {
        nodes
            .iter()
            .flat_map(|n| f(n).iter().map(|p| p.1))
            .fold(0.0, f64::max)
    };
    let max_bytes = max_of(&|n| &n.local).max(max_of(&|n| &n.remote));
    let (b_unit, b_div) = unit(max_bytes, &BYTES);
    // Ready tasks change at every task: drawn as their mean over each of `BINS` slices
    // of time, which a reader can follow for eight nodes at once.
    let ready: Vec<Vec<(u64, f64)>> = nodes.iter().map(|n| binned(&n.ready, end_ns)).collect();
    let max_ready = ready.iter().flatten().map(|p| p.1).fold(0.0, f64::max);

    // Two panels on one time axis: bytes above, ready tasks below.
    let panels = [
        (
            top,
            bytes_h,
            max_bytes / b_div,
            format!("bytes accessed ({b_unit}, cumulative)"),
        ),
        (
            top + bytes_h + gap,
            ready_h,
            max_ready,
            "ready tasks (count, mean)".to_string(),
        ),
    ];
    for (k, (y_top, h, max, label)) in panels.iter().enumerate() {
        let step = tick_step(*max);
        let y_max = ((max / step).ceil() * step).max(step);
        let b = y_top + h;
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{b}" x2="{r}" y2="{b}" stroke="black"/>
<line x1="{left}" y1="{y_top}" x2="{left}" y2="{b}" stroke="black"/>"##,
            r = left + plot_w
        );
        for i in 0..=((y_max / step).round() as usize) {
            let v = i as f64 * step;
            let py = b - v / y_max * h;
            let decimals = if step >= 1.0 {
                0
            } else {
                (-step.log10().floor()) as usize
            };
            let _ = writeln!(
                out,
                r##"<line x1="{left}" y1="{py:.1}" x2="{r}" y2="{py:.1}" stroke="#dddddd"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{v:.decimals$}</text>"##,
                r = left + plot_w,
                tx = left - 6.0,
                ty = py + 4.0
            );
        }
        let t_step = tick_step(end / t_div);
        for i in 0..=((end / t_div / t_step).floor() as usize) {
            let t = i as f64 * t_step;
            let px = left + t * t_div / end * plot_w;
            let decimals = if t_step >= 1.0 {
                0
            } else {
                (-t_step.log10().floor()) as usize
            };
            let _ = writeln!(
                out,
                r##"<line x1="{px:.1}" y1="{b}" x2="{px:.1}" y2="{b5}" stroke="black"/><text x="{px:.1}" y="{ty}" text-anchor="middle">{t:.decimals$}</text>"##,
                b5 = b + 5.0,
                ty = b + 18.0
            );
        }
        axis_titles(
            &mut out,
            (left + plot_w / 2.0, b + 40.0),
            &format!("time since the first run began ({t_unit})"),
            (18.0, y_top + h / 2.0),
            label,
        );
        let y_of = |v: f64| b - v / y_max * h;
        let div = if k == 0 { b_div } else { 1.0 };
        for (n, node) in nodes.iter().enumerate() {
            let colour = PALETTE[n % PALETTE.len()];
            if k == 1 {
                let points: Vec<String> = ready[n]
                    .iter()
                    .map(|&(ts, v)| format!("{:.1},{:.1}", x_of(ts), y_of(v)))
                    .collect();
                let _ = writeln!(
                    out,
                    r##"<polyline fill="none" stroke="{colour}" stroke-width="1.8" points="{}"/>"##,
                    points.join(" ")
                );
                continue;
            }
            for (series, dash) in [(&node.local, "none"), (&node.remote, "6,3")] {
                // Steps: a counter keeps its value until the next sample.
                let mut points = Vec::with_capacity(series.len() * 2 + 1);
                let mut last = 0.0;
                for &(ts, v) in series {
                    points.push(format!("{:.1},{:.1}", x_of(ts), y_of(last / div)));
                    points.push(format!("{:.1},{:.1}", x_of(ts), y_of(v / div)));
                    last = v;
                }
                points.push(format!("{:.1},{:.1}", x_of(end_ns), y_of(last / div)));
                let _ = writeln!(
                    out,
                    r##"<polyline fill="none" stroke="{colour}" stroke-width="1.8" stroke-dasharray="{dash}" points="{}"/>"##,
                    points.join(" ")
                );
            }
        }
    }
    // The legend: a colour per node, then the dash of local and remote.
    let lx = left + plot_w + 16.0;
    let mut ly = top + 10.0;
    for (n, name) in names.iter().enumerate() {
        legend_entry(&mut out, lx, ly, PALETTE[n % PALETTE.len()], "none", name);
        ly += 18.0;
    }
    ly += 8.0;
    for (kind, dash) in kinds.iter().zip(["none", "6,3"]) {
        legend_entry(&mut out, lx, ly, "#333333", dash, kind);
        ly += 18.0;
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_of_a_trace_by_node() {
        let trace = serde_json::json!({"traceEvents": [
            {"ph": "X", "pid": 1, "tid": 0, "ts": 1.0, "dur": 2.5},
            {"ph": "C", "pid": 2, "name": "remote", "ts": 2.0, "args": {"bytes": 64}},
            {"ph": "C", "pid": 1, "name": "local", "ts": 3.0, "args": {"bytes": 128}},
            {"ph": "C", "pid": 1, "name": "local", "ts": 1.0, "args": {"bytes": 8}},
            {"ph": "C", "pid": 1, "name": "ready", "ts": 0.5, "args": {"tasks": 2}},
            {"ph": "C", "pid": 1, "name": "memory in use", "ts": 0.5, "args": {"bytes": 2}},
        ]});
        let (nodes, end) = from_trace(&trace).unwrap();
        assert_eq!(end, 3500);
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].local, [(1000, 8.0), (3000, 128.0)]);
        assert_eq!(nodes[0].ready, [(500, 2.0)]);
        assert_eq!(nodes[1].remote, [(2000, 64.0)]);
        assert!(from_trace(&serde_json::json!({"traceEvents": []})).is_err());
    }

    #[test]
    fn ready_tasks_are_averaged_over_slices_of_time() {
        // 2 tasks ready over the first half, none after.
        let b = binned(&[(0, 2.0), (500, 0.0)], 1000);
        assert_eq!(b.len(), BINS);
        assert!((b[0].1 - 2.0).abs() < 1e-9 && b[BINS - 1].1.abs() < 1e-9);
        let mean: f64 = b.iter().map(|p| p.1).sum::<f64>() / BINS as f64;
        assert!((mean - 1.0).abs() < 1e-9, "{mean}");
    }

    #[test]
    fn units_fit_the_largest_value() {
        assert_eq!(unit(3.0 * 1048576.0, &BYTES).0, "MiB");
        assert_eq!(unit(10.0, &BYTES).0, "bytes");
        assert_eq!(unit(0.0, &BYTES).0, "bytes");
        assert_eq!(unit(2.5e6, &TIMES).0, "ms");
    }
}
