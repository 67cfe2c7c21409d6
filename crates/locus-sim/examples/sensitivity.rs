//! How much each modelling choice weighs: one kernel at paper 1's size for the machine,
//! under `dsa-base`, `dsa-opt` and `shm-base`, simulated with the machine's costs and
//! with one choice changed at a time; prints the times and the speedups of `dsa-opt`.
//!
//! `cargo run --release -p locus-sim --example sensitivity -- [TOPOLOGY] [KERNEL] [CONTROL] [ITERATIONS] [AGAINST]`
//! (defaults: `opteron-64 jacobi-2d seq`, the paper's iterations; `-` for ITERATIONS
//! keeps the paper's). With AGAINST, a configuration, it compares `dsa-opt` with that
//! one instead. The variants:
//!
//! - `model`: the machine's [`Costs`];
//! - `controllers x2`: twice the controller bandwidth;
//! - `links unlimited`: no limit on the links into a node;
//! - `no compute`: tasks take no compute time (memory only);
//! - `no cache`: no last-level cache (`Costs::llc_bytes` 0);
//! - `cache x4`: a last-level cache four times the machine's;
//! - `no first touch`: fresh pool blocks stay on the node that supplied them
//!   ([`Sim::first_touch`]).

use locus::engine::Bodies;
use locus::Report;
use locus::{Config, Runtime, Topology};
use locus_bench::{Control, Size, SizeSpec, Workload};
use locus_sim::costs::KernelOps;
use locus_sim::{Costs, Sim};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let spec = args.next().unwrap_or_else(|| "opteron-64".into());
    let kernel = args.next().unwrap_or_else(|| "jacobi-2d".into());
    let control: Control = args.next().unwrap_or_else(|| "seq".into()).parse()?;
    let iterations: Option<usize> = args
        .next()
        .filter(|a| a != "-")
        .map(|a| a.parse())
        .transpose()?;
    let against: Option<Config> = args.next().map(|a| a.parse()).transpose()?;

    let topology = Topology::from_spec(&spec)?;
    let base = Costs::for_topology(topology.name());
    const NO_OPS: &[KernelOps] = &[];
    let variants: Vec<(&str, Costs, bool)> = vec![
        ("model", base, true),
        ("no first touch", base, false),
        (
            "no cache",
            Costs {
                llc_bytes: 0,
                ..base
            },
            true,
        ),
        (
            "cache x4",
            Costs {
                llc_bytes: base.llc_bytes * 4,
                ..base
            },
            true,
        ),
        (
            "controllers x2",
            Costs {
                node_bandwidth_gb_s: base.node_bandwidth_gb_s * 2.0,
                ..base
            },
            true,
        ),
        (
            "links unlimited",
            Costs {
                link_bandwidth_gb_s: 1e6,
                far_link_bandwidth_gb_s: if base.far_link_bandwidth_gb_s > 0.0 {
                    1e6
                } else {
                    0.0
                },
                ..base
            },
            true,
        ),
        (
            "no compute",
            Costs {
                kernel_ops: NO_OPS,
                compute_ps_per_byte: 0,
                ..base
            },
            true,
        ),
    ];
    let size = SizeSpec {
        base: Size::paper_for(topology.name()),
        iterations,
        ..SizeSpec::default()
    };
    println!("{spec} {kernel} ({control} control, iterations {iterations:?})");
    let run = |config: Config,
               costs: Costs,
               first_touch: bool|
     -> Result<Report, Box<dyn std::error::Error>> {
        let rt = Runtime::builder()
            .topology(topology.clone())
            .config(config)
            .engine(
                Sim::new()
                    .bodies(Bodies::Skip)
                    .costs(costs)
                    .first_touch(first_touch),
            )
            .build()?;
        Ok(Workload::new(&kernel, &size, control)?.run(&rt)?.report)
    };
    if let Some(other) = against {
        println!("| variant | dsa-opt s (r_loc_rt) | {other} s (r_loc_rt) | {other} / dsa-opt |");
        println!("|---|---|---|---|");
        for (name, costs, first_touch) in variants {
            let (a, b) = (
                run(Config::DsaOpt, costs, first_touch)?,
                run(other, costs, first_touch)?,
            );
            println!(
                "| {name} | {:.4} ({:.3}) | {:.4} ({:.3}) | {:.3} |",
                a.wall_s,
                a.locality.r_loc_rt,
                b.wall_s,
                b.locality.r_loc_rt,
                b.wall_s / a.wall_s
            );
        }
        return Ok(());
    }
    println!("| variant | dsa-base s (r_loc_rt) | dsa-opt s (r_loc_rt) | shm-base s | dsa-opt / dsa-base | dsa-opt / shm-base | fallbacks | first touched |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, costs, first_touch) in variants {
        let mut times = Vec::new();
        let mut loc = Vec::new();
        let mut fallbacks = 0;
        let mut first_touched = 0;
        for config in [Config::DsaBase, Config::DsaOpt, Config::ShmBase] {
            let report = run(config, costs, first_touch)?;
            if config == Config::DsaBase {
                fallbacks = report.memory.fallbacks;
                first_touched = report.memory.first_touched;
            }
            times.push(report.wall_s);
            loc.push(report.locality.r_loc_rt);
        }
        println!(
            "| {name} | {:.2} ({:.3}) | {:.2} ({:.3}) | {:.2} | {:.2}x | {:.2}x | {fallbacks} | {first_touched} |",
            times[0],
            loc[0],
            times[1],
            loc[1],
            times[2],
            times[0] / times[1],
            times[2] / times[1]
        );
    }
    Ok(())
}
