//! Distributed kernels: the programs of `locus-bench` written once for every rank,
//! each verified bit for bit on rank 0 against the kernel's sequential reference.

pub mod cholesky;
pub mod jacobi_2d;
pub mod random_dag;

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::cluster::{Cluster, CommReport, Error};
use crate::transport::{Tag, Transport};

/// The distributed kernels, by name.
pub const NAMES: &[&str] = &["jacobi-2d", "cholesky", "random-dag"];

/// Sizes of a distributed run, as the launcher's options give them (`None`: the
/// kernel's default).
#[derive(Clone, Debug, Default)]
pub struct Sizes {
    /// `--size N`: the problem's extent.
    pub size: Option<usize>,
    /// `--block-len L`: the block's extent.
    pub block_len: Option<usize>,
    /// `--iterations N`.
    pub iterations: Option<usize>,
    /// `--panic-on RANK`: a task of that rank panics (to test failure handling).
    pub panic_on: Option<usize>,
}

/// Runs kernel `name` on this rank of `cluster`.
pub fn run(name: &str, cluster: &Cluster, sizes: &Sizes) -> Result<Outcome, Error> {
    match name {
        "jacobi-2d" => {
            let mut p = locus_bench::jacobi_2d::Params {
                rows: 256,
                cols: 256,
                block_rows: 32,
                block_cols: 32,
                iterations: 10,
                ..Default::default()
            };
            if let Some(n) = sizes.size {
                (p.rows, p.cols) = (n, n);
            }
            if let Some(l) = sizes.block_len {
                (p.block_rows, p.block_cols) = (l, l);
            }
            if let Some(i) = sizes.iterations {
                p.iterations = i;
            }
            jacobi_2d::run_failing(cluster, &p, sizes.panic_on)
        }
        "cholesky" => {
            if sizes.iterations.is_some() {
                return Err(Error::Config(
                    "cholesky: --iterations does not apply".into(),
                ));
            }
            let mut p = locus_bench::cholesky::Params {
                n: 256,
                tile: 32,
                ..Default::default()
            };
            if let Some(n) = sizes.size {
                p.n = n;
            }
            if let Some(l) = sizes.block_len {
                p.tile = l;
            }
            cholesky::run(cluster, &p, sizes.panic_on)
        }
        "random-dag" => {
            if sizes.iterations.is_some() || sizes.block_len.is_some() {
                return Err(Error::Config(
                    "random-dag: --iterations and --block-len do not apply".into(),
                ));
            }
            let mut p = locus_bench::random_dag::Params {
                tasks: 500,
                data: 32,
                max_len: 1024,
                ..Default::default()
            };
            if let Some(n) = sizes.size {
                p.tasks = n;
            }
            random_dag::run(cluster, &p, sizes.panic_on)
        }
        _ => Err(Error::Config(format!(
            "unknown distributed benchmark `{name}`; known: {}",
            NAMES.join(" ")
        ))),
    }
}

/// What one rank knows after a distributed kernel.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// The kernel.
    pub bench: &'static str,
    /// This rank.
    pub rank: usize,
    /// Ranks in the program.
    pub ranks: usize,
    /// The kernel's parameters.
    pub params: serde_json::Value,
    /// On rank 0, which collects the result: whether it equals the sequential
    /// reference bit for bit. `None` on the other ranks.
    pub verified: Option<bool>,
    /// On rank 0, the first element that differs, when one does.
    pub mismatch: Option<String>,
    /// The bytes this rank must send at least under the distribution (the halos of
    /// `jacobi-2d`), where the kernel knows it.
    pub min_sent_bytes: Option<u64>,
    /// This rank's messages.
    pub comm: CommReport,
    /// This rank's runtime report.
    pub report: locus::Report,
}

/// Compares `got` with `want` bit for bit; the first difference, described.
pub(crate) fn first_mismatch(what: &str, got: &[f64], want: &[f64]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!(
            "{what}: {} elements, {} expected",
            got.len(),
            want.len()
        ));
    }
    got.iter()
        .zip(want)
        .position(|(g, w)| g.to_bits() != w.to_bits())
        .map(|i| format!("{what}[{i}] = {}, {} expected", got[i], want[i]))
}

/// The message `from` sends with `tag`, or why it will never come.
fn wait(t: &dyn Transport, from: usize, tag: Tag, len: usize) -> Result<Vec<u8>, String> {
    let arrival = t.expect(from, tag, len);
    loop {
        if let Some(r) = arrival.wait_for(Duration::from_millis(100)) {
            return r;
        }
    }
}

/// A rank's report to rank 0 (tags `Report(0)` and `Report(1)`).
const REPORT: u64 = 0;
/// A word before or after the run (tags `Report(2)` and `Report(3)`).
const WORD: u64 = 2;

/// Sends `bytes` to rank `to` as two messages: their length (tag `Report(kind)`), then
/// the bytes (`Report(kind + 1)`), so that the receiver knows what to expect.
fn send_sized(t: &dyn Transport, to: usize, kind: u64, bytes: Vec<u8>) {
    t.send(
        to,
        Tag::Report(kind),
        (bytes.len() as u64).to_le_bytes().to_vec(),
    );
    t.send(to, Tag::Report(kind + 1), bytes);
}

/// What rank `from` sends with [`send_sized`], or why it will never come.
fn receive_sized(t: &dyn Transport, from: usize, kind: u64) -> Result<Vec<u8>, String> {
    let len = wait(t, from, Tag::Report(kind), 8)?;
    let len = u64::from_le_bytes(len.try_into().unwrap_or_default()) as usize;
    wait(t, from, Tag::Report(kind + 1), len)
}

