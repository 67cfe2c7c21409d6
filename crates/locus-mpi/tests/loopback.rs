//! Distributed programs over the in-process transport: every rank a thread with its own
//! runtime, verified bit for bit on rank 0, messages counted against the minimum.

use std::sync::Arc;

use locus::{Config, Runtime};
use locus_mpi::kernels::{self, Outcome};
use locus_mpi::{Cluster, Error, Loopback, Transport};

/// Runs `program` on `ranks` ranks (threads), each with a runtime of `config`.
fn spmd<F>(ranks: usize, config: Config, program: F) -> Vec<Result<Outcome, Error>>
where
    F: Fn(&Cluster) -> Result<Outcome, Error> + Sync,
{
    spmd_on(ranks, config, None, program)
}

/// [`spmd`], each rank's runtime on the virtual topology `spec` (default: `1x2`).
fn spmd_on<F>(
    ranks: usize,
    config: Config,
    spec: Option<&str>,
    program: F,
) -> Vec<Result<Outcome, Error>>
where
    F: Fn(&Cluster) -> Result<Outcome, Error> + Sync,
{
    let transports = Loopback::ranks(ranks);
    std::thread::scope(|s| {
        let handles: Vec<_> = transports
            .into_iter()
            .map(|t| {
                let program = &program;
                s.spawn(move || {
                    let rt = match spec {
                        Some(spec) => Runtime::builder()
                            .config(config)
                            .topology(locus::Topology::from_spec(spec).expect("a spec")),
                        // Two workers on one virtual node, whatever CPUs the host has.
                        None => Runtime::builder()
                            .config(config)
                            .topology(locus::Topology::from_spec("1x2").expect("a spec")),
                    }
                    .build()
                    .expect("a runtime");
                    let cluster = Cluster::new(rt, t as Arc<dyn Transport>)?;
                    program(&cluster)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no rank panics"))
            .collect()
    })
}

fn small_jacobi() -> locus_bench::jacobi_2d::Params {
    locus_bench::jacobi_2d::Params {
        rows: 32,
        cols: 48,
        block_rows: 8,
        block_cols: 8,
        iterations: 4,
        ..Default::default()
    }
}

#[test]
fn jacobi_2d_sends_exactly_the_halos() {
    for ranks in [1, 2, 3, 4] {
        for config in [Config::DsaOpt, Config::DsaBase] {
            let p = small_jacobi();
            let outcomes = spmd(ranks, config, |c| kernels::jacobi_2d::run(c, &p));
            for (rank, o) in outcomes.into_iter().enumerate() {
                let o = o.unwrap_or_else(|e| panic!("rank {rank} of {ranks}: {e}"));
                if rank == 0 {
                    assert_eq!(o.verified, Some(true), "{:?}", o.mismatch);
                }
                assert_eq!(
                    Some(o.comm.sent_bytes),
                    o.min_sent_bytes,
                    "rank {rank} of {ranks}"
                );
                if ranks > 1 {
                    assert!(o.comm.sent_bytes > 0);
                }
            }
        }
    }
}

#[test]
fn a_panic_on_one_rank_ends_every_rank_with_an_error() {
    // Bounded: a hang fails the test instead of blocking it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let p = small_jacobi();
        let outcomes = spmd(4, Config::DsaOpt, |c| {
            kernels::jacobi_2d::run_failing(c, &p, Some(1))
        });
        let _ = tx.send(outcomes);
    });
    let outcomes = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("every rank ends within the time limit");
    for (rank, o) in outcomes.into_iter().enumerate() {
        let e = match o {
            Ok(_) => panic!("rank {rank} succeeded although rank 1 failed"),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains("injected failure (--panic-on 1)"),
            "rank {rank}: {e}"
        );
    }
}

#[test]
fn cholesky_block_cyclic_verified() {
    for ranks in [1, 2, 4] {
        let p = locus_bench::cholesky::Params {
            n: 48,
            tile: 8,
            ..Default::default()
        };
        let outcomes = spmd(ranks, Config::DsaOpt, |c| {
            kernels::cholesky::run(c, &p, None)
        });
        for (rank, o) in outcomes.into_iter().enumerate() {
            let o = o.unwrap_or_else(|e| panic!("rank {rank} of {ranks}: {e}"));
            if rank == 0 {
                assert_eq!(o.verified, Some(true), "{:?}", o.mismatch);
            }
            if ranks > 1 {
                assert!(o.comm.sent_bytes + o.comm.received_bytes > 0, "rank {rank}");
            }
        }
    }
}

#[test]
fn random_dag_with_random_owners_verified() {
    for (ranks, seed) in [(2, 1), (3, 2), (4, 3)] {
        let p = locus_bench::random_dag::Params {
            tasks: 300,
            data: 16,
            max_len: 64,
            seed,
            ..Default::default()
        };
        for config in [Config::DsaOpt, Config::DsaBase] {
            let outcomes = spmd(ranks, config, |c| kernels::random_dag::run(c, &p, None));
            for (rank, o) in outcomes.into_iter().enumerate() {
                let o = o.unwrap_or_else(|e| panic!("rank {rank} of {ranks}: {e}"));
                if rank == 0 {
                    assert_eq!(o.verified, Some(true), "{:?}", o.mismatch);
                }
            }
        }
    }
}

/// Under deferred allocation a received version is allocated where its reader runs:
/// with two nodes per rank, messages land on both nodes (not only on the
/// communication worker's), and the bytes received per node add up.
#[test]
fn received_versions_land_on_their_readers_nodes() {
    let p = locus_bench::jacobi_2d::Params {
        rows: 64,
        cols: 64,
        block_rows: 8,
        block_cols: 8,
        iterations: 4,
        ..Default::default()
    };
    let outcomes = spmd_on(2, Config::DsaOpt, Some("2x2"), |c| {
        kernels::jacobi_2d::run(c, &p)
    });
    for (rank, o) in outcomes.into_iter().enumerate() {
        let o = o.unwrap_or_else(|e| panic!("rank {rank}: {e}"));
        if rank == 0 {
            assert_eq!(o.verified, Some(true), "{:?}", o.mismatch);
        }
        assert_eq!(Some(o.comm.sent_bytes), o.min_sent_bytes);
        let per_node = &o.comm.received_bytes_per_node;
        assert_eq!(per_node.len(), 2);
        assert_eq!(
            per_node.iter().sum::<u64>(),
            o.comm.received_bytes + o.comm.collect_received_bytes
        );
        assert!(per_node.iter().all(|&b| b > 0), "rank {rank}: {per_node:?}");
        eprintln!(
            "rank {rank}: received per node {per_node:?}, r_loc_rt {}",
            o.report.locality.r_loc_rt
        );
    }
}
