//! `twisted-stream`: two phases of the STREAM triad whose teams swap data between
//! them (Broquedis et al., "Dynamic Task and Data Placement over NUMA Architectures:
//! An OpenMP Runtime Perspective", Twisted-STREAM), to compare moving the work with
//! moving the data.
//!
//! Phase 1 is [`nested_stream`](crate::nested_stream) with the triad only: one set of
//! vectors per node with workers, initialised (first touch) and swept `iterations`
//! times by tasks bound to its node `k`. In phase 2 the team of node `k` sweeps
//! `iterations` times the vectors of the next set, `j = k + 1` (modulo the sets):
//!
//! - `remote_vectors = 3`: `a_j = b_j + s c_j`, all three vectors on node `j`;
//! - `remote_vectors = 2`: `a_j = b_j + s c_k`: the written vector and one read vector
//!   on node `j`, the other read vector the team's own.
//!
//! `--migrate POLICY` ([`Policy`]) says what happens at the phase change: nothing (the
//! team accesses node `j` remotely), the team's remote vectors migrated to its node now
//! (by migration tasks, [`locus::Scope::migrate`]) or on next touch
//! ([`Runtime::migrate_on_next_touch`]), only the read or only the written ones
//! migrated, the team's tasks moved to node `j` (`tasks`), or the tasks moved and the
//! team's own vector migrated after them (`mixed`), or left to the runtime's `auto`
//! migration setting (`auto`: the phase-2 tasks prefer their team's node without
//! being bound to it, and the runtime decides per task whether to run them at their
//! data's node and whether to migrate what they still find remote). Each phase is one run of all its iterations (a block's
//! iterations are ordered by their dependences, so the tasks already submitted tell
//! `auto` how often a block will be used), the migration tasks a run of their own at
//! the start of phase 2.
//!
//! The figures give each phase's time (phase 2 with its migrations), the migrations'
//! time, and the triad's average rate in each phase (MB/s, STREAM's 24 bytes per
//! element; phase 2's over its triad runs only). The curves of time against
//! iterations are `locus bench --suite twisted`.
//!
//! Verification: bitwise equality of every vector with a sequential loop of both
//! phases.
//!
//! # Sizes
//!
//! As `stream`: `--size N` (`len`, all sets together), `--block-len L`,
//! `--iterations N` (per phase); `--param remote_vectors=2|3`; `--migrate POLICY`.
//! Paper size: 20 million doubles per vector split over the nodes, blocks of 312 500,
//! 10 iterations.

use locus::{Affinity, Data, Runtime};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::size::{kernel_params, Axis, Options};
use crate::stream::{
    blocks_of, check, check_set, make_sets, reference_set, spawn_init, spawn_op_over, timed_run,
    Op, Shape, Vectors, PAPER_LEN, SCALAR,
};

/// What happens to a team's remote data at the phase change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Nothing: phase 2 accesses the other node's memory ("migrate nothing").
    #[default]
    None,
    /// Every remote vector of the team migrates to the team's node at the phase change
    /// ("migrate memory"; with two remote vectors, "migrate one R vector + one W").
    Now,
    /// Every remote vector is armed for migration on next touch: each block moves to
    /// the team's node when its first phase-2 task starts.
    NextTouch,
    /// Only the remote vectors read migrate ("migrate one R vector").
    NowRead,
    /// Only the remote vector written migrates ("migrate one W vector").
    NowWritten,
    /// The team's phase-2 tasks run on the node of the data they sweep ("migrate
    /// threads").
    Tasks,
    /// The tasks run on the node of the remote vectors and the team's own vector
    /// migrates there ("migrate one vector + thread"); as `tasks` with three remote
    /// vectors.
    Mixed,
    /// Nothing explicit: the tasks prefer their team's node (a non-strict hint) and
    /// the runtime's `auto` migration setting ([`locus::Migration::Auto`], which
    /// `--migrate auto` sets) decides, per task, whether to run it at its data's node
    /// instead and whether to migrate what it still finds remote.
    Auto,
}

impl Policy {
    /// Every policy, in the order of the command line's help.
    pub const ALL: [Policy; 8] = [
        Policy::None,
        Policy::Now,
        Policy::NextTouch,
        Policy::NowRead,
        Policy::NowWritten,
        Policy::Tasks,
        Policy::Mixed,
        Policy::Auto,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::Now => "now",
            Policy::NextTouch => "next-touch",
            Policy::NowRead => "now-read",
            Policy::NowWritten => "now-written",
            Policy::Tasks => "tasks",
            Policy::Mixed => "mixed",
            Policy::Auto => "auto",
        }
    }
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Size of the problem and the policy at the phase change.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Elements per vector, all sets together.
    pub len: usize,
    /// Elements per block (one task per block and iteration).
    pub block_len: usize,
    /// Triad iterations of each phase.
    pub iterations: usize,
    /// Vectors of phase 2 on another node: 3 (all) or 2 (the written one and one read).
    pub remote_vectors: usize,
    /// What happens at the phase change.
    pub migrate: Policy,
}

