//! `overhead`: many tiny dependent tasks, to measure the runtime's cost per task.
//!
//! Two shapes, submitted interleaved by a sequential control program:
//! - `chains` independent chains of `length` read-write tasks on one-word data;
//! - `rounds` fan-out/fan-in rounds: a source writes a word, `fan` tasks each read it
//!   and write their own word, a join reads all of them and accumulates into a total.
//!
//! Every value is checked against the same computation done sequentially.
//!
//! # Sizes
//!
//! Through [`crate::run_kernel`] and the command line every field is at least 1.
//! `--size N` sets `length` (tasks per chain), `--iterations N` sets `rounds`;
//! `--blocks` and `--block-len` are refused; `--param FIELD=N` sets any field of
//! [`Params`] (`chains`, `fan`, ...).

use locus::{Data, Read, Runtime};
use serde::{Deserialize, Serialize};

use crate::size::{kernel_params, KernelParams, Options};

/// Shape of the overhead graph.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Number of independent chains.
    pub chains: usize,
    /// Tasks per chain.
    pub length: usize,
    /// Fan-out/fan-in rounds.
    pub rounds: usize,
    /// Width of each round.
    pub fan: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            chains: 16,
            length: 2000,
            rounds: 1000,
            fan: 16,
        }
    }
}

impl Params {
    /// 4 chains of 50 tasks and 10 rounds of 4: for tests.
    pub fn tiny() -> Self {
        Params {
            chains: 4,
            length: 50,
            rounds: 10,
            fan: 4,
        }
    }

    /// Checks the parameters (see the [module docs](self)). The message names the field
    /// and the option that sets it.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.positive("chains", self.chains)?;
        o.positive("length", self.length)?;
        o.positive("rounds", self.rounds)?;
        o.positive("fan", self.fan)?;
        o.count("data", &[("chains", self.chains)])?;
        o.count("data", &[("fan", self.fan)])?;
        o.tasks(&[("chains", self.chains), ("length", self.length)])?;
        o.tasks(&[("rounds", self.rounds), ("fan", self.fan.saturating_add(2))])?;
        crate::size::finishes(self)
    }

    /// Number of tasks of the graph.
    pub fn tasks(&self) -> usize {
        self.chains * self.length + self.rounds * (self.fan + 2)
    }
}

kernel_params!(
    Options {
        name: "overhead",
        axes: &[],
        size: Some("length"),
        iterations: Some("rounds"),
    },
    paper: none,
    bytes: |p| crate::size::bytes::<u64>(&[p.chains.saturating_add(p.fan).saturating_add(2)])
);

#[inline]
fn step(x: u64, k: u64) -> u64 {
    x.wrapping_mul(3).wrapping_add(k)
}

/// The expected final values: one per chain, then the fan total. Chain `c` starts at 0
/// and its step `i` maps `x` to `3x + (c × length + i)`; round `r` (from 1) adds
/// `3r + k` for every `k` below `fan` to the total; all modulo 2^64.
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if the chains' values cannot be allocated.
pub fn reference(p: &Params) -> Result<(Vec<u64>, u64), crate::Error> {
    let mut chains = crate::alloc::filled("the overhead reference's chains", p.chains, 0u64)?;
    for (c, x) in chains.iter_mut().enumerate() {
        for i in 0..p.length {
            let k = (c * p.length + i) as u64;
            *x = x.wrapping_mul(3).wrapping_add(k);
        }
    }
    let mut total = 0u64;
    for r in 1..=p.rounds as u64 {
        for k in 0..p.fan as u64 {
            total = total.wrapping_add(r.wrapping_mul(3).wrapping_add(k));
        }
    }
    Ok((chains, total))
}

/// Outcome of one overhead run.
#[derive(Debug)]
pub struct Outcome {
    /// Whether every value matched the reference.
    pub verified: bool,
    /// The first value that differs from the reference (`chains` or `total`), if one
    /// does.
    pub mismatch: Option<crate::Mismatch>,
    /// Tasks run.
    pub tasks: u64,
    /// Wall time of the run in seconds.
    pub wall_s: f64,
    /// Nanoseconds per task (wall time over tasks).
    pub ns_per_task: f64,
    /// The run's report.
    pub report: locus::Report,
}

/// Tasks the graph holds: every step of every chain, and per round a source, its fan
/// and a join.
pub(crate) fn tasks(p: &Params) -> u64 {
    (p.chains * p.length + p.rounds * (p.fan + 2)) as u64
}

/// Builds, runs and verifies the overhead graph against [`reference()`].
pub fn run(rt: &Runtime, p: &Params) -> Result<Outcome, crate::Error> {
    run_against(rt, p, || reference(p))
}

