//! `locus compare DIR_A DIR_B`: two `locus bench` outputs side by side (threads against
//! sim, before against after), row by row (kernel and configuration), with ratio columns
//! B / A for the median time, `r_loc_rt` and peak memory; with `--out DIR`, an overlay
//! chart `compare.svg` (and `.png`) of the two median times per kernel and
//! configuration, error bars from each side's min to max.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bench::svg::{grouped_bars, GroupedBars};
use crate::cmd::Failure;

/// Options of `locus compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The first bench output directory (holding `summary.json`): A.
    #[arg(value_name = "DIR_A")]
    pub a: PathBuf,
    /// The second bench output directory: B.
    #[arg(value_name = "DIR_B")]
    pub b: PathBuf,
    /// Also write `compare.svg` and `compare.png` here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// A bench output: its description, rows, engine and machine.
struct Side {
    label: String,
    rows: Vec<Value>,
    /// `threads` or `sim`, if the summary says.
    engine: Option<String>,
    /// What identifies the machine it ran on, as (what, value): the simulated
    /// topology in the simulator; the host's name, CPU model, real nodes and CPUs on
    /// threads. Only what the summary says.
    machine: Vec<(&'static str, String)>,
}

/// What the summary `v` says of the machine it ran on (see [`Side::machine`]).
fn machine_of(v: &Value) -> Vec<(&'static str, String)> {
    let text = |x: &Value| match x {
        Value::String(s) => Some(shown(s)),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    if v["engine"] == "sim" {
        return text(&v["topology"]["name"])
            .map(|t| ("simulated machine", t))
            .into_iter()
            .collect();
    }
    let host = &v["host"];
    [
        ("host", "name"),
        ("CPU", "cpu_model"),
        ("real nodes", "nodes"),
        ("CPUs", "cpus"),
    ]
    .into_iter()
    .filter_map(|(what, key)| Some((what, text(&host[key])?)))
    .collect()
}

/// How A and B differ in what they ran on: the engines, or (on the same engine) the
/// machines, each fact as `what a vs b`; `None` when nothing known differs.
fn mismatch(a: &Side, b: &Side) -> Option<String> {
    if let (Some(ea), Some(eb)) = (&a.engine, &b.engine) {
        if ea != eb {
            return Some(format!(
                "A and B ran on different engines ({} vs {}): the ratios compare the engines, not a change of Locus",
                shown(ea),
                shown(eb)
            ));
        }
    }
    let differ: Vec<String> = a
        .machine
        .iter()
        .filter_map(|(what, va)| {
            let (_, vb) = b.machine.iter().find(|(w, _)| w == what)?;
            (va != vb).then(|| format!("{what} {va} vs {vb}"))
        })
        .collect();
    (!differ.is_empty()).then(|| {
        format!(
            "A and B ran on different machines ({}): the ratios compare the machines, not a change of Locus",
            differ.join("; ")
        )
    })
}

/// The unit peak memory is shown in, for values up to `largest` bytes: KiB, MiB or
/// GiB, as (name, bytes).
fn memory_unit(largest: f64) -> (&'static str, f64) {
    if largest >= (1u64 << 30) as f64 {
        ("GiB", (1u64 << 30) as f64)
    } else if largest >= (1u64 << 20) as f64 {
        ("MiB", (1u64 << 20) as f64)
    } else {
        ("KiB", 1024.0)
    }
}

/// The numeric fields of a row that compare reads: each a number, or `null` when the
/// row has no value (a configuration whose every repetition failed, a geometric mean).
const NUMBERS: [&str; 5] = ["median_s", "min_s", "max_s", "r_loc_rt", "peak_bytes"];

/// Reads `DIR/summary.json`. The summary must have the shape `locus bench` writes: a
/// non-empty `rows` array (bench writes at least one kernel under one configuration),
/// each row an object with a `bench` and a `config` string and a `median_s`, and the
/// other numeric fields numbers or `null` where present. Anything else is refused,
/// naming the file and the first row that is wrong, rather than shown as a table of
/// dashes.
fn load(dir: &Path) -> Result<Side, Failure> {
    let path = dir.join("summary.json");
    let text = read_summary(&path)?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| Failure::Usage(format!("{}: not JSON: {e}", path.display())))?;
    let bad = |what: String| {
        Failure::Usage(format!(
            "{}: {what} (expected the summary.json of `locus bench`)",
            path.display()
        ))
    };
    let rows = v["rows"]
        .as_array()
        .ok_or_else(|| bad("no `rows` array".into()))?
        .clone();
    if rows.is_empty() {
        return Err(bad("no rows".into()));
    }
    for (i, row) in rows.iter().enumerate() {
        check_row(row).map_err(|what| bad(format!("rows[{i}]: {what}")))?;
    }
    // What ran, as far as the summary says: `sim engine on 2x2, small sizes`.
    let engine_on = match (v["engine"].as_str(), v["topology"]["name"].as_str()) {
        (Some(engine), Some(topology)) => Some(format!("{engine} engine on {topology}")),
        (Some(engine), None) => Some(format!("{engine} engine")),
        (None, Some(topology)) => Some(format!("on {topology}")),
        (None, None) => None,
    };
    let sizes = v["size"].as_str().map(|size| format!("{size} sizes"));
    let about: Vec<String> = [engine_on, sizes].into_iter().flatten().collect();
    let dir = dir.display().to_string();
    let label = if about.is_empty() {
        shown(&dir)
    } else {
        shown(&format!("{dir} ({})", about.join(", ")))
    };
    Ok(Side {
        label,
        rows,
        engine: v["engine"].as_str().map(str::to_string),
        machine: machine_of(&v),
    })
}

/// Most bytes of a `summary.json` read (16 MiB): `locus bench` writes a few kilobytes,
/// and 16 MiB hold some 50,000 rows. A larger file, or one that is not a regular file
/// (a link to `/dev/zero`, a pipe), is refused before or as soon as it passes the limit.
const MAX_SUMMARY_BYTES: u64 = 16 << 20;

/// The text of the summary at `path`, read up to [`MAX_SUMMARY_BYTES`].
fn read_summary(path: &Path) -> Result<String, Failure> {
    use std::io::Read;
    let shown = shown(&path.display().to_string());
    let refuse = |what: String| {
        Failure::Usage(format!(
            "{shown}: {what} (expected the output directory of `locus bench`)"
        ))
    };
    let file = std::fs::File::open(path).map_err(|e| refuse(e.to_string()))?;
    let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() {
        return Err(refuse(
            "not a regular file (a directory, a device or a pipe)".into(),
        ));
    }
    let too_large = || {
        refuse(format!(
            "larger than {} MiB, more than any summary holds",
            MAX_SUMMARY_BYTES >> 20
        ))
    };
    if meta.len() > MAX_SUMMARY_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_SUMMARY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(e.to_string()))?;
    if bytes.len() as u64 > MAX_SUMMARY_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|_| refuse("not UTF-8 text".into()))
}

