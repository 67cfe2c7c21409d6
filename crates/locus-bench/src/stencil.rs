//! Blocked Von Neumann stencils in one to three dimensions, with task-private versioned
//! data: the engine behind `jacobi-2d`, `jacobi-3d`, `seidel-1d`, `seidel-2d` and
//! `seidel-3d` (and the parallel control program of `jacobi-1d`).
//!
//! The array (`z × y × x`, slowest axis first) is cut into blocks, each a datum. Task
//! `(t, block)` reads its block's previous version whole, one face of each neighbour
//! (the halo) and writes the block's next version (paper 1 Figure 4a-c). A face that is
//! contiguous in the neighbour's layout (a plane across the slowest axis, a row in 2-D,
//! an element in 1-D) is read as a range of the neighbour's block; the other faces are
//! written by each task as separate small outputs, as in paper 1's DSA codes, so that the
//! block accounts for most of the input bytes and metrics count only what is read.
//!
//! Blocks are double-buffered by handle (two sets); every write is a new version anyway.
//! A Jacobi sweep reads all neighbours from the previous iteration. A Gauss-Seidel sweep
//! updates each block in place, in lexicographic block order: the lower neighbours (and
//! the lower points within the block) come from the current iteration, the upper ones
//! from the previous. With a Von Neumann neighbourhood this is exactly the classic
//! in-place sweep over the whole array, which is the reference.
//!
//! Every point is computed with the same operands in the same order as the kernel's
//! reference (its own loop over the whole array, in the kernel's module), so results are
//! compared bit for bit.

use std::sync::Arc;

use locus::{Affinity, Data, Read, Recorder, Runtime, Scope, Write};

use crate::affinity::{hinted, owner_of, AffinityMode};
use crate::control::{opt, spawn_creator, split, BandTokens, Control, MAX_CREATORS};

/// How a sweep uses the values of the current iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sweep {
    /// Out of place: every neighbour from the previous iteration.
    Jacobi,
    /// In place: lower neighbours from the current iteration.
    Seidel,
}

/// A blocked stencil problem.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grid {
    /// Task name.
    pub name: &'static str,
    /// Jacobi or Gauss-Seidel.
    pub sweep: Sweep,
    /// Number of active axes: the last `dims` of `z, y, x`.
    pub dims: usize,
    /// Extents of the array (`z, y, x`); 1 on inactive axes.
    pub n: [usize; 3],
    /// Extents of a block; 1 on inactive axes.
    pub b: [usize; 3],
    /// Iterations.
    pub iterations: usize,
    /// Control program.
    pub control: Control,
}

impl Grid {
    /// The grid's invariants. Every kernel's `Params::validate` has checked them (with a
    /// message naming the option) before a grid is built, so a failure here is a bug.
    fn check(&self) {
        for a in 0..3 {
            assert!(self.b[a] > 0, "{}: empty blocks", self.name);
            assert!(
                self.n[a] % self.b[a] == 0 && self.n[a] > 0,
                "{}: extent {} is not a positive multiple of the block extent {}",
                self.name,
                self.n[a],
                self.b[a]
            );
            if !self.active(a) {
                assert!(
                    self.n[a] == 1,
                    "{}: inactive axis {a} has extent {}",
                    self.name,
                    self.n[a]
                );
            }
        }
    }

    fn active(&self, a: usize) -> bool {
        a >= 3 - self.dims
    }

    /// Blocks along each axis.
    fn nb(&self) -> [usize; 3] {
        [0, 1, 2].map(|a| self.n[a] / self.b[a])
    }

    fn blocks(&self) -> usize {
        self.nb().iter().product()
    }

    /// Tasks the sweep submits, creators excluded: one per block per iteration.
    pub(crate) fn tasks(&self) -> u64 {
        (self.blocks() * self.iterations) as u64
    }

    fn block_len(&self) -> usize {
        self.b.iter().product()
    }

    /// Whether the faces across axis `a` are contiguous in a block's layout (every
    /// slower axis has block extent 1): they are then read as ranges of the block.
    fn contiguous(&self, a: usize) -> bool {
        self.b[..a].iter().all(|&e| e == 1)
    }

    /// Whether tasks write the faces across axis `a` as separate outputs.
    fn has_faces(&self, a: usize) -> bool {
        self.active(a) && self.nb()[a] > 1 && !self.contiguous(a)
    }

    /// Elements of a face across axis `a`.
    fn face_len(&self, a: usize) -> usize {
        self.block_len() / self.b[a]
    }

