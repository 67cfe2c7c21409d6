//! `stream`: McCalpin's STREAM (copy, scale, add, triad) over three vectors of
//! doubles, one task per block, as Broquedis et al., "Dynamic Task and Data Placement
//! over NUMA Architectures: An OpenMP Runtime Perspective" (ForestGOMP and MaMI) run
//! it; and the engine of its two variants, [`nested_stream`](crate::nested_stream) and
//! [`twisted_stream`](crate::twisted_stream).
//!
//! Each vector is cut into blocks of `block_len` elements (the last one shorter), each
//! block a shared datum placed by first touch (`RegionPolicy::FirstTouch`):
//! the vectors are updated in place, as in STREAM. One initialisation task per block
//! writes the three blocks (initialised in parallel, by tasks); then each of the
//! `iterations` iterations runs the four operations, each its own run (STREAM's
//! barrier between operations), one task per block:
//!
//! - copy `c = a`, scale `b = s c`, add `c = a + b`, triad `a = b + s c` (`s = 3`).
//!
//! In `stream` block `i` of every vector and every operation is bound (strictly) to
//! worker `i × workers / blocks`, OpenMP's static schedule, so that a block is touched
//! first and swept by one worker, as with pinned OpenMP threads.
//!
//! Each operation's rate counts STREAM's bytes (copy and scale 16 bytes per element,
//! add and triad 24) over the time of its run; the figures give the best and the
//! average rate of each operation over the iterations, in MB/s (10^6 bytes).
//!
//! Verification: bitwise equality of the three vectors with a sequential loop of the
//! same operations.
//!
//! # Sizes
//!
//! - `--size N`: `len`, elements per vector (nested and twisted: all groups together);
//! - `--block-len L`: `block_len`, elements per block (per task);
//! - `--iterations N`: `iterations`.
//!
//! Paper size: 20 million doubles per vector (160 MB, STREAM's and ForestGOMP's),
//! blocks of 312 500 (64 blocks: four per core of the 16-core Opteron), 10 iterations
//! (STREAM's `NTIMES`).

use locus::{Affinity, Data, RegionPolicy, Runtime};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::size::{kernel_params, Axis, Options};

/// STREAM's scalar.
pub const SCALAR: f64 = 3.0;

/// Size of the problem.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Elements per vector.
    pub len: usize,
    /// Elements per block (one task per block and operation).
    pub block_len: usize,
    /// Iterations of the four operations.
    pub iterations: usize,
}

impl Default for Params {
    /// 2^20 elements per vector (8 MiB), blocks of 2^16, 5 iterations.
    fn default() -> Self {
        Params {
            len: 1 << 20,
            block_len: 1 << 16,
            iterations: 5,
        }
    }
}

impl Params {
    /// 20 million doubles per vector in 64 blocks, 10 iterations.
    pub fn paper() -> Self {
        Params {
            len: PAPER_LEN,
            block_len: PAPER_LEN / 64,
            iterations: 10,
        }
    }

    /// The same problem (paper 2 has one machine).
    pub fn paper_sgi() -> Self {
        Params::paper()
    }

    /// 4096 elements in blocks of 512, 2 iterations: for tests.
    pub fn tiny() -> Self {
        Params {
            len: 4096,
            block_len: 512,
            iterations: 2,
        }
    }

    /// At least one element, block and iteration; bounded sizes.
    pub fn validate(&self) -> Result<(), String> {
        check(&STREAM, self.len, self.block_len, self.iterations)?;
        crate::size::finishes(self)
    }

    fn shape(&self) -> Shape {
        Shape {
            len: self.len,
            block_len: self.block_len,
            iterations: self.iterations,
        }
    }
}

/// STREAM's vectors at paper size: 20 million doubles.
pub const PAPER_LEN: usize = 20_000_000;

pub(crate) const STREAM: Options = Options {
    name: "stream",
    axes: &[Axis::Extent("len", "block_len")],
    size: None,
    iterations: Some("iterations"),
};

