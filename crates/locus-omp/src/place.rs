//! A task's home node: the node holding most of the bytes its affinity clause names
//! (clang's `__kmpc_omp_reg_task_with_affinity`), else the node holding the memory of
//! its out/inout dependences, or of its in dependences when it writes none (README.md,
//! "Placement"); and, under a migration setting, the move of its out/inout memory to the
//! node it runs on (README.md, "Migration").
//!
//! On a machine of several real nodes the kernel says where each page lies
//! (`move_pages` without moving), asked once per page and cached: the program's memory
//! stays where first touch put it unless this runtime moves it, and a move updates the
//! cache with the kernel's answer. On a virtual topology (nodes laid over the host's
//! CPUs) the kernel knows no such nodes: a page's node is then the node of the worker
//! that ran the first task writing it, as Locus records for its own data, and a move
//! changes that record. On a single node there is nothing to decide and nothing is looked
//! up.
//!
//! A dependence's extent is the range the compiler gives (clang's address and length),
//! else, when it gives an address alone (gcc's depend arrays), the page holding the
//! address: what the report's dependence bytes count and what a migration moves.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};

use locus::Migration;

use crate::settings::Omp;
use crate::task::Dep;

/// Bytes of a page, the unit of placement and of gcc's dependence extents.
pub(crate) const PAGE: usize = 4096;

/// Node of each page looked up or recorded so far.
fn pages() -> &'static Mutex<HashMap<usize, usize>> {
    static PAGES: OnceLock<Mutex<HashMap<usize, usize>>> = OnceLock::new();
    PAGES.get_or_init(|| Mutex::new(HashMap::new()))
}

fn page_of(addr: usize) -> usize {
    addr & !(PAGE - 1)
}

/// The `(address, bytes)` a dependence covers: the range the compiler gives, else the
/// page holding its address.
fn extent(d: &Dep) -> (usize, usize) {
    if d.len > 0 {
        (d.addr, d.len)
    } else {
        (page_of(d.addr), PAGE)
    }
}

/// The topology's node of the kernel's node `os` (the same number when the topology does
/// not say).
fn topology_node(omp: &Omp, os: usize) -> Option<usize> {
    if omp.os_nodes.is_empty() {
        Some(os)
    } else {
        omp.os_nodes.iter().position(|&n| n == os)
    }
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
    let os = locus_mem::placement::query_nodes(addr as *const u8, 1)
        .ok()?
        .first()
        .and_then(|s| s.node())?;
    let node = topology_node(omp, os)?;
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
    /// Bytes of its dependences' extents on each node.
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
    let dependence_bytes = dependence_bytes(omp, deps);
    let home = by_affinity.or_else(|| home(omp, deps));
    Placement {
        home,
        by_affinity: by_affinity.is_some(),
        affinity_bytes,
        dependence_bytes,
    }
}

/// Bytes of the extents of `deps` on each node, of the pages whose node is known.
pub(crate) fn dependence_bytes(omp: &Omp, deps: &[Dep]) -> Vec<u64> {
    bytes_by_node(omp, deps.iter().map(extent))
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
/// `node`: on a virtual topology, the pages it writes (its dependences' extents) and
/// those of its affinity ranges that nobody recorded before are recorded as that node's
/// (first touch).
pub(crate) fn touched(omp: &Omp, deps: &[Dep], affinity: &[(usize, usize)], node: usize) {
    if !omp.numa || !omp.virtual_nodes || (deps.is_empty() && affinity.is_empty()) {
        return;
    }
    let mut pages = pages().lock().unwrap_or_else(|p| p.into_inner());
    let written = deps.iter().filter(|d| d.writes).map(extent);
    for (addr, len) in written.chain(affinity.iter().copied()) {
        for (page, _) in pages_of(addr, len, RECORDED) {
            pages.entry(page).or_insert(node);
        }
    }
}

/// Tasks submitted and not started that declare each address: the expected reuse of a
/// dependence's memory under `auto`.
fn pending() -> &'static Mutex<HashMap<usize, u64>> {
    static PENDING: OnceLock<Mutex<HashMap<usize, u64>>> = OnceLock::new();
    PENDING.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Whether the reuse of dependence memory is counted (`auto` on several nodes).
fn counts_reuse(omp: &Omp) -> bool {
    omp.numa && omp.migration == Migration::Auto
}

/// A deferred task of dependences `deps` is submitted: under `auto`, each address it
/// names has one more use to come.
pub(crate) fn submitted(omp: &Omp, deps: &[Dep]) {
    if !counts_reuse(omp) || deps.is_empty() {
        return;
    }
    let mut pending = pending().lock().unwrap_or_else(|p| p.into_inner());
    for d in deps {
        *pending.entry(d.addr).or_insert(0) += 1;
    }
}

/// A deferred task of dependences `deps` starts (or is dropped unrun): its uses are no
/// longer to come.
pub(crate) fn started(omp: &Omp, deps: &[Dep]) {
    if !counts_reuse(omp) || deps.is_empty() {
        return;
    }
    let mut pending = pending().lock().unwrap_or_else(|p| p.into_inner());
    for d in deps {
        if let std::collections::hash_map::Entry::Occupied(mut e) = pending.entry(d.addr) {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
            }
        }
    }
}