    /// The range of a block holding its face across a contiguous axis `a` (`hi`: the
    /// last plane, else the first).
    fn plane(&self, a: usize, hi: bool) -> std::ops::Range<usize> {
        let plane = self.face_len(a);
        let first = if hi { (self.b[a] - 1) * plane } else { 0 };
        first..first + plane
    }
}

/// Strides of a row-major `z × y × x` layout of extents `e`.
fn strides(e: [usize; 3]) -> [usize; 3] {
    [e[1] * e[2], e[2], 1]
}

fn coords(i: usize, e: [usize; 3]) -> [usize; 3] {
    [i / (e[1] * e[2]), (i / e[2]) % e[1], i % e[2]]
}

/// Index within a face across axis `a` of the point at block coordinates `c`: the other
/// coordinates, row-major.
fn face_index(a: usize, c: [usize; 3], b: [usize; 3]) -> usize {
    match a {
        0 => c[1] * b[2] + c[2],
        1 => c[0] * b[2] + c[2],
        _ => c[0] * b[1] + c[1],
    }
}

/// The initial value of the element at global linear index `i`.
pub(crate) fn initial(i: usize) -> f64 {
    ((i * 7919) % 1000) as f64 / 1000.0
}

/// One point: `(lo0 + c + hi0 + lo1 + hi1 + ...) / (2 dims + 1)` over the active axes,
/// slowest first. In 1-D this is `(left + c + right) / 3`, the `jacobi-1d` update.
#[inline]
pub(crate) fn point(c: f64, lo_hi: &[(f64, f64)]) -> f64 {
    let (lo, hi) = lo_hi[0];
    let mut sum = lo + c + hi;
    for &(lo, hi) in &lo_hi[1..] {
        sum = sum + lo + hi;
    }
    sum / (2 * lo_hi.len() + 1) as f64
}

/// One point of a block by the general rule: neighbours inside the block, or from the
/// halos at its faces (or the point itself at the array's edge); Gauss-Seidel takes the
/// lower neighbours from `out`, already updated.
#[allow(clippy::too_many_arguments)]
fn general_point(
    g: &Grid,
    axes: &[usize],
    nbrs: &mut [(f64, f64)],
    cur: &[f64],
    halos: &[Vec<&[f64]>],
    out: &mut [f64],
    q: usize,
) {
    let b = g.b;
    let bs = strides(b);
    let seidel = g.sweep == Sweep::Seidel;
    let c3 = coords(q, b);
    let c = cur[q];
    for (k, &ax) in axes.iter().enumerate() {
        let lo = if c3[ax] > 0 {
            if seidel {
                out[q - bs[ax]]
            } else {
                cur[q - bs[ax]]
            }
        } else {
            halos[2 * ax]
                .first()
                .map_or(c, |h| h[face_index(ax, c3, b)])
        };
        let hi = if c3[ax] + 1 < b[ax] {
            cur[q + bs[ax]]
        } else {
            halos[2 * ax + 1]
                .first()
                .map_or(c, |h| h[face_index(ax, c3, b)])
        };
        nbrs[k] = (lo, hi);
    }
    out[q] = point(c, nbrs);
}

/// The three input rows of one output row of a 2-D block, each as long as the row (at
/// least two points): the row itself (`mid`) and those above and below it. Each sweep computes the first point,
/// the points between without a branch, and the last point, with the sums of `point` in
/// its order (north, centre, south, then west, east), so results stay bitwise equal.
struct Rows<'a> {
    north: &'a [f64],
    mid: &'a [f64],
    south: &'a [f64],
}

