//! Distributed `jacobi-2d`: the five-point stencil of `locus_bench::jacobi_2d` with its
//! blocks dealt to the ranks by a 2-D block distribution over the squarest grid of
//! ranks, so that the halos crossing a rank boundary are the only messages.
//!
//! As on one machine, task `(t, I, J)` reads its block, the facing row of its north
//! and south neighbours (one-row ranges of their blocks) and the facing column of its
//! west and east neighbours (the columns every task writes as two small separate
//! outputs), and writes its block's next version with its two edge columns. The
//! message rules send exactly those rows and columns, once per version, to the rank of
//! the neighbour: [`halo_bytes`] is that minimum, and the tests check that the runtime
//! sends exactly it.

use locus_bench::jacobi_2d::Params;

use super::{first_mismatch, Outcome};
use crate::cluster::{Cluster, DistData, Error};
use crate::dist::{Distribution, ProcessGrid};

/// The initial value of the element at row-major index `i` (`locus_bench`'s stencils).
fn initial(i: usize) -> f64 {
    ((i * 7919) % 1000) as f64 / 1000.0
}

/// The distribution of the `rows / block_rows × cols / block_cols` blocks of `p` over
/// `ranks`: 2-D blocks over the squarest grid of ranks.
pub fn distribution(p: &Params, ranks: usize) -> Distribution {
    Distribution::Block2d {
        rows: p.rows / p.block_rows,
        cols: p.cols / p.block_cols,
        grid: ProcessGrid::squarest(ranks),
    }
}

fn check(p: &Params) -> Result<(), Error> {
    p.validate().map_err(Error::Config)?;
    if p.block_rows < 2 || p.block_cols < 2 {
        return Err(Error::Config(
            "distributed jacobi-2d needs blocks of at least 2 x 2 elements".into(),
        ));
    }
    Ok(())
}

/// Bytes each rank must send: every iteration, each block sends its facing row (north,
/// south) or column (west, east) to each neighbour on another rank.
pub fn halo_bytes(p: &Params, dist: &Distribution, ranks: usize) -> Vec<u64> {
    let (nbr, nbc) = (p.rows / p.block_rows, p.cols / p.block_cols);
    let mut sent = vec![0u64; ranks];
    for bi in 0..nbr {
        for bj in 0..nbc {
            let me = dist.owner(bi * nbc + bj);
            let mut face = |ni: usize, nj: usize, elems: usize| {
                if dist.owner(ni * nbc + nj) != me {
                    sent[me] += (elems * 8 * p.iterations) as u64;
                }
            };
            if bi > 0 {
                face(bi - 1, bj, p.block_cols);
            }
            if bi + 1 < nbr {
                face(bi + 1, bj, p.block_cols);
            }
            if bj > 0 {
                face(bi, bj - 1, p.block_rows);
            }
            if bj + 1 < nbc {
                face(bi, bj + 1, p.block_rows);
            }
        }
    }
    sent
}

/// One set of blocks with their west and east columns.
struct Set {
    blocks: Vec<DistData<f64>>,
    west: Vec<DistData<f64>>,
    east: Vec<DistData<f64>>,
}

/// One block's update: row by row, each point `(n + c + s + w + e) / 5` summed in the
/// reference's order, a missing neighbour replaced by the point.
fn step(br: usize, bc: usize, cur: &[f64], halo: [Option<&[f64]>; 4], out: &mut [f64]) {
    let [north_halo, south_halo, west_halo, east_halo] = halo;
    for y in 0..br {
        let mid = &cur[y * bc..(y + 1) * bc];
        let north = match y {
            0 => north_halo.unwrap_or(mid),
            _ => &cur[(y - 1) * bc..y * bc],
        };
        let south = match (y + 1 < br, south_halo) {
            (true, _) => &cur[(y + 1) * bc..(y + 2) * bc],
            (false, Some(h)) => h,
            (false, None) => mid,
        };
        let dst = &mut out[y * bc..(y + 1) * bc];
        let west0 = west_halo.map_or(mid[0], |h| h[y]);
        let east_last = east_halo.map_or(mid[bc - 1], |h| h[y]);
        dst[0] = (north[0] + mid[0] + south[0] + west0 + mid[1]) / 5.0;
        for x in 1..bc - 1 {
            let sum = north[x] + mid[x] + south[x];
            dst[x] = (sum + mid[x - 1] + mid[x + 1]) / 5.0;
        }
        let x = bc - 1;
        dst[x] = (north[x] + mid[x] + south[x] + mid[x - 1] + east_last) / 5.0;
    }
}

/// Runs `p` on every rank of `cluster`; rank 0 collects the array and compares it bit
/// for bit with `locus_bench::jacobi_2d::reference`.
pub fn run(cluster: &Cluster, p: &Params) -> Result<Outcome, Error> {
    run_failing(cluster, p, None)
}

