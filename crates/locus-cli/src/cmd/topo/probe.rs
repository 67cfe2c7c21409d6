//! `locus topo --probe`: the host's migration model and STREAM triad bandwidth.
//!
//! Migration is measured between the first two NUMA nodes the kernel has online
//! (`locus_mem::probe::migration`); a machine with one node says it cannot be measured
//! and still runs the triad, one pinned thread per allowed CPU, over vectors four
//! times the largest cache (`locus_mem::probe::stream_len`).

use crate::cmd::Failure;
use locus_mem::probe;

/// Triad repetitions; the fastest counts.
const TRIAD_REPEATS: usize = 5;

/// Runs both probes and prints them as text or as one JSON object.
pub fn main(json: bool) -> Result<(), Failure> {
    let migration = probe::migration(0, 1);
    let cpus = locus_topo::allowed_cpus()
        .map_err(|e| Failure::Failed(format!("cannot read the allowed CPUs: {e}")))?;
    let triad = probe::triad(probe::stream_len(), &cpus, TRIAD_REPEATS);
    if json {
        let migration = match &migration {
            Ok(fit) => serde_json::json!({
                "from_node": 0, "to_node": 1,
                "fixed_ns": fit.fixed_ns, "per_page_ns": fit.per_page_ns,
                "page_bytes": fit.page_bytes, "samples": fit.samples,
            }),
            Err(e) => serde_json::json!({ "error": e.to_string() }),
        };
        let out = serde_json::json!({
            "migration": migration,
            "triad": { "gb_per_s": triad.gb_per_s, "threads": triad.threads, "len": triad.len },
        });
        println!("{out}");
        return Ok(());
    }
    println!("probe of this host");
    match &migration {
        Ok(fit) => {
            println!(
                "  migration (move_pages, node 0 -> 1): a = {:.1} us, b = {:.2} us per {} B page",
                fit.fixed_ns / 1e3,
                fit.per_page_ns / 1e3,
                fit.page_bytes
            );
            let samples: Vec<String> = fit
                .samples
                .iter()
                .map(|(p, ns)| format!("{p} pages {:.1} us", ns / 1e3))
                .collect();
            println!("    fastest calls: {}", samples.join(", "));
        }
        Err(e) => println!("  {e}"),
    }
    println!(
        "  STREAM triad: {:.2} GB/s ({} threads, 3 vectors of {} doubles, best of {})",
        triad.gb_per_s, triad.threads, triad.len, TRIAD_REPEATS
    );
    Ok(())
}
