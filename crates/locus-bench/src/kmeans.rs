//! `kmeans`: k-means clustering of `d`-dimensional `f32` points (paper 1 Figure 4d).
//!
//! The points are cut into blocks. Iteration `i` has one task per block and one
//! reduction:
//! - task `(i, b)` reads its point block (the big input, over 90% of its input bytes)
//!   and the centroids, assigns each point to its nearest centroid, and writes the
//!   block's assignments, its partial sums (per cluster: the sum of its points and their
//!   count) and a copy of the point block for iteration `i + 1`. The points thus flow
//!   from task to task along one long dependence path per block, in task-private
//!   buffers, as in paper 1's DSA code (inputs are only read, outputs only written);
//! - the reduction reads every block's partial sums and writes the next centroids (mean
//!   of each cluster; an empty cluster keeps its centroid).
//!
//! With [`Control::Parallel`] one creator per band of blocks (at most 16) and iteration
//! submits the band's tasks, and one more creator per iteration submits the reduction;
//! tokens order them: the band creators of iteration `i` follow the reduction creator of
//! `i - 1`, which follows every band creator of `i - 1` (see [`crate::control`]).
//!
//! Verification: bitwise equality of the final centroids and assignments with
//! [`reference()`], a sequential loop over all the points written from the definition
//! (float sums are taken in the same order: points in block order, then blocks in
//! order).
//!
//! # Sizes
//!
//! `points` is a positive multiple of `block_points`; `dims`, `clusters` and
//! `iterations` are at least 1; there are at most as many clusters as points (and at
//! most 2^32, assignments are `u32`). The options of `locus run` / `locus sim` (see
//! [`crate::size`]) map as:
//!
//! - `--size N`: `points` = N;
//! - `--block-len L`: `block_points` = L;
//! - `--blocks B`: `block_points` = `points / B`;
//! - `--iterations N`: `iterations`;
//! - `--param dims=D`, `--param clusters=K`: the dimensions and the clusters.

use std::sync::Arc;

use locus::{Data, Read, Runtime};
use serde::{Deserialize, Serialize};

use crate::control::{spawn_creator, split, BandTokens, Control, MAX_CREATORS};
use crate::replay::Spawn;
use crate::size::{kernel_params, Axis, KernelParams, Options};

/// Size of the problem and control program.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Number of points.
    pub points: usize,
    /// Dimensions of a point.
    pub dims: usize,
    /// Number of clusters (at most `points`).
    pub clusters: usize,
    /// Points per block (divides `points`).
    pub block_points: usize,
    /// Iterations (a fixed count, so that every run does the same work).
    pub iterations: usize,
    /// Who submits the tasks.
    pub control: Control,
}

impl Default for Params {
    /// 40 960 points of 10 dimensions, 11 clusters, 20 blocks of 2048 points, 10
    /// iterations.
    fn default() -> Self {
        Params {
            points: 40_960,
            dims: 10,
            clusters: 11,
            block_points: 2048,
            iterations: 10,
            control: Control::Sequential,
        }
    }
}

impl Params {
    /// Paper 1 Table 3: 40.96 M points of 10 dimensions (1.6 GB of `f32`), 11 clusters,
    /// blocks of 10^4 points (both machines). The paper gives no iteration count; 10.
    pub fn paper() -> Self {
        Params {
            points: 40_960_000,
            dims: 10,
            clusters: 11,
            block_points: 10_000,
            iterations: 10,
            control: Control::Sequential,
        }
    }

    /// Paper 1 Table 3 for the SGI-192: as on the Opteron-64 (blocks of 10^4 points).
    pub fn paper_sgi() -> Self {
        Params::paper()
    }

    /// 200 points of 3 dimensions, 4 clusters, 8 blocks, 3 iterations: for tests.
    pub fn tiny() -> Self {
        Params {
            points: 200,
            dims: 3,
            clusters: 4,
            block_points: 25,
            iterations: 3,
            control: Control::Sequential,
        }
    }

