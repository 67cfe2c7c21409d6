//! Per-node pool checks: every block that `locus_mem::pool::Pools` hands out says
//! which node it is on, and the kernel agrees for every page, across size classes,
//! after a free from another node's thread, and after a fallback to another node.

use std::sync::Arc;

use locus_mem::placement;
use locus_mem::pool::{AllocError, Block, PoolConfig, Pools};

use crate::pages::all_on;
use crate::pinned::{foreign_node, on_node};
use crate::report::Report;
use crate::sysfs;

/// Request sizes and how many blocks of each to hold at once: every size lands in a
/// different class, from the smallest (64 B) to a 2 MiB and an 8 MiB class, and the
/// last is above the largest class (64 MiB), so it is a big block mapped on its own.
const REQUESTS: [(usize, usize); 7] = [
    (64, 3),
    (1000, 3),
    (4096, 3),
    (64 << 10, 3),
    ((1 << 20) + 1, 2),
    (8 << 20, 2),
    (65 << 20, 1),
];

/// Runs the pool checks.
pub fn run(report: &mut Report) {
    let nodes = match sysfs::online_nodes() {
        Ok(online) if online.len() >= 4 => online.len(),
        Ok(online) => {
            let detail = format!("need 4 nodes, the guest has {}", online.len());
            report.record("pools.nodes", Err(detail));
            return;
        }
        Err(e) => {
            report.record("pools.nodes", Err(e));
            return;
        }
    };
    let fallback = match fallback_by_distance(nodes) {
        Ok(fallback) => fallback,
        Err(e) => {
            report.record("pools.config", Err(e));
            return;
        }
    };
    let config = PoolConfig {
        fallback: fallback.clone(),
        bind: true,
        node_limit: None,
        ..PoolConfig::new(nodes)
    };
    match Pools::new(config) {
        Ok(pools) => {
            for node in 0..nodes {
                report.record(&format!("pools.classes.node{node}"), classes(&pools, node));
            }
            report.record(
                "pools.free-from-other-node",
                free_from_other_node(&pools, 1, 3),
            );
        }
        Err(e) => report.record("pools.new", Err(e.to_string())),
    }
    report.record("pools.fallback", fallback_by_limit(nodes, fallback, 1));
}

/// For each node, the other nodes nearest first by the firmware distances (ties by
/// index): the order in which a full node's allocations should go elsewhere.
fn fallback_by_distance(nodes: usize) -> Result<Vec<Vec<usize>>, String> {
    (0..nodes)
        .map(|node| {
            let row = sysfs::distances_of(node)?;
            let mut others: Vec<usize> = (0..nodes).filter(|&n| n != node).collect();
            others.sort_by_key(|&n| (row.get(n).copied().unwrap_or(u32::MAX), n));
            Ok(others)
        })
        .collect()
}

/// Writes the block: every byte of a small block, one byte per page of a large one,
/// and always the last byte. This places every page of the block.
fn write(block: &Block, seed: u8) {
    let page = placement::page_size();
    let step = if block.len() <= 16 * page { 1 } else { page };
    let p = block.as_mut_ptr();
    let mut offset = 0;
    while offset < block.len() {
        // SAFETY: `offset < len` and the block owns `len` writable bytes; nothing else
        // refers to a block that has just been allocated.
        unsafe { p.add(offset).write_volatile(seed) };
        offset += step;
    }
    // SAFETY: as above, `len - 1` is inside the block (len > 0 for every request).
    unsafe { p.add(block.len() - 1).write_volatile(seed) };
}

/// Pages of the block that the kernel places on the block's recorded node.
fn check_block(block: &Block, nodes: usize) -> Result<usize, String> {
    all_on(block.as_ptr(), block.len(), block.node(), nodes).map_err(|e| {
        format!(
            "block of {} B recorded on node {}: {e}",
            block.len(),
            block.node()
        )
    })
}

/// Allocates and writes from a thread of another node, so that only the pool's
/// binding, not first touch, can put the pages on `node`.
fn classes(pools: &Arc<Pools>, node: usize) -> Result<String, String> {
    let toucher = foreign_node(node, pools.nodes());
    let (cpu, detail) = on_node(toucher, || classes_here(pools, node))?;
    Ok(format!("from CPU {cpu} (node {toucher}): {detail}"))
}