/// [`run`] as a recorded graph (`--replay`): one iteration is `length / rounds`
/// steps of every chain and one fan-out/fan-in round, replayed `rounds` times; the
/// steps' constants and the round's number come from the iteration's index. The same
/// tasks compute the same values as the dynamic run's, so the same reference checks
/// them. `length` must be a multiple of `rounds`.
pub fn run_replay(rt: &Runtime, p: &Params) -> Result<Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    if p.length % p.rounds != 0 {
        return Err(crate::Error::Params(format!(
            "--replay: overhead needs length ({}) to be a multiple of rounds ({}), one \
             round per replayed iteration",
            p.length, p.rounds
        )));
    }
    let every = p.length / p.rounds;
    let (chains, source, fan, total) = data(rt, p);
    let length = p.length;
    let mut graph = rt.record("overhead", |r| {
        for s in 0..every {
            for (c, d) in chains.iter().enumerate() {
                r.spawn("chain", d.read_write(), move |it, x| {
                    let i = it.index() as usize * every + s;
                    x[0] = step(x[0], (c * length + i) as u64)
                })?;
            }
        }
        r.spawn("source", source.write(), |it, x| x[0] = it.index() + 1)?;
        for (k, f) in fan.iter().enumerate() {
            r.spawn("fan", (source.read(), f.write()), move |_, (x, y)| {
                y[0] = step(x[0], k as u64)
            })?;
        }
        let reads: Vec<Read<u64>> = fan.iter().map(|f| f.read()).collect();
        r.spawn("join", (reads, total.read_write()), |_, (ys, t)| {
            t[0] = t[0].wrapping_add(ys.iter().map(|y| y[0]).fold(0, u64::wrapping_add));
        })
    })?;
    let report = rt.replay(&mut graph, p.rounds as u64)?;
    check(rt, report, &chains, &total, || reference(p))
}

/// The data of the graph: the chains' words, the source, the fan's words, the total.
type Graph = (Vec<Data<u64>>, Data<u64>, Vec<Data<u64>>, Data<u64>);

/// The data of the graph.
fn data(rt: &Runtime, p: &Params) -> Graph {
    let chains: Vec<_> = (0..p.chains)
        .map(|c| rt.data::<u64>(format!("chain{c}"), 1))
        .collect();
    let source = rt.data::<u64>("source", 1);
    let fan: Vec<_> = (0..p.fan)
        .map(|i| rt.data::<u64>(format!("fan{i}"), 1))
        .collect();
    let total = rt.data::<u64>("total", 1);
    (chains, source, fan, total)
}

/// [`run`], comparing the result with `want()`.
pub(crate) fn run_against(
    rt: &Runtime,
    p: &Params,
    want: impl FnOnce() -> Result<(Vec<u64>, u64), crate::Error>,
) -> Result<Outcome, crate::Error> {
    let (chains, source, fan, total) = data(rt, p);
    let finished = rt.run(|s| -> Result<(), locus::Error> {
        let submit_round = |r: u64| -> Result<(), locus::Error> {
            s.spawn("source", source.write(), move |_, x| x[0] = r)?;
            for (k, f) in fan.iter().enumerate() {
                s.spawn("fan", (source.read(), f.write()), move |_, (x, y)| {
                    y[0] = step(x[0], k as u64)
                })?;
            }
            let reads: Vec<Read<u64>> = fan.iter().map(|f| f.read()).collect();
            s.spawn("join", (reads, total.read_write()), |_, (ys, t)| {
                let sum = ys.iter().map(|y| y[0]).fold(0, u64::wrapping_add);
                t[0] = t[0].wrapping_add(sum);
            })
        };
        // Rounds are spread evenly between the steps of the chains.
        let every = (p.length / p.rounds.max(1)).max(1);
        let mut round = 0;
        for i in 0..p.length {
            for (c, d) in chains.iter().enumerate() {
                let k = (c * p.length + i) as u64;
                s.spawn("chain", d.read_write(), move |_, x| x[0] = step(x[0], k))?;
            }
            if i % every == 0 && round < p.rounds {
                round += 1;
                submit_round(round as u64)?;
            }
        }
        while round < p.rounds {
            round += 1;
            submit_round(round as u64)?;
        }
        Ok(())
    })?;
    let ((), report) = crate::finished(finished)?;
    check(rt, report, &chains, &total, want)
}

/// Compares the chains and the total with `want()`.
fn check(
    rt: &Runtime,
    report: locus::Report,
    chains: &[Data<u64>],
    total: &Data<u64>,
    want: impl FnOnce() -> Result<(Vec<u64>, u64), crate::Error>,
) -> Result<Outcome, crate::Error> {
    if rt.skips_bodies() {
        let (tasks, wall_s) = (report.tasks, report.wall_s);
        return Ok(Outcome {
            verified: false,
            mismatch: None,
            tasks,
            wall_s,
            ns_per_task: if tasks == 0 {
                0.0
            } else {
                wall_s * 1e9 / tasks as f64
            },
            report,
        });
    }
    let (want_chains, want_total) = want()?;
    let mut check = crate::verify::Check::new();
    for (c, d) in chains.iter().enumerate() {
        check.block("chains", &rt.fetch(d)?, &want_chains, |_| c);
    }
    check.all("total", &rt.fetch(total)?, &[want_total]);
    let mismatch = check.finish();
    let (tasks, wall_s) = (report.tasks, report.wall_s);
    Ok(Outcome {
        verified: mismatch.is_none(),
        mismatch,
        tasks,
        wall_s,
        ns_per_task: if tasks == 0 {
            0.0
        } else {
            wall_s * 1e9 / tasks as f64
        },
        report,
    })
}
