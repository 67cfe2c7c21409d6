//! `locus demo`: what exists so far, on this machine: the host topology beside the
//! `opteron-64` preset, and that preset laid over the host as virtual nodes.

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
        .laid_over(&host)
        .map_err(|e| Failure::Failed(e.to_string()))?;
    println!();
    println!("{}", render::virtual_mapping(&virt));
    Ok(())
}
