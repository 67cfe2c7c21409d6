//! `locus demo`: what exists so far, on this machine: the host topology beside the
//! `opteron-64` preset, that preset laid over the host as virtual nodes, then verified
//! benchmark runs on two virtual nodes and in the simulator, configuration beside
//! configuration.

use locus::{Config, Runtime};
use locus_bench::{Control, Size};
use locus_topo::Topology;

use crate::cmd::Failure;
use crate::render;

/// `locus demo` takes no options.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Prints the host and `opteron-64` side by side.
pub fn main(_args: &Args) -> Result<(), Failure> {
    let host = Topology::host()
        .map_err(|e| Failure::Failed(format!("cannot read the host topology: {e}")))?;
    let preset = Topology::preset("opteron-64").map_err(|e| Failure::Failed(e.to_string()))?;
    println!("Locus demo: the topology model (this host beside paper 1's Opteron-64)\n");
    print!(
        "{}",
        render::side_by_side(&render::compact(&host), &render::compact(&preset))
    );
    let virt = preset
        .clone()
        .laid_over(&host)
        .map_err(|e| Failure::Failed(e.to_string()))?;
    println!();
    println!("{}", render::virtual_mapping(&virt));

    println!(
        "\nBenchmarks on two virtual nodes laid over this machine's CPUs (threads engine);\n\
         every result is checked against a sequential reference.\n"
    );
    table_header("engine threads, topology 2x1");
    for (bench, configs) in [
        (
            "random-dag",
            &[Config::DsaBase, Config::Dfa, Config::DsaOpt][..],
        ),
        (
            "jacobi-2d",
            &[Config::DsaBase, Config::Dfa, Config::DsaOpt][..],
        ),
        ("kmeans", &[Config::DsaBase, Config::DsaOpt][..]),
    ] {
        for &config in configs {
            let rt = Runtime::builder()
                .topology(Topology::from_spec("2x1").expect("a valid spec"))
                .config(config)
                .build()
                .map_err(|e| Failure::Failed(e.to_string()))?;
            row(bench, &rt, Size::Small, None)?;
        }
    }
    println!("\nThe same program in the simulator, on paper 1's Opteron-64 (64 cores, 8 nodes):\n");
    table_header("engine sim, topology opteron-64");
    let mut base = None;
    for config in [Config::DsaBase, Config::Dfa, Config::DsaOpt] {
        let rt = Runtime::builder()
            .topology(preset.clone())
            .config(config)
            .engine(locus_sim::Sim::new())
            .build()
            .map_err(|e| Failure::Failed(e.to_string()))?;
        let time = row("jacobi-2d", &rt, Size::Small, base)?;
        base.get_or_insert(time);
    }
    let (cpus, nodes) = (host.num_cpus(), host.num_nodes());
    println!(
        "\nr_loc_rt: local bytes over all bytes accessed through runtime buffers; time (s): \
         real time on this host ({cpus} {}, {nodes} NUMA {}; virtual nodes share its real \
         {}) or simulated time. `locus run`, `locus sim` and `--json` give the full \
         reports.",
        if cpus == 1 { "CPU" } else { "CPUs" },
        if nodes == 1 { "node" } else { "nodes" },
        if nodes == 1 { "node" } else { "nodes" },
    );
    Ok(())
}

fn table_header(title: &str) {
    println!("{title}");
    println!(
        "  {:<11} {:<9} {:>8} {:>10} {:>8} {:>13} {:>11} {:>8}",
        "bench",
        "config",
        "verified",
        "time (s)",
        "r_loc_rt",
        "remote writes",
        "peak memory",
        "speedup"
    );
}

/// Runs one benchmark and prints its row; returns its time.
fn row(bench: &str, rt: &Runtime, size: Size, base: Option<f64>) -> Result<f64, Failure> {
    let out = locus_bench::run_kernel(bench, rt, size, Control::Sequential)
        .map_err(|e| Failure::Failed(format!("{bench}: {e}")))?;
    let r = &out.report;
    let speedup = base.map_or("-".to_string(), |b| format!("{:.2}x", b / r.wall_s));
    println!(
        "  {:<11} {:<9} {:>8} {:>10.4} {:>8.3} {:>10.2} MiB {:>7.2} MiB {:>8}",
        bench,
        r.config,
        if out.verified { "yes" } else { "NO" },
        r.wall_s,
        r.locality.r_loc_rt,
        r.locality.write_remote_bytes as f64 / (1u64 << 20) as f64,
        r.memory.peak_bytes as f64 / (1u64 << 20) as f64,
        speedup
    );
    if !out.verified {
        return Err(Failure::Failed(format!(
            "{bench} under {}: the result does not match the sequential reference",
            r.config
        )));
    }
    Ok(r.wall_s)
}
