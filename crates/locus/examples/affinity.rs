//! Affinity hints (the OpenMP task affinity clause of Virouleau et al.): on two virtual
//! nodes, each block of data is initialised by a task bound strictly to one node, then
//! consumed by tasks that ask to run near their block (`Affinity::data`, not strict).
//! Prints where the consumers ran and the run's locality; verifies the sums.
//!
//! ```sh
//! cargo run --release -p locus --example affinity
//! ```

use locus::{Affinity, Config, Runtime, Topology};

const BLOCKS: usize = 16;
const LEN: usize = 1 << 14;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Work-stealing without pushing, so that only the hints place the consumers.
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1")?)
        .config(Config::Dfa)
        .build()?;
    let nodes = rt.topology().num_nodes();
    let blocks: Vec<_> = (0..BLOCKS)
        .map(|b| rt.data::<u64>(format!("block{b}"), LEN))
        .collect();
    let sums: Vec<_> = (0..BLOCKS)
        .map(|b| rt.data::<u64>(format!("sum{b}"), 1))
        .collect();
    let ran_on: Vec<_> = (0..BLOCKS)
        .map(|b| rt.data::<u64>(format!("node{b}"), 1))
        .collect();
    let finished = rt.run(|s| -> Result<(), locus::Error> {
        for (b, block) in blocks.iter().enumerate() {
            s.task("init", block.write())
                .affinity(Affinity::node(b % nodes).strict())
                .spawn(move |_, v| {
                    for (i, e) in v.iter_mut().enumerate() {
                        *e = (b * LEN + i) as u64;
                    }
                })?;
        }
        for b in 0..BLOCKS {
            s.task(
                "sum",
                (blocks[b].read(), sums[b].write(), ran_on[b].write()),
            )
            .affinity(Affinity::data(&blocks[b]))
            .spawn(|ctx, (v, sum, node)| {
                sum[0] = v.iter().sum();
                node[0] = ctx.node() as u64;
            })?;
        }
        Ok(())
    })?;
    finished.value?;
    let mut on_target = 0;
    let mut verified = true;
    for b in 0..BLOCKS {
        let want: u64 = (0..LEN).map(|i| (b * LEN + i) as u64).sum();
        verified &= rt.fetch(&sums[b])?[0] == want;
        on_target += usize::from(rt.fetch(&ran_on[b])?[0] as usize == b % nodes);
    }
    let locality = &finished.report.locality;
    println!(
        "{BLOCKS} blocks on {nodes} virtual nodes: sums {}, {on_target} of {BLOCKS} consumers ran on their block's node, r_loc_rt = {:.3}",
        if verified { "verified" } else { "WRONG" },
        locality.r_loc_rt
    );
    if !verified {
        return Err("a sum does not match its sequential value".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn affinity_verifies() {
        super::main().unwrap();
    }
}
