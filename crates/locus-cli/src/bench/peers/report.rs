//! The peer table on stdout (one row per kernel and Locus configuration, one ratio
//! column per peer, then the median times) and `peers.json` (one object per kernel,
//! configuration and peer).

use serde_json::{json, Value};

use super::compare::{PeerRuns, Row};
use super::{Built, Peer, Prepared};

/// What a peer's ratio cell says when there is no ratio.
fn no_ratio(row: &Row, peer: Peer) -> &'static str {
    match row.runs(peer) {
        Some(PeerRuns::Skipped(_)) => "skipped",
        Some(PeerRuns::BuildFailed(_)) => "build failed",
        Some(PeerRuns::Ran {
            verified, errors, ..
        }) if !verified || !errors.is_empty() => "unverified",
        _ => "-",
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "NO"
    }
}

/// Whether the peers that ran verified: `yes`, `NO (names)`, or `-` when none ran.
fn peers_verified(row: &Row) -> String {
    let ran = row
        .peers
        .iter()
        .any(|(_, r)| matches!(r, PeerRuns::Ran { .. }));
    let bad = row.unverified_peers();
    if !ran {
        "-".into()
    } else if bad.is_empty() {
        "yes".into()
    } else {
        let names: Vec<&str> = bad.iter().map(|p| p.name()).collect();
        format!("NO ({})", names.join(", "))
    }
}

fn ms(s: Option<f64>) -> String {
    s.map_or_else(|| "-".into(), |s| format!("{:.2}", s * 1e3))
}

/// A median with its range, `1.23 (1.10-1.40)`, or the median alone when the range is
/// one point (a single repetition).
fn with_range(median: String, range: Option<(String, String)>) -> String {
    match range {
        Some((lo, hi)) if lo != hi => format!("{median} ({lo}-{hi})"),
        _ => median,
    }
}

