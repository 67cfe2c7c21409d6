//! `sparselu`: the LU factorisation of a sparse block matrix, without pivoting, from the
//! Barcelona OpenMP Tasks Suite (Duran et al., "Barcelona OpenMP Tasks Suite: A Set of
//! Benchmarks Targeting the Exploitation of Task Parallelism in OpenMP"), the benchmark
//! on which paper 4 (Muddukrishna et al., home-based scheduling; `docs/papers.md`)
//! evaluates home-based scheduling on the TilePro64 (section 4).
//!
//! The matrix is `blocks × blocks` blocks of `block_len × block_len` `f32`, row-major
//! inside a block. BOTS's `genmat` decides which blocks exist (block `(i, j)` is absent
//! when `i < j` and `i % 3 != 0`, when `i > j` and `j % 3 != 0`, or when `i` or `j` is
//! odd, unless `|i - j| <= 1`) and fills them from one linear congruential sequence
//! (`v = 3125 v mod 65536` from 1325, element `(v - 32768) / 16384`), block after block
//! in row-major order. One departure: the diagonal elements are raised by `2 n` (`n`
//! the matrix's order), making the matrix diagonally dominant, so that the
//! factorisation without pivoting stays finite; BOTS's own values overflow to
//! infinities and NaNs already at 12 × 12 blocks of 32 (a bitwise comparison would
//! then compare NaNs). The work and the data are unchanged. Step `k` of the
//! factorisation runs, as BOTS's tasks:
//!
//! - `lu0`: factorise the diagonal block `(k, k)` in place;
//! - `fwd`: for each block `(k, j)`, `j > k`, solve with the diagonal's unit lower part;
//! - `bdiv`: for each block `(i, k)`, `i > k`, solve with the diagonal's upper part;
//! - `bmod`: for each pair of existing blocks `(i, k)`, `(k, j)`, update `(i, j)`
//!   (`inner -= row × col`). A block `(i, j)` that did not exist is *filled in*: it is
//!   allocated when first written, by its first `bmod`, which zeroes it first.
//!
//! Every block is a datum. Where its memory lives is the `layout` field:
//!
//! - `0` (default): paper 4's choice for the configuration: `1` under `home`, `3`
//!   under any other;
//! - `1` ("homed"): every block that will ever exist is a shared datum bound to one
//!   node, block after block round-robin over the nodes that have workers, and updated
//!   in place: paper 4's allocation for home-based scheduling ("homing each sub-matrix
//!   on a different home cache");
//! - `2` ("hash-for-home"): every block shared and interleaved over all the nodes, the
//!   TilePro64's default hashing that paper 4 uses for its other policies;
//! - `3`: versioned data placed by the runtime, as every other kernel; a filled-in
//!   block has no memory until its first `bmod` runs. (Under `home` with sequential
//!   control every version would then start on the control program's node, and every
//!   task would have the same home.)
//!
//! With [`Control::Parallel`], step `k` has one creator for its `lu0`, `fwd` and `bdiv`
//! tasks and up to 16 creators for its `bmod` tasks (one per group of block rows); a
//! creator reads the token of each block its tasks read and reads-writes the token of
//! each block they write (see [`crate::control`]).
//!
//! Verification: the matrix BOTS's `genmat` gives, factorised densely by a right-looking
//! elimination over all its rows and columns (an independent sequential program that
//! knows nothing of blocks or of the pattern): for every element, it subtracts the same
//! products in the same order as the tasks, and the products with elements of absent
//! blocks are exact zeros, so the existing blocks must equal it bit for bit and the
//! absent ones must be zero there.
//!
//! # Sizes
//!
//! At least one block of at least one element. The options of `locus run` / `locus sim`
//! (see [`crate::size`]) map as:
//!
//! - `--size N`: `blocks × block_len` = N (with `--block-len` or `--blocks`);
//! - `--block-len L`: `block_len` = L;
//! - `--blocks B`: `blocks` = B;
//! - `--iterations`: refused;
//! - `--param layout=0|1|2|3`: where the blocks live (above).

use std::sync::Arc;

use locus::{Data, Read, ReadWrite, RegionPolicy, Runtime, Scope};
use serde::{Deserialize, Serialize};

use crate::control::{spawn_creator, split, Control, MAX_CREATORS};
use crate::size::{kernel_params, Axis, KernelParams, Options};