kernel_params!(STREAM, bytes: |p| crate::size::bytes::<f64>(&[p.len, 3]));

/// The checks every STREAM variant shares.
pub(crate) fn check(
    o: &Options,
    len: usize,
    block_len: usize,
    iterations: usize,
) -> Result<(), String> {
    o.positive("len", len)?;
    o.positive("block_len", block_len)?;
    o.positive("iterations", iterations)?;
    o.elements::<f64>(&[("len", len)])?;
    if 3 * len as u128 > crate::size::MAX_ELEMENTS {
        return Err(format!(
            "{}: {} = {len}: the three vectors hold more than 2^48 elements",
            o.name,
            o.label("len")
        ));
    }
    o.count("blocks", &[("len", len.div_ceil(block_len))])?;
    o.tasks(&[("len", len.div_ceil(block_len)), ("iterations", iterations)])
}

/// Vector length, block length and iterations of a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    pub len: usize,
    pub block_len: usize,
    pub iterations: usize,
}

/// The initial value of element `i` (the whole vector's index) of vector `v` (0: `a`,
/// 1: `b`, 2: `c`): varied, so that a block put in the wrong place shows.
pub(crate) fn initial(v: usize, i: usize) -> f64 {
    match v {
        0 => 1.0 + (i % 13) as f64 * 0.125,
        1 => 2.0 + (i % 7) as f64 * 0.25,
        _ => 0.5 * (i % 5) as f64,
    }
}

/// A STREAM operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Copy,
    Scale,
    Add,
    Triad,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Copy, Op::Scale, Op::Add, Op::Triad];

    pub fn name(self) -> &'static str {
        match self {
            Op::Copy => "copy",
            Op::Scale => "scale",
            Op::Add => "add",
            Op::Triad => "triad",
        }
    }

    /// STREAM's bytes per element: two arrays for copy and scale, three for the others.
    pub fn bytes_per_element(self) -> u64 {
        match self {
            Op::Copy | Op::Scale => 16,
            Op::Add | Op::Triad => 24,
        }
    }

    /// The operation on vectors `[a, b, c]`, sequentially.
    fn apply(self, v: &mut [Vec<f64>; 3]) {
        let [a, b, c] = v;
        match self {
            Op::Copy => c.copy_from_slice(a),
            Op::Scale => b
                .iter_mut()
                .zip(c.iter())
                .for_each(|(b, c)| *b = SCALAR * c),
            Op::Add => c
                .iter_mut()
                .zip(a.iter().zip(b.iter()))
                .for_each(|(c, (a, b))| *c = a + b),
            Op::Triad => a
                .iter_mut()
                .zip(b.iter().zip(c.iter()))
                .for_each(|(a, (b, c))| *a = b + SCALAR * c),
        }
    }
}

/// One set of three vectors (`a`, `b`, `c`), each a list of blocks.
#[derive(Clone)]
pub(crate) struct Vectors {
    /// Name of the set, for data names: `stream`, `stream.g2`.
    pub name: String,
    /// Offset of the set's first element in the reference's layout.
    pub offset: usize,
    /// Elements per vector.
    pub len: usize,
    /// Elements per block.
    pub block_len: usize,
    /// `blocks[v][i]`: block `i` of vector `v`.
    pub blocks: [Vec<Data<f64>>; 3],
}

impl Vectors {
    /// The three vectors of `len` elements in blocks of `block_len`, first-touch
    /// shared data.
    pub fn new(
        rt: &Runtime,
        name: String,
        offset: usize,
        len: usize,
        block_len: usize,
    ) -> Result<Vectors, crate::Error> {
        let nblocks = len.div_ceil(block_len);
        let mut blocks: [Vec<Data<f64>>; 3] = Default::default();
        for (v, list) in blocks.iter_mut().enumerate() {
            for i in 0..nblocks {
                let n = block_len.min(len - i * block_len);
                list.push(rt.shared::<f64>(
                    format!("{name}.{}{i}", ["a", "b", "c"][v]),
                    n,
                    RegionPolicy::FirstTouch,
                )?);
            }
        }
        Ok(Vectors {
            name,
            offset,
            len,
            block_len,
            blocks,
        })
    }

