//! `cholesky`: the tiled Cholesky factorisation `A = L Lᵀ` of a symmetric positive
//! definite matrix, the benchmark task runtimes are judged on (StarPU, PaRSEC, PLASMA,
//! OmpSs): step `k` of the right-looking tiled algorithm runs
//!
//! - `potrf`: factorise the diagonal tile `(k, k)`;
//! - `trsm`: for each tile `(i, k)`, `i > k`, solve with the diagonal tile;
//! - `syrk`: for each `i > k`, update the diagonal tile `(i, i)` with `(i, k)`;
//! - `gemm`: for each `k < j < i`, update `(i, j)` with `(i, k)` and `(j, k)`.
//!
//! The matrix is `n × n` `f64` in `tile × tile` tiles, row-major inside a tile; only the
//! lower triangle's tiles are data (one datum per tile; the tiles could as well be parts
//! of one partitioned matrix, the tasks name them by tile coordinates only). The tile
//! kernels are C, the same code the peers run: `peers/common/cholesky_tiles.h`,
//! compiled into this crate by its build script (`src/cholesky_tiles.c`) with
//! `-O2 -ffp-contract=off -falign-loops=64`. So are the initial values: off the
//! diagonal a deterministic value in `[0, 1)`, symmetric, and `n` plus such a value on
//! it.
//!
//! With `repetitions` above 1 the same matrix is factorised that many times, one run
//! per factorisation, each verified: a factorisation starts with one `reset` task per
//! tile writing the initial values again (a new version of the tile). `--replay`
//! records one factorisation (resets included) and replays it once per repetition,
//! verifying each.
//!
//! With [`Control::Parallel`], step `k` has one creator for its `potrf` and `trsm`
//! tasks and up to 16 for its updates (one per group of tile rows), ordered by tile
//! tokens (see [`crate::control`]).
//!
//! The report's parameters carry `flops`, `n³ / 3` (the usual count for Cholesky), from
//! which `locus run` prints GFLOP/s.
//!
//! Verification: the unblocked left-looking factorisation over the whole matrix, in
//! Rust (it calls none of the tile kernels): every element subtracts the same products
//! in the same order as the tile kernels do (they subtract one product at a time into a
//! running value, never a separate sum), so the lower triangle must match bit for bit.
//!
//! # Sizes
//!
//! `n` a positive multiple of `tile`. The options of `locus run` / `locus sim` (see
//! [`crate::size`]) map as:
//!
//! - `--size N`: `n` = N;
//! - `--block-len L`: `tile` = L;
//! - `--blocks B`: `tile` = `n / B`;
//! - `--iterations N`: `repetitions` = N.

use std::os::raw::c_long;
use std::sync::Arc;

use locus::{Data, Read, ReadWrite, Runtime, Scope};
use serde::{Deserialize, Serialize};

use crate::control::{spawn_creator, split, Control, MAX_CREATORS};
use crate::replay::{Hints, Spawn};
use crate::size::{kernel_params, Axis, KernelParams, Options};

/// Size of the problem and control program.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Order of the matrix.
    pub n: usize,
    /// Order of a tile (divides `n`).
    pub tile: usize,
    /// Who submits the tasks.
    pub control: Control,
    /// Factorisations of the same matrix, each verified.
    #[serde(default = "one")]
    pub repetitions: usize,
}

fn one() -> usize {
    1
}

impl Default for Params {
    /// 512 × 512 in tiles of 64 (8 × 8 tiles, 120 tasks).
    fn default() -> Self {
        Params {
            n: 512,
            tile: 64,
            control: Control::Sequential,
            repetitions: 1,
        }
    }
}

impl Params {
    /// The simulator's paper-size equivalent: n = 32768 in tiles of 512 (64 × 64
    /// tiles, 8 GiB of matrix, half of it stored).
    pub fn paper() -> Self {
        Params {
            n: 32768,
            tile: 512,
            control: Control::Sequential,
            repetitions: 1,
        }
    }

    /// As [`Params::paper`].
    pub fn paper_sgi() -> Self {
        Params::paper()
    }