impl Default for Params {
    /// As `stream`'s: 2^20 elements, blocks of 2^16, 5 iterations; three remote
    /// vectors, no migration.
    fn default() -> Self {
        let p = crate::stream::Params::default();
        Params {
            len: p.len,
            block_len: p.block_len,
            iterations: p.iterations,
            remote_vectors: 3,
            migrate: Policy::None,
        }
    }
}

impl Params {
    /// 20 million doubles per vector, blocks of 312 500, 10 iterations per phase.
    pub fn paper() -> Self {
        Params {
            len: PAPER_LEN,
            block_len: PAPER_LEN / 64,
            iterations: 10,
            ..Params::default()
        }
    }

    /// The same problem.
    pub fn paper_sgi() -> Self {
        Params::paper()
    }

    /// 4096 elements in blocks of 256, 2 iterations: for tests.
    pub fn tiny() -> Self {
        Params {
            len: 4096,
            block_len: 256,
            iterations: 2,
            ..Params::default()
        }
    }

    /// At least one element, block and iteration; bounded sizes; 2 or 3 remote vectors.
    pub fn validate(&self) -> Result<(), String> {
        check(&TWISTED, self.len, self.block_len, self.iterations)?;
        if !matches!(self.remote_vectors, 2 | 3) {
            return Err(format!(
                "twisted-stream: {} = {} (expected 2 or 3)",
                TWISTED.label("remote_vectors"),
                self.remote_vectors
            ));
        }
        crate::size::finishes(self)
    }

    /// Tasks on `groups` nodes: one initialisation and a triad per phase per block and
    /// iteration (migration tasks are control tasks, not counted).
    pub fn tasks(&self, groups: usize) -> u64 {
        let len = self.len - self.len % groups.max(1);
        blocks_of(len, self.block_len, groups.max(1)).saturating_mul(1 + 2 * self.iterations as u64)
    }
}

const TWISTED: Options = Options {
    name: "twisted-stream",
    axes: &[Axis::Extent("len", "block_len")],
    size: None,
    iterations: Some("iterations"),
};

kernel_params!(TWISTED, bytes: |p| crate::size::bytes::<f64>(&[p.len, 3]));

/// The vectors team `k` sweeps in phase 2, `[a, b, c]` (read `b`, `c`; write `a`),
/// and the set each comes from.
fn phase2_vectors(sets: &[Vectors], k: usize, remote: usize) -> ([&Vec<Data<f64>>; 3], [usize; 3]) {
    let j = (k + 1) % sets.len();
    let c_set = if remote == 3 { j } else { k };
    (
        [
            &sets[j].blocks[0],
            &sets[j].blocks[1],
            &sets[c_set].blocks[2],
        ],
        [j, j, c_set],
    )
}

/// Runs `twisted-stream`; see the module documentation.
pub fn run(rt: &Runtime, p: &Params) -> Result<(crate::Outcome, Value), crate::Error> {
    run_flipped(rt, p, None)
}

/// [`run`] against the reference with element `flip` of set 0's `a` changed (tests).
#[cfg(test)]
pub(crate) fn run_against(
    rt: &Runtime,
    p: &Params,
    flip: Option<usize>,
) -> Result<crate::Outcome, crate::Error> {
    run_flipped(rt, p, flip).map(|(out, _)| out)
}

