//! Task graphs under Locus's configurations, checked page by page against the kernel.
//!
//! - `runtime.dfa.outputs-local`: under deferred allocation every version buffer is
//!   allocated by the worker that writes it, from its own node's pool; each task body
//!   asks the kernel where the pages of its output are: all must be on the node of the
//!   worker running it (Drebes et al. 2016, section 3.2; `docs/papers.md`).
//! - `runtime.<config>.locality-matches-kernel`: the runtime counts local and remote
//!   bytes read and written from the node its pools recorded for each buffer; each
//!   body recounts them from the kernel's page placement of its views. The four
//!   figures must agree to the byte, for `dsa-base` (immediate allocation, many remote
//!   accesses), `dfa` and `dsa-opt` (input-only pushing with deferred allocation), and
//!   `shm-base` (shared data interleaved page by page, updated in place) too.
//! - `runtime.shared.interleave-rule`: the kernel interleaves the pages of a shared
//!   datum by virtual page number modulo the number of nodes, the rule the runtime
//!   follows on virtual nodes and in the simulator.
//! - `runtime.shared.first-touch`: tasks pinned to each node write a part of a
//!   first-touch datum; the kernel placed each part on its writer's node, and the
//!   runtime's report counts every write local.
//! - `runtime.random-dag.<config>`: seeded random task graphs on the four real nodes
//!   verify against sequential execution.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use locus::{Config, Data, Runtime, Topology};
use locus_mem::placement;

use crate::report::Report;

/// Elements of one datum: 16 pages of `u64`.
const LEN: usize = 16 * 4096 / 8;
const DATA: usize = 24;
const ROUNDS: u64 = 12;

/// What the bodies found, summed over tasks.
#[derive(Default)]
struct Found {
    /// Output pages checked, and of those, pages on another node than the writer's.
    output_pages: AtomicU64,
    output_pages_elsewhere: AtomicU64,
    /// Bytes read and written, on the running worker's node and on others, by the
    /// kernel's placement of the pages.
    read_local: AtomicU64,
    read_remote: AtomicU64,
    write_local: AtomicU64,
    write_remote: AtomicU64,
    /// Queries the kernel refused, or pages it placed nowhere.
    errors: AtomicU64,
}

/// Bytes of `view` on `node` and elsewhere, by the kernel's placement of its pages.
fn split_by_node(view: &[u8], node: usize) -> Option<(u64, u64)> {
    if view.is_empty() {
        return Some((0, 0));
    }
    let page = placement::page_size();
    let start = view.as_ptr() as usize;
    let end = start + view.len();
    let first_page = start / page * page;
    let statuses = placement::query_nodes(first_page as *const u8, end - first_page).ok()?;
    let (mut local, mut remote) = (0u64, 0u64);
    for (i, status) in statuses.iter().enumerate() {
        let lo = (first_page + i * page).max(start);
        let hi = (first_page + (i + 1) * page).min(end);
        let bytes = hi.saturating_sub(lo) as u64;
        match status.node() {
            Some(n) if n == node => local += bytes,
            Some(_) => remote += bytes,
            None => return None,
        }
    }
    Some((local, remote))
}

