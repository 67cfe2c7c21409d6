//! Distributed `cholesky`: the tiled factorisation of `locus_bench::cholesky`, its
//! lower-triangle tiles dealt to the ranks 2-D block-cyclically over the squarest grid
//! of ranks (ScaLAPACK's layout, as in Chameleon over StarPU-MPI). Each step's `potrf`
//! runs on the owner of the diagonal tile, each `trsm`, `syrk` and `gemm` on the owner
//! of the tile it updates; the panel tiles travel to the ranks whose updates read them,
//! once per version and rank. The tile kernels are `locus_bench`'s, so rank 0's result
//! equals the sequential reference bit for bit.

use locus_bench::cholesky::{initial_tile, reference, tiles, Params};

use super::{first_mismatch, Outcome};
use crate::cluster::{Cluster, DistData, Error};
use crate::dist::{Distribution, ProcessGrid};

/// The distribution of the `nt × nt` tiles (tile `(i, j)` numbered `i * nt + j`) over
/// `ranks`: 2-D block-cyclic over the squarest grid.
pub fn distribution(nt: usize, ranks: usize) -> Distribution {
    Distribution::BlockCyclic2d {
        cols: nt,
        grid: ProcessGrid::squarest(ranks),
    }
}

/// Runs `p` on every rank of `cluster`; rank 0 collects the lower triangle and compares
/// it bit for bit with `locus_bench::cholesky::reference`. Every task of rank
/// `panic_on` panics in the middle step.
pub fn run(cluster: &Cluster, p: &Params, panic_on: Option<usize>) -> Result<Outcome, Error> {
    p.validate().map_err(Error::Config)?;
    let (rank, ranks) = (cluster.rank(), cluster.ranks());
    let (b, nt) = (p.tile, p.n / p.tile);
    let dist = distribution(nt, ranks);
    let slot = |i: usize, j: usize| i * (i + 1) / 2 + j;
    let mut tiles_: Vec<DistData<f64>> = Vec::with_capacity(nt * (nt + 1) / 2);
    for i in 0..nt {
        for j in 0..=i {
            let mut failed = None;
            let t = cluster.data_with(
                format!("tile{i}.{j}"),
                b * b,
                dist.owner(i * nt + j),
                || {
                    initial_tile(p, i, j).unwrap_or_else(|e| {
                        failed = Some(e.to_string());
                        vec![0.0; b * b]
                    })
                },
            )?;
            if let Some(e) = failed {
                return Err(Error::Config(e));
            }
            tiles_.push(t);
        }
    }
    let at = |i: usize, j: usize| &tiles_[slot(i, j)];
    let finished = cluster.run(|ds| {
        for k in 0..nt {
            let boom = panic_on == Some(rank) && k == nt / 2;
            let check = move || {
                if boom {
                    panic!("injected failure (--panic-on {rank})");
                }
            };
            ds.task::<f64>("potrf")
                .read_write(at(k, k))
                .spawn(move |_, mut v| {
                    check();
                    tiles::potrf(b, v.read_writes[0]);
                })?;
            for i in k + 1..nt {
                ds.task::<f64>("trsm")
                    .read(at(k, k))
                    .read_write(at(i, k))
                    .spawn(move |_, mut v| {
                        check();
                        tiles::trsm(b, v.reads[0], v.read_writes[0]);
                    })?;
            }
            for i in k + 1..nt {
                ds.task::<f64>("syrk")
                    .read(at(i, k))
                    .read_write(at(i, i))
                    .spawn(move |_, mut v| {
                        check();
                        tiles::syrk(b, v.reads[0], v.read_writes[0]);
                    })?;
                for j in k + 1..i {
                    ds.task::<f64>("gemm")
                        .read(at(i, k))
                        .read(at(j, k))
                        .read_write(at(i, j))
                        .spawn(move |_, mut v| {
                            check();
                            tiles::gemm(b, v.reads[0], v.reads[1], v.read_writes[0]);
                        })?;
                }
            }
        }
        for t in &tiles_ {
            ds.collect(t, 0)?;
        }
        Ok(())
    })?;
    let (mut verified, mut mismatch) = (None, None);
    if rank == 0 {
        let want = reference(p).map_err(Error::of_workload)?;
        let n = p.n;
        let (mut got_lower, mut want_lower) = (Vec::new(), Vec::new());
        for i in 0..nt {
            for j in 0..=i {
                let got = cluster.fetch(at(i, j))?;
                for q in (0..b * b).filter(|&q| i != j || q % b <= q / b) {
                    got_lower.push(got[q]);
                    want_lower.push(want[(i * b + q / b) * n + j * b + q % b]);
                }
            }
        }
        mismatch = first_mismatch("lower triangle", &got_lower, &want_lower);
        verified = Some(mismatch.is_none());
    }
    Ok(Outcome {
        bench: "cholesky",
        rank,
        ranks,
        params: serde_json::to_value(p).unwrap_or_default(),
        verified,
        mismatch,
        min_sent_bytes: None,
        comm: finished.comm,
        report: finished.report,
    })
}
