//! Runs every paper-1 kernel once at its default size and prints time and locality.
//!
//! `cargo run --release -p locus-bench --example kernels -- [SPEC] [CONFIG] [seq|parallel] [tiny|small|paper]`

use locus::{Config, Runtime, Topology};
use locus_bench::{run_kernel, Control, Size, KERNELS};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let spec = args.next().unwrap_or_else(|| "host".into());
    let config: Config = args.next().unwrap_or_else(|| "dsa-base".into()).parse()?;
    let control: Control = args.next().unwrap_or_else(|| "seq".into()).parse()?;
    let size: Size = args.next().unwrap_or_else(|| "small".into()).parse()?;
    let rt = Runtime::builder()
        .topology(Topology::from_spec(&spec)?)
        .config(config)
        .build()?;
    for &name in KERNELS {
        let out = run_kernel(name, &rt, size, control)?;
        let r = &out.report;
        println!(
            "{name:>13} verified {} wall {:.4}s tasks {:>6} r_loc_rt {:.3} peak {} B",
            out.verified, r.wall_s, r.tasks, r.locality.r_loc_rt, r.memory.peak_bytes
        );
    }
    Ok(())
}
