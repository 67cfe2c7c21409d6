//! `locus topo [--topology SPEC] [--json] [--probe]`: show a topology, and with
//! `--probe` measure the host's migration cost and STREAM triad bandwidth (`probe`).
//!
//! For the host's real nodes it also shows each node's free memory, the kernel's
//! `MemFree` (a "free" column; `free_memory_bytes` in JSON, `null` for a node whose
//! count cannot be read). A model's nodes have none until a runtime holds memory on
//! them (`Runtime::free_memory`).

use locus_topo::{SysfsReader, Topology};

use crate::cmd::{topology, Failure};
use crate::render;

mod probe;

/// Options of `locus topo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `host`, `NxC`, `NxC:d1,d2,...`, `NxC:@FILE` or a preset (`opteron-64`, `sgi-uv2000`,
    /// `opteron-16`, `tilepro64`).
    #[arg(long, value_name = "SPEC", default_value = "host")]
    pub topology: String,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Measure the host: migration cost `a + b x pages` between two nodes
    /// (`move_pages`) and the STREAM triad bandwidth (not with a `--topology` other
    /// than `host`).
    #[arg(long)]
    pub probe: bool,
}

/// Prints the topology as tables or as one JSON object.
pub fn main(args: &Args) -> Result<(), Failure> {
    // The probe measures this machine: a model named by `--topology` would be ignored.
    if args.probe && args.topology.trim() != "host" {
        return Err(Failure::Usage(format!(
            "--probe measures this machine, not a topology: drop --topology {}",
            args.topology.escape_debug()
        )));
    }
    let topo = topology(&args.topology)?;
    if args.probe {
        return probe::main(args.json);
    }
    let free = free_memory(&topo);
    if args.json {
        let mut value = serde_json::to_value(&topo)
            .map_err(|e| Failure::Failed(format!("cannot write JSON: {e}")))?;
        if let (Some(free), Some(object)) = (&free, value.as_object_mut()) {
            object.insert("free_memory_bytes".to_string(), serde_json::json!(free));
        }
        let json = serde_json::to_string_pretty(&value)
            .map_err(|e| Failure::Failed(format!("cannot write JSON: {e}")))?;
        println!("{json}");
    } else {
        print!("{}", render::full(&topo, free.as_deref()));
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

/// Each node's free memory for the host's real nodes (`None` for a node whose count
/// cannot be read); `None` for a model.
fn free_memory(topo: &Topology) -> Option<Vec<Option<u64>>> {
    if topo.is_virtual() {
        return None;
    }
    let sysfs = SysfsReader::new("/");
    Some(
        topo.nodes()
            .iter()
            .map(|node| {
                let os = topo.os_node(node.id)?;
                sysfs.free_memory(os).ok()
            })
            .collect(),
    )
}