    /// 24 × 24 in tiles of 6 (4 × 4 tiles): for tests.
    pub fn tiny() -> Self {
        Params {
            n: 24,
            tile: 6,
            control: Control::Sequential,
            repetitions: 1,
        }
    }

    /// Checks every constraint the kernel relies on (see the [module docs](self)).
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.divides(("n", self.n), ("tile", self.tile))?;
        o.positive("repetitions", self.repetitions)?;
        o.elements::<f64>(&[("n", self.n), ("n", self.n)])?;
        o.blocks(&[
            ("n", self.n, "tile", self.tile),
            ("n", self.n, "tile", self.tile),
        ])?;
        if self.tile > c_long::MAX as usize / self.tile {
            return Err(format!(
                "cholesky: {} = {} is too large",
                o.label("tile"),
                self.tile
            ));
        }
        // The program's tasks are listed before they run.
        let tasks = tasks(self);
        if u128::from(tasks) > crate::size::MAX_BLOCKS {
            return Err(format!(
                "cholesky: {} / {} = {} tiles per side gives {tasks} tasks, more than the limit of 2^24",
                o.label("n"),
                o.label("tile"),
                self.tiles()
            ));
        }
        Ok(())
    }

    fn tiles(&self) -> usize {
        self.n / self.tile
    }

    /// Floating-point operations counted for GFLOP/s: `n³ / 3`.
    pub fn flops(&self) -> f64 {
        (self.n as f64).powi(3) / 3.0
    }
}

kernel_params!(
    Options {
        name: "cholesky",
        axes: &[Axis::Extent("n", "tile")],
        size: None,
        iterations: Some("repetitions"),
    },
    bytes: |p| {
        let nt = (p.n / p.tile.max(1)) as u64;
        (nt * (nt + 1) / 2).saturating_mul(crate::size::bytes::<f64>(&[p.tile, p.tile]))
    }
);

extern "C" {
    fn locus_cholesky_potrf(b: c_long, a: *mut f64);
    fn locus_cholesky_trsm(b: c_long, l: *const f64, a: *mut f64);
    fn locus_cholesky_syrk(b: c_long, a: *const f64, c: *mut f64);
    fn locus_cholesky_gemm(b: c_long, a: *const f64, bt: *const f64, c: *mut f64);
    fn locus_cholesky_initial(n: c_long, i: c_long, j: c_long) -> f64;
}

/// The tile kernels, over slices of `b × b` elements (checked: a slice of another
/// length panics), and the initial values: public so that other programs of the same
/// factorisation (the distributed one of `locus-mpi`) compute bit for bit the same.
pub mod tiles {
    use super::*;

    fn check(b: usize, tiles: &[usize]) -> c_long {
        assert!(tiles.iter().all(|&len| len == b * b), "tiles of {b} x {b}");
        b as c_long
    }

    /// Factorises the diagonal tile `a` in place (its lower triangle becomes `L`).
    pub fn potrf(b: usize, a: &mut [f64]) {
        let bl = check(b, &[a.len()]);
        // SAFETY: `a` holds the `b * b` elements the C function reads and writes
        // (checked), and nothing else aliases it (a `&mut`).
        unsafe { locus_cholesky_potrf(bl, a.as_mut_ptr()) }
    }

    /// Solves `a := a L⁻ᵀ` with the factorised diagonal tile `l`.
    pub fn trsm(b: usize, l: &[f64], a: &mut [f64]) {
        let bl = check(b, &[l.len(), a.len()]);
        // SAFETY: both slices hold `b * b` elements (checked); `a` is the only one
        // written and, a `&mut`, aliases nothing.
        unsafe { locus_cholesky_trsm(bl, l.as_ptr(), a.as_mut_ptr()) }
    }

    /// Updates the diagonal tile `c := c - a aᵀ` (lower triangle).
    pub fn syrk(b: usize, a: &[f64], c: &mut [f64]) {
        let bl = check(b, &[a.len(), c.len()]);
        // SAFETY: as `trsm`.
        unsafe { locus_cholesky_syrk(bl, a.as_ptr(), c.as_mut_ptr()) }
    }

