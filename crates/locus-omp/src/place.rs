//! A task's home node: the node holding the memory of its out/inout dependences, or of
//! its in dependences when it writes none (README.md, "Placement").
//!
//! On a machine of several real nodes the kernel says where each page lies
//! (`move_pages` without moving), asked once per page and cached: the program's memory
//! stays where first touch put it, so the answer holds. On a virtual topology (nodes laid
//! over the host's CPUs) the kernel knows no such nodes: a page's node is then the node of
//! the worker that ran the first task writing it, as Locus records for its own data.
//! On a single node there is nothing to decide and nothing is looked up.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::settings::Omp;

/// Node of each page looked up or recorded so far.
fn pages() -> &'static Mutex<HashMap<usize, usize>> {
    static PAGES: OnceLock<Mutex<HashMap<usize, usize>>> = OnceLock::new();
    PAGES.get_or_init(|| Mutex::new(HashMap::new()))
}

fn page_of(addr: usize) -> usize {
    addr & !4095
}

/// The node of the page holding `addr`, if known or (on real nodes) present.
fn node_of(omp: &Omp, addr: usize) -> Option<usize> {
    let page = page_of(addr);
    let mut pages = pages().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&n) = pages.get(&page) {
        return Some(n);
    }
    if omp.virtual_nodes {
        return None;
    }
    let node = locus_mem::placement::query_nodes(addr as *const u8, 1)
        .ok()?
        .first()
        .and_then(|s| s.node())?;
    pages.insert(page, node);
    Some(node)
}

/// The home node of a task of dependences `deps` (`(address, writes)`).
pub(crate) fn home(omp: &Omp, deps: &[(usize, bool)]) -> Option<usize> {
    if !omp.numa || deps.is_empty() {
        return None;
    }
    let writes = deps.iter().filter(|d| d.1);
    let reads = deps.iter().filter(|d| !d.1);
    writes
        .map(|d| d.0)
        .find_map(|a| node_of(omp, a))
        .or_else(|| reads.map(|d| d.0).find_map(|a| node_of(omp, a)))
}

/// A task of dependences `deps` is about to run on `node`: on a virtual topology, the
/// pages it writes that nobody wrote before are recorded as that node's (first touch).
pub(crate) fn touched(omp: &Omp, deps: &[(usize, bool)], node: usize) {
    if !omp.numa || !omp.virtual_nodes || deps.is_empty() {
        return;
    }
    let mut pages = pages().lock().unwrap_or_else(|p| p.into_inner());
    for &(a, writes) in deps {
        if writes {
            pages.entry(page_of(a)).or_insert(node);
        }
    }
}