/// Sends `text` to rank `to` (before or after the run).
fn send_text(t: &dyn Transport, to: usize, text: &str) {
    send_sized(t, to, WORD, text.as_bytes().to_vec());
}

/// The text rank `from` sends with [`send_text`], or why it will never come.
fn receive_text(t: &dyn Transport, from: usize) -> Result<String, String> {
    let bytes = receive_sized(t, from, WORD)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Rank 0's word to every rank: `Ok` when `verdict` is empty, else the error it names.
/// On rank 0, `verdict` is sent to every other rank; on the others, what rank 0 sent
/// replaces it.
pub fn from_rank_0(t: &dyn Transport, verdict: &str) -> Result<(), String> {
    let verdict = if t.rank() == 0 {
        for r in 1..t.ranks() {
            send_text(t, r, verdict);
        }
        verdict.to_string()
    } else {
        receive_text(t, 0).unwrap_or_else(|why| why)
    };
    if verdict.is_empty() {
        Ok(())
    } else {
        Err(verdict)
    }
}

/// Checks that every rank runs `program` (a kernel with its sizes, as text) as rank 0
/// does: ranks given different arguments would wait for messages that never come, or
/// exchange data of other lengths. The error names what each rank runs
/// ([`Error::Config`]), or, when a rank failed or went silent meanwhile, why
/// ([`Error::Remote`]).
pub fn agree_on_program(t: &dyn Transport, program: &str) -> Result<(), Error> {
    if t.rank() != 0 {
        send_text(t, 0, program);
        let verdict = receive_text(t, 0).map_err(Error::Remote)?;
        return if verdict.is_empty() {
            Ok(())
        } else {
            Err(Error::Config(verdict))
        };
    }
    let mut differ = Vec::new();
    for r in 1..t.ranks() {
        // A failure has reached every rank already (the transport tells them).
        let theirs = receive_text(t, r).map_err(Error::Remote)?;
        if theirs != program {
            differ.push(format!("rank {r} runs {theirs}"));
        }
    }
    let verdict = if differ.is_empty() {
        String::new()
    } else {
        format!(
            "the ranks run different programs: rank 0 runs {program}, {}",
            differ.join(", ")
        )
    };
    from_rank_0(t, &verdict).map_err(Error::Config)
}

/// Every rank's outcome as JSON, on rank 0 (in rank order); `None` on the others,
/// which send theirs there.
pub fn gather(t: &dyn Transport, mine: &Outcome) -> Option<Vec<serde_json::Value>> {
    let json = serde_json::to_value(mine).unwrap_or(serde_json::Value::Null);
    if t.rank() != 0 {
        send_sized(t, 0, REPORT, json.to_string().into_bytes());
        return None;
    }
    let mut sections = vec![json];
    for r in 1..t.ranks() {
        let section = receive_sized(t, r, REPORT)
            .ok()
            .and_then(|text| serde_json::from_slice(&text).ok())
            .unwrap_or(serde_json::Value::Null);
        sections.push(section);
    }
    Some(sections)
}

/// The report of a distributed run as one JSON object: totals and one section per rank.
pub fn json(o: &Outcome, config: &str, sections: &[serde_json::Value]) -> String {
    let sum = |f: &str| -> u64 {
        sections
            .iter()
            .map(|s| s["comm"][f].as_u64().unwrap_or(0))
            .sum()
    };
    let wall = sections
        .iter()
        .map(|s| s["report"]["wall_s"].as_f64().unwrap_or(0.0))
        .fold(0.0, f64::max);
    serde_json::json!({
        "bench": o.bench,
        "config": config,
        "engine": "threads",
        "distributed": true,
        "ranks": o.ranks,
        "params": o.params,
        "verified": o.verified == Some(true),
        "wall_s": wall,
        "tasks": sections.iter().map(|s| s["report"]["tasks"].as_u64().unwrap_or(0)).sum::<u64>(),
        "comm": {
            "sent_messages": sum("sent_messages"),
            "sent_bytes": sum("sent_bytes"),
            "received_bytes": sum("received_bytes"),
            "collect_sent_bytes": sum("collect_sent_bytes"),
            "min_sent_bytes": sections
                .iter()
                .map(|s| s["min_sent_bytes"].as_u64())
                .sum::<Option<u64>>(),
        },
        "per_rank": sections,
    })
    .to_string()
}

/// The report of a distributed run as text: one line per rank.
pub fn text(o: &Outcome, config: &str, sections: &[serde_json::Value]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} on {} ranks, config {config}: {}",
        o.bench,
        o.ranks,
        if o.verified == Some(true) {
            "verified against the sequential reference (rank 0)"
        } else {
            "NOT verified"
        }
    );
    let _ = writeln!(
        s,
        "{:>5} {:>9} {:>7} {:>12} {:>12} {:>12} {:>14} {:>8}",
        "rank", "wall (s)", "tasks", "sent (B)", "min (B)", "recv (B)", "collected (B)", "r_loc_rt"
    );
    for (r, sec) in sections.iter().enumerate() {
        let c = &sec["comm"];
        let _ = writeln!(
            s,
            "{:>5} {:>9.4} {:>7} {:>12} {:>12} {:>12} {:>14} {:>8.3}",
            r,
            sec["report"]["wall_s"].as_f64().unwrap_or(0.0),
            sec["report"]["tasks"].as_u64().unwrap_or(0),
            c["sent_bytes"].as_u64().unwrap_or(0),
            sec["min_sent_bytes"]
                .as_u64()
                .map_or("-".to_string(), |b| b.to_string()),
            c["received_bytes"].as_u64().unwrap_or(0),
            c["collect_sent_bytes"].as_u64().unwrap_or(0),
            sec["report"]["locality"]["r_loc_rt"]
                .as_f64()
                .unwrap_or(0.0),
        );
    }
    s
}
