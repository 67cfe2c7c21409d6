//! `bitonic`: a blocked bitonic sorting network over `u64` keys (paper 1 Figure 4f):
//! balanced dependences, every task reads and writes blocks of equal size.
//!
//! The `2^n` keys are cut into `2^m` blocks of `2^b` keys. The network runs as steps;
//! every step reads every block's previous version once and writes its next one
//! (blocks are double-buffered by handle):
//! - step 0: one task per block sorts it, ascending or descending as the network's
//!   first `b` stages would (the direction of bit `b` of the keys' positions);
//! - then for each stage `k` in `b + 1..=n`: for each distance `2^j`, `j` from `k - 1`
//!   down to `b`, one *pair* task per pair of blocks `2^(j - b)` apart reads both blocks
//!   and writes both compare-exchanged (two inputs and two outputs of the same size);
//!   then one *merge* task per block runs the stage's remaining distances inside it.
//!
//! With [`Control::Parallel`] each step's tasks are split into at most 16 contiguous
//! groups, each submitted by a creator; a creator reads and writes one token per block
//! its tasks touch, so it follows the creators of the previous step that wrote those
//! blocks (see [`crate::control`]).
//!
//! Verification: equality, key by key, with the input keys sorted ascending.
//!
//! # Sizes
//!
//! `len` and `block_len` are powers of two, `block_len` at most `len`, and there are at
//! most 2^48 keys. There are no iterations. The options of `locus run` / `locus sim`
//! (see [`crate::size`]) map as:
//!
//! - `--size N`: `len` = N;
//! - `--block-len L`: `block_len` = L;
//! - `--blocks B`: `block_len` = `len / B` (B a power of two);
//! - `--iterations`: refused;
//! - `--param seed=S`: the seed of the keys.

use std::sync::Arc;

use locus::{Data, ReadWrite, Runtime, Scope};
use serde::{Deserialize, Serialize};

use crate::control::{spawn_creator, split, Control, MAX_CREATORS};
use crate::size::{kernel_params, Axis, KernelParams, Options};

/// Size of the problem and control program.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Number of keys (a power of two).
    pub len: usize,
    /// Keys per block (a power of two, at most `len`).
    pub block_len: usize,
    /// Seed of the keys.
    pub seed: u64,
    /// Who submits the tasks.
    pub control: Control,
}

impl Default for Params {
    /// 2^18 keys in 64 blocks of 2^12.
    fn default() -> Self {
        Params {
            len: 1 << 18,
            block_len: 1 << 12,
            seed: 1,
            control: Control::Sequential,
        }
    }
}

impl Params {
    /// Paper 1 Table 3: 2^28 keys (2 GiB) in blocks of 2^16 (Opteron-64; 2^17 on
    /// SGI-192).
    pub fn paper() -> Self {
        Params {
            len: 1 << 28,
            block_len: 1 << 16,
            seed: 1,
            control: Control::Sequential,
        }
    }

    /// Paper 1 Table 3 for the SGI-192: blocks of 2^17.
    pub fn paper_sgi() -> Self {
        Params {
            block_len: 1 << 17,
            ..Params::paper()
        }
    }

    /// 128 keys in 8 blocks of 16: for tests.
    pub fn tiny() -> Self {
        Params {
            len: 128,
            block_len: 16,
            seed: 1,
            control: Control::Sequential,
        }
    }

    /// Checks every constraint the kernel relies on (see the [module docs](self)). The
    /// message names the field and the option that sets it.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        for (field, v) in [("len", self.len), ("block_len", self.block_len)] {
            if !v.is_power_of_two() {
                return Err(format!(
                    "bitonic: {} = {v} is not a power of two",
                    o.label(field)
                ));
            }
        }
        if self.block_len > self.len {
            return Err(format!(
                "bitonic: {} = {} is more than {} = {}",
                o.label("block_len"),
                self.block_len,
                o.label("len"),
                self.len
            ));
        }
        o.elements::<u64>(&[("len", self.len)])?;
        o.blocks(&[("len", self.len, "block_len", self.block_len)])
    }

    fn blocks(&self) -> usize {
        self.len / self.block_len
    }
}

kernel_params!(
    Options {
        name: "bitonic",
        axes: &[Axis::Extent("len", "block_len")],
        size: None,
        iterations: None,
    },
    bytes: |p| crate::size::bytes::<u64>(&[p.len])
);

