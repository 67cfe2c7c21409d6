//! Distributed `random-dag`: the seeded random graph of `locus_bench::random_dag`, each
//! datum owned by a random rank (seeded: every rank draws the same owners). A task runs
//! on the owner of the first datum it writes; a task writing data of several owners
//! moves their current versions to its rank, and later readers fetch them there. Rank
//! 0 collects every datum and compares it with the sequential reference.

use locus_bench::random_dag::{apply, generate, reference, Params};

use super::Outcome;
use crate::cluster::{Cluster, DistData, Error};
use crate::dist::Distribution;

/// Random owners: datum `i` belongs to a rank drawn from `seed` and `i`.
pub fn distribution(seed: u64, ranks: usize) -> Distribution {
    Distribution::custom(move |i| {
        let h = (seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .wrapping_mul(0xBF58_476D_1CE4_E5B9)
            .rotate_left(31);
        (h % ranks.max(1) as u64) as usize
    })
}

/// Runs `p` on every rank of `cluster`; rank 0 compares every datum with the
/// reference. Every task of rank `panic_on` panics in the middle of the program.
pub fn run(cluster: &Cluster, p: &Params, panic_on: Option<usize>) -> Result<Outcome, Error> {
    p.validate().map_err(Error::Config)?;
    if p.hints {
        return Err(Error::Config(
            "distributed random-dag: affinity hints name workers of one runtime; use hints=false"
                .into(),
        ));
    }
    let (rank, ranks) = (cluster.rank(), cluster.ranks());
    let program = generate(p);
    let dist = distribution(p.seed, ranks);
    let data: Vec<DistData<u64>> = program
        .lens
        .iter()
        .enumerate()
        .map(|(i, &len)| cluster.data(format!("d{i}"), len, dist.owner(i)))
        .collect::<Result<_, _>>()?;
    let middle = program.tasks.len() / 2;
    let finished = cluster.run(|ds| {
        for (t, spec) in program.tasks.iter().enumerate() {
            if spec.writes.is_empty() && spec.read_write.is_none() {
                // Writes nothing: no effect on any datum, and no owner to run it.
                continue;
            }
            let mut task = ds.task::<u64>(format!("t{t}"));
            for (d, r) in &spec.reads {
                task = if *r == (0..program.lens[*d]) {
                    task.read(&data[*d])
                } else {
                    task.read_range(&data[*d], r.clone())
                };
            }
            for &d in &spec.writes {
                task = task.write(&data[d]);
            }
            if let Some(d) = spec.read_write {
                task = task.read_write(&data[d]);
            }
            let (salt, boom) = (spec.salt, panic_on == Some(rank) && t >= middle);
            task.spawn(move |_, mut v| {
                if boom {
                    panic!("injected failure (--panic-on {rank})");
                }
                apply(salt, &v.reads, &mut v.writes, v.read_writes.pop());
            })?;
        }
        for d in &data {
            ds.collect(d, 0)?;
        }
        Ok(())
    })?;
    let (mut verified, mut mismatch) = (None, None);
    if rank == 0 {
        let want = reference(&program).map_err(Error::of_workload)?;
        for (i, (d, w)) in data.iter().zip(&want).enumerate() {
            let got = cluster.fetch(d)?;
            if got != *w {
                let k = got.iter().zip(w).position(|(g, w)| g != w).unwrap_or(0);
                mismatch = Some(format!("datum {i}[{k}] differs from the reference"));
                break;
            }
        }
        verified = Some(mismatch.is_none());
    }
    Ok(Outcome {
        bench: "random-dag",
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
