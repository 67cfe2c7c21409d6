//! Runs the `overhead` graph once and prints the cost per task.
//!
//! `cargo run --release -p locus-bench --example overhead -- [SPEC] [CONFIG]`

use locus::{Config, Runtime, Topology};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let spec = args.next().unwrap_or_else(|| "host".into());
    let config: Config = args.next().unwrap_or_else(|| "dsa-base".into()).parse()?;
    let rt = Runtime::builder()
        .topology(Topology::from_spec(&spec)?)
        .config(config)
        .build()?;
    let out = locus_bench::overhead::run(&rt, &Default::default())?;
    println!(
        "tasks {} wall {:.4}s {:.1} ns/task verified {} steals {:?}",
        out.tasks, out.wall_s, out.ns_per_task, out.verified, out.report.steals
    );
    Ok(())
}