/// Size of the problem, layout of its blocks and control program.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Blocks along each axis.
    pub blocks: usize,
    /// Rows (and columns) of a block.
    pub block_len: usize,
    /// Where the blocks live: 0 by configuration, 1 homed round-robin, 2 interleaved,
    /// 3 versioned (module docs).
    pub layout: usize,
    /// Who submits the tasks.
    pub control: Control,
}

impl Default for Params {
    /// 12 × 12 blocks of 32 × 32.
    fn default() -> Self {
        Params {
            blocks: 12,
            block_len: 32,
            layout: 0,
            control: Control::Sequential,
        }
    }
}

impl Params {
    /// Paper 4 section 4.1: 30 × 30 blocks of 125 × 125.
    pub fn paper() -> Self {
        Params {
            blocks: 30,
            block_len: 125,
            ..Params::default()
        }
    }

    /// Paper 4 used one machine: as [`Params::paper`].
    pub fn paper_sgi() -> Self {
        Params::paper()
    }

    /// 7 × 7 blocks of 4 × 4 (with fill-in, e.g. block (2, 4)): for tests.
    pub fn tiny() -> Self {
        Params {
            blocks: 7,
            block_len: 4,
            ..Params::default()
        }
    }

    /// Checks every constraint the kernel relies on (see the [module docs](self)).
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.positive("blocks", self.blocks)?;
        o.positive("block_len", self.block_len)?;
        if self.layout > 3 {
            return Err(format!(
                "sparselu: {} = {} is not 0 (by configuration), 1 (homed), 2 (interleaved) or 3 (versioned)",
                o.label("layout"),
                self.layout
            ));
        }
        if self.blocks > MAX_BLOCKS_PER_AXIS {
            return Err(format!(
                "sparselu: {} = {} is more than {MAX_BLOCKS_PER_AXIS}",
                o.label("blocks"),
                self.blocks
            ));
        }
        let n = self.blocks.saturating_mul(self.block_len);
        o.elements::<f32>(&[("blocks", n), ("block_len", n)])?;
        // The program's tasks are listed before they run.
        let tasks = tasks(self);
        if u128::from(tasks) > crate::size::MAX_BLOCKS {
            return Err(format!(
                "sparselu: {} = {} gives {tasks} tasks, more than the limit of 2^24",
                o.label("blocks"),
                self.blocks
            ));
        }
        Ok(())
    }

    fn n(&self) -> usize {
        self.blocks * self.block_len
    }

    fn block_elems(&self) -> usize {
        self.block_len * self.block_len
    }
}

kernel_params!(
    Options {
        name: "sparselu",
        axes: &[Axis::Count("blocks", "block_len")],
        size: None,
        iterations: None,
    },
    bytes: |p| {
        let present = pattern(p.blocks).1.iter().filter(|&&b| b).count() as u64;
        present.saturating_mul(crate::size::bytes::<f32>(&[p.block_len, p.block_len]))
    }
);

/// Most blocks along an axis: listing the pattern's fill-in takes `blocks³ / 64` steps.
const MAX_BLOCKS_PER_AXIS: usize = 1024;

/// Whether BOTS's `genmat` allocates block `(i, j)`.
fn genmat_present(i: usize, j: usize) -> bool {
    let mut null = (i < j && i % 3 != 0) || (i > j && j % 3 != 0) || i % 2 == 1 || j % 2 == 1;
    if i == j || i + 1 == j || j + 1 == i {
        null = false;
    }
    !null
}

/// The blocks present before and after the factorisation (row-major, `nb × nb`): the
/// second adds the blocks filled in. Step `k` fills `(i, j)` for every `i, j > k` with
/// `(i, k)` and `(k, j)` present: row `k` right of the diagonal is or-ed into each such
/// row `i`, 64 blocks at a time.
fn pattern(nb: usize) -> (Vec<bool>, Vec<bool>) {
    let initial: Vec<bool> = (0..nb * nb)
        .map(|b| genmat_present(b / nb, b % nb))
        .collect();
    let words = nb.div_ceil(64);
    let mut rows = vec![0u64; nb * words];
    for b in (0..nb * nb).filter(|&b| initial[b]) {
        let (i, j) = (b / nb, b % nb);
        rows[i * words + j / 64] |= 1 << (j % 64);
    }
    let bit = |rows: &[u64], i: usize, j: usize| rows[i * words + j / 64] >> (j % 64) & 1 == 1;
    for k in 0..nb {
        // Row k's blocks right of column k.
        let mut right: Vec<u64> = rows[k * words..(k + 1) * words].to_vec();
        for (w, word) in right.iter_mut().enumerate() {
            let first = w * 64;
            if first + 64 <= k + 1 {
                *word = 0;
            } else if first <= k {
                *word &= !0u64 << (k + 1 - first);
            }
        }
        for i in k + 1..nb {
            if bit(&rows, i, k) {
                for (x, r) in rows[i * words..(i + 1) * words].iter_mut().zip(&right) {
                    *x |= r;
                }
            }
        }
    }
    let after = (0..nb * nb).map(|b| bit(&rows, b / nb, b % nb)).collect();
    (initial, after)
}