/// Text from a summary (or a path) as the table shows it: control characters, line
/// separators and bidirectional formatting characters escaped, so that a hostile
/// summary can neither break the table's lines nor reorder what a terminal shows.
fn shown(text: &str) -> String {
    locus_bench::size::one_line(text)
}

/// What is wrong with a row of a summary, if anything.
fn check_row(row: &Value) -> Result<(), String> {
    let Some(object) = row.as_object() else {
        return Err(format!("{}, not an object", kind(row)));
    };
    for field in ["bench", "config"] {
        match object.get(field) {
            Some(Value::String(_)) => {}
            Some(other) => return Err(format!("`{field}` is {}, not a string", kind(other))),
            None => return Err(format!("no `{field}`")),
        }
    }
    if !object.contains_key("median_s") {
        return Err("no `median_s`".into());
    }
    for field in NUMBERS {
        match object.get(field) {
            None | Some(Value::Null | Value::Number(_)) => {}
            Some(other) => {
                return Err(format!(
                    "`{field}` is {}, not a number or null",
                    kind(other)
                ))
            }
        }
    }
    Ok(())
}

/// The JSON type of a value, for messages (the value itself may be long).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A row's kernel and configuration, as the table and the chart show them ([`shown`]).
fn key(row: &Value) -> (String, String) {
    (
        shown(row["bench"].as_str().unwrap_or("")),
        shown(row["config"].as_str().unwrap_or("")),
    )
}