    /// Checks every constraint the kernel relies on (see the [module docs](self)). The
    /// message names the field and the option that sets it.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.divides(("points", self.points), ("block_points", self.block_points))?;
        o.positive("dims", self.dims)?;
        o.positive("clusters", self.clusters)?;
        o.positive("iterations", self.iterations)?;
        if self.clusters > self.points {
            return Err(format!(
                "kmeans: {} = {} is more than {} = {}",
                o.label("clusters"),
                self.clusters,
                o.label("points"),
                self.points
            ));
        }
        if u32::try_from(self.clusters).is_err() {
            return Err(format!(
                "kmeans: {} = {} must be below 2^32 (assignments are u32)",
                o.label("clusters"),
                self.clusters
            ));
        }
        o.elements::<f32>(&[("points", self.points), ("dims", self.dims)])?;
        // The partial sums: `clusters × dims` sums, then `clusters` counts.
        o.elements::<f32>(&[
            ("clusters", self.clusters),
            ("dims", self.dims.saturating_add(1)),
        ])?;
        o.blocks(&[("points", self.points, "block_points", self.block_points)])?;
        crate::size::finishes(self)
    }

    fn blocks(&self) -> usize {
        self.points / self.block_points
    }

    /// Tasks the kernel submits, creators excluded: one per block and one reduction
    /// per iteration.
    pub(crate) fn tasks(&self) -> u64 {
        ((self.blocks() + 1) * self.iterations) as u64
    }

    /// Length of a block's partial sums: `clusters × dims` sums, then `clusters` counts.
    fn partial_len(&self) -> usize {
        self.clusters * (self.dims + 1)
    }
}

kernel_params!(
    Options {
        name: "kmeans",
        axes: &[Axis::Extent("points", "block_points")],
        size: None,
        iterations: Some("iterations"),
    },
    bytes: |p| crate::size::bytes::<f32>(&[p.points, p.dims])
);

/// A well-mixed 64-bit hash (SplitMix64's finaliser).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Coordinate `j` of point `i`: a few blurred groups around integer centres.
fn initial_coord(p: &Params, i: usize, j: usize) -> f32 {
    let centre = ((i % 7) * (j + 3) % 5) as f32;
    let noise = (mix((i * p.dims + j) as u64) >> 40) as f32 / (1u64 << 24) as f32;
    centre + noise
}

/// The first `count` points, from point `first` on, row-major.
fn initial_points(
    p: &Params,
    what: &str,
    first: usize,
    count: usize,
) -> Result<Vec<f32>, crate::Error> {
    let d = p.dims;
    crate::alloc::collected(
        what,
        count * d,
        (first * d..(first + count) * d).map(|q| initial_coord(p, q / d, q % d)),
    )
}

/// The points of block `b`, row-major.
fn initial_block(p: &Params, b: usize) -> Result<Vec<f32>, crate::Error> {
    initial_points(
        p,
        "the initial points of a block",
        b * p.block_points,
        p.block_points,
    )
}

/// Initial centroids: the first `clusters` points.
fn initial_centroids(p: &Params) -> Result<Vec<f32>, crate::Error> {
    initial_points(p, "the initial centroids", 0, p.clusters)
}

/// One block's work: nearest centroid of each point (squared Euclidean distance, ties
/// to the lower index) into `assign`, and the block's partial sums into `partial`.
pub fn assign_block(
    p: &Params,
    points: &[f32],
    centroids: &[f32],
    assign: &mut [u32],
    partial: &mut [f32],
) {
    let (d, k) = (p.dims, p.clusters);
    partial.fill(0.0);
    for (x, a) in points.chunks_exact(d).zip(assign.iter_mut()) {
        let mut best = (f32::INFINITY, 0);
        for (c, centre) in centroids.chunks_exact(d).enumerate() {
            let dist: f32 = x.iter().zip(centre).map(|(u, v)| (u - v) * (u - v)).sum();
            if dist < best.0 {
                best = (dist, c);
            }
        }
        let c = best.1;
        *a = c as u32;
        for (s, u) in partial[c * d..(c + 1) * d].iter_mut().zip(x) {
            *s += u;
        }
        partial[k * d + c] += 1.0;
    }
}

/// The reduction: sums the blocks' partial sums in block order and divides; a cluster
/// without points keeps its centroid (`centroids` holds the previous ones on entry).
pub fn reduce(p: &Params, partials: &[&[f32]], centroids: &mut [f32]) {
    let (d, k) = (p.dims, p.clusters);
    let mut total = vec![0.0f32; p.partial_len()];
    for part in partials {
        for (t, v) in total.iter_mut().zip(part.iter()) {
            *t += v;
        }
    }
    for c in 0..k {
        let count = total[k * d + c];
        if count > 0.0 {
            for j in 0..d {
                centroids[c * d + j] = total[c * d + j] / count;
            }
        }
    }
}

