//! `report.html`: everything a reader of a benchmark needs in one self-contained file
//! (no script, no external style sheet or image): the command line, the date, the
//! commit the `locus` binary was built from, the host's topology, the machine and engine
//! the suite ran on, its tables (the summary, the peers', a study's), notes and
//! warnings, and the pictures inline as SVG. Every suite of `locus bench` writes one,
//! and so does `locus compare --out`.

use std::fmt::Write as _;
use std::path::Path;

/// What the report shows.
pub struct Report<'a> {
    /// The page's title: `locus bench report`, `locus compare report`.
    pub title: &'a str,
    /// The heading line of the tables (suite, sizes, machine, repetitions).
    pub heading: &'a str,
    /// The STREAM line, if measured.
    pub stream: Option<&'a str>,
    /// The tables, in order.
    pub tables: Vec<Table>,
    /// Notes and warnings printed with the table.
    pub notes: &'a [String],
    /// The pictures not drawn, with why.
    pub not_drawn: &'a [(&'static str, String)],
    /// The directory holding the pictures (their SVG is inlined).
    pub dir: &'a Path,
    /// The pictures' names, in order (`speedup`, ...).
    pub pictures: &'a [&'static str],
}

/// One table of the report.
pub enum Table {
    /// Cells, header first, with the index of the row a rule goes above (the first
    /// geometric-mean row), if any.
    Cells(Vec<Vec<String>>, Option<usize>),
    /// A table as the command printed it, with the heading printed above it.
    Text {
        /// The line above the table.
        heading: String,
        /// The table, one line per row.
        text: String,
    },
}

/// Escapes text for HTML content and attributes.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The command line as a shell would take it back.
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=,:@".contains(c))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `YYYY-MM-DD HH:MM:SS UTC` of a time since the epoch (civil from days, Howard
/// Hinnant's algorithm).
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The commit the binary was built from (`git rev-parse --short HEAD` when it was
/// compiled; `unknown` when it was built without git or outside a repository).
pub fn commit() -> &'static str {
    env!("LOCUS_COMMIT")
}

/// Renders the report.
pub fn html(r: &Report<'_>) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let host = match locus_topo::Topology::host() {
        Ok(t) => crate::render::full(&t, None),
        Err(e) => format!("cannot read the host topology: {e}"),
    };
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1400px; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ padding: 2px 8px; border-bottom: 1px solid #ddd; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.geomean td {{ border-top: 2px solid #333; font-style: italic; }}
pre {{ background: #f6f6f6; padding: 8px; font-size: 12px; overflow-x: auto; }}
figure {{ margin: 1em 0; }}
</style></head><body>
<h1>{title}</h1>
<dl>
<dt>Command</dt><dd><code>{cmd}</code></dd>
<dt>Date</dt><dd>{date}</dd>
<dt>Commit</dt><dd><code>{commit}</code> (of the build)</dd>
<dt>Locus</dt><dd>{version}</dd>
</dl>
<h2>Results</h2>
<p>{heading}</p>
"#,
        title = escape(r.title),
        cmd = escape(&command_line()),
        date = utc(now),
        commit = escape(commit()),
        version = env!("CARGO_PKG_VERSION"),
        heading = escape(r.heading),
    );
    if let Some(s) = r.stream {
        let _ = writeln!(out, "<p>{}</p>", escape(s));
    }
    for table in &r.tables {
        match table {
            Table::Cells(cells, rule) => cells_html(&mut out, cells, *rule),
            Table::Text { heading, text } => {
                let _ = writeln!(
                    out,
                    "<p>{}</p>\n<pre>{}</pre>",
                    escape(heading),
                    escape(text)
                );
            }
        }
    }
    if !r.notes.is_empty() {
        out.push_str("<ul>\n");
        for n in r.notes {
            let _ = writeln!(out, "<li>{}</li>", escape(n));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("<h2>Figures</h2>\n");
    for name in r.pictures {
        if let Some((_, why)) = r.not_drawn.iter().find(|(n, _)| n == name) {
            let _ = writeln!(out, "<p><b>{name}</b>: not drawn: {}</p>", escape(why));
            continue;
        }
        let Ok(svg) = std::fs::read_to_string(r.dir.join(format!("{name}.svg"))) else {
            continue;
        };
        // Inline: the XML declaration goes, the <svg> element stays.
        let svg = svg.find("<svg").map_or(&svg[..], |at| &svg[at..]);
        let _ = writeln!(
            out,
            "<figure id=\"{name}\">{svg}<figcaption>{name}.svg (also {name}.png)</figcaption></figure>"
        );
    }
    let _ = write!(
        out,
        "<h2>Host topology</h2>\n<pre>{}</pre>\n</body></html>\n",
        escape(&host)
    );
    out
}

/// A table of cells: header first, a rule above row `rule`, text columns (the first
/// two) left and numbers right.
fn cells_html(out: &mut String, cells: &[Vec<String>], rule: Option<usize>) {
    out.push_str("<table>\n");
    for (k, row) in cells.iter().enumerate() {
        let class = if Some(k) >= rule && rule.is_some() {
            " class=\"geomean\""
        } else {
            ""
        };
        let _ = write!(out, "<tr{class}>");
        for (c, cell) in row.iter().enumerate() {
            if k == 0 {
                let _ = write!(out, "<th>{}</th>", escape(cell));
            } else if c < 2 {
                let _ = write!(out, "<td>{}</td>", escape(cell));
            } else {
                let _ = write!(out, "<td class=\"num\">{}</td>", escape(cell));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }
}
