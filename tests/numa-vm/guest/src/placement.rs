//! Placement checks: Locus's placement primitives (`locus_mem::placement`) put every
//! page where the kernel later says it is: binding, interleaving, migration (both by
//! `move_pages` and by re-binding with `MoveExisting`), and first touch by a thread
//! pinned with Locus's pinning call.

use locus_mem::placement::{self, BindMode, PageStatus};

use crate::mapping::Mapping;
use crate::pages::{all_on, histogram, nodes_of};
use crate::pinned::{foreign_node, on_node};
use crate::report::Report;
use crate::sysfs;

/// Pages in each test mapping.
const PAGES: usize = 64;

/// Runs the placement checks.
pub fn run(report: &mut Report) {
    if !placement::numa_available() {
        report.record(
            "placement.numa-available",
            Err("locus-mem sees no NUMA support in this kernel".into()),
        );
        return;
    }
    let nodes = match sysfs::online_nodes() {
        Ok(online) if online.len() >= 4 && placement::online_nodes() == online.len() => {
            online.len()
        }
        Ok(online) => {
            let detail = format!(
                "need 4 nodes; sysfs lists {}, locus-mem counts {}",
                online.len(),
                placement::online_nodes()
            );
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
    report.record(
        "placement.bind-move-existing",
        bind_move_existing(1, 2, nodes),
    );
    report.record("placement.first-touch-pinned", first_touch_pinned(2, nodes));
}

fn new_mapping() -> Result<Mapping, String> {
    Mapping::new(PAGES).map_err(|e| format!("mmap: {e}"))
}

fn bind(node: usize, nodes: usize) -> Result<String, String> {
    let m = new_mapping()?;
    placement::bind(m.addr(), m.len(), node, BindMode::PolicyOnly).map_err(|e| e.to_string())?;
    let toucher = foreign_node(node, nodes);
    let (cpu, ()) = on_node(toucher, || {
        m.touch(node as u8);
        Ok(())
    })?;
    let pages = all_on(m.addr(), m.len(), node, nodes)?;
    let last = m.addr().wrapping_add(m.len() - 1);
    for (what, addr) in [("first", m.addr()), ("last", last)] {
        let got = placement::node_of(addr).map_err(|e| e.to_string())?;
        if got != node {
            return Err(format!("node_of says the {what} page is on node {got}"));
        }
    }
    Ok(format!(
        "touched from CPU {cpu} (node {toucher}): {pages}/{PAGES} pages on node {node} (query_nodes), first and last page on node {node} (node_of)"
    ))
}

fn interleave(nodes: usize) -> Result<String, String> {
    let all: Vec<usize> = (0..nodes).collect();
    let m = new_mapping()?;
    placement::interleave(m.addr(), m.len(), &all).map_err(|e| e.to_string())?;
    m.touch(7);
    let got = nodes_of(m.addr(), m.len())?;
    // The kernel picks the node of a page from its offset, so the sequence starts at
    // some node and then cycles through all of them in order.
    let start = got[0];
    if let Some(i) = (0..got.len()).find(|&i| got[i] != (start + i) % nodes) {
        return Err(format!(
            "page {i} on node {}, not round-robin: {got:?}",
            got[i]
        ));
    }
    Ok(format!(
        "round-robin from node {start}, pages per node {:?}",
        histogram(&got, nodes)
    ))
}

fn migrate(from: usize, to: usize, nodes: usize) -> Result<String, String> {
    let m = new_mapping()?;
    placement::bind(m.addr(), m.len(), from, BindMode::PolicyOnly).map_err(|e| e.to_string())?;
    on_node(foreign_node(from, nodes), || {
        m.touch(42);
        Ok(())
    })?;
    all_on(m.addr(), m.len(), from, nodes).map_err(|e| format!("before: {e}"))?;
    let statuses = placement::migrate(m.addr(), m.len(), to).map_err(|e| e.to_string())?;
    if let Some(bad) = statuses.iter().find(|s| **s != PageStatus::Node(to)) {
        return Err(format!("migrate reported {bad:?} for a page"));
    }
    all_on(m.addr(), m.len(), to, nodes).map_err(|e| format!("after: {e}"))?;
    if let Some(page) = m.first_mismatch(42) {
        return Err(format!("page {page} lost its contents in the migration"));
    }
    Ok(format!(
        "{PAGES}/{PAGES} pages moved from node {from} to node {to} (migrate), contents kept"
    ))
}

fn bind_move_existing(from: usize, to: usize, nodes: usize) -> Result<String, String> {
    let m = new_mapping()?;
    let half = m.len() / 2;
    placement::bind(m.addr(), m.len(), from, BindMode::PolicyOnly).map_err(|e| e.to_string())?;
    // All touches come from a third node. Only the first half is touched before the
    // re-bind; the second half is first touched afterwards and must follow the new
    // policy.
    let toucher = (0..nodes)
        .find(|&n| n != from && n != to)
        .ok_or("no third node to touch from")?;
    on_node(toucher, || {
        for page in &m.pages()[..PAGES / 2] {
            // SAFETY: `page` lies inside the live, writable mapping `m`.
            unsafe { page.write_volatile(9) };
        }
        Ok(())
    })?;
    all_on(m.addr(), half, from, nodes).map_err(|e| format!("before: {e}"))?;
    placement::bind(m.addr(), m.len(), to, BindMode::MoveExisting).map_err(|e| e.to_string())?;
    on_node(toucher, || {
        m.touch(9);
        Ok(())
    })?;
    all_on(m.addr(), m.len(), to, nodes).map_err(|e| format!("after: {e}"))?;
    Ok(format!(
        "{}/{PAGES} touched pages moved from node {from} to node {to}, {}/{PAGES} touched later also on node {to}",
        PAGES / 2,
        PAGES / 2
    ))
}

fn first_touch_pinned(node: usize, nodes: usize) -> Result<String, String> {
    let m = new_mapping()?;
    let (cpu, pages) = on_node(node, || {
        m.touch(3);
        all_on(m.addr(), m.len(), node, nodes)
    })?;
    Ok(format!(
        "thread pinned to CPU {cpu}: {pages}/{PAGES} first-touched pages on node {node}"
    ))
}
