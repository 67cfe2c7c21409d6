//! Placement checks: binding, interleaving, migration and first touch by a pinned
//! thread put every page where the kernel later says it is.

use crate::mapping::{histogram, Mapping};
use crate::report::Report;
use crate::{sys, sysfs};

/// Pages in each test mapping.
const PAGES: usize = 64;

/// Runs the placement checks.
pub fn run(report: &mut Report) {
    let nodes = match sysfs::online_nodes() {
        Ok(nodes) if nodes.len() >= 4 => nodes.len(),
        Ok(nodes) => {
            let detail = format!("need 4 nodes, the guest has {}", nodes.len());
            report.record("placement.nodes", Err(detail));
            return;
        }
        Err(e) => {
            report.record("placement.nodes", Err(e));
            return;
        }
    };
    for node in 0..nodes {
        report.record(&format!("placement.bind.node{node}"), bind(node, nodes));
    }
    report.record("placement.interleave", interleave(nodes));
    report.record("placement.migrate", migrate(0, 3, nodes));
    report.record("placement.first-touch-pinned", first_touch_pinned(2, nodes));
}

/// Every page's node, with an error if any page has none.
fn page_nodes(mapping: &Mapping, nodes: usize) -> Result<Vec<usize>, String> {
    let statuses = sys::nodes_of(&mapping.pages()).map_err(|e| format!("move_pages: {e}"))?;
    let (_, errors) = histogram(&statuses, nodes);
    if errors > 0 {
        return Err(format!("{errors} pages without a node: {statuses:?}"));
    }
    Ok(statuses.into_iter().map(|s| s as usize).collect())
}

/// All pages on `want`, or the histogram of where they are.
fn all_on(mapping: &Mapping, want: usize, nodes: usize) -> Result<(), String> {
    let got = page_nodes(mapping, nodes)?;
    let on = got.iter().filter(|&&n| n == want).count();
    if on == got.len() {
        Ok(())
    } else {
        let statuses: Vec<i32> = got.iter().map(|&n| n as i32).collect();
        let (counts, _) = histogram(&statuses, nodes);
        Err(format!(
            "{on}/{} pages on node {want}, per node {counts:?}",
            got.len()
        ))
    }
}

fn bind(node: usize, nodes: usize) -> Result<String, String> {
    let mapping = Mapping::new(PAGES).map_err(|e| format!("mmap: {e}"))?;
    sys::bind(mapping.addr(), mapping.len(), node).map_err(|e| format!("bind: {e}"))?;
    mapping.touch(node as u8);
    all_on(&mapping, node, nodes)?;
    let first = sys::node_of(mapping.addr()).map_err(|e| format!("get_mempolicy: {e}"))?;
    if first != node {
        return Err(format!("get_mempolicy says page 0 is on node {first}"));
    }
    Ok(format!(
        "{PAGES}/{PAGES} pages on node {node} (move_pages), page 0 on node {first} (get_mempolicy)"
    ))
}

fn interleave(nodes: usize) -> Result<String, String> {
    let all: Vec<usize> = (0..nodes).collect();
    let mapping = Mapping::new(PAGES).map_err(|e| format!("mmap: {e}"))?;
    sys::interleave(mapping.addr(), mapping.len(), &all).map_err(|e| format!("interleave: {e}"))?;
    mapping.touch(7);
    let got = page_nodes(&mapping, nodes)?;
    // The kernel picks the node of a page from its offset, so the sequence starts
    // at some node and then cycles through all of them in order.
    let start = got[0];
    if let Some(i) = (0..got.len()).find(|&i| got[i] != (start + i) % nodes) {
        return Err(format!(
            "page {i} on node {}, not round-robin: {got:?}",
            got[i]
        ));
    }
    let statuses: Vec<i32> = got.iter().map(|&n| n as i32).collect();
    let (counts, _) = histogram(&statuses, nodes);
    Ok(format!(
        "round-robin from node {start}, pages per node {counts:?}"
    ))
}

fn migrate(from: usize, to: usize, nodes: usize) -> Result<String, String> {
    let mapping = Mapping::new(PAGES).map_err(|e| format!("mmap: {e}"))?;
    sys::bind(mapping.addr(), mapping.len(), from).map_err(|e| format!("bind: {e}"))?;
    mapping.touch(42);
    all_on(&mapping, from, nodes).map_err(|e| format!("before migration: {e}"))?;
    sys::migrate(mapping.addr(), mapping.len(), to).map_err(|e| format!("migrate: {e}"))?;
    all_on(&mapping, to, nodes).map_err(|e| format!("after migration: {e}"))?;
    if let Some(page) = mapping.first_mismatch(42) {
        return Err(format!("page {page} lost its contents in the migration"));
    }
    Ok(format!(
        "{PAGES}/{PAGES} pages moved from node {from} to node {to}, contents kept"
    ))
}

fn first_touch_pinned(node: usize, nodes: usize) -> Result<String, String> {
    let cpu = *sysfs::cpus_of(node)?
        .first()
        .ok_or_else(|| format!("node {node} has no CPU"))?;
    let worker = std::thread::spawn(move || -> Result<String, String> {
        sys::pin_to_cpu(cpu).map_err(|e| format!("pin to CPU {cpu}: {e}"))?;
        // SAFETY: sched_getcpu has no preconditions.
        let running = unsafe { libc::sched_getcpu() };
        if running != cpu as i32 {
            return Err(format!("pinned to CPU {cpu} but running on {running}"));
        }
        let mapping = Mapping::new(PAGES).map_err(|e| format!("mmap: {e}"))?;
        mapping.touch(3);
        all_on(&mapping, node, nodes)?;
        Ok(format!(
            "thread on CPU {cpu}: {PAGES}/{PAGES} first-touched pages on node {node}"
        ))
    });
    worker
        .join()
        .map_err(|_| "the pinned thread panicked".to_string())?
}