/// The sequential reference: the final centroids (`clusters × dims`, row-major) and the
/// final assignment of every point, in point order.
///
/// Each iteration assigns every point, in order, to the centroid at the least squared
/// Euclidean distance (the squares of the differences summed over the dimensions in
/// order; ties to the lower index), then moves every centroid to the mean of its points
/// (a centroid without points stays). The sums of a cluster's points are taken block by
/// block, as the tasks take them: each block's sums from zero in point order, then the
/// blocks' sums from zero in block order; the counts likewise, as `f32`.
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if its vectors cannot be allocated.
///
/// # Panics
///
/// If the parameters do not pass [`Params::validate`].
pub fn reference(p: &Params) -> Result<(Vec<f32>, Vec<u32>), crate::Error> {
    if let Err(e) = p.validate() {
        panic!("{e}");
    }
    use crate::alloc::filled;
    let (d, k) = (p.dims, p.clusters);
    let points = initial_points(p, "the kmeans reference's points", 0, p.points)?;
    let mut centroids = initial_centroids(p)?;
    let mut assign = filled("the kmeans reference's assignments", p.points, 0u32)?;
    let mut sums = filled("the kmeans reference's sums", k * d, 0.0f32)?;
    let mut counts = filled("the kmeans reference's counts", k, 0.0f32)?;
    let mut block_sums = filled("the kmeans reference's block sums", k * d, 0.0f32)?;
    let mut block_counts = filled("the kmeans reference's block counts", k, 0.0f32)?;
    for _ in 0..p.iterations {
        sums.fill(0.0);
        counts.fill(0.0);
        for block in 0..p.blocks() {
            block_sums.fill(0.0);
            block_counts.fill(0.0);
            for i in block * p.block_points..(block + 1) * p.block_points {
                let x = &points[i * d..(i + 1) * d];
                let mut nearest = 0;
                let mut least = f32::INFINITY;
                for c in 0..k {
                    let mut dist = 0.0f32;
                    for j in 0..d {
                        let diff = x[j] - centroids[c * d + j];
                        dist += diff * diff;
                    }
                    if dist < least {
                        least = dist;
                        nearest = c;
                    }
                }
                assign[i] = nearest as u32;
                for j in 0..d {
                    block_sums[nearest * d + j] += x[j];
                }
                block_counts[nearest] += 1.0;
            }
            for (s, b) in sums.iter_mut().zip(&block_sums) {
                *s += b;
            }
            for (n, b) in counts.iter_mut().zip(&block_counts) {
                *n += b;
            }
        }
        for c in 0..k {
            if counts[c] > 0.0 {
                for j in 0..d {
                    centroids[c * d + j] = sums[c * d + j] / counts[c];
                }
            }
        }
    }
    Ok((centroids, assign))
}

/// The data of one run.
struct Handles {
    /// Point blocks, double-buffered by handle.
    points: [Vec<Data<f32>>; 2],
    assign: Vec<Data<u32>>,
    partial: Vec<Data<f32>>,
    centroids: Data<f32>,
}

fn submit_block(
    s: &impl Spawn,
    p: &Params,
    h: &Handles,
    i: usize,
    b: usize,
) -> Result<(), locus::Error> {
    let (src, dst) = (&h.points[i % 2][b], &h.points[(i + 1) % 2][b]);
    let params = p.clone();
    s.spawn_task(
        "kmeans",
        (
            src.read(),
            h.centroids.read(),
            dst.write(),
            h.assign[b].write(),
            h.partial[b].write(),
        ),
        move |(pts, centroids, next, assign, partial)| {
            next.copy_from_slice(pts);
            assign_block(&params, pts, centroids, assign, partial);
        },
    )
}

fn submit_reduce(s: &impl Spawn, p: &Params, h: &Handles) -> Result<(), locus::Error> {
    let partials: Vec<Read<f32>> = h.partial.iter().map(Data::read).collect();
    let params = p.clone();
    s.spawn_task(
        "kmeans-reduce",
        (partials, h.centroids.read_write()),
        move |(partials, centroids)| reduce(&params, &partials, centroids),
    )
}

/// Builds, runs and verifies the clustering against [`reference()`], bit for bit.
pub fn run(rt: &Runtime, p: &Params) -> Result<crate::Outcome, crate::Error> {
    run_against(rt, p, || reference(p))
}

