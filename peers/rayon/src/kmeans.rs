//! `kmeans` (`crates/locus-bench/src/kmeans.rs`) fork-join: every iteration is one
//! parallel loop over the blocks of points (nearest centroids and the block's partial
//! sums), then the reduction on the calling thread, summing the partial sums in block
//! order into the next centroids.
//!
//! Verification: the centroids bitwise and the assignments equal to a sequential run of
//! the same functions.

use rayon::prelude::*;

use crate::Outcome;

/// The problem's sizes.
#[derive(Clone, Copy, Debug)]
struct Params {
    points: usize,
    dims: usize,
    clusters: usize,
    block_points: usize,
    iterations: usize,
}

impl Params {
    fn parse(args: &[String]) -> Result<Params, String> {
        let [points, dims, clusters, block_points, iterations] =
            crate::numbers(args, [40_960, 10, 11, 2048, 10])?;
        let p = Params {
            points,
            dims,
            clusters,
            block_points,
            iterations,
        };
        if dims == 0 || clusters == 0 || block_points == 0 || clusters > points {
            return Err("sizes must be positive, with at most POINTS clusters".into());
        }
        if points % block_points != 0 {
            return Err("the blocks must divide the points".into());
        }
        Ok(p)
    }

    fn blocks(&self) -> usize {
        self.points / self.block_points
    }

    fn partial_len(&self) -> usize {
        self.clusters * (self.dims + 1)
    }
}

/// A well-mixed 64-bit hash (SplitMix64's finaliser), as Locus's.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// All points, row-major: a few blurred groups around integer centres.
fn initial_points(p: &Params) -> Vec<f32> {
    (0..p.points)
        .flat_map(|i| {
            (0..p.dims).map(move |j| {
                let centre = ((i % 7) * (j + 3) % 5) as f32;
                let noise = (mix((i * p.dims + j) as u64) >> 40) as f32 / (1u64 << 24) as f32;
                centre + noise
            })
        })
        .collect()
}

/// One block: nearest centroid of each point (squared distance, ties to the lower index)
/// and the block's partial sums (`clusters × dims` sums, then `clusters` counts).
fn assign_block(
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
            let mut dist = 0.0f32;
            for (u, v) in x.iter().zip(centre) {
                dist += (u - v) * (u - v);
            }
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

/// Sums the partial sums in block order and divides; an empty cluster keeps its centroid.
fn reduce(p: &Params, partials: &[f32], centroids: &mut [f32]) {
    let (d, k) = (p.dims, p.clusters);
    let mut total = vec![0.0f32; p.partial_len()];
    for part in partials.chunks_exact(p.partial_len()) {
        for (t, v) in total.iter_mut().zip(part) {
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

/// Runs the kernel with the arguments after its name.
pub fn run(args: &[String]) -> Result<Outcome, String> {
    let p = Params::parse(args)?;
    let x = initial_points(&p);
    let d = p.dims;
    let mut centroids = x[..p.clusters * d].to_vec();
    let mut want_centroids = centroids.clone();
    let mut assign = vec![0u32; p.points];
    let mut want_assign = assign.clone();
    let mut partials = vec![0.0f32; p.blocks() * p.partial_len()];

    let ((), wall_s) = crate::timed(|| {
        for _ in 0..p.iterations {
            let current = &centroids;
            x.par_chunks(p.block_points * d)
                .zip(assign.par_chunks_mut(p.block_points))
                .zip(partials.par_chunks_mut(p.partial_len()))
                .for_each(|((points, assign), partial)| {
                    assign_block(&p, points, current, assign, partial)
                });
            reduce(&p, &partials, &mut centroids);
        }
    });

    for _ in 0..p.iterations {
        for ((points, assign), partial) in x
            .chunks(p.block_points * d)
            .zip(want_assign.chunks_mut(p.block_points))
            .zip(partials.chunks_mut(p.partial_len()))
        {
            assign_block(&p, points, &want_centroids, assign, partial);
        }
        reduce(&p, &partials, &mut want_centroids);
    }
    let verified = assign == want_assign
        && centroids
            .iter()
            .map(|x| x.to_bits())
            .eq(want_centroids.iter().map(|x| x.to_bits()));
    Ok(Outcome {
        tasks: p.iterations * (p.blocks() + 1),
        wall_s,
        verified,
        params: format!(
            "{{\"points\": {}, \"dims\": {}, \"clusters\": {}, \"block_points\": {}, \"iterations\": {}}}",
            p.points, p.dims, p.clusters, p.block_points, p.iterations
        ),
    })
}