/// [`run`], where every task of rank `panic_on` panics in the middle iteration (to
/// test that a failure ends every rank's run with an error).
pub fn run_failing(
    cluster: &Cluster,
    p: &Params,
    panic_on: Option<usize>,
) -> Result<Outcome, Error> {
    check(p)?;
    let (rank, ranks) = (cluster.rank(), cluster.ranks());
    let dist = distribution(p, ranks);
    let (br, bc) = (p.block_rows, p.block_cols);
    let (nbr, nbc) = (p.rows / br, p.cols / bc);
    let faces = nbc > 1;
    let mut sets = Vec::with_capacity(2);
    for k in 0..2 {
        let mut set = Set {
            blocks: Vec::new(),
            west: Vec::new(),
            east: Vec::new(),
        };
        for blk in 0..nbr * nbc {
            let owner = dist.owner(blk);
            let (bi, bj) = (blk / nbc, blk % nbc);
            let at = move |y: usize, x: usize| initial((bi * br + y) * p.cols + bj * bc + x);
            let name = format!("jacobi-2d.{k}.{blk}");
            if k == 0 {
                set.blocks
                    .push(cluster.data_with(&name, br * bc, owner, || {
                        (0..br * bc).map(|q| at(q / bc, q % bc)).collect()
                    })?);
            } else {
                set.blocks.push(cluster.data(&name, br * bc, owner)?);
            }
            if faces {
                for (side, x) in [(0, 0), (1, bc - 1)] {
                    let name = format!("jacobi-2d.{k}.{blk}.face{side}");
                    let face = if k == 0 {
                        cluster
                            .data_with(&name, br, owner, || (0..br).map(|y| at(y, x)).collect())?
                    } else {
                        cluster.data(&name, br, owner)?
                    };
                    if side == 0 {
                        set.west.push(face);
                    } else {
                        set.east.push(face);
                    }
                }
            }
        }
        sets.push(set);
    }
    let iterations = p.iterations;
    let finished = cluster.run(|ds| {
        for t in 0..iterations {
            let (src, dst) = (&sets[t % 2], &sets[(t + 1) % 2]);
            for blk in 0..nbr * nbc {
                let (bi, bj) = (blk / nbc, blk % nbc);
                let has = [bi > 0, bi + 1 < nbr, bj > 0, bj + 1 < nbc];
                let mut task = ds.task::<f64>("jacobi-2d").read(&src.blocks[blk]);
                if has[0] {
                    task = task.read_range(&src.blocks[blk - nbc], (br - 1) * bc..br * bc);
                }
                if has[1] {
                    task = task.read_range(&src.blocks[blk + nbc], 0..bc);
                }
                if has[2] {
                    task = task.read(&src.east[blk - 1]);
                }
                if has[3] {
                    task = task.read(&src.west[blk + 1]);
                }
                task = task.write(&dst.blocks[blk]);
                if faces {
                    task = task.write(&dst.west[blk]).write(&dst.east[blk]);
                }
                let boom = panic_on == Some(rank) && t == iterations / 2;
                task.spawn(move |_, mut v| {
                    if boom {
                        panic!("injected failure (--panic-on {rank})");
                    }
                    let mut reads = v.reads.iter().copied();
                    let cur = reads.next().expect("the block");
                    let halo = has.map(|h| if h { reads.next() } else { None });
                    let (out, edges) = v.writes.split_first_mut().expect("the next block");
                    step(br, bc, cur, halo, out);
                    if let [west, east] = edges {
                        for y in 0..br {
                            west[y] = out[y * bc];
                            east[y] = out[y * bc + bc - 1];
                        }
                    }
                })?;
            }
        }
        for d in &sets[iterations % 2].blocks {
            ds.collect(d, 0)?;
        }
        Ok(())
    })?;
    let (mut verified, mut mismatch) = (None, None);
    if rank == 0 {
        let want = locus_bench::jacobi_2d::reference(p).map_err(Error::of_workload)?;
        let mut got = vec![0.0; p.rows * p.cols];
        for (blk, d) in sets[iterations % 2].blocks.iter().enumerate() {
            let (bi, bj) = (blk / nbc, blk % nbc);
            let values = cluster.fetch(d)?;
            for y in 0..br {
                let row = (bi * br + y) * p.cols + bj * bc;
                got[row..row + bc].copy_from_slice(&values[y * bc..(y + 1) * bc]);
            }
        }
        mismatch = first_mismatch("array", &got, &want);
        verified = Some(mismatch.is_none());
    }
    Ok(Outcome {
        bench: "jacobi-2d",
        rank,
        ranks,
        params: serde_json::to_value(p).unwrap_or_default(),
        verified,
        mismatch,
        min_sent_bytes: Some(halo_bytes(p, &dist, ranks)[rank]),
        comm: finished.comm,
        report: finished.report,
    })
}