    /// Updates `c := c - a btᵀ`.
    pub fn gemm(b: usize, a: &[f64], bt: &[f64], c: &mut [f64]) {
        let bl = check(b, &[a.len(), bt.len(), c.len()]);
        // SAFETY: as `trsm`, with two tiles read.
        unsafe { locus_cholesky_gemm(bl, a.as_ptr(), bt.as_ptr(), c.as_mut_ptr()) }
    }

    /// Element `(i, j)` of the initial `n × n` matrix.
    pub fn initial(n: usize, i: usize, j: usize) -> f64 {
        // SAFETY: a pure function of its integer arguments.
        unsafe { locus_cholesky_initial(n as c_long, i as c_long, j as c_long) }
    }
}

/// One task of the factorisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Task {
    Potrf { k: usize },
    Trsm { k: usize, i: usize },
    Syrk { k: usize, i: usize },
    Gemm { k: usize, i: usize, j: usize },
}

impl Task {
    /// The tiles the task only reads, and the one it reads and writes.
    fn touches(self) -> (Vec<(usize, usize)>, (usize, usize)) {
        match self {
            Task::Potrf { k } => (vec![], (k, k)),
            Task::Trsm { k, i } => (vec![(k, k)], (i, k)),
            Task::Syrk { k, i } => (vec![(i, k)], (i, i)),
            Task::Gemm { k, i, j } => (vec![(i, k), (j, k)], (i, j)),
        }
    }

    /// Floating-point operations on tiles of `b` (for the cost hint).
    fn flops(self, b: f64) -> f64 {
        match self {
            Task::Potrf { .. } => b * b * b / 3.0,
            Task::Trsm { .. } | Task::Syrk { .. } => b * b * b,
            Task::Gemm { .. } => 2.0 * b * b * b,
        }
    }
}

/// The tasks of each step.
fn steps(nt: usize) -> Vec<Vec<Task>> {
    (0..nt)
        .map(|k| {
            let mut tasks = vec![Task::Potrf { k }];
            tasks.extend((k + 1..nt).map(|i| Task::Trsm { k, i }));
            for i in k + 1..nt {
                tasks.push(Task::Syrk { k, i });
                tasks.extend((k + 1..i).map(|j| Task::Gemm { k, i, j }));
            }
            tasks
        })
        .collect()
}

/// Tasks the factorisations submit, creators excluded.
pub(crate) fn tasks(p: &Params) -> u64 {
    let nt = p.tiles() as u64;
    // Per step k with m = nt - 1 - k tiles below: 1 + m + m + m (m - 1) / 2.
    let factorisation: u64 = (0..nt)
        .map(|k| nt - 1 - k)
        .map(|m| 1 + 2 * m + m * m.saturating_sub(1) / 2)
        .sum();
    let resets = if p.repetitions > 1 {
        nt * (nt + 1) / 2
    } else {
        0
    };
    (factorisation + resets).saturating_mul(p.repetitions as u64)
}

/// Index of tile `(i, j)`, `j <= i`, among the lower triangle's tiles.
fn slot(i: usize, j: usize) -> usize {
    i * (i + 1) / 2 + j
}

/// The sequential reference: the unblocked left-looking factorisation of the whole
/// `n × n` matrix (row-major; the lower triangle holds `L`, the upper is left as is).
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if the matrix cannot be allocated.
///
/// # Panics
///
/// If the parameters do not pass [`Params::validate`].
pub fn reference(p: &Params) -> Result<Vec<f64>, crate::Error> {
    if let Err(e) = p.validate() {
        panic!("{e}");
    }
    let n = p.n;
    let mut a = crate::alloc::collected(
        "the cholesky reference's matrix",
        n * n,
        (0..n * n).map(|q| tiles::initial(n, q / n, q % n)),
    )?;
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= a[j * n + k] * a[j * n + k];
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut v = a[i * n + j];
            for k in 0..j {
                v -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = v / d;
        }
    }
    Ok(a)
}

/// The tiles of the lower triangle, by [`slot`].
type Tiles = Vec<Data<f64>>;