    pub fn nblocks(&self) -> usize {
        self.blocks[0].len()
    }

    /// First element of block `i`, in the reference's layout.
    fn start(&self, i: usize) -> usize {
        self.offset + i * self.block_len
    }
}

/// Where a block's tasks run.
pub(crate) type Place<'a> = &'a dyn Fn(usize) -> Affinity;

/// Spawns the initialisation task of every block of `v`, placed by `place(block)`.
pub(crate) fn spawn_init(s: &locus::Scope, v: &Vectors, place: Place) -> Result<(), locus::Error> {
    for i in 0..v.nblocks() {
        let start = v.start(i);
        s.task(
            "stream-init",
            (
                v.blocks[0][i].write(),
                v.blocks[1][i].write(),
                v.blocks[2][i].write(),
            ),
        )
        .affinity(place(i))
        .spawn(move |_, (a, b, c)| {
            for (k, ((a, b), c)) in a.iter_mut().zip(b.iter_mut()).zip(c.iter_mut()).enumerate() {
                *a = initial(0, start + k);
                *b = initial(1, start + k);
                *c = initial(2, start + k);
            }
        })?;
    }
    Ok(())
}

/// Spawns `op` over every block of `v`, placed by `place(block)`.
pub(crate) fn spawn_op(
    s: &locus::Scope,
    op: Op,
    v: &Vectors,
    place: Place,
) -> Result<(), locus::Error> {
    spawn_op_over(s, op, [&v.blocks[0], &v.blocks[1], &v.blocks[2]], place)
}

/// Spawns `op` over the blocks of three vectors `[a, b, c]` (which may belong to
/// different sets, of equal blocks), placed by `place(block)`.
pub(crate) fn spawn_op_over(
    s: &locus::Scope,
    op: Op,
    [a, b, c]: [&Vec<Data<f64>>; 3],
    place: Place,
) -> Result<(), locus::Error> {
    for i in 0..a.len() {
        let hint = place(i);
        match op {
            Op::Copy => s
                .task("copy", (a[i].read(), c[i].write()))
                .affinity(hint)
                .spawn(|_, (a, c)| c.copy_from_slice(a))?,
            Op::Scale => s
                .task("scale", (c[i].read(), b[i].write()))
                .affinity(hint)
                .spawn(|_, (c, b)| {
                    for (b, c) in b.iter_mut().zip(c) {
                        *b = SCALAR * c;
                    }
                })?,
            Op::Add => s
                .task("add", (a[i].read(), b[i].read(), c[i].write()))
                .affinity(hint)
                .spawn(|_, (a, b, c)| {
                    for (c, (a, b)) in c.iter_mut().zip(a.iter().zip(b)) {
                        *c = a + b;
                    }
                })?,
            Op::Triad => s
                .task("triad", (b[i].read(), c[i].read(), a[i].write()))
                .affinity(hint)
                .spawn(|_, (b, c, a)| {
                    for (a, (b, c)) in a.iter_mut().zip(b.iter().zip(c)) {
                        *a = b + SCALAR * c;
                    }
                })?,
        }
    }
    Ok(())
}

/// The reference's vectors of a set: initialised as [`spawn_init`] does.
pub(crate) fn reference_set(offset: usize, len: usize) -> Result<[Vec<f64>; 3], crate::Error> {
    let vector = |v: usize| {
        crate::alloc::collected(
            "a STREAM reference vector",
            len,
            (0..len).map(move |i| initial(v, offset + i)),
        )
    };
    Ok([vector(0)?, vector(1)?, vector(2)?])
}

/// Applies `op` to the reference's vectors.
pub(crate) fn reference_op(op: Op, v: &mut [Vec<f64>; 3]) {
    op.apply(v)
}