fn run_flipped(
    rt: &Runtime,
    p: &Params,
    flip: Option<usize>,
) -> Result<(crate::Outcome, Value), crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    let nodes = crate::affinity::worker_nodes(rt);
    let groups = nodes.len();
    let shape = Shape {
        len: p.len,
        block_len: p.block_len,
        iterations: p.iterations,
    };
    // Equal sets, the remainder dropped: every team's phase-2 vectors have the same
    // blocks.
    let len = p.len - p.len % groups;
    if len == 0 {
        return Err(crate::Error::Params(format!(
            "twisted-stream: {} = {} is less than the {groups} nodes with workers",
            TWISTED.label("len"),
            p.len
        )));
    }
    let sets = make_sets(rt, "twisted-stream", Shape { len, ..shape }, groups)?;
    let bytes = 24 * len as u64;
    let mut total = None;
    let own = |g: usize| Affinity::node(nodes[g]).strict();

    // Phase 1: each team initialises and sweeps its own set.
    let init_s = timed_run(rt, &mut total, |s| {
        for (g, v) in sets.iter().enumerate() {
            spawn_init(s, v, &|_| own(g))?;
        }
        Ok(())
    })?;
    let phase1_s = timed_run(rt, &mut total, |s| {
        for _ in 0..p.iterations {
            for (g, v) in sets.iter().enumerate() {
                let blocks = [&v.blocks[0], &v.blocks[1], &v.blocks[2]];
                spawn_op_over(s, Op::Triad, blocks, &|_| own(g))?;
            }
        }
        Ok(())
    })?;

    // The phase change: which vectors move where, and where the tasks run.
    let remote = p.remote_vectors;
    let mut moves: Vec<(&Vec<Data<f64>>, usize)> = Vec::new();
    let mut runs_on = Vec::with_capacity(groups);
    for k in 0..groups {
        let (vectors, from) = phase2_vectors(&sets, k, remote);
        let j = from[0];
        let migrated: &[usize] = match p.migrate {
            Policy::None | Policy::Tasks | Policy::Auto => &[],
            Policy::Now | Policy::NextTouch => &[0, 1, 2],
            Policy::NowRead => &[1, 2],
            Policy::NowWritten => &[0],
            Policy::Mixed => &[2],
        };
        let (target, runs) = match p.migrate {
            Policy::Tasks | Policy::Mixed => (j, j),
            _ => (k, k),
        };
        for &v in migrated {
            if from[v] != target {
                moves.push((vectors[v], nodes[target]));
            }
        }
        runs_on.push(runs);
    }
    let mut migration_s = 0.0;
    match p.migrate {
        Policy::NextTouch => {
            for (blocks, _) in &moves {
                for d in blocks.iter() {
                    rt.migrate_on_next_touch(d)?;
                }
            }
        }
        _ if !moves.is_empty() => {
            migration_s = timed_run(rt, &mut total, |s| {
                for (blocks, node) in &moves {
                    for d in blocks.iter() {
                        s.migrate(d, *node)?;
                    }
                }
                Ok(())
            })?;
        }
        _ => {}
    }
    // Under `auto` the runtime may move the phase-2 tasks: their hint is not strict.
    let phase2_hint = |g: usize| match p.migrate {
        Policy::Auto => Affinity::node(nodes[g]),
        _ => own(g),
    };
    let triad2_s = timed_run(rt, &mut total, |s| {
        for _ in 0..p.iterations {
            for (k, &runs) in runs_on.iter().enumerate() {
                let (vectors, _) = phase2_vectors(&sets, k, remote);
                spawn_op_over(s, Op::Triad, vectors, &|_| phase2_hint(runs))?;
            }
        }
        Ok(())
    })?;
    let report = total.expect("phase 1 ran");
    let iterations = p.iterations as f64;
    let rate = |s: f64| {
        if s > 0.0 {
            bytes as f64 * iterations / s / 1e6
        } else {
            0.0
        }
    };
    let figures = json!({
        "init_s": init_s,
        "phase1_s": phase1_s,
        "phase2_s": migration_s + triad2_s,
        "migration_s": migration_s,
        "phase1_triad_mb_s": rate(phase1_s),
        "phase2_triad_mb_s": rate(triad2_s),
        "migrated_pages": report.migration.now_pages
            + report.migration.next_touch_pages
            + report.migration.auto_pages,
        "tasks_moved": report.migration.tasks_moved,
    });
    if rt.skips_bodies() {
        return Ok((crate::Outcome::unchecked(report), figures));
    }
    let mut want: Vec<[Vec<f64>; 3]> = Vec::with_capacity(groups);
    for v in &sets {
        want.push(reference_set(v.offset, v.len)?);
    }
    for _ in 0..p.iterations {
        for w in want.iter_mut() {
            crate::stream::reference_op(Op::Triad, w);
        }
    }
    for _ in 0..p.iterations {
        for k in 0..groups {
            let j = (k + 1) % groups;
            let c_set = if remote == 3 { j } else { k };
            let c = want[c_set][2].clone();
            let [a, b, _] = &mut want[j];
            for (a, (b, c)) in a.iter_mut().zip(b.iter().zip(&c)) {
                *a = b + SCALAR * c;
            }
        }
    }
    crate::stream::flip_at(&mut want[0][0], flip);
    let mut check = crate::verify::Check::new();
    for (v, w) in sets.iter().zip(&want) {
        check_set(rt, &mut check, &v.name, v, w)?;
    }
    Ok((crate::Outcome::checked(report, check.finish()), figures))
}