/// A side's rows by key, the first of each key.
fn index(side: &Side) -> HashMap<(String, String), &Value> {
    let mut rows = HashMap::new();
    for r in &side.rows {
        rows.entry(key(r)).or_insert(r);
    }
    rows
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 => Some(b / a),
        _ => None,
    }
}

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.decimals$}"))
}

/// Names longer than this many characters are cut short in the chart's labels: the
/// chart is as wide as its longest label, and the table shows every name whole.
const CHART_NAME_CHARS: usize = 40;

/// `name` as the chart labels it: whole, or its first characters followed by `…`.
fn chart_name(name: &str) -> String {
    if name.chars().count() <= CHART_NAME_CHARS {
        return name.to_string();
    }
    let mut short: String = name.chars().take(CHART_NAME_CHARS - 1).collect();
    short.push('…');
    short
}

/// Prints the side-by-side table (and writes the chart).
pub fn main(args: &Args) -> Result<(), Failure> {
    let a = load(&args.a)?;
    let b = load(&args.b)?;
    // Rows of A in order, then those only B has; each key's first row on each side.
    let (rows_a, rows_b) = (index(&a), index(&b));
    let mut seen = HashSet::new();
    let keys: Vec<(String, String)> = a
        .rows
        .iter()
        .chain(&b.rows)
        .map(key)
        .filter(|k| seen.insert(k.clone()))
        .collect();
    let num = |row: Option<&&Value>, field: &str| row.and_then(|r| r[field].as_f64());
    let largest_peak = keys
        .iter()
        .flat_map(|k| {
            [
                num(rows_a.get(k), "peak_bytes"),
                num(rows_b.get(k), "peak_bytes"),
            ]
        })
        .flatten()
        .fold(0.0, f64::max);
    let (unit, unit_bytes) = memory_unit(largest_peak);
    let (peak_a, peak_b) = (format!("A peak ({unit})"), format!("B peak ({unit})"));
    let mut cells = vec![[
        "kernel",
        "config",
        "A time (s)",
        "B time (s)",
        "time B/A",
        "A r_loc_rt",
        "B r_loc_rt",
        "r_loc_rt B/A",
        &peak_a,
        &peak_b,
        "peak B/A",
    ]
    .map(String::from)
    .to_vec()];
    let scaled = |v: Option<f64>| v.map(|b| b / unit_bytes);
    for k in &keys {
        let (ra, rb) = (rows_a.get(k), rows_b.get(k));
        let (ta, tb) = (num(ra, "median_s"), num(rb, "median_s"));
        let (la, lb) = (num(ra, "r_loc_rt"), num(rb, "r_loc_rt"));
        let (pa, pb) = (num(ra, "peak_bytes"), num(rb, "peak_bytes"));
        cells.push(vec![
            k.0.clone(),
            k.1.clone(),
            cell(ta, 4),
            cell(tb, 4),
            cell(ratio(ta, tb), 2),
            cell(la, 3),
            cell(lb, 3),
            cell(ratio(la, lb), 2),
            cell(scaled(pa), 1),
            cell(scaled(pb), 1),
            cell(ratio(pa, pb), 2),
        ]);
    }
    let heading = format!("A: {}; B: {}", a.label, b.label);
    let legend = "B/A above 1: B took longer, was more local, or held more memory";
    let mut notes = vec![legend.to_string()];
    println!("A: {}", a.label);
    println!("B: {}", b.label);
    println!("{legend}");
    if let Some(warning) = mismatch(&a, &b) {
        eprintln!("locus: warning: {warning}");
        println!("note: {warning}");
        notes.push(format!("warning: {warning}"));
    }
    println!();
    let widths: Vec<usize> = (0..cells[0].len())
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (k, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| {
                // Padded by hand: a format width is limited to 65,535, and a name in a
                // summary may be longer.
                let fill = " ".repeat(widths[c] - s.chars().count());
                if c < 2 {
                    format!("{s}{fill}")
                } else {
                    format!("{fill}{s}")
                }
            })
            .collect();
        println!("{}", line.join("  ").trim_end());
        if k == 0 {
            println!(
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1))
            );
        }
    }

    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)
            .map_err(|e| Failure::Failed(format!("{}: {e}", out.display())))?;
        // Each bar B/A of the medians, its error bar from B's shortest over A's longest
        // time to B's longest over A's shortest.
        let (groups, series, bars) = ratio_grid(&keys, |k| {
            let (ra, rb) = (rows_a.get(k), rows_b.get(k));
            let median = ratio(num(ra, "median_s"), num(rb, "median_s"))?;
            let range = ratio(num(ra, "max_s"), num(rb, "min_s"))
                .zip(ratio(num(ra, "min_s"), num(rb, "max_s")))
                .filter(|(lo, hi)| lo < hi);
            Some((median, range))
        });
        let values: Vec<Vec<Option<f64>>> = bars
            .iter()
            .map(|line| line.iter().map(|b| b.map(|b| b.0)).collect())
            .collect();
        let errors: Vec<Vec<Option<(f64, f64)>>> = bars
            .iter()
            .map(|line| line.iter().map(|b| b.and_then(|b| b.1)).collect())
            .collect();
        let with_errors = errors.iter().flatten().any(Option::is_some);
        // Each run by its directory's own name (the table's A and B lines give the rest).
        let run_name = |dir: &Path| {
            chart_name(&dir.file_name().map_or(dir.display().to_string(), |n| {
                n.to_string_lossy().into_owned()
            }))
        };
        let (name_a, name_b) = (run_name(&args.a), run_name(&args.b));
        let svg = grouped_bars(&GroupedBars {
            title: &format!("Median time of {name_b} / median time of {name_a}"),
            x_label: "kernel",
            y_label: &format!("time {name_b} / {name_a} (x, above 1: slower)"),
            groups: &groups,
            series: &series,
            legend_title: "configuration",
            values: &values,
            errors: with_errors.then_some(errors.as_slice()),
            error_label: &format!("{name_b} min / {name_a} max to {name_b} max / {name_a} min"),
            y_max: None,
            references: &[(1.0, format!("as fast as {name_a}"))],
        });
        let path = out.join("compare.svg");
        crate::cmd::bench::write_whole(&path, &svg)
            .map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))?;
        let png = crate::bench::figures::to_png(&svg).map_err(Failure::Failed)?;
        let png_path = out.join("compare.png");
        locus::observe::replace_file(&png_path, |f| std::io::Write::write_all(f, &png))
            .map_err(|e| Failure::Failed(format!("{}: {e}", png_path.display())))?;
        crate::cmd::bench::write_report(&crate::bench::report::Report {
            title: "locus compare report",
            heading: &heading,
            stream: None,
            tables: vec![crate::bench::report::Table::Cells(cells, None)],
            notes: &notes,
            not_drawn: &[],
            dir: out,
            pictures: &["compare"],
        })?;
        eprintln!(
            "locus: compare.svg, compare.png and report.html written to {}",
            out.display()
        );
    }
    Ok(())
}

/// The chart's grid: one group per kernel with at least one value, one bar per
/// configuration, each bar `value` of its kernel and configuration.
fn ratio_grid<T: Copy>(
    keys: &[(String, String)],
    value: impl Fn(&(String, String)) -> Option<T>,
) -> (Vec<String>, Vec<String>, Vec<Vec<Option<T>>>) {
    let mut kernels: Vec<String> = Vec::new();
    let mut configs: Vec<String> = Vec::new();
    for (k, c) in keys {
        if !kernels.contains(k) {
            kernels.push(k.clone());
        }
        if !configs.contains(c) {
            configs.push(c.clone());
        }
    }
    // A kernel without a single ratio (the geometric mean of times not recorded) gets no
    // empty group.
    let (kernels, values): (Vec<String>, Vec<Vec<Option<T>>>) = kernels
        .into_iter()
        .map(|k| {
            let line: Vec<Option<T>> = configs
                .iter()
                .map(|c| value(&(k.clone(), c.clone())))
                .collect();
            (k, line)
        })
        .filter(|(_, line)| line.iter().any(Option::is_some))
        .unzip();
    let short = |v: &[String]| v.iter().map(|n| chart_name(n)).collect();
    (short(&kernels), short(&configs), values)
}