/// Compares the blocks of the run's vectors `got` (`[a, b, c]` lists of blocks) with
/// `want`, the reference's vectors of the same set, named `what`.
pub(crate) fn check_set(
    rt: &Runtime,
    check: &mut crate::verify::Check,
    what: &str,
    got: &Vectors,
    want: &[Vec<f64>; 3],
) -> Result<(), crate::Error> {
    for (v, blocks) in got.blocks.iter().enumerate() {
        let name = format!("{what}.{}", ["a", "b", "c"][v]);
        for (i, d) in blocks.iter().enumerate() {
            let start = i * got.block_len;
            check.block(&name, &rt.fetch(d)?, &want[v], |q| start + q);
        }
    }
    Ok(())
}

/// Times of the runs of each operation, to rates.
#[derive(Default)]
pub(crate) struct Rates {
    /// `(operation, bytes, seconds)` of every timed run.
    runs: Vec<(&'static str, u64, f64)>,
}

impl Rates {
    pub fn add(&mut self, op: &'static str, bytes: u64, seconds: f64) {
        self.runs.push((op, bytes, seconds));
    }

    /// `{op: {"best_mb_s", "avg_mb_s", "min_s", "avg_s"}}` for each operation timed.
    pub fn figures(&self, ops: &[&'static str]) -> Map<String, Value> {
        let mut out = Map::new();
        for &op in ops {
            let runs: Vec<_> = self.runs.iter().filter(|r| r.0 == op).collect();
            if runs.is_empty() {
                continue;
            }
            let bytes = runs[0].1 as f64;
            let min = runs.iter().map(|r| r.2).fold(f64::INFINITY, f64::min);
            let avg = runs.iter().map(|r| r.2).sum::<f64>() / runs.len() as f64;
            let rate = |s: f64| if s > 0.0 { bytes / s / 1e6 } else { 0.0 };
            out.insert(
                op.to_string(),
                json!({"best_mb_s": rate(min), "avg_mb_s": rate(avg), "min_s": min, "avg_s": avg}),
            );
        }
        out
    }
}

/// Runs one program on `rt` and adds its report to `total`; gives its time.
pub(crate) fn timed_run(
    rt: &Runtime,
    total: &mut Option<locus::Report>,
    program: impl FnOnce(&locus::Scope) -> Result<(), locus::Error> + Send,
) -> Result<f64, crate::Error> {
    let finished = rt.run(program)?;
    let ((), report) = crate::finished(finished)?;
    let seconds = report.wall_s;
    match total {
        Some(t) => t.then(&report),
        None => *total = Some(report),
    }
    Ok(seconds)
}

/// The outcome and figures of a run of one of the STREAM family.
pub(crate) struct Run {
    pub outcome: crate::Outcome,
    pub figures: Value,
}

/// Runs `stream`, or (`groups`, `place_of_group`) `nested-stream`: `groups` sets of
/// vectors of `len / groups` elements (the first sets one more when it does not
/// divide), set `g`'s tasks placed by `place(g, block)`.
pub(crate) fn run_sets(
    rt: &Runtime,
    shape: Shape,
    groups: usize,
    place: &(dyn Fn(usize, usize, usize) -> Affinity + Sync),
    name: &str,
    flip: Option<usize>,
) -> Result<Run, crate::Error> {
    let sets = make_sets(rt, name, shape, groups)?;
    let mut total = None;
    let mut rates = Rates::default();
    let init_s = timed_run(rt, &mut total, |s| {
        for (g, v) in sets.iter().enumerate() {
            spawn_init(s, v, &|i| place(g, i, v.nblocks()))?;
        }
        Ok(())
    })?;
    for _ in 0..shape.iterations {
        for op in Op::ALL {
            let seconds = timed_run(rt, &mut total, |s| {
                for (g, v) in sets.iter().enumerate() {
                    spawn_op(s, op, v, &|i| place(g, i, v.nblocks()))?;
                }
                Ok(())
            })?;
            rates.add(
                op.name(),
                op.bytes_per_element() * shape.len as u64,
                seconds,
            );
        }
    }
    let report = total.expect("at least the initialisation ran");
    let mut figures = rates.figures(&Op::ALL.map(Op::name));
    figures.insert("init_s".into(), json!(init_s));
    let figures = Value::Object(figures);
    if rt.skips_bodies() {
        return Ok(Run {
            outcome: crate::Outcome::unchecked(report),
            figures,
        });
    }
    let mut check = crate::verify::Check::new();
    for (g, v) in sets.iter().enumerate() {
        let mut want = reference_set(v.offset, v.len)?;
        for _ in 0..shape.iterations {
            for op in Op::ALL {
                reference_op(op, &mut want);
            }
        }
        if g == 0 {
            flip_at(&mut want[0], flip);
        }
        check_set(rt, &mut check, &v.name, v, &want)?;
    }
    Ok(Run {
        outcome: crate::Outcome::checked(report, check.finish()),
        figures,
    })
}

/// Changes element `at` (if any) of a reference vector in its lowest bit: the tests
/// check that a run is compared with its reference element by element.
pub(crate) fn flip_at(v: &mut [f64], at: Option<usize>) {
    if let Some(i) = at {
        v[i] = f64::from_bits(v[i].to_bits() ^ 1);
    }
}

/// `groups` sets of vectors splitting `shape.len` elements.
pub(crate) fn make_sets(
    rt: &Runtime,
    name: &str,
    shape: Shape,
    groups: usize,
) -> Result<Vec<Vectors>, crate::Error> {
    let mut sets = Vec::with_capacity(groups);
    let mut offset = 0;
    for g in 0..groups {
        let len = shape.len / groups + usize::from(g < shape.len % groups);
        let set_name = if groups == 1 {
            name.to_string()
        } else {
            format!("{name}.g{g}")
        };
        sets.push(Vectors::new(rt, set_name, offset, len, shape.block_len)?);
        offset += len;
    }
    Ok(sets)
}

/// Blocks of `len` elements split into `groups` sets of blocks of `block_len`.
pub(crate) fn blocks_of(len: usize, block_len: usize, groups: usize) -> u64 {
    (0..groups)
        .map(|g| (len / groups + usize::from(g < len % groups)).div_ceil(block_len) as u64)
        .sum()
}

/// Runs `stream`; see the module documentation.
pub fn run(rt: &Runtime, p: &Params) -> Result<(crate::Outcome, Value), crate::Error> {
    run_flipped(rt, p, None)
}

/// [`run`] against the reference with element `flip` of `a` changed.
fn run_flipped(
    rt: &Runtime,
    p: &Params,
    flip: Option<usize>,
) -> Result<(crate::Outcome, Value), crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    let workers = rt.workers();
    let place = move |_g: usize, i: usize, blocks: usize| {
        Affinity::worker(crate::affinity::owner_of(i, blocks, workers)).strict()
    };
    let run = run_sets(rt, p.shape(), 1, &place, "stream", flip)?;
    Ok((run.outcome, run.figures))
}

/// [`run`] against the reference with element `flip` of `a` changed (tests).
#[cfg(test)]
pub(crate) fn run_against(
    rt: &Runtime,
    p: &Params,
    flip: Option<usize>,
) -> Result<crate::Outcome, crate::Error> {
    run_flipped(rt, p, flip).map(|(out, _)| out)
}

/// Tasks of `stream` (and `nested-stream`) over `blocks` blocks in all.
pub(crate) fn tasks(blocks: u64, iterations: usize) -> u64 {
    blocks.saturating_mul(1 + 4 * iterations as u64)
}

impl Params {
    /// Tasks the program describes: one initialisation and four operations per block
    /// and iteration.
    pub fn tasks(&self) -> u64 {
        tasks(blocks_of(self.len, self.block_len, 1), self.iterations)
    }
}
