//! A task's home node: the node holding most of the bytes its affinity clause names
//! (clang's `__kmpc_omp_reg_task_with_affinity`), else the node holding the memory of
//! its out/inout dependences, or of its in dependences when it writes none (README.md,
//! "Placement").
//!
//! On a machine of several real nodes the kernel says where each page lies
//! (`move_pages` without moving), asked once per page and cached: the program's memory
//! stays where first touch put it, so the answer holds. On a virtual topology (nodes laid
//! over the host's CPUs) the kernel knows no such nodes: a page's node is then the node of
//! the worker that ran the first task writing it, as Locus records for its own data.
//! On a single node there is nothing to decide and nothing is looked up.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};

use crate::settings::Omp;
use crate::task::Dep;

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

/// Pages of one range looked up at most: a larger range is sampled at this many
/// evenly spaced pages, each standing for its share of the range's bytes.
const SAMPLES: usize = 64;
/// Pages of one range recorded at most on a virtual topology (evenly spaced beyond).
const RECORDED: usize = 1024;

/// The pages of `[addr, addr + len)` (the page of `addr` when `len` is 0), at most
/// `most` of them evenly spaced, each with the bytes of the range it stands for.
fn pages_of(addr: usize, len: usize, most: usize) -> impl Iterator<Item = (usize, u64)> {
    let first = page_of(addr);
    let last = page_of(addr.saturating_add(len.max(1) - 1));
    let count = (last - first) / 4096 + 1;
    let taken = count.min(most);
    let share = (len as u64).div_ceil(taken as u64);
    (0..taken).map(move |i| (first + (i * count / taken) * 4096, share))
}

/// Where a task should run, and what it names, by node (found at its submission).
#[derive(Default)]
pub(crate) struct Placement {
    /// Its home node (an affinity hint), if any.
    pub home: Option<usize>,
    /// Whether the home comes from its affinity clause.
    pub by_affinity: bool,
    /// Bytes of its affinity ranges on each node (index: node), of those looked up.
    pub affinity_bytes: Vec<u64>,
    /// Bytes of its dependences (with lengths) on each node.
    pub dependence_bytes: Vec<u64>,
}

/// Bytes of `ranges` per node, of the pages whose node is known.
fn bytes_by_node(omp: &Omp, ranges: impl Iterator<Item = (usize, usize)>) -> Vec<u64> {
    let mut bytes = Vec::new();
    for (addr, len) in ranges {
        for (page, share) in pages_of(addr, len, SAMPLES) {
            if let Some(n) = node_of(omp, page) {
                if bytes.len() <= n {
                    bytes.resize(n + 1, 0);
                }
                bytes[n] += share;
            }
        }
    }
    bytes
}

/// The placement of a task of dependences `deps` and affinity ranges `affinity`
/// (`(address, bytes)`): the node holding most of the affinity ranges' bytes, else the
/// node of its first out/inout address (else of its in addresses).
pub(crate) fn place(omp: &Omp, deps: &[Dep], affinity: &[(usize, usize)]) -> Placement {
    if !omp.numa || (deps.is_empty() && affinity.is_empty()) {
        return Placement::default();
    }
    let affinity_bytes = bytes_by_node(omp, affinity.iter().copied());
    let by_affinity = affinity_bytes
        .iter()
        .enumerate()
        .filter(|b| *b.1 > 0)
        .max_by_key(|b| (*b.1, std::cmp::Reverse(b.0)))
        .map(|b| b.0);
    let dependence_bytes = bytes_by_node(
        omp,
        deps.iter().filter(|d| d.len > 0).map(|d| (d.addr, d.len)),
    );
    let home = by_affinity.or_else(|| home(omp, deps));
    Placement {
        home,
        by_affinity: by_affinity.is_some(),
        affinity_bytes,
        dependence_bytes,
    }
}

/// The home node of a task of dependences `deps`.
fn home(omp: &Omp, deps: &[Dep]) -> Option<usize> {
    let writes = deps.iter().filter(|d| d.writes);
    let reads = deps.iter().filter(|d| !d.writes);
    writes
        .map(|d| d.addr)
        .find_map(|a| node_of(omp, a))
        .or_else(|| reads.map(|d| d.addr).find_map(|a| node_of(omp, a)))
}

/// A task placed as `placed` runs on `node`: counts it, and its bytes there.
pub(crate) fn ran(omp: &Omp, placed: &Placement, node: usize) {
    let c = &omp.counters;
    if let Some(h) = placed.home {
        if h == node {
            c.on_home.fetch_add(1, Ordering::Relaxed);
            if placed.by_affinity {
                c.on_affinity_node.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let here = |b: &[u64]| b.get(node).copied().unwrap_or(0);
    let sum = |b: &[u64]| b.iter().sum::<u64>();
    if !placed.affinity_bytes.is_empty() {
        c.affinity_bytes
            .fetch_add(sum(&placed.affinity_bytes), Ordering::Relaxed);
        c.affinity_bytes_local
            .fetch_add(here(&placed.affinity_bytes), Ordering::Relaxed);
    }
    if !placed.dependence_bytes.is_empty() {
        c.dependence_bytes
            .fetch_add(sum(&placed.dependence_bytes), Ordering::Relaxed);
        c.dependence_bytes_local
            .fetch_add(here(&placed.dependence_bytes), Ordering::Relaxed);
    }
}

/// A task of dependences `deps` and affinity ranges `affinity` is about to run on
/// `node`: on a virtual topology, the pages it writes (the whole range when the
/// compiler gives its length) and those of its affinity ranges that nobody recorded
/// before are recorded as that node's (first touch).
pub(crate) fn touched(omp: &Omp, deps: &[Dep], affinity: &[(usize, usize)], node: usize) {
    if !omp.numa || !omp.virtual_nodes || (deps.is_empty() && affinity.is_empty()) {
        return;
    }
    let mut pages = pages().lock().unwrap_or_else(|p| p.into_inner());
    let written = deps.iter().filter(|d| d.writes).map(|d| (d.addr, d.len));
    for (addr, len) in written.chain(affinity.iter().copied()) {
        for (page, _) in pages_of(addr, len, RECORDED) {
            pages.entry(page).or_insert(node);
        }
    }
}