fn submit(s: &impl Spawn, tiles: &Tiles, b: usize, task: Task) -> Result<(), locus::Error> {
    let at = |i: usize, j: usize| &tiles[slot(i, j)];
    let hints = Hints {
        affinity: None,
        cost: Some((task.flops(b as f64) / 2.6).round() as u64),
    };
    match task {
        Task::Potrf { k } => s.spawn_hinted("potrf", at(k, k).read_write(), hints, move |a| {
            tiles::potrf(b, a)
        }),
        Task::Trsm { k, i } => s.spawn_hinted(
            "trsm",
            (at(k, k).read(), at(i, k).read_write()),
            hints,
            move |(l, a)| tiles::trsm(b, l, a),
        ),
        Task::Syrk { k, i } => s.spawn_hinted(
            "syrk",
            (at(i, k).read(), at(i, i).read_write()),
            hints,
            move |(a, c)| tiles::syrk(b, a, c),
        ),
        Task::Gemm { k, i, j } => s.spawn_hinted(
            "gemm",
            (at(i, k).read(), at(j, k).read(), at(i, j).read_write()),
            hints,
            move |(a, bt, c)| tiles::gemm(b, a, bt, c),
        ),
    }
}

/// Submits (or records) the tasks writing every tile's initial values again, before a
/// repeated factorisation.
fn reset(s: &impl Spawn, tiles: &Tiles, p: &Params) -> Result<(), locus::Error> {
    let (nt, b, n) = (p.tiles(), p.tile, p.n);
    for i in 0..nt {
        for j in 0..=i {
            s.spawn_task("reset", tiles[slot(i, j)].write(), move |a| {
                for (q, o) in a.iter_mut().enumerate() {
                    *o = tiles::initial(n, i * b + q / b, j * b + q % b);
                }
            })?;
        }
    }
    Ok(())
}

/// Spawns a creator submitting `group`: it reads the tokens of the tiles the group only
/// reads and reads-writes those of the tiles it writes.
fn spawn_group(
    s: &Scope,
    tiles: &Arc<Tiles>,
    tokens: &[Data<u64>],
    b: usize,
    group: Vec<Task>,
) -> Result<(), locus::Error> {
    let mut written = vec![false; tokens.len()];
    let mut read = vec![false; tokens.len()];
    for &t in &group {
        let (reads, (wi, wj)) = t.touches();
        written[slot(wi, wj)] = true;
        for (ri, rj) in reads {
            read[slot(ri, rj)] = true;
        }
    }
    let reads: Vec<Read<u64>> = (0..tokens.len())
        .filter(|&t| read[t] && !written[t])
        .map(|t| tokens[t].read())
        .collect();
    let writes: Vec<ReadWrite<u64>> = (0..tokens.len())
        .filter(|&t| written[t])
        .map(|t| tokens[t].read_write())
        .collect();
    let tiles = tiles.clone();
    spawn_creator(s, (reads, writes), move |s| {
        group.into_iter().try_for_each(|t| submit(s, &tiles, b, t))
    })
}

/// The initial values of tile `(ti, tj)`, row-major.
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if the tile cannot be allocated.
pub fn initial_tile(p: &Params, ti: usize, tj: usize) -> Result<Vec<f64>, crate::Error> {
    let b = p.tile;
    crate::alloc::collected(
        "the initial values of a tile",
        b * b,
        (0..b * b).map(|q| tiles::initial(p.n, ti * b + q / b, tj * b + q % b)),
    )
}

/// Builds, runs and verifies the factorisations against [`reference()`].
pub fn run(rt: &Runtime, p: &Params) -> Result<crate::Outcome, crate::Error> {
    run_against(rt, p, || reference(p))
}

/// The tiles of the lower triangle, with their initial values.
fn initial_tiles(rt: &Runtime, p: &Params) -> Result<Arc<Tiles>, crate::Error> {
    let (nt, b) = (p.tiles(), p.tile);
    let mut tiles = Vec::with_capacity(nt * (nt + 1) / 2);
    for i in 0..nt {
        for j in 0..=i {
            tiles.push(crate::initial(rt, format!("tile{i}.{j}"), b * b, || {
                initial_tile(p, i, j)
            })?);
        }
    }
    Ok(Arc::new(tiles))
}