/// Lays out `header` and `cells` in columns; columns in `left` are left-aligned.
fn columns(header: &[String], cells: &[Vec<String>], left: &[usize]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in cells {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header).chain(cells.iter().map(Vec::as_slice)) {
        let line: Vec<String> = row
            .iter()
            .zip(&width)
            .enumerate()
            .map(|(i, (c, &w))| {
                if left.contains(&i) {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The peer table: per kernel and configuration, each peer's median over Locus's with
/// the least and largest ratio of one repetition's pair of runs (`unverified`,
/// `skipped` or `build failed` instead when there is none) and whether Locus and the
/// peers verified; then the median times in milliseconds with their min-max; then a
/// note per peer that did not run.
pub fn table(rows: &[Row], built: &[Built]) -> String {
    let peers: Vec<Peer> = built.iter().map(|b| b.peer).collect();
    let mut header = vec!["kernel".to_string(), "locus config".into()];
    header.extend(peers.iter().map(|p| format!("{p}/locus")));
    header.push("verified (locus, peers)".into());
    let last = header.len() - 1;
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![r.kernel.to_string(), r.config.clone()];
            cells.extend(peers.iter().map(|&p| {
                match r.ratio(p) {
                    None => no_ratio(r, p).to_string(),
                    Some(x) => with_range(
                        format!("{x:.2}"),
                        r.ratio_range(p)
                            .map(|(lo, hi)| (format!("{lo:.2}"), format!("{hi:.2}"))),
                    ),
                }
            }));
            cells.push(format!(
                "{}, {}",
                yes_no(r.locus_verified && r.locus_errors.is_empty()),
                peers_verified(r)
            ));
            cells
        })
        .collect();
    let mut out = columns(&header, &cells, &[0, 1, last]);

    let mut header = vec![
        "median ms".to_string(),
        "locus config".into(),
        "locus".into(),
    ];
    header.extend(peers.iter().map(|p| p.name().to_string()));
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let ms_range =
                |range: Option<(f64, f64)>| range.map(|(lo, hi)| (ms(Some(lo)), ms(Some(hi))));
            let mut cells = vec![
                r.kernel.to_string(),
                r.config.clone(),
                with_range(ms(r.locus_median()), ms_range(r.locus_range())),
            ];
            cells.extend(
                peers
                    .iter()
                    .map(|&p| with_range(ms(r.peer_median(p)), ms_range(r.peer_range(p)))),
            );
            cells
        })
        .collect();
    out.push('\n');
    out.push_str(&columns(&header, &cells, &[0, 1]));

    for b in built {
        match &b.state {
            Prepared::Skipped(why) => out.push_str(&format!("{}: skipped: {why}\n", b.peer)),
            Prepared::Failed(why) => out.push_str(&format!("{}: build failed: {why}\n", b.peer)),
            Prepared::Ready { .. } => {}
        }
    }
    out
}

/// `peers.json`: how each peer was built and run, and one object per kernel,
/// configuration and peer.
pub fn report(
    rows: &[Row],
    built: &[Built],
    out: &std::path::Path,
    repetitions: usize,
    threads: usize,
) -> Value {
    let home = out.join("peers").join("starpu-home");
    let peers: Vec<Value> = built
        .iter()
        .map(|b| {
            let (status, note, build) = match &b.state {
                Prepared::Ready {
                    build, warnings, ..
                } => (
                    "built",
                    (!warnings.is_empty()).then(|| warnings.join("\n")),
                    Some(build.clone()),
                ),
                Prepared::Skipped(why) => ("skipped", Some(why.clone()), None),
                Prepared::Failed(why) => ("build failed", Some(why.clone()), None),
            };
            let env: serde_json::Map<String, Value> = b
                .peer
                .env(threads, &home)
                .into_iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            json!({
                "peer": b.peer.name(),
                "status": status,
                "note": note,
                "build": build,
                "env": env,
            })
        })
        .collect();
    let mut objects = Vec::new();
    for r in rows {
        for (peer, runs) in &r.peers {
            let (status, peer_s, peer_verified, errors, note) = match runs {
                PeerRuns::Ran {
                    times,
                    verified,
                    errors,
                } => {
                    let ok = *verified && errors.is_empty();
                    (
                        if ok { "ran" } else { "unverified" },
                        times.clone(),
                        Some(ok),
                        errors.clone(),
                        None,
                    )
                }
                PeerRuns::Skipped(why) => {
                    ("skipped", Vec::new(), None, Vec::new(), Some(why.clone()))
                }
                PeerRuns::BuildFailed(why) => (
                    "build failed",
                    Vec::new(),
                    None,
                    Vec::new(),
                    Some(why.clone()),
                ),
            };
            objects.push(json!({
                "kernel": r.kernel,
                "config": r.config,
                "peer": peer.name(),
                "status": status,
                "note": note,
                "locus_median_s": r.locus_median(),
                "peer_median_s": r.peer_median(*peer),
                "ratio_peer_over_locus": r.ratio(*peer),
                "ratio_min": r.ratio_range(*peer).map(|(lo, _)| lo),
                "ratio_max": r.ratio_range(*peer).map(|(_, hi)| hi),
                "locus_s": r.locus_s,
                "peer_s": peer_s,
                "locus_verified": r.locus_verified && r.locus_errors.is_empty(),
                "peer_verified": peer_verified,
                "locus_errors": r.locus_errors,
                "peer_errors": errors,
            }));
        }
    }
    json!({
        "threads": threads,
        "repetitions": repetitions,
        "alternating": "each repetition runs Locus, then every built peer once",
        "peers": peers,
        "rows": objects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn built(peer: Peer, state: Prepared) -> Built {
        Built { peer, state }
    }

    #[test]
    fn table_has_ratios_notes_and_verification() {
        let ready = || Prepared::Ready {
            dir: PathBuf::from("/nowhere"),
            build: "cc".into(),
            warnings: Vec::new(),
        };
        let built = [
            built(Peer::OpenmpGcc, ready()),
            built(Peer::Tbb, ready()),
            built(
                Peer::Starpu,
                Prepared::Skipped("needs the Debian packages libstarpu-dev".into()),
            ),
        ];
        let row = Row {
            kernel: "bitonic",
            config: "dsa-opt".into(),
            locus_s: vec![0.02, 0.01, 0.03],
            locus_verified: true,
            locus_errors: Vec::new(),
            peers: vec![
                (
                    Peer::OpenmpGcc,
                    PeerRuns::Ran {
                        times: vec![0.04, 0.03, 0.06],
                        verified: true,
                        errors: Vec::new(),
                    },
                ),
                (
                    Peer::Tbb,
                    PeerRuns::Ran {
                        times: vec![0.01],
                        verified: false,
                        errors: Vec::new(),
                    },
                ),
                (Peer::Starpu, PeerRuns::Skipped("needs".into())),
            ],
        };
        assert_eq!(row.ratio(Peer::OpenmpGcc), Some(2.0));
        assert_eq!(row.ratio(Peer::Tbb), None);
        assert!(!row.ok());
        let t = table(std::slice::from_ref(&row), &built);
        let line = t.lines().find(|l| l.starts_with("bitonic")).unwrap();
        assert!(
            line.contains("2.00 (2.00-3.00)")
                && line.contains("unverified")
                && line.contains("skipped"),
            "{t}"
        );
        assert!(line.ends_with("yes, NO (tbb)"), "{t}");
        assert!(
            t.contains("openmp-gcc/locus")
                && t.contains("starpu: skipped: needs the Debian packages")
        );

        let json = report(&[row], &built, std::path::Path::new("/out"), 3, 2);
        let rows = json["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0]["ratio_peer_over_locus"], 2.0);
        assert_eq!(
            (rows[0]["ratio_min"].as_f64(), rows[0]["ratio_max"].as_f64()),
            (Some(2.0), Some(3.0))
        );
        assert!(rows[1]["ratio_min"].is_null());
        // Median times with their range, in milliseconds.
        assert!(
            t.contains("20.00 (10.00-30.00)") && t.contains("40.00 (30.00-60.00)"),
            "{t}"
        );
        assert_eq!(rows[1]["status"], "unverified");
        assert!(rows[1]["ratio_peer_over_locus"].is_null() && rows[1]["peer_median_s"].is_null());
        assert_eq!(rows[2]["status"], "skipped");
        assert!(rows[2]["peer_verified"].is_null());
        assert_eq!(
            json["peers"][2]["env"]["STARPU_HOME"],
            "/out/peers/starpu-home"
        );
    }
}