/// The slot of `Counters::migrated_pages` a move under `migration` counts in.
fn reason(migration: Migration) -> Option<usize> {
    match migration {
        Migration::None => None,
        Migration::Now => Some(0),
        Migration::NextTouch => Some(1),
        Migration::Auto => Some(2),
    }
}

/// Under the migration setting, a task about to run on `node` takes the memory of its
/// out/inout dependences (their extents) that lies on other nodes there, before its body
/// runs, as Locus's setting does with a task's shared data: `now` and `next-touch` move
/// every such page (counted apart: with every access declared, the first task to write
/// a page after it moved away is its next toucher); `auto` moves a dependence's pages
/// when migrating them costs less than the remote accesses it saves over this task and
/// the tasks already submitted that name the same address (`locus::sched::migrate`; the
/// dependence counts as read and written, gcc not telling out from inout), and, on real
/// nodes, the node's free memory holds them. In dependences stay where they are: the
/// sibling tasks that read a location are many (a stencil's neighbours), and each would
/// take it away from the others. Pages never touched (no node yet) are left to their
/// first touch. Returns the pages moved.
pub(crate) fn migrate(omp: &Omp, deps: &[Dep], node: usize) -> u64 {
    let Some(reason) = reason(omp.migration) else {
        return 0;
    };
    if !omp.numa {
        return 0;
    }
    let mut moved = 0;
    for d in deps.iter().filter(|d| d.writes) {
        moved += if omp.virtual_nodes {
            move_recorded(omp, d, node)
        } else {
            move_present(omp, d, node)
        };
    }
    if moved > 0 {
        omp.counters.migrated_pages[reason].fetch_add(moved, Ordering::Relaxed);
    }
    moved
}

/// Whether `d`'s pages on other nodes than `node` (`remote`: pages per node) should move
/// there: always under `now` and `next-touch`, by the cost rule under `auto`.
fn worth_moving(omp: &Omp, d: &Dep, remote: &[(usize, u64)], node: usize) -> bool {
    let Some(costs) = &omp.costs else {
        return true;
    };
    let pages: u64 = remote.iter().map(|r| r.1).sum();
    let Some(&(main, _)) = remote
        .iter()
        .max_by_key(|(n, p)| (*p, std::cmp::Reverse(*n)))
    else {
        return false;
    };
    let bytes = (pages * PAGE as u64).min(extent(d).1 as u64);
    let reuse = pending()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&d.addr)
        .copied()
        .unwrap_or(0);
    let choice = costs.choose(bytes, pages, main, node, (true, true), reuse);
    if choice != locus::sched::migrate::Choice::Migrate {
        return false;
    }
    // On real nodes, only where the kernel says the pages fit.
    omp.virtual_nodes
        || omp
            .rt
            .free_memory(node)
            .map_or(true, |free| free >= pages * PAGE as u64)
}

/// Adds `pages` pages of node `n` to `remote` (pages per node).
fn add_remote(remote: &mut Vec<(usize, u64)>, n: usize, pages: u64) {
    match remote.iter_mut().find(|r| r.0 == n) {
        Some(r) => r.1 += pages,
        None => remote.push((n, pages)),
    }
}