/// One task of the factorisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Task {
    /// Factorise diagonal block `k`.
    Lu0 { k: usize },
    /// Solve block `(k, j)` with the diagonal's lower part.
    Fwd { k: usize, j: usize },
    /// Solve block `(i, k)` with the diagonal's upper part.
    Bdiv { k: usize, i: usize },
    /// `(i, j) -= (i, k) × (k, j)`; `fill` when this is the block's first write.
    Bmod {
        k: usize,
        i: usize,
        j: usize,
        fill: bool,
    },
}

/// The tasks of each step, in BOTS's order.
fn steps(nb: usize) -> Vec<Vec<Task>> {
    let mut present = pattern(nb).0;
    (0..nb)
        .map(|k| {
            let mut tasks = vec![Task::Lu0 { k }];
            tasks.extend(
                (k + 1..nb)
                    .filter(|&j| present[k * nb + j])
                    .map(|j| Task::Fwd { k, j }),
            );
            tasks.extend(
                (k + 1..nb)
                    .filter(|&i| present[i * nb + k])
                    .map(|i| Task::Bdiv { k, i }),
            );
            let rows: Vec<usize> = (k + 1..nb).filter(|&i| present[i * nb + k]).collect();
            let cols: Vec<usize> = (k + 1..nb).filter(|&j| present[k * nb + j]).collect();
            for &i in &rows {
                for &j in &cols {
                    let fill = !present[i * nb + j];
                    present[i * nb + j] = true;
                    tasks.push(Task::Bmod { k, i, j, fill });
                }
            }
            tasks
        })
        .collect()
}

/// Tasks the factorisation submits, creators excluded: at step `k`, with `r` blocks
/// below the diagonal block and `c` right of it, `1 + c + r + r c`. A block `(i, k)`
/// or `(k, j)` is never filled in after step `k`, so the final pattern gives both.
pub(crate) fn tasks(p: &Params) -> u64 {
    let nb = p.blocks;
    let after = pattern(nb).1;
    (0..nb)
        .map(|k| {
            let r = (k + 1..nb).filter(|&i| after[i * nb + k]).count() as u64;
            let c = (k + 1..nb).filter(|&j| after[k * nb + j]).count() as u64;
            1 + r + c + r * c
        })
        .sum()
}

/// The values of the present blocks, in row-major block order, from BOTS's sequence,
/// with the diagonal raised by `2 n` (module docs).
fn genmat_values(p: &Params) -> Vec<Vec<f32>> {
    let (nb, bs) = (p.blocks, p.block_len);
    let boost = 2.0 * p.n() as f32;
    let mut v: u32 = 1325;
    pattern(nb)
        .0
        .iter()
        .enumerate()
        .map(|(b, &present)| {
            if !present {
                return Vec::new();
            }
            let diagonal = b / nb == b % nb;
            (0..p.block_elems())
                .map(|q| {
                    v = (3125 * v) % 65536;
                    let x = (v as f32 - 32768.0) / 16384.0;
                    if diagonal && q / bs == q % bs {
                        x + boost
                    } else {
                        x
                    }
                })
                .collect()
        })
        .collect()
}

