//! `locus topo [--topology SPEC] [--json] [--probe]`: show a topology, and with
//! `--probe` measure the host's migration cost and STREAM triad bandwidth (`probe`).

use crate::cmd::{topology, Failure};
use crate::render;

mod probe;

/// Options of `locus topo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `host`, `NxC`, `NxC:d1,d2,...`, `NxC:@FILE` or a preset (`opteron-64`, `sgi-uv2000`,
    /// `opteron-16`).
    #[arg(long, value_name = "SPEC", default_value = "host")]
    pub topology: String,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Measure the host: migration cost `a + b x pages` between two nodes
    /// (`move_pages`) and the STREAM triad bandwidth.
    #[arg(long)]
    pub probe: bool,
}

/// Prints the topology as tables or as one JSON object.
pub fn main(args: &Args) -> Result<(), Failure> {
    let topo = topology(&args.topology)?;
    if args.probe {
        return probe::main(args.json);
    }
    if args.json {
        let json = serde_json::to_string_pretty(&topo)
            .map_err(|e| Failure::Failed(format!("cannot write JSON: {e}")))?;
        println!("{json}");
    } else {
        print!("{}", render::full(&topo));
        let m = topo.memory_costs();
        println!(
            "memory costs ({}): local read {} ns, local write {} ns; migration {} us + {} us per {} B page",
            m.source.name(),
            m.local_read_ns,
            m.local_write_ns,
            m.migration.fixed_ns / 1e3,
            m.migration.per_page_ns / 1e3,
            m.migration.page_bytes
        );
    }
    Ok(())
}