/// [`run`], comparing the result with `want()`: the centroids and the assignments.
pub(crate) fn run_against(
    rt: &Runtime,
    p: &Params,
    want: impl FnOnce() -> Result<(Vec<f32>, Vec<u32>), crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    let h = Arc::new(handles(rt, p)?);
    let nb = p.blocks();
    let bands = split(nb, MAX_CREATORS);
    let tokens = BandTokens::new(rt, bands.len());
    let centroid_token = rt.data::<u64>("centroid-token", 1);
    let finished = rt.run(|s| -> Result<(), locus::Error> {
        for i in 0..p.iterations {
            match p.control {
                Control::Sequential => {
                    for b in 0..nb {
                        submit_block(s, p, &h, i, b)?;
                    }
                    submit_reduce(s, p, &h)?;
                }
                Control::Parallel => {
                    for (g, band) in bands.iter().enumerate() {
                        let (h, p, band) = (h.clone(), p.clone(), band.clone());
                        spawn_creator(
                            s,
                            (centroid_token.read(), tokens.get(g).write()),
                            move |s| {
                                band.into_iter()
                                    .try_for_each(|b| submit_block(s, &p, &h, i, b))
                            },
                        )?;
                    }
                    let band_tokens: Vec<Read<u64>> =
                        (0..bands.len()).map(|g| tokens.get(g).read()).collect();
                    let (h, p) = (h.clone(), p.clone());
                    spawn_creator(s, (band_tokens, centroid_token.write()), move |s| {
                        submit_reduce(s, &p, &h)
                    })?;
                }
            }
        }
        Ok(())
    })?;
    let ((), report) = crate::finished(finished)?;
    verify(rt, p, &h, report, want)
}

/// [`run`] as a recorded graph (`--replay`): two iterations recorded once (the point
/// sets swap roles every iteration), replayed `iterations / 2` times; an odd last
/// iteration runs as a dynamic run after the replay, its report added to the replay's.
pub fn run_replay(rt: &Runtime, p: &Params) -> Result<crate::Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    crate::replay::sequential_only(p.control)?;
    let h = handles(rt, p)?;
    let mut graph = rt.record("kmeans", |r| {
        for i in 0..2 {
            for b in 0..p.blocks() {
                submit_block(r, p, &h, i, b)?;
            }
            submit_reduce(r, p, &h)?;
        }
        Ok(())
    })?;
    let mut report = rt.replay(&mut graph, (p.iterations / 2) as u64)?;
    if p.iterations % 2 == 1 {
        let finished = rt.run(|s| -> Result<(), locus::Error> {
            for b in 0..p.blocks() {
                submit_block(s, p, &h, p.iterations - 1, b)?;
            }
            submit_reduce(s, p, &h)
        })?;
        let ((), tail) = crate::finished(finished)?;
        report.then(&tail);
    }
    verify(rt, p, &h, report, || reference(p))
}

/// The data of one run: the first point set, the centroids' initial values.
fn handles(rt: &Runtime, p: &Params) -> Result<Handles, crate::Error> {
    let nb = p.blocks();
    let points0 = (0..nb)
        .map(|b| {
            crate::initial(rt, format!("points0.{b}"), p.dims * p.block_points, || {
                initial_block(p, b)
            })
        })
        .collect::<Result<_, _>>()?;
    let points1 = (0..nb)
        .map(|b| rt.data::<f32>(format!("points1.{b}"), p.dims * p.block_points))
        .collect();
    Ok(Handles {
        points: [points0, points1],
        assign: (0..nb)
            .map(|b| rt.data(format!("assign{b}"), p.block_points))
            .collect(),
        partial: (0..nb)
            .map(|b| rt.data(format!("partial{b}"), p.partial_len()))
            .collect(),
        centroids: crate::initial(rt, "centroids", p.clusters * p.dims, || {
            initial_centroids(p)
        })?,
    })
}

/// Compares the centroids and the assignments with `want()`.
fn verify(
    rt: &Runtime,
    p: &Params,
    h: &Handles,
    report: locus::Report,
    want: impl FnOnce() -> Result<(Vec<f32>, Vec<u32>), crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    if rt.skips_bodies() {
        return Ok(crate::Outcome::unchecked(report));
    }
    let (want_centroids, want_assign) = want()?;
    let mut check = crate::verify::Check::new();
    check.all("centroids", &rt.fetch(&h.centroids)?, &want_centroids);
    for (b, d) in h.assign.iter().enumerate() {
        check.block("assignments", &rt.fetch(d)?, &want_assign, |i| {
            b * p.block_points + i
        });
    }
    Ok(crate::Outcome::checked(report, check.finish()))
}
