//! A program that is not the same on every rank, run under `mpirun -np 2`: rank 0 makes
//! `x` with 8 elements and rank 1 with 4 (as a program that sizes its data from a file
//! only some ranks can read would). Rank 1 reads `x` from rank 0, so it expects 32 bytes
//! where rank 0 sends 64. The run fails on both ranks with an error naming the two
//! lengths, and each rank exits with status 1; MPI does not abort the job
//! (`tests/mpirun.rs` checks it).
//!
//! `mpirun -np 2 target/release/examples/unequal_lengths` (feature `mpi`).

use std::process::ExitCode;
use std::sync::Arc;

use locus::{Runtime, Topology};
use locus_mpi::{Cluster, Transport};

fn main() -> ExitCode {
    let (universe, mpi) = match locus_mpi::mpi::init() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("unequal_lengths: {e}");
            return ExitCode::from(2);
        }
    };
    let rank = mpi.rank();
    let run = || -> Result<(), Box<dyn std::error::Error>> {
        let rt = Runtime::builder()
            .topology(Topology::from_spec("1x2")?)
            .build()?;
        let c = Cluster::new(rt, mpi.clone() as Arc<dyn Transport>)?;
        let len = if rank == 0 { 8 } else { 4 };
        let x = c.data_with("x", len, 0, || vec![1u64; len])?;
        let y = c.data::<u64>("y", len, 1)?;
        c.run(|ds| {
            ds.task::<u64>("copy")
                .read(&x)
                .write(&y)
                .spawn(|_, mut v| v.writes[0].copy_from_slice(v.reads[0]))?;
            Ok(())
        })?;
        Ok(())
    };
    let outcome = run();
    mpi.shutdown();
    match outcome {
        Ok(()) => {
            drop(universe);
            println!("rank {rank}: the run succeeded");
            ExitCode::SUCCESS
        }
        Err(e) => {
            // The peer may have failed too: finalising MPI could wait for it.
            std::mem::forget(universe);
            eprintln!("rank {rank}: {e}");
            ExitCode::from(1)
        }
    }
}