/// The initial key of element `i`.
fn initial_key(p: &Params, i: usize) -> u64 {
    let mut z = (i as u64 ^ p.seed.rotate_left(32)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The initial keys of block `b`.
fn initial_block(p: &Params, b: usize) -> Result<Vec<u64>, crate::Error> {
    let first = b * p.block_len;
    crate::alloc::collected(
        "the initial keys of a block",
        p.block_len,
        (first..first + p.block_len).map(|i| initial_key(p, i)),
    )
}

/// The sequential reference: the keys sorted ascending, by the standard library's
/// unstable sort over the whole array, which needs no memory beyond the keys (the tasks
/// run a sorting network and, inside a block, the same sort; for integers every sort
/// gives the one sorted order).
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if the keys cannot be allocated.
///
/// # Panics
///
/// If the parameters do not pass [`Params::validate`].
pub fn reference(p: &Params) -> Result<Vec<u64>, crate::Error> {
    if let Err(e) = p.validate() {
        panic!("{e}");
    }
    let mut keys = crate::alloc::collected(
        "the bitonic reference's keys",
        p.len,
        (0..p.len).map(|i| initial_key(p, i)),
    )?;
    keys.sort_unstable();
    Ok(keys)
}

/// One task of the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Task {
    /// Sort block `block` (ascending unless `descending`).
    Sort { block: usize, descending: bool },
    /// Compare-exchange blocks `lo < hi` element by element: the smaller keys go to `lo`
    /// unless `descending`.
    Pair {
        lo: usize,
        hi: usize,
        descending: bool,
    },
    /// Run the distances `2^(bits-1)` down to 1 inside `block`.
    Merge { block: usize, descending: bool },
}

impl Task {
    fn blocks(self) -> Vec<usize> {
        match self {
            Task::Sort { block, .. } | Task::Merge { block, .. } => vec![block],
            Task::Pair { lo, hi, .. } => vec![lo, hi],
        }
    }
}

/// The steps of the network: every step touches every block once.
/// Tasks the sort submits, creators excluded.
pub(crate) fn tasks(p: &Params) -> u64 {
    steps(p).iter().map(|step| step.len() as u64).sum()
}

fn steps(p: &Params) -> Vec<Vec<Task>> {
    let nb = p.blocks();
    let (m, b) = (
        nb.trailing_zeros() as usize,
        p.block_len.trailing_zeros() as usize,
    );
    // The direction of stage `k` at block `blk`: bit `k` of the keys' positions.
    let descending = |k: usize, blk: usize| ((blk << b) >> k) & 1 == 1;
    let mut steps = vec![(0..nb)
        .map(|block| Task::Sort {
            block,
            descending: descending(b, block),
        })
        .collect()];
    for k in b + 1..=m + b {
        for j in (b..k).rev() {
            let d = 1 << (j - b);
            steps.push(
                (0..nb)
                    .filter(|blk| blk & d == 0)
                    .map(|lo| Task::Pair {
                        lo,
                        hi: lo | d,
                        descending: descending(k, lo),
                    })
                    .collect(),
            );
        }
        steps.push(
            (0..nb)
                .map(|block| Task::Merge {
                    block,
                    descending: descending(k, block),
                })
                .collect(),
        );
    }
    steps
}

/// Runs the half-cleaners of distances `len/2` down to 1 on a bitonic block.
fn merge(keys: &mut [u64], descending: bool) {
    let mut d = keys.len() / 2;
    while d > 0 {
        for i in 0..keys.len() {
            if i & d == 0 && (keys[i] > keys[i | d]) != descending {
                keys.swap(i, i | d);
            }
        }
        d /= 2;
    }
}

fn submit(
    s: &Scope,
    blocks: &[Vec<Data<u64>>; 2],
    step: usize,
    task: Task,
) -> Result<(), locus::Error> {
    let (src, dst) = (&blocks[step % 2], &blocks[(step + 1) % 2]);
    match task {
        Task::Sort { block, descending } | Task::Merge { block, descending } => {
            let sort = matches!(task, Task::Sort { .. });
            s.spawn(
                if sort {
                    "bitonic-sort"
                } else {
                    "bitonic-merge"
                },
                (src[block].read(), dst[block].write()),
                move |_, (input, out)| {
                    out.copy_from_slice(input);
                    match (sort, descending) {
                        (true, false) => out.sort_unstable(),
                        (true, true) => out.sort_unstable_by(|a, b| b.cmp(a)),
                        (false, _) => merge(out, descending),
                    }
                },
            )
        }
        Task::Pair { lo, hi, descending } => s.spawn(
            "bitonic-pair",
            (
                src[lo].read(),
                src[hi].read(),
                dst[lo].write(),
                dst[hi].write(),
            ),
            move |_, (a, b, out_lo, out_hi)| {
                for i in 0..a.len() {
                    let (small, large) = if a[i] <= b[i] {
                        (a[i], b[i])
                    } else {
                        (b[i], a[i])
                    };
                    (out_lo[i], out_hi[i]) = if descending {
                        (large, small)
                    } else {
                        (small, large)
                    };
                }
            },
        ),
    }
}

/// Builds, runs and verifies the sort against [`reference()`].
pub fn run(rt: &Runtime, p: &Params) -> Result<crate::Outcome, crate::Error> {
    run_against(rt, p, || reference(p))
}

/// [`run`], comparing the result with `want()` (all the keys).
pub(crate) fn run_against(
    rt: &Runtime,
    p: &Params,
    want: impl FnOnce() -> Result<Vec<u64>, crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    let nb = p.blocks();
    let first = (0..nb)
        .map(|b| {
            crate::initial(rt, format!("keys0.{b}"), p.block_len, || {
                initial_block(p, b)
            })
        })
        .collect::<Result<_, _>>()?;
    let second = (0..nb)
        .map(|b| rt.data::<u64>(format!("keys1.{b}"), p.block_len))
        .collect();
    let blocks = Arc::new([first, second]);
    let tokens: Vec<Data<u64>> = (0..nb).map(|b| rt.data(format!("token{b}"), 1)).collect();
    let steps = steps(p);
    let finished = rt.run(|s| -> Result<(), locus::Error> {
        for (step, tasks) in steps.iter().enumerate() {
            match p.control {
                Control::Sequential => {
                    for &task in tasks {
                        submit(s, &blocks, step, task)?;
                    }
                }
                Control::Parallel => {
                    for group in split(tasks.len(), MAX_CREATORS) {
                        let group: Vec<Task> = tasks[group].to_vec();
                        let touched: Vec<ReadWrite<u64>> = group
                            .iter()
                            .flat_map(|t| t.blocks())
                            .map(|b| tokens[b].read_write())
                            .collect();
                        let blocks = blocks.clone();
                        spawn_creator(s, touched, move |s| {
                            group
                                .into_iter()
                                .try_for_each(|task| submit(s, &blocks, step, task))
                        })?;
                    }
                }
            }
        }
        Ok(())
    })?;
    let ((), report) = crate::finished(finished)?;
    if rt.skips_bodies() {
        return Ok(crate::Outcome::unchecked(report));
    }
    let result = &blocks[steps.len() % 2];
    let want = want()?;
    let mut check = crate::verify::Check::new();
    for (b, d) in result.iter().enumerate() {
        check.block("keys", &rt.fetch(d)?, &want, |i| b * p.block_len + i);
    }
    Ok(crate::Outcome::checked(report, check.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocked network sorts, run sequentially on plain vectors.
    #[test]
    fn blocked_network_sorts() {
        for (len, block_len) in [(1, 1), (16, 16), (64, 4), (256, 8), (128, 1)] {
            let p = Params {
                len,
                block_len,
                ..Params::tiny()
            };
            let mut cur: Vec<Vec<u64>> = (0..p.blocks())
                .map(|b| initial_block(&p, b).unwrap())
                .collect();
            for step in steps(&p) {
                let mut next = cur.clone();
                for task in step {
                    match task {
                        Task::Sort { block, descending } => {
                            next[block].sort_unstable();
                            if descending {
                                next[block].reverse();
                            }
                        }
                        Task::Merge { block, descending } => merge(&mut next[block], descending),
                        Task::Pair { lo, hi, descending } => {
                            for i in 0..p.block_len {
                                let (a, b) =
                                    (cur[lo][i].min(cur[hi][i]), cur[lo][i].max(cur[hi][i]));
                                (next[lo][i], next[hi][i]) =
                                    if descending { (b, a) } else { (a, b) };
                            }
                        }
                    }
                }
                cur = next;
            }
            assert_eq!(
                cur.concat(),
                reference(&p).unwrap(),
                "{len} keys in blocks of {block_len}"
            );
        }
    }
}