impl Rows<'_> {
    /// Jacobi: every west neighbour from the previous iteration (`mid`).
    ///
    /// The loop streams from memory, and how fast it does depends on how many loads it
    /// keeps in flight: an AVX2 instruction handles four points where the baseline's
    /// SSE2 handles two. So it takes AVX2 when the CPU has it. Both
    /// versions make the same additions in the same order and one division per point,
    /// without fused operations, so they agree to the bit.
    fn jacobi(&self, west0: f64, east_last: f64, dst: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { self.jacobi_avx2(west0, east_last, dst) };
        }
        self.jacobi_any(west0, east_last, dst);
    }

    /// [`Rows::jacobi`] compiled for AVX2.
    ///
    /// # Safety
    ///
    /// The CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn jacobi_avx2(&self, west0: f64, east_last: f64, dst: &mut [f64]) {
        self.jacobi_any(west0, east_last, dst);
    }

    /// [`Rows::jacobi`] for the instructions its caller was compiled for.
    #[inline(always)]
    fn jacobi_any(&self, west0: f64, east_last: f64, dst: &mut [f64]) {
        let Rows { north, mid, south } = *self;
        let last = mid.len() - 1;
        let dst = &mut dst[..=last];
        dst[0] = (north[0] + mid[0] + south[0] + west0 + mid[1]) / 5.0;
        for x in 1..last {
            dst[x] = (north[x] + mid[x] + south[x] + mid[x - 1] + mid[x + 1]) / 5.0;
        }
        dst[last] = (north[last] + mid[last] + south[last] + mid[last - 1] + east_last) / 5.0;
    }

    /// Gauss-Seidel: a point's west neighbour is the point just computed, carried in a
    /// register from one point to the next (reading it back from `dst` would add a
    /// store-to-load round trip to the chain of dependent additions and divisions that
    /// bounds this loop).
    fn seidel(&self, west0: f64, east_last: f64, dst: &mut [f64]) {
        let Rows { north, mid, south } = *self;
        let last = mid.len() - 1;
        let dst = &mut dst[..=last];
        let mut v = (north[0] + mid[0] + south[0] + west0 + mid[1]) / 5.0;
        dst[0] = v;
        for x in 1..last {
            v = (north[x] + mid[x] + south[x] + v + mid[x + 1]) / 5.0;
            dst[x] = v;
        }
        dst[last] = (north[last] + mid[last] + south[last] + v + east_last) / 5.0;
    }
}

/// One task's update of one block. `halos[2a]` / `halos[2a + 1]` hold the face of the
/// lower / upper neighbour across axis `a`, if there is one.
fn step_block(
    g: &Grid,
    cur: &[f64],
    halos: &[Vec<&[f64]>],
    out: &mut [f64],
    faces: &mut [&mut [f64]],
) {
    let b = g.b;
    let seidel = g.sweep == Sweep::Seidel;
    if g.dims == 2 && b[1] > 1 && b[2] > 1 {
        // 2-D blocks row by row, in row-major order, without coordinate arithmetic: each
        // row gets its north and south rows (inside the block, a halo row, or the row
        // itself at the array's edge, where a missing neighbour is the point) and its
        // west and east values at the ends; the sums are those of `point`, in the same
        // order (north, centre, south, then west, east), so results stay bitwise equal.
        let row = b[2];
        let face = |a: usize, hi: bool| halos[2 * a + usize::from(hi)].first().copied();
        // In 2-D only the faces across the fast axis, the block's first and last columns,
        // are separate outputs. Each row leaves its two ends in them as soon as it is
        // written: gathering the columns afterwards would read two points per row back
        // from a block that no longer fits in the core's cache.
        debug_assert!(!g.has_faces(0) && !g.has_faces(1));
        let (mut west_face, mut east_face) = match faces {
            [west, east] => (Some(&mut **west), Some(&mut **east)),
            _ => (None, None),
        };
        let (north_halo, south_halo) = (face(1, false), face(1, true));
        let (west_halo, east_halo) = (face(2, false), face(2, true));
        for y in 0..b[1] {
            let (done, rest) = out.split_at_mut(y * row);
            let dst = &mut rest[..row];
            let mid = &cur[y * row..(y + 1) * row];
            let north = match y {
                0 => north_halo.unwrap_or(mid),
                _ if seidel => &done[(y - 1) * row..],
                _ => &cur[(y - 1) * row..y * row],
            };
            let south = match (y + 1 < b[1], south_halo) {
                (true, _) => &cur[(y + 1) * row..(y + 2) * row],
                (false, Some(h)) => h,
                (false, None) => mid,
            };
            let west0 = west_halo.map_or(mid[0], |h| h[y]);
            let east_last = east_halo.map_or(mid[row - 1], |h| h[y]);
            let rows = Rows {
                north: &north[..row],
                mid,
                south: &south[..row],
            };
            if seidel {
                rows.seidel(west0, east_last, dst);
            } else {
                rows.jacobi(west0, east_last, dst);
            }
            if let (Some(west), Some(east)) = (west_face.as_deref_mut(), east_face.as_deref_mut()) {
                west[y] = dst[0];
                east[y] = dst[row - 1];
            }
        }
    } else {
        let axes: Vec<usize> = (0..3).filter(|&a| g.active(a)).collect();
        let mut nbrs = vec![(0.0, 0.0); axes.len()];
        for q in 0..cur.len() {
            general_point(g, &axes, &mut nbrs, cur, halos, out, q);
        }
        let mut faces = faces.iter_mut();
        for ax in (0..3).filter(|&a| g.has_faces(a)) {
            for side in [0, b[ax] - 1] {
                let face = faces.next().expect("one output per face");
                for (f, q) in face_points(ax, side, b) {
                    face[f] = out[q];
                }
            }
        }
    }
}