fn as_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: any initialised `u64` slice is a valid byte slice of 8 times its length.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Rounds of a ring stencil over `DATA` data, double-buffered by handle: each task
/// reads its datum and its neighbour in one generation and writes its datum of the
/// next, so every byte it accesses is in a view its body sees.
fn run_graph(config: Config) -> Result<(locus::Report, Arc<Found>), String> {
    let rt = host_runtime(config)?;
    // Written at creation (on node 0's pool), so every page read is present: a datum
    // created empty would be read as zeros from pages nobody touched yet.
    let a: Vec<Data<u64>> = (0..DATA)
        .map(|i| rt.data_from(format!("a{i}"), &vec![i as u64 + 1; LEN]))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let b: Vec<Data<u64>> = (0..DATA).map(|i| rt.data(format!("b{i}"), LEN)).collect();
    let found = Arc::new(Found::default());
    let f = found.clone();
    let finished = rt
        .run(move |s| -> Result<(), locus::Error> {
            for round in 0..ROUNDS {
                let (src, dst) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
                for i in 0..DATA {
                    let found = f.clone();
                    let accesses = (src[i].read(), src[(i + 1) % DATA].read(), dst[i].write());
                    s.spawn("ring", accesses, move |ctx, (me, next, out)| {
                        for (k, e) in out.iter_mut().enumerate() {
                            *e = me[k].wrapping_mul(31).wrapping_add(next[k] ^ round);
                        }
                        let node = ctx.node();
                        let split = |view: &[u8], local: &AtomicU64, remote: &AtomicU64| {
                            match split_by_node(view, node) {
                                Some((l, r)) => {
                                    local.fetch_add(l, Ordering::Relaxed);
                                    remote.fetch_add(r, Ordering::Relaxed);
                                    Some((l, r))
                                }
                                None => {
                                    found.errors.fetch_add(1, Ordering::Relaxed);
                                    None
                                }
                            }
                        };
                        split(as_bytes(me), &found.read_local, &found.read_remote);
                        split(as_bytes(next), &found.read_local, &found.read_remote);
                        if let Some((l, r)) =
                            split(as_bytes(out), &found.write_local, &found.write_remote)
                        {
                            let page = placement::page_size() as u64;
                            found
                                .output_pages
                                .fetch_add((l + r) / page, Ordering::Relaxed);
                            found
                                .output_pages_elsewhere
                                .fetch_add(r / page, Ordering::Relaxed);
                        }
                    })?;
                }
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    finished.value.map_err(|e| e.to_string())?;
    Ok((finished.report, found))
}

pub fn run(report: &mut Report) {
    match run_graph(Config::Dfa) {
        Err(e) => report.record("runtime.dfa.outputs-local", Err(e)),
        Ok((r, found)) => {
            let pages = found.output_pages.load(Ordering::Relaxed);
            let elsewhere = found.output_pages_elsewhere.load(Ordering::Relaxed);
            let errors = found.errors.load(Ordering::Relaxed);
            let tasks_by_node = r.workers.iter().fold(vec![0; r.traffic.len()], |mut v, w| {
                v[w.node] += w.tasks;
                v
            });
            let outcome = if errors == 0 && elsewhere == 0 && pages > 0 {
                Ok(format!(
                    "{}/{pages} output pages on their writer's node ({} tasks, tasks per node \
                     {tasks_by_node:?}), write_remote_bytes {}",
                    pages - elsewhere,
                    r.tasks,
                    r.locality.write_remote_bytes
                ))
            } else {
                Err(format!(
                    "{elsewhere}/{pages} output pages on another node, {errors} failed queries"
                ))
            };
            report.record("runtime.dfa.outputs-local", outcome);
        }
    }
    for config in [
        Config::DsaBase,
        Config::Dfa,
        Config::DsaOpt,
        Config::ShmBase,
    ] {
        let name = format!("runtime.{config}.locality-matches-kernel");
        match run_graph(config) {
            Err(e) => report.record(&name, Err(e)),
            Ok((r, found)) => {
                let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
                let kernel = [
                    get(&found.read_local),
                    get(&found.read_remote),
                    get(&found.write_local),
                    get(&found.write_remote),
                ];
                let l = &r.locality;
                let runtime = [
                    l.read_local_bytes,
                    l.read_remote_bytes,
                    l.write_local_bytes,
                    l.write_remote_bytes,
                ];
                let errors = get(&found.errors);
                let outcome = if errors == 0 && kernel == runtime {
                    Ok(format!(
                        "read local/remote, write local/remote = {runtime:?} bytes, by the \
                         runtime and by the kernel alike; r_loc_rt {:.3}",
                        l.r_loc_rt
                    ))
                } else {
                    Err(format!(
                        "runtime {runtime:?} vs kernel {kernel:?} (read local, read remote, \
                         write local, write remote), {errors} failed queries"
                    ))
                };
                report.record(&name, outcome);
            }
        }
    }
    report.record("runtime.shared.interleave-rule", interleave_rule());
    report.record("runtime.shared.first-touch", first_touch());
    for config in [
        Config::Dfa,
        Config::DsaOpt,
        Config::DsaBase,
        Config::ShmBase,
    ] {
        let name = format!("runtime.random-dag.{config}");
        let outcome = Runtime::builder()
            .topology(
                Topology::host()
                    .map_err(|e| e.to_string())
                    .unwrap_or_else(|_| Topology::from_spec("1x1").expect("a valid spec")),
            )
            .config(config)
            .push_threshold(1024)
            .build()
            .map_err(|e| e.to_string())
            .and_then(|rt| {
                let mut verified = 0;
                for seed in 0..20 {
                    let p = locus_bench::random_dag::Params {
                        tasks: 400,
                        data: 32,
                        max_len: 8192,
                        max_inputs: 4,
                        seed,
                        hints: seed % 2 == 1,
                    };
                    let out = locus_bench::random_dag::run(&rt, &p).map_err(|e| e.to_string())?;
                    if !out.verified {
                        return Err(format!("seed {seed}: {} mismatching data", out.mismatches));
                    }
                    verified += 1;
                }
                Ok(format!(
                    "{verified} graphs of 400 tasks verified on {} nodes",
                    rt.topology().num_nodes()
                ))
            });
        report.record(&name, outcome);
    }
}

fn host_runtime(config: Config) -> Result<Runtime, String> {
    let rt = Runtime::builder()
        .topology(Topology::host().map_err(|e| e.to_string())?)
        .config(config)
        .build()
        .map_err(|e| e.to_string())?;
    if rt.topology().num_nodes() < 2 {
        return Err(format!(
            "the host has {} node(s)",
            rt.topology().num_nodes()
        ));
    }
    Ok(rt)
}

fn interleave_rule() -> Result<String, String> {
    let rt = host_runtime(Config::ShmBase)?;
    let nodes = rt.topology().num_nodes();
    let pages = 256;
    let page = placement::page_size();
    let x = rt
        .shared::<u8>("x", pages * page, locus::RegionPolicy::Interleave)
        .map_err(|e| e.to_string())?;
    // Pages on the rule's node, per node; pages off it.
    let found = Arc::new(std::sync::Mutex::new((vec![0usize; nodes], 0usize)));
    let f = found.clone();
    rt.run(move |s| {
        s.spawn("look", x.read(), move |_, x| {
            let statuses = placement::query_nodes(x.as_ptr(), x.len()).unwrap_or_default();
            let mut f = f.lock().unwrap();
            for (i, st) in statuses.iter().enumerate() {
                let vpn = x.as_ptr() as usize / page + i;
                match st.node() {
                    Some(n) if n == vpn % nodes => f.0[n] += 1,
                    _ => f.1 += 1,
                }
            }
        })
        .map_err(|e| e.to_string())
    })
    .map_err(|e| e.to_string())?
    .value?;
    let (histogram, off) = found.lock().unwrap().clone();
    if off == 0 && histogram.iter().sum::<usize>() == pages {
        Ok(format!(
            "{pages}/{pages} pages on node (virtual page number mod {nodes}); pages per node \
             {histogram:?}"
        ))
    } else {
        Err(format!(
            "{off}/{pages} pages off the rule; on it, per node {histogram:?}"
        ))
    }
}

fn first_touch() -> Result<String, String> {
    let rt = host_runtime(Config::ShmBase)?;
    let nodes = rt.topology().num_nodes();
    let part = 16 * placement::page_size();
    let parts: Vec<Data<u8>> = (0..nodes)
        .map(|n| rt.shared(format!("x{n}"), part, locus::RegionPolicy::FirstTouch))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let off = Arc::new(AtomicU64::new(0));
    let finished = rt
        .run(|s| -> Result<(), locus::Error> {
            for (n, x) in parts.iter().enumerate() {
                s.task("touch", x.write())
                    .affinity(locus::Affinity::node(n).strict())
                    .spawn(move |_, x| x.fill(n as u8 + 1))?;
                let off = off.clone();
                s.spawn("look", x.read(), move |_, x| {
                    if !matches!(split_by_node(x, n), Some((_, 0))) {
                        off.fetch_add(1, Ordering::Relaxed);
                    }
                })?;
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    finished.value.map_err(|e| e.to_string())?;
    let off = off.load(Ordering::Relaxed);
    let l = &finished.report.locality;
    if off == 0 && l.write_remote_bytes == 0 && l.write_local_bytes == (nodes * part) as u64 {
        Ok(format!(
            "{nodes} data of 16 pages, each on its writer's node by the kernel; write \
             local/remote {}/{} bytes by the runtime",
            l.write_local_bytes, l.write_remote_bytes
        ))
    } else {
        Err(format!(
            "{off}/{nodes} data not on their writer's node by the kernel; runtime write \
             local/remote {}/{}",
            l.write_local_bytes, l.write_remote_bytes
        ))
    }
}