/// The sequential reference: the whole `n × n` matrix (absent blocks zero) factorised
/// densely in place, right-looking, without pivoting: `L` below the diagonal (unit
/// diagonal implied), `U` on and above it.
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if the matrix cannot be allocated.
///
/// # Panics
///
/// If the parameters do not pass [`Params::validate`].
pub fn reference(p: &Params) -> Result<Vec<f32>, crate::Error> {
    if let Err(e) = p.validate() {
        panic!("{e}");
    }
    let (n, nb, bs) = (p.n(), p.blocks, p.block_len);
    let mut a = crate::alloc::filled("the sparselu reference's matrix", n * n, 0f32)?;
    for (b, values) in genmat_values(p).into_iter().enumerate() {
        let (bi, bj) = (b / nb, b % nb);
        for (q, v) in values.into_iter().enumerate() {
            a[(bi * bs + q / bs) * n + bj * bs + q % bs] = v;
        }
    }
    for k in 0..n {
        let pivot = a[k * n + k];
        for i in k + 1..n {
            a[i * n + k] /= pivot;
            let l = a[i * n + k];
            for j in k + 1..n {
                a[i * n + j] -= l * a[k * n + j];
            }
        }
    }
    Ok(a)
}

// The block kernels do BOTS's operations, each element subtracting the same products
// in the same order as BOTS's loops; the loops are ordered so that the innermost one
// runs along a row (contiguous, and vectorised), which changes no rounding.

/// BOTS `lu0`: factorises a diagonal block in place.
fn lu0(diag: &mut [f32], bs: usize) {
    for k in 0..bs {
        let (upper, lower) = diag.split_at_mut((k + 1) * bs);
        let pivot_row = &upper[k * bs..];
        let pivot = pivot_row[k];
        for row in lower.chunks_exact_mut(bs) {
            row[k] /= pivot;
            let l = row[k];
            for (x, &u) in row[k + 1..].iter_mut().zip(&pivot_row[k + 1..bs]) {
                *x -= l * u;
            }
        }
    }
}

/// BOTS `fwd`: `col = L⁻¹ col`, `L` the unit lower part of `diag`.
fn fwd(diag: &[f32], col: &mut [f32], bs: usize) {
    for k in 0..bs {
        let (upper, lower) = col.split_at_mut((k + 1) * bs);
        let ck = &upper[k * bs..];
        for (i, row) in (k + 1..bs).zip(lower.chunks_exact_mut(bs)) {
            let l = diag[i * bs + k];
            for (x, &c) in row.iter_mut().zip(ck) {
                *x -= l * c;
            }
        }
    }
}

/// BOTS `bdiv`: `row = row U⁻¹`, `U` the upper part of `diag`.
fn bdiv(diag: &[f32], row: &mut [f32], bs: usize) {
    for r in row.chunks_exact_mut(bs) {
        for k in 0..bs {
            r[k] /= diag[k * bs + k];
            let l = r[k];
            for (x, &u) in r[k + 1..]
                .iter_mut()
                .zip(&diag[k * bs + k + 1..(k + 1) * bs])
            {
                *x -= l * u;
            }
        }
    }
}

/// BOTS `bmod`: `inner -= row × col`.
fn bmod(row: &[f32], col: &[f32], inner: &mut [f32], bs: usize) {
    for (out, r) in inner.chunks_exact_mut(bs).zip(row.chunks_exact(bs)) {
        for (&a, c) in r.iter().zip(col.chunks_exact(bs)) {
            for (x, &b) in out.iter_mut().zip(c) {
                *x -= a * b;
            }
        }
    }
}

/// Floating-point operations of a task on blocks of `bs` (its cost hint's basis).
fn flops(task: Task, bs: u64) -> u64 {
    // Per step `k` of a block's elimination, `bs - 1 - k` rows below it.
    let below: u64 = (0..bs).map(|k| bs - 1 - k).sum();
    match task {
        // One division and `2 (bs - 1 - k)` multiply-subtracts per row below.
        Task::Lu0 { .. } => (0..bs).map(|k| (bs - 1 - k) * (1 + 2 * (bs - 1 - k))).sum(),
        Task::Fwd { .. } => 2 * bs * below,
        Task::Bdiv { .. } => bs * (bs + 2 * below),
        Task::Bmod { .. } => 2 * bs * bs * bs,
    }
}

/// Cost hint of a task, in ns: its floating-point operations at 2.6 per ns (one per
/// cycle of the simulator's default 2.6 GHz core; an estimate for scalar code).
fn cost_ns(task: Task, bs: usize) -> u64 {
    (flops(task, bs as u64) as f64 / 2.6).round() as u64
}

/// The blocks of the matrix: `None` where a block never exists.
type Blocks = Vec<Option<Data<f32>>>;