/// [`migrate`] on a virtual topology: the recorded pages of `d`'s extent on other nodes
/// are recorded as `node`'s (the records of a range of more than [`RECORDED`] pages are
/// sampled, as [`touched`] makes them). Returns the pages moved.
fn move_recorded(omp: &Omp, d: &Dep, node: usize) -> u64 {
    let (addr, len) = extent(d);
    let mut pages = pages().lock().unwrap_or_else(|p| p.into_inner());
    let mut moving = Vec::new();
    let mut remote = Vec::new();
    for (page, _) in pages_of(addr, len, RECORDED) {
        if let Some(&n) = pages.get(&page).filter(|&&n| n != node) {
            moving.push(page);
            add_remote(&mut remote, n, 1);
        }
    }
    if moving.is_empty() || !worth_moving(omp, d, &remote, node) {
        return 0;
    }
    for page in &moving {
        pages.insert(*page, node);
    }
    moving.len() as u64
}

/// [`migrate`] on real nodes: the kernel says where each page of `d`'s extent lies
/// (unless every page is known to be on `node` already), moves the present pages to
/// `node` (`move_pages`), and the cache takes its answer for every page. Returns the
/// pages that were on another node and are on `node` now.
fn move_present(omp: &Omp, d: &Dep, node: usize) -> u64 {
    let (addr, len) = extent(d);
    let first = page_of(addr);
    let count = (page_of(addr + len - 1) - first) / PAGE + 1;
    if count <= SAMPLES {
        let cache = pages().lock().unwrap_or_else(|p| p.into_inner());
        if (0..count).all(|i| cache.get(&(first + i * PAGE)) == Some(&node)) {
            return 0;
        }
    }
    let Some(&os) = omp.os_nodes.get(node) else {
        return 0;
    };
    let node_of =
        |s: &locus_mem::placement::PageStatus| s.node().and_then(|os| topology_node(omp, os));
    let Ok(before) = locus_mem::placement::query_nodes(addr as *const u8, len) else {
        return 0;
    };
    let mut remote = Vec::new();
    for n in before.iter().filter_map(node_of).filter(|&n| n != node) {
        add_remote(&mut remote, n, 1);
    }
    let after = if !remote.is_empty() && worth_moving(omp, d, &remote, node) {
        locus_mem::placement::migrate(addr as *const u8, len, os).unwrap_or_else(|_| before.clone())
    } else {
        before.clone()
    };
    let mut cache = pages().lock().unwrap_or_else(|p| p.into_inner());
    let mut moved = 0;
    for (i, (was, now)) in before.iter().zip(&after).enumerate() {
        let page = first + i * PAGE;
        match node_of(now) {
            Some(n) => {
                if n == node && node_of(was).is_some_and(|w| w != node) {
                    moved += 1;
                }
                cache.insert(page, n);
            }
            None => {
                cache.remove(&page);
            }
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependence_without_length_covers_the_page_holding_its_address() {
        // gcc's: an address alone.
        assert_eq!(extent(&Dep::at(0x12345, true)), (0x12000, PAGE));
        assert_eq!(extent(&Dep::at(0x13000, false)), (0x13000, PAGE));
        // clang's: the range it gives.
        let d = Dep {
            addr: 0x12345,
            len: 100,
            writes: true,
        };
        assert_eq!(extent(&d), (0x12345, 100));
        // A range's pages, whole or sampled, each with its share of the bytes.
        assert_eq!(
            pages_of(0x12ff0, 0x20, 64).collect::<Vec<_>>(),
            vec![(0x12000, 16), (0x13000, 16)]
        );
        assert_eq!(pages_of(0, 256 * PAGE, 64).count(), 64);
    }

    #[test]
    fn each_setting_counts_its_moves_apart() {
        assert_eq!(reason(Migration::None), None);
        assert_eq!(reason(Migration::Now), Some(0));
        assert_eq!(reason(Migration::NextTouch), Some(1));
        assert_eq!(reason(Migration::Auto), Some(2));
    }
}