fn classes_here(pools: &Arc<Pools>, node: usize) -> Result<String, String> {
    let nodes = pools.nodes();
    let mut blocks = Vec::new();
    for &(bytes, count) in &REQUESTS {
        for _ in 0..count {
            let block = pools
                .alloc(node, bytes)
                .map_err(|e| format!("alloc({node}, {bytes}): {e}"))?;
            if block.node() != node || block.fell_back() {
                return Err(format!(
                    "alloc({node}, {bytes}) gave a block of node {} (fell back: {})",
                    block.node(),
                    block.fell_back()
                ));
            }
            write(&block, node as u8 + 1);
            blocks.push(block);
        }
    }
    let mut pages = 0;
    for block in &blocks {
        pages += check_block(block, nodes)?;
    }
    let in_use = pools.stats()[node].in_use;
    let capacity: u64 = blocks.iter().map(|b| b.capacity() as u64).sum();
    if in_use != capacity {
        return Err(format!(
            "node {node} accounts {in_use} B in use, blocks hold {capacity} B"
        ));
    }
    let count = blocks.len();
    drop(blocks);
    if pools.bytes_in_use() != 0 {
        return Err(format!(
            "{} B still in use after every block was freed",
            pools.bytes_in_use()
        ));
    }
    Ok(format!(
        "{count} blocks in {} size classes (64 B to 65 MiB): {pages}/{pages} pages on node {node}, accounting back to 0",
        REQUESTS.len()
    ))
}

fn free_from_other_node(pools: &Arc<Pools>, home: usize, other: usize) -> Result<String, String> {
    let nodes = pools.nodes();
    let bytes = 64 << 10;
    let (_, block) = on_node(foreign_node(home, nodes), || {
        let block = pools.alloc(home, bytes).map_err(|e| e.to_string())?;
        write(&block, 5);
        check_block(&block, nodes)?;
        Ok(block)
    })?;
    let (cpu, ()) = on_node(other, move || {
        drop(block);
        Ok(())
    })?;
    let stats = pools.stats();
    if stats[home].in_use != 0 || stats[other].in_use != 0 {
        return Err(format!(
            "after the free: node {home} has {} B in use, node {other} {} B",
            stats[home].in_use, stats[other].in_use
        ));
    }
    let reused_before = stats[home].reused;
    let (_, (again, pages)) = on_node(foreign_node(home, nodes), || {
        let again = pools.alloc(home, bytes).map_err(|e| e.to_string())?;
        write(&again, 6);
        let pages = check_block(&again, nodes)?;
        Ok((again, pages))
    })?;
    let reused = pools.stats()[home].reused - reused_before;
    if again.node() != home || reused != 1 {
        return Err(format!(
            "the next block of node {home} came from node {} (reused from the free list: {reused})",
            again.node()
        ));
    }
    Ok(format!(
        "block of node {home} freed on CPU {cpu} (node {other}) went back to node {home}; reused: {pages}/{pages} pages on node {home}"
    ))
}

fn fallback_by_limit(
    nodes: usize,
    fallback: Vec<Vec<usize>>,
    asked: usize,
) -> Result<String, String> {
    let bytes = 1 << 20;
    let expected: Vec<usize> = std::iter::once(asked)
        .chain(fallback[asked].iter().copied())
        .collect();
    let config = PoolConfig {
        fallback,
        bind: true,
        node_limit: Some(bytes as u64),
        ..PoolConfig::new(nodes)
    };
    let pools = Pools::new(config).map_err(|e| e.to_string())?;
    let mut blocks = Vec::new();
    let mut pages = 0;
    for (i, &want) in expected.iter().enumerate() {
        let block = pools
            .alloc(asked, bytes)
            .map_err(|e| format!("allocation {i}: {e}"))?;
        if block.node() != want || block.fell_back() != (i > 0) {
            return Err(format!(
                "allocation {i} of node {asked} came from node {} (fell back: {}), expected node {want}",
                block.node(),
                block.fell_back()
            ));
        }
        write(&block, i as u8);
        pages += check_block(&block, nodes)?;
        blocks.push(block);
    }
    match pools.alloc(asked, bytes) {
        Err(AllocError::Exhausted { .. }) => {}
        Ok(block) => {
            return Err(format!(
                "every node is at its limit, yet node {} supplied a block",
                block.node()
            ))
        }
        Err(e) => return Err(format!("expected Exhausted, got: {e}")),
    }
    let fallbacks = pools.stats()[asked].fallbacks;
    if fallbacks != (expected.len() - 1) as u64 {
        return Err(format!("node {asked} counts {fallbacks} fallbacks"));
    }
    Ok(format!(
        "1 MiB limit, node {asked} asked {} times: supplied by nodes {expected:?} (nearest by distance), then exhausted; {pages}/{pages} pages on the recorded nodes",
        expected.len()
    ))
}