fn submit(
    s: &Scope,
    blocks: &Blocks,
    nb: usize,
    bs: usize,
    task: Task,
) -> Result<(), locus::Error> {
    let at = |i: usize, j: usize| blocks[i * nb + j].as_ref().expect("present block");
    let cost = cost_ns(task, bs);
    match task {
        Task::Lu0 { k } => s
            .task("lu0", at(k, k).read_write())
            .cost(cost)
            .spawn(move |_, diag| lu0(diag, bs)),
        Task::Fwd { k, j } => s
            .task("fwd", (at(k, k).read(), at(k, j).read_write()))
            .cost(cost)
            .spawn(move |_, (diag, col)| fwd(diag, col, bs)),
        Task::Bdiv { k, i } => s
            .task("bdiv", (at(k, k).read(), at(i, k).read_write()))
            .cost(cost)
            .spawn(move |_, (diag, row)| bdiv(diag, row, bs)),
        Task::Bmod {
            k,
            i,
            j,
            fill: true,
        } => s
            .task("bmod", (at(i, k).read(), at(k, j).read(), at(i, j).write()))
            .cost(cost)
            .spawn(move |_, (row, col, inner)| {
                // BOTS's `allocate_clean_block`: a filled-in block starts at zero.
                inner.fill(0.0);
                bmod(row, col, inner, bs)
            }),
        Task::Bmod { k, i, j, .. } => s
            .task(
                "bmod",
                (at(i, k).read(), at(k, j).read(), at(i, j).read_write()),
            )
            .cost(cost)
            .spawn(move |_, (row, col, inner)| bmod(row, col, inner, bs)),
    }
}

/// The blocks a task reads (other than those it writes) and the one it writes.
fn touches(task: Task) -> (Vec<(usize, usize)>, (usize, usize)) {
    match task {
        Task::Lu0 { k } => (vec![], (k, k)),
        Task::Fwd { k, j } => (vec![(k, k)], (k, j)),
        Task::Bdiv { k, i } => (vec![(k, k)], (i, k)),
        Task::Bmod { k, i, j, .. } => (vec![(i, k), (k, j)], (i, j)),
    }
}

/// Spawns a creator submitting `group`: it reads the tokens of the blocks the group
/// only reads and reads-writes those of the blocks it writes.
fn spawn_group(
    s: &Scope,
    blocks: &Arc<Blocks>,
    tokens: &[Data<u64>],
    p: &Params,
    group: Vec<Task>,
) -> Result<(), locus::Error> {
    let nb = p.blocks;
    let mut written = vec![false; nb * nb];
    let mut read = vec![false; nb * nb];
    for &t in &group {
        let (reads, (wi, wj)) = touches(t);
        written[wi * nb + wj] = true;
        for (ri, rj) in reads {
            read[ri * nb + rj] = true;
        }
    }
    let reads: Vec<Read<u64>> = (0..nb * nb)
        .filter(|&b| read[b] && !written[b])
        .map(|b| tokens[b].read())
        .collect();
    let writes: Vec<ReadWrite<u64>> = (0..nb * nb)
        .filter(|&b| written[b])
        .map(|b| tokens[b].read_write())
        .collect();
    let (blocks, bs) = (blocks.clone(), p.block_len);
    spawn_creator(s, (reads, writes), move |s| {
        group
            .into_iter()
            .try_for_each(|t| submit(s, &blocks, nb, bs, t))
    })
}

/// The data of the blocks, by `p.layout`.
fn make_blocks(rt: &Runtime, p: &Params) -> Result<Blocks, crate::Error> {
    let nb = p.blocks;
    let (initial, after) = pattern(nb);
    let mut values = if rt.skips_bodies() {
        None
    } else {
        Some(genmat_values(p))
    };
    // The distinct nodes that have workers, in worker order: the homes of layout 1.
    let mut homes: Vec<usize> = Vec::new();
    for &n in rt.worker_nodes() {
        if !homes.contains(&n) {
            homes.push(n);
        }
    }
    let mut next_home = 0;
    let mut blocks = Vec::with_capacity(nb * nb);
    for b in 0..nb * nb {
        if !after[b] {
            blocks.push(None);
            continue;
        }
        let name = format!("block{}.{}", b / nb, b % nb);
        let v = values
            .as_mut()
            .filter(|_| initial[b])
            .map(|v| std::mem::take(&mut v[b]));
        let layout = match p.layout {
            0 if rt.config() == locus::Config::Home => 1,
            0 => 3,
            l => l,
        };
        let policy = match layout {
            1 => {
                let home = homes[next_home % homes.len()];
                next_home += 1;
                Some(RegionPolicy::Bind(home))
            }
            2 => Some(RegionPolicy::Interleave),
            _ => None,
        };
        let datum = match (policy, v) {
            (None, Some(v)) => rt.data_from(name, &v)?,
            (None, None) => rt.data(name, p.block_elems()),
            (Some(policy), Some(v)) => rt.shared_from(name, &v, policy)?,
            (Some(policy), None) => rt.shared(name, p.block_elems(), policy)?,
        };
        blocks.push(Some(datum));
    }
    Ok(blocks)
}