/// [`run`], comparing the result with `want()` (the whole matrix, row-major).
pub(crate) fn run_against(
    rt: &Runtime,
    p: &Params,
    want: impl FnOnce() -> Result<Vec<f64>, crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    let (nt, b) = (p.tiles(), p.tile);
    let tiles = initial_tiles(rt, p)?;
    let tokens: Vec<Data<u64>> = match p.control {
        Control::Sequential => Vec::new(),
        Control::Parallel => (0..tiles.len())
            .map(|t| rt.data(format!("token{t}"), 1))
            .collect(),
    };
    let steps = steps(nt);
    let mut check = Repetitions::new(rt, p, want);
    for _ in 0..p.repetitions {
        let finished = rt.run(|s| -> Result<(), locus::Error> {
            if p.repetitions > 1 {
                reset(s, &tiles, p)?;
            }
            for tasks in &steps {
                match p.control {
                    Control::Sequential => {
                        for &t in tasks {
                            submit(s, &tiles, b, t)?;
                        }
                    }
                    Control::Parallel => {
                        let panel = tasks
                            .iter()
                            .take_while(|t| matches!(t, Task::Potrf { .. } | Task::Trsm { .. }))
                            .count();
                        spawn_group(s, &tiles, &tokens, b, tasks[..panel].to_vec())?;
                        let updates = &tasks[panel..];
                        let row = |t: &Task| match *t {
                            Task::Syrk { i, .. } | Task::Gemm { i, .. } => i,
                            _ => unreachable!("updates are syrk and gemm tasks"),
                        };
                        let mut rows: Vec<usize> = updates.iter().map(row).collect();
                        rows.dedup();
                        // Groups of whole tile rows, so no two creators write one tile.
                        for r in split(rows.len(), MAX_CREATORS) {
                            let chosen = &rows[r];
                            let group: Vec<Task> = updates
                                .iter()
                                .filter(|t| chosen.contains(&row(t)))
                                .copied()
                                .collect();
                            spawn_group(s, &tiles, &tokens, b, group)?;
                        }
                    }
                }
            }
            Ok(())
        })?;
        check.then(&tiles, crate::finished(finished)?.1)?;
    }
    check.finish()
}

/// [`run`] as a recorded graph (`--replay`): one factorisation (after its resets when
/// `repetitions` is above 1) recorded once and replayed once per repetition, each
/// verified. Sequential control only.
pub fn run_replay(rt: &Runtime, p: &Params) -> Result<crate::Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    crate::replay::sequential_only(p.control)?;
    let tiles = initial_tiles(rt, p)?;
    let steps = steps(p.tiles());
    let mut graph = rt.record("cholesky", |r| {
        if p.repetitions > 1 {
            reset(r, &tiles, p)?;
        }
        steps
            .iter()
            .flatten()
            .try_for_each(|&t| submit(r, &tiles, p.tile, t))
    })?;
    let mut check = Repetitions::new(rt, p, || reference(p));
    for _ in 0..p.repetitions {
        check.then(&tiles, rt.replay(&mut graph, 1)?)?;
    }
    check.finish()
}

/// The verification of each factorisation, and the reports of all.
struct Repetitions<'a, W> {
    rt: &'a Runtime,
    p: &'a Params,
    /// The reference, until computed (once, at the first check).
    want: Option<W>,
    reference: Vec<f64>,
    mismatch: Option<crate::Mismatch>,
    report: Option<locus::Report>,
}

impl<'a, W: FnOnce() -> Result<Vec<f64>, crate::Error>> Repetitions<'a, W> {
    fn new(rt: &'a Runtime, p: &'a Params, want: W) -> Self {
        Repetitions {
            rt,
            p,
            want: Some(want),
            reference: Vec::new(),
            mismatch: None,
            report: None,
        }
    }