/// The points of a block's face across axis `a` at coordinate `side`: (index in the
/// face, index in the block).
fn face_points(a: usize, side: usize, b: [usize; 3]) -> impl Iterator<Item = (usize, usize)> {
    let bs = strides(b);
    let (o1, o2) = match a {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    (0..b[o1]).flat_map(move |i| {
        (0..b[o2]).map(move |j| (i * b[o2] + j, side * bs[a] + i * bs[o1] + j * bs[o2]))
    })
}

/// One set of versioned data: the blocks and their separate faces.
struct Set {
    blocks: Vec<Data<f64>>,
    /// `faces[a][side][block]`, empty for axes without separate faces.
    faces: [[Vec<Data<f64>>; 2]; 3],
}

impl Set {
    /// Set `k`; the first holds the initial values (unless the runtime skips bodies, or
    /// `empty`: initialisation tasks write them; then both are created empty).
    fn new(rt: &Runtime, g: &Grid, k: usize, empty: bool) -> Result<Set, crate::Error> {
        let (nb, bl) = (g.nb(), g.block_len());
        let gst = strides(g.n);
        let mut blocks = Vec::with_capacity(g.blocks());
        let mut faces: [[Vec<Data<f64>>; 2]; 3] = Default::default();
        for blk in 0..g.blocks() {
            let bc = coords(blk, nb);
            let name = format!("{}.{k}.{blk}", g.name);
            if k == 1 || empty || rt.skips_bodies() {
                blocks.push(rt.data::<f64>(name, bl));
                for (a, sides) in faces
                    .iter_mut()
                    .enumerate()
                    .filter(|(a, _)| g.has_faces(*a))
                {
                    for (s, v) in sides.iter_mut().enumerate() {
                        v.push(rt.data::<f64>(
                            format!("{}.{k}.{blk}.face{a}{s}", g.name),
                            g.face_len(a),
                        ));
                    }
                }
                continue;
            }
            let init: Vec<f64> = crate::alloc::collected(
                "the initial values of a block",
                bl,
                (0..bl).map(|q| initial_at(g, bc, gst, q)),
            )?;
            for (a, sides) in faces
                .iter_mut()
                .enumerate()
                .filter(|(a, _)| g.has_faces(*a))
            {
                for (s, v) in sides.iter_mut().enumerate() {
                    let side = if s == 0 { 0 } else { g.b[a] - 1 };
                    let mut face =
                        crate::alloc::filled("the initial values of a face", g.face_len(a), 0.0)?;
                    for (f, q) in face_points(a, side, g.b) {
                        face[f] = init[q];
                    }
                    v.push(rt.data_from(format!("{}.{k}.{blk}.face{a}{s}", g.name), &face)?);
                }
            }
            blocks.push(rt.data_from(name, &init)?);
        }
        Ok(Set { blocks, faces })
    }
}

/// The initial value of point `q` of the block at block coordinates `bc`.
fn initial_at(g: &Grid, bc: [usize; 3], gst: [usize; 3], q: usize) -> f64 {
    let c = coords(q, g.b);
    initial((0..3).map(|a| (bc[a] * g.b[a] + c[a]) * gst[a]).sum())
}

/// Submits the task writing block `blk`'s initial values (and its faces) into set 0,
/// hinted by `hint`.
fn submit_init(
    s: &Scope,
    g: &Grid,
    set: &Set,
    blk: usize,
    hint: Option<Affinity>,
) -> Result<(), locus::Error> {
    let faces: Vec<Write<f64>> = (0..3)
        .filter(|&a| g.has_faces(a))
        .flat_map(|a| [set.faces[a][0][blk].write(), set.faces[a][1][blk].write()])
        .collect();
    let grid = *g;
    hinted(s.task("init", (set.blocks[blk].write(), faces)), hint).spawn(
        move |_, (out, mut faces)| {
            let (bc, gst) = (coords(blk, grid.nb()), strides(grid.n));
            for (q, o) in out.iter_mut().enumerate() {
                *o = initial_at(&grid, bc, gst, q);
            }
            let mut faces = faces.iter_mut();
            for a in (0..3).filter(|&a| grid.has_faces(a)) {
                for side in [0, grid.b[a] - 1] {
                    let face = faces.next().expect("one output per face");
                    for (f, q) in face_points(a, side, grid.b) {
                        face[f] = out[q];
                    }
                }
            }
        },
    )
}

/// What the task of block `blk` for iteration `t` declares: its block, its halos,
/// its block's next version and its separate faces.
type BlockAccesses = (Read<f64>, Vec<Vec<Read<f64>>>, Write<f64>, Vec<Write<f64>>);

/// The accesses of the task of block `blk` for iteration `t`.
fn block_accesses(g: &Grid, sets: &[Set; 2], t: usize, blk: usize) -> BlockAccesses {
    let (src, dst) = (&sets[t % 2], &sets[(t + 1) % 2]);
    let nb = g.nb();
    let bst = strides(nb);
    let bc = coords(blk, nb);
    let mut halos: Vec<Vec<Read<f64>>> = Vec::with_capacity(6);
    for a in 0..3 {
        let (mut lo, mut hi) = (None, None);
        if g.active(a) && bc[a] > 0 {
            // The lower neighbour: already swept in this iteration under Gauss-Seidel.
            let set = if g.sweep == Sweep::Seidel { dst } else { src };
            let n = blk - bst[a];
            lo = Some(if g.contiguous(a) {
                set.blocks[n].read_range(g.plane(a, true))
            } else {
                set.faces[a][1][n].read()
            });
        }
        if g.active(a) && bc[a] + 1 < nb[a] {
            let n = blk + bst[a];
            hi = Some(if g.contiguous(a) {
                src.blocks[n].read_range(g.plane(a, false))
            } else {
                src.faces[a][0][n].read()
            });
        }
        halos.push(opt(lo));
        halos.push(opt(hi));
    }
    let faces: Vec<Write<f64>> = (0..3)
        .filter(|&a| g.has_faces(a))
        .flat_map(|a| [dst.faces[a][0][blk].write(), dst.faces[a][1][blk].write()])
        .collect();
    (
        src.blocks[blk].read(),
        halos,
        dst.blocks[blk].write(),
        faces,
    )
}

/// Submits the task of block `blk` for iteration `t`, hinted by `hint`.
fn submit_block(
    s: &Scope,
    g: &Grid,
    sets: &[Set; 2],
    t: usize,
    blk: usize,
    hint: Option<Affinity>,
) -> Result<(), locus::Error> {
    let grid = *g;
    hinted(s.task(g.name, block_accesses(g, sets, t, blk)), hint).spawn(
        move |_, (cur, halos, out, mut faces)| step_block(&grid, cur, &halos, out, &mut faces),
    )
}

/// Records the task of block `blk` for iteration `t` into a graph.
fn record_block(
    r: &Recorder,
    g: &Grid,
    sets: &[Set; 2],
    t: usize,
    blk: usize,
) -> Result<(), locus::Error> {
    let grid = *g;
    r.spawn(
        g.name,
        block_accesses(g, sets, t, blk),
        move |_, (cur, halos, out, mut faces)| step_block(&grid, cur, &halos, out, &mut faces),
    )
}

/// The problem of [`crate::jacobi_1d`] as a grid (same blocks, same one-element halo
/// ranges, same arithmetic), for its parallel control program.
pub(crate) fn jacobi_1d(p: &crate::jacobi_1d::Params, control: Control) -> Grid {
    Grid {
        name: "jacobi",
        sweep: Sweep::Jacobi,
        dims: 1,
        n: [1, 1, p.blocks * p.block_len],
        b: [1, 1, p.block_len],
        iterations: p.iterations,
        control,
    }
}

/// Builds and runs the stencil, and compares the result bit for bit with `want()`, the
/// kernel's reference (the whole array, row-major).
pub(crate) fn run(
    rt: &Runtime,
    g: &Grid,
    want: impl FnOnce() -> Result<Vec<f64>, crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    run_placed(rt, g, None, want)
}

/// [`run`]; with `affinity`, the KASTORS program of paper 3 (Virouleau et al.): one
/// initialisation task per block writes its initial values, and the initialisation
/// and block tasks carry the hints of the mode towards the block's owner, a worker
/// (contiguous runs of blocks per worker, in block order).
pub(crate) fn run_placed(
    rt: &Runtime,
    g: &Grid,
    affinity: Option<AffinityMode>,
    want: impl FnOnce() -> Result<Vec<f64>, crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    g.check();
    let placed = affinity.is_some();
    let sets = Arc::new([Set::new(rt, g, 0, placed)?, Set::new(rt, g, 1, placed)?]);
    let workers = rt.workers();
    let (blocks, mode) = (g.blocks(), affinity.unwrap_or(AffinityMode::None));
    let owner = move |blk: usize| Affinity::worker(owner_of(blk, blocks, workers));
    let hint = move |blk: usize| mode.compute(owner(blk));
    let nb = g.nb();
    // Bands for creators: groups of slices across the slowest axis with several blocks.
    let band_axis = (0..3).find(|&a| nb[a] > 1).unwrap_or(2);
    let per_slice = strides(nb)[band_axis];
    let bands: Vec<std::ops::Range<usize>> = split(nb[band_axis], MAX_CREATORS)
        .into_iter()
        .map(|r| r.start * per_slice..r.end * per_slice)
        .collect();
    let tokens = BandTokens::new(rt, bands.len());
    let grid = *g;
    let finished = rt.run(|s| -> Result<(), locus::Error> {
        if placed {
            for blk in 0..grid.blocks() {
                submit_init(s, &grid, &sets[0], blk, mode.init(owner(blk)))?;
            }
        }
        for t in 0..grid.iterations {
            match grid.control {
                Control::Sequential => {
                    for blk in 0..grid.blocks() {
                        submit_block(s, &grid, &sets, t, blk, hint(blk))?;
                    }
                }
                Control::Parallel => {
                    for (b, band) in bands.iter().enumerate() {
                        let (sets, band) = (sets.clone(), band.clone());
                        let submit = move |s: &Scope| {
                            band.into_iter().try_for_each(|blk| {
                                submit_block(s, &grid, &sets, t, blk, hint(blk))
                            })
                        };
                        match grid.sweep {
                            Sweep::Jacobi => spawn_creator(s, tokens.jacobi(t, b), submit)?,
                            Sweep::Seidel => spawn_creator(s, tokens.seidel(b), submit)?,
                        }
                    }
                }
            }
        }
        Ok(())
    })?;
    let ((), report) = crate::finished(finished)?;
    verify(rt, g, &sets, report, want)
}

/// [`run`] as a recorded graph (`--replay`): two sweeps recorded once (the sets swap
/// roles every sweep), replayed `iterations / 2` times; an odd last sweep runs as a
/// dynamic run after the replay, its report added to the replay's. Sequential control
/// only, no affinity hints (refused by the kernels before).
pub(crate) fn run_replay(
    rt: &Runtime,
    g: &Grid,
    want: impl FnOnce() -> Result<Vec<f64>, crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    g.check();
    let sets = [Set::new(rt, g, 0, false)?, Set::new(rt, g, 1, false)?];
    let grid = *g;
    let mut graph = rt.record(g.name, |r| {
        for t in 0..2 {
            for blk in 0..grid.blocks() {
                record_block(r, &grid, &sets, t, blk)?;
            }
        }
        Ok(())
    })?;
    let mut report = rt.replay(&mut graph, (g.iterations / 2) as u64)?;
    if g.iterations % 2 == 1 {
        let last = g.iterations - 1;
        let finished = rt.run(|s| -> Result<(), locus::Error> {
            (0..grid.blocks()).try_for_each(|blk| submit_block(s, &grid, &sets, last, blk, None))
        })?;
        let ((), tail) = crate::finished(finished)?;
        report.then(&tail);
    }
    verify(rt, g, &sets, report, want)
}

/// Compares the sweep's result with `want()` bit for bit.
fn verify(
    rt: &Runtime,
    g: &Grid,
    sets: &[Set; 2],
    report: locus::Report,
    want: impl FnOnce() -> Result<Vec<f64>, crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    if rt.skips_bodies() {
        return Ok(crate::Outcome::unchecked(report));
    }
    let nb = g.nb();
    let result = &sets[g.iterations % 2];
    let want = want()?;
    let gst = strides(g.n);
    let mut check = crate::verify::Check::new();
    for (blk, d) in result.blocks.iter().enumerate() {
        let bc = coords(blk, nb);
        check.block("array", &rt.fetch(d)?, &want, |q| {
            let c = coords(q, g.b);
            (0..3).map(|a| (bc[a] * g.b[a] + c[a]) * gst[a]).sum()
        });
    }
    Ok(crate::Outcome::checked(report, check.finish()))
}
