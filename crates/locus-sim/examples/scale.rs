//! A million tasks on a simulated machine, bodies skipped: how fast the simulator is.
//!
//! A chain of stencils built directly with the Locus API: `blocks` blocks of
//! `block_len` doubles, `iterations` iterations; iteration `t` of block `b` reads its
//! block and one element of each neighbour and writes the block's next version.
//!
//! `cargo run --release -p locus-sim --example scale -- [TOPOLOGY] [BLOCKS] [ITERATIONS] [BLOCK_LEN] [CONFIG]`
//! (defaults: `sgi-uv2000 192 5200 65536 dsa-opt`)

use std::time::Instant;

use locus::engine::Bodies;
use locus::{Config, Data, Runtime, Topology};
use locus_sim::{Probe, Sim};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let spec = args.next().unwrap_or_else(|| "sgi-uv2000".into());
    let blocks: usize = args.next().map_or(Ok(192), |a| a.parse())?;
    let iterations: usize = args.next().map_or(Ok(5200), |a| a.parse())?;
    let block_len: usize = args.next().map_or(Ok(1 << 16), |a| a.parse())?;
    let config: Config = args.next().unwrap_or_else(|| "dsa-opt".into()).parse()?;

    let probe = Probe::new();
    let rt = Runtime::builder()
        .topology(Topology::from_spec(&spec)?)
        .config(config)
        .engine(Sim::new().bodies(Bodies::Skip).probe(probe.clone()))
        .build()?;
    let cur: Vec<Data<f64>> = (0..blocks)
        .map(|b| rt.data::<f64>(format!("block{b}"), block_len))
        .collect();
    let next: Vec<Data<f64>> = (0..blocks)
        .map(|b| rt.data::<f64>(format!("next{b}"), block_len))
        .collect();
    let n = block_len;

    let wall = Instant::now();
    let finished = rt.run(|s| -> Result<(), locus::Error> {
        for t in 0..iterations {
            let (src, dst) = if t % 2 == 0 {
                (&cur, &next)
            } else {
                (&next, &cur)
            };
            for b in 0..blocks {
                let halos: Vec<_> = (b > 0)
                    .then(|| src[b - 1].read_range(n - 1..n))
                    .into_iter()
                    .chain((b + 1 < blocks).then(|| src[b + 1].read_range(0..1)))
                    .collect();
                s.spawn("stencil", (src[b].read(), halos, dst[b].write()), |_, _| {})?;
            }
        }
        Ok(())
    })?;
    finished.value?;
    let host_s = wall.elapsed().as_secs_f64();
    let r = &finished.report;
    let summary = probe.summary();
    println!(
        "{spec} {config}: {} tasks on {} simulated workers in {host_s:.2} s of host time \
         ({:.0} ns per task, {} events)",
        r.tasks,
        r.threads,
        host_s * 1e9 / r.tasks as f64,
        summary.events
    );
    println!(
        "simulated makespan {:.4} s, r_loc_rt {:.4}, steals {} same-node / {} remote, \
         pushes {} transferred, peak {} MiB, {} wake-ups",
        r.wall_s,
        r.locality.r_loc_rt,
        r.steals.same_node,
        r.steals.remote,
        r.pushes.transferred,
        r.memory.peak_bytes >> 20,
        summary.wakeups
    );
    Ok(())
}