    /// Adds the report of one factorisation and checks its tiles (the first mismatch
    /// is kept).
    fn then(&mut self, tiles: &Tiles, report: locus::Report) -> Result<(), crate::Error> {
        match &mut self.report {
            Some(all) => crate::replay::then_replayed(all, &report),
            None => self.report = Some(report),
        }
        if self.rt.skips_bodies() || self.mismatch.is_some() {
            return Ok(());
        }
        if let Some(want) = self.want.take() {
            self.reference = want()?;
        }
        let (nt, b, n) = (self.p.tiles(), self.p.tile, self.p.n);
        let mut check = crate::verify::Check::new();
        for i in 0..nt {
            for j in 0..=i {
                let got = self.rt.fetch(&tiles[slot(i, j)])?;
                // The lower triangle only: the upper part of a diagonal tile is not L.
                let lower: Vec<usize> = (0..b * b).filter(|&q| i != j || q % b <= q / b).collect();
                let got: Vec<f64> = lower.iter().map(|&q| got[q]).collect();
                check.block("matrix", &got, &self.reference, |x| {
                    let q = lower[x];
                    (i * b + q / b) * n + j * b + q % b
                });
            }
        }
        self.mismatch = check.finish();
        Ok(())
    }

    fn finish(self) -> Result<crate::Outcome, crate::Error> {
        let report = self
            .report
            .expect("validated parameters ask for at least one factorisation");
        if self.rt.skips_bodies() {
            return Ok(crate::Outcome::unchecked(report));
        }
        Ok(crate::Outcome::checked(report, self.mismatch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_count_matches_the_steps() {
        for nt in 1..12 {
            let p = Params {
                n: nt * 2,
                tile: 2,
                ..Params::tiny()
            };
            let listed: usize = steps(nt).iter().map(Vec::len).sum();
            assert_eq!(tasks(&p), listed as u64, "{nt} tiles");
        }
        // 4 × 4 tiles: 4 potrf, 6 trsm, 6 syrk, 4 gemm.
        assert_eq!(tasks(&Params::tiny()), 20);
    }

    /// The C tile kernels, run in step order on plain vectors, equal the unblocked
    /// reference bit for bit, and the factor reproduces the matrix.
    #[test]
    fn tiled_kernels_equal_the_unblocked_factorisation() {
        for (n, tile) in [(6, 6), (12, 3), (24, 6), (20, 4)] {
            let p = Params {
                n,
                tile,
                ..Params::tiny()
            };
            let nt = n / tile;
            let mut t: Vec<Vec<f64>> = (0..nt)
                .flat_map(|i| (0..=i).map(move |j| (i, j)))
                .map(|(i, j)| initial_tile(&p, i, j).unwrap())
                .collect();
            for task in steps(nt).into_iter().flatten() {
                let (reads, (wi, wj)) = task.touches();
                let mut out = std::mem::take(&mut t[slot(wi, wj)]);
                let r: Vec<&[f64]> = reads.iter().map(|&(i, j)| &t[slot(i, j)][..]).collect();
                match task {
                    Task::Potrf { .. } => tiles::potrf(tile, &mut out),
                    Task::Trsm { .. } => tiles::trsm(tile, r[0], &mut out),
                    Task::Syrk { .. } => tiles::syrk(tile, r[0], &mut out),
                    Task::Gemm { .. } => tiles::gemm(tile, r[0], r[1], &mut out),
                }
                t[slot(wi, wj)] = out;
            }
            let want = reference(&p).unwrap();
            for i in 0..n {
                for j in 0..=i {
                    let got = t[slot(i / tile, j / tile)][(i % tile) * tile + j % tile];
                    assert_eq!(got.to_bits(), want[i * n + j].to_bits(), "({i}, {j})");
                }
            }
            // L Lᵀ is the initial matrix, to rounding.
            for i in 0..n {
                for j in 0..=i {
                    let s: f64 = (0..=j).map(|k| want[i * n + k] * want[j * n + k]).sum();
                    let a = tiles::initial(n, i, j);
                    assert!((s - a).abs() < 1e-9 * n as f64, "({i}, {j}): {s} vs {a}");
                }
            }
        }
    }

    #[test]
    fn paper_size_is_32768_in_tiles_of_512() {
        let p = Params::paper();
        assert_eq!((p.n, p.tile), (32768, 512));
        assert!(p.validate().is_ok());
    }
}