/// Builds, runs and verifies the factorisation against [`reference()`].
pub fn run(rt: &Runtime, p: &Params) -> Result<crate::Outcome, crate::Error> {
    run_against(rt, p, || reference(p))
}

/// [`run`], comparing the result with `want()` (the whole matrix, row-major).
pub(crate) fn run_against(
    rt: &Runtime,
    p: &Params,
    want: impl FnOnce() -> Result<Vec<f32>, crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    let (nb, bs) = (p.blocks, p.block_len);
    let blocks = Arc::new(make_blocks(rt, p)?);
    let tokens: Vec<Data<u64>> = match p.control {
        Control::Sequential => Vec::new(),
        Control::Parallel => (0..nb * nb)
            .map(|b| rt.data(format!("token{b}"), 1))
            .collect(),
    };
    let steps = steps(nb);
    let finished = rt.run(|s| -> Result<(), locus::Error> {
        for tasks in &steps {
            match p.control {
                Control::Sequential => {
                    for &t in tasks {
                        submit(s, &blocks, nb, bs, t)?;
                    }
                }
                Control::Parallel => {
                    let panel = tasks
                        .iter()
                        .take_while(|t| !matches!(t, Task::Bmod { .. }))
                        .count();
                    spawn_group(s, &blocks, &tokens, p, tasks[..panel].to_vec())?;
                    let updates = &tasks[panel..];
                    // Groups of whole block rows, so no two creators write one block.
                    let rows: Vec<usize> = {
                        let mut rows: Vec<usize> = updates
                            .iter()
                            .map(|t| match t {
                                Task::Bmod { i, .. } => *i,
                                _ => unreachable!("updates are bmod tasks"),
                            })
                            .collect();
                        rows.dedup();
                        rows
                    };
                    for r in split(rows.len(), MAX_CREATORS) {
                        let chosen = &rows[r];
                        let group: Vec<Task> = updates
                            .iter()
                            .filter(|t| matches!(t, Task::Bmod { i, .. } if chosen.contains(i)))
                            .copied()
                            .collect();
                        spawn_group(s, &blocks, &tokens, p, group)?;
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
    let want = want()?;
    let n = p.n();
    let at = |b: usize, q: usize| (b / nb * bs + q / bs) * n + (b % nb) * bs + q % bs;
    let mut check = crate::verify::Check::new();
    for (b, d) in blocks.iter().enumerate() {
        match d {
            Some(d) => check.block("matrix", &rt.fetch(d)?, &want, |q| at(b, q)),
            // An absent block is zero in the dense factorisation, of either sign (the
            // elimination divides its zeros by pivots of either sign): it holds what
            // the reference holds where that is a zero, and +0 elsewhere.
            None => {
                let zeros: Vec<f32> = (0..p.block_elems())
                    .map(|q| match want.get(at(b, q)) {
                        Some(&w) if w == 0.0 => w,
                        _ => 0.0,
                    })
                    .collect();
                check.block("matrix", &zeros, &want, |q| at(b, q))
            }
        }
    }
    Ok(crate::Outcome::checked(report, check.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BOTS's pattern at 7 blocks: the tridiagonal band, and the blocks of even row
    /// and even column whose row (upper part) or column (lower part) is a multiple of 3.
    #[test]
    fn genmat_pattern_is_bots() {
        let (initial, after) = pattern(7);
        let show = |v: &[bool]| -> Vec<String> {
            v.chunks(7)
                .map(|r| r.iter().map(|&b| if b { 'x' } else { '.' }).collect())
                .collect()
        };
        assert_eq!(
            show(&initial),
            ["xxx.x.x", "xxx....", "xxxx...", "..xxx..", "x..xxx.", "....xxx", "x....xx"]
        );
        // Fill-in: (2, 4) from (2, 0) x (0, 4), absent at first.
        assert!(after[2 * 7 + 4] && !initial[2 * 7 + 4]);
        assert!(after.iter().zip(&initial).all(|(&a, &i)| a || !i));
    }

    /// The bitset fill-in and the task count equal the plain triple loop over the
    /// pattern and the listed steps.
    #[test]
    fn fill_in_and_task_count_follow_the_definition() {
        for nb in [1, 2, 7, 30, 64, 65, 130] {
            let (initial, after) = pattern(nb);
            let mut want = initial.clone();
            for k in 0..nb {
                for i in k + 1..nb {
                    for j in k + 1..nb {
                        if want[i * nb + k] && want[k * nb + j] {
                            want[i * nb + j] = true;
                        }
                    }
                }
            }
            assert_eq!(after, want, "{nb} blocks");
            let p = Params {
                blocks: nb,
                ..Params::tiny()
            };
            let listed: usize = steps(nb).iter().map(Vec::len).sum();
            assert_eq!(tasks(&p), listed as u64, "{nb} blocks");
        }
        assert_eq!(tasks(&Params::paper()), 2735);
    }

    /// Every block the tasks touch exists when touched, and every fill-in block is
    /// first written by a `bmod` marked `fill`.
    #[test]
    fn tasks_touch_present_blocks_and_fill_once() {
        for nb in 1..20 {
            let (initial, after) = pattern(nb);
            let mut seen = initial.clone();
            for t in steps(nb).into_iter().flatten() {
                let (reads, (wi, wj)) = touches(t);
                for (ri, rj) in reads {
                    assert!(seen[ri * nb + rj], "{t:?} reads an absent block");
                }
                let fill = matches!(t, Task::Bmod { fill: true, .. });
                assert_eq!(fill, !seen[wi * nb + wj], "{t:?}");
                seen[wi * nb + wj] = true;
            }
            assert_eq!(seen, after, "{nb} blocks");
        }
    }

    /// The blocked kernels, run in step order on plain vectors, equal the dense
    /// reference bit for bit.
    #[test]
    fn blocked_kernels_equal_the_dense_elimination() {
        for (blocks, block_len) in [(1, 5), (4, 3), (7, 4), (9, 2), (12, 32)] {
            let p = Params {
                blocks,
                block_len,
                ..Params::tiny()
            };
            let (nb, bs) = (blocks, block_len);
            let mut m: Vec<Vec<f32>> = genmat_values(&p);
            for t in steps(nb).into_iter().flatten() {
                match t {
                    Task::Lu0 { k } => lu0(&mut m[k * nb + k], bs),
                    Task::Fwd { k, j } => {
                        let mut col = std::mem::take(&mut m[k * nb + j]);
                        fwd(&m[k * nb + k], &mut col, bs);
                        m[k * nb + j] = col;
                    }
                    Task::Bdiv { k, i } => {
                        let mut row = std::mem::take(&mut m[i * nb + k]);
                        bdiv(&m[k * nb + k], &mut row, bs);
                        m[i * nb + k] = row;
                    }
                    Task::Bmod { k, i, j, fill } => {
                        let mut inner = std::mem::take(&mut m[i * nb + j]);
                        if fill {
                            inner = vec![0.0; bs * bs];
                        }
                        bmod(&m[i * nb + k], &m[k * nb + j], &mut inner, bs);
                        m[i * nb + j] = inner;
                    }
                }
            }
            let want = reference(&p).unwrap();
            let n = nb * bs;
            for (b, block) in m.iter().enumerate() {
                for (q, &v) in block.iter().enumerate() {
                    let at = (b / nb * bs + q / bs) * n + (b % nb) * bs + q % bs;
                    assert_eq!(v.to_bits(), want[at].to_bits(), "block {b} element {q}");
                }
            }
            assert!(want.iter().all(|v| v.is_finite()));
        }
    }

    #[test]
    fn paper_size_is_paper_4() {
        let p = Params::paper();
        assert_eq!((p.blocks, p.block_len), (30, 125));
    }
}
