//! The runtime's memory API on the four real nodes, checked against the kernel.
//!
//! - `memory.migrate-now`: a shared datum bound to node 0 and written, moved with
//!   `Runtime::migrate` to node 3: the runtime counts every page moved, and the kernel
//!   (`move_pages` status, asked from a task body) has every page on node 3, contents
//!   intact; `migrate_range` then moves the first half alone to node 1.
//! - `memory.next-touch`: a shared datum bound to node 0, armed with
//!   `Runtime::migrate_on_next_touch`, then read in parts by tasks pinned (strict
//!   affinity) to nodes 2 and 3: every page each task declared is on its node by the
//!   kernel when its body runs, and the pages no task touched are still on node 0.
//! - `memory.register`: a vector written by a thread of node 1 becomes a datum with
//!   `Runtime::register`: a task sees the vector's own memory (same address), the
//!   runtime's table agrees with the kernel, and a task on node 3 touching it moves no
//!   page (the kernel still has them on node 1).
//! - `memory.twisted-auto`: Twisted-STREAM's phase change under the `auto` migration
//!   setting (all three vectors remote, as `locus run twisted-stream --migrate auto`
//!   runs it): four teams first-touch and sweep their own vectors with tasks bound to
//!   their node, then each team's triads over the next node's vectors carry a
//!   non-strict hint to the team's node. Every page every phase-2 task reads or writes
//!   is on the node of the worker running it, by the kernel, asked from the task
//!   body; the runtime counts every phase-2 task as moved to its data and migrates no
//!   page; the results are the triad's.
//! - `memory.probe`: the migration model `locus topo --probe` prints, measured on this
//!   kernel (`locus_mem::probe::migration`, node 0 to node 3): a line `a + b x pages`
//!   through the fastest `move_pages` calls, with `b` positive; the detail gives `a`,
//!   `b` and the calls (emulated memory: the figures are the emulator's, not a real
//!   machine's).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use locus::{Affinity, Config, Data, Migration, RegionPolicy, Runtime, Topology};
use locus_mem::placement;

use crate::pages::{all_on, histogram, nodes_of};
use crate::pinned;
use crate::report::Report;

/// Pages of each datum.
const PAGES: usize = 64;

pub fn run(report: &mut Report) {
    report.record("memory.migrate-now", migrate_now());
    report.record("memory.next-touch", next_touch());
    report.record("memory.register", register());
    report.record("memory.twisted-auto", twisted_auto());
    report.record("memory.probe", probe());
}

/// The migration model measured between nodes 0 and 3.
fn probe() -> Result<String, String> {
    let fit = locus_mem::probe::migration(0, 3).map_err(|e| e.to_string())?;
    let calls: Vec<String> = fit
        .samples
        .iter()
        .map(|(pages, ns)| format!("{pages} pages {:.1} us", ns / 1e3))
        .collect();
    let detail = format!(
        "migration node 0 -> 3: a = {:.1} us, b = {:.2} us per {} B page (fastest calls: {})",
        fit.fixed_ns / 1e3,
        fit.per_page_ns / 1e3,
        fit.page_bytes,
        calls.join(", ")
    );
    if fit.per_page_ns > 0.0 && fit.fixed_ns.is_finite() {
        Ok(detail)
    } else {
        Err(detail)
    }
}

fn host_runtime() -> Result<Runtime, String> {
    let rt = Runtime::builder()
        .topology(Topology::host().map_err(|e| e.to_string())?)
        .config(Config::ShmBase)
        .build()
        .map_err(|e| e.to_string())?;
    match rt.topology().num_nodes() {
        4 => Ok(rt),
        n => Err(format!("the host has {n} node(s), 4 expected")),
    }
}

/// Runs one task pinned to `node` over `access`, whose body gives the kernel's answer
/// for its view (`check(view) -> Result<detail, detail>`).
fn on<T: locus::Element>(
    rt: &Runtime,
    node: usize,
    access: locus::Read<T>,
    check: impl Fn(&[T]) -> Result<String, String> + Send + Sync + 'static,
) -> Result<String, String> {
    let out = Arc::new(std::sync::Mutex::new(Err(
        "the task did not run".to_string()
    )));
    let o = out.clone();
    rt.run(move |s| -> Result<(), locus::Error> {
        s.task("look", access)
            .affinity(Affinity::node(node).strict())
            .spawn(move |_, view| *o.lock().unwrap() = check(view))?;
        Ok(())
    })
    .map_err(|e| e.to_string())?
    .value
    .map_err(|e| e.to_string())?;
    let r = out.lock().unwrap().clone();
    r
}

fn bytes_of<T>(view: &[T]) -> (*const u8, usize) {
    (view.as_ptr().cast(), std::mem::size_of_val(view))
}

fn migrate_now() -> Result<String, String> {
    let rt = host_runtime()?;
    let page = placement::page_size();
    let len = PAGES * page / 8;
    let values: Vec<u64> = (0..len as u64).collect();
    let d: Data<u64> = rt
        .shared_from("d", &values, RegionPolicy::Bind(0))
        .map_err(|e| e.to_string())?;
    let moved = rt.migrate(&d, 3).map_err(|e| e.to_string())?;
    if moved.pages != PAGES as u64 {
        return Err(format!("{} pages moved, {PAGES} expected", moved.pages));
    }
    let whole = on(&rt, 0, d.read(), move |v| {
        let (at, n) = bytes_of(v);
        all_on(at, n, 3, 4)?;
        if v.iter().enumerate().any(|(i, &x)| x != i as u64) {
            return Err("contents changed".into());
        }
        Ok(format!("{PAGES}/{PAGES} pages on node 3, contents intact"))
    })?;
    let half = rt
        .migrate_range(&d, 0..len / 2, 1)
        .map_err(|e| e.to_string())?;
    let split = on(&rt, 0, d.read(), move |v| {
        let (at, n) = bytes_of(v);
        let nodes = nodes_of(at, n)?;
        let want: Vec<usize> = (0..PAGES)
            .map(|p| if p < PAGES / 2 { 1 } else { 3 })
            .collect();
        if nodes == want {
            Ok("by range: first half on node 1, second on node 3".into())
        } else {
            Err(format!(
                "by range: pages per node {:?}",
                histogram(&nodes, 4)
            ))
        }
    })?;
    let table = rt.bytes_per_node(&d).unwrap();
    let half_bytes = (PAGES / 2 * page) as u64;
    if half.pages != (PAGES / 2) as u64 || table != vec![0, half_bytes, 0, half_bytes] {
        return Err(format!(
            "{} pages moved by range, runtime table {table:?}",
            half.pages
        ));
    }
    Ok(format!("{whole}; {split}"))
}

fn next_touch() -> Result<String, String> {
    let rt = host_runtime()?;
    let page = placement::page_size();
    let len = PAGES * page / 8;
    let d: Data<u64> = rt
        .shared_from("d", &vec![7u64; len], RegionPolicy::Bind(0))
        .map_err(|e| e.to_string())?;
    let armed = rt.migrate_on_next_touch(&d).map_err(|e| e.to_string())?;
    if armed != PAGES {
        return Err(format!("{armed} pages armed, {PAGES} expected"));
    }
    let per_page = page / 8;
    // Pages 0..24 to node 2, 24..48 to node 3; 48..64 untouched.
    let parts = [
        (2usize, 0..24 * per_page),
        (3, 24 * per_page..48 * per_page),
    ];
    let off = Arc::new(AtomicU64::new(0));
    let finished = rt
        .run(|s| -> Result<(), locus::Error> {
            for (node, range) in parts.iter().cloned() {
                let off = off.clone();
                s.task("toucher", d.read_range(range))
                    .affinity(Affinity::node(node).strict())
                    .spawn(move |_, v| {
                        let (at, n) = bytes_of(v);
                        if all_on(at, n, node, 4).is_err() {
                            off.fetch_add(1, Ordering::Relaxed);
                        }
                    })?;
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    finished.value.map_err(|e| e.to_string())?;
    if off.load(Ordering::Relaxed) != 0 {
        return Err("a toucher's pages were not on its node by the kernel".into());
    }
    let rest = on(&rt, 0, d.read_range(48 * per_page..len), |v| {
        let (at, n) = bytes_of(v);
        all_on(at, n, 0, 4).map(|_| String::new())
    });
    rest.map_err(|e| format!("untouched pages moved: {e}"))?;
    let moved = rt.migrated().next_touch.pages;
    if moved != 48 {
        return Err(format!(
            "the runtime counts {moved} pages moved on next touch, 48 expected"
        ));
    }
    Ok("24 pages on node 2 and 24 on node 3 when their tasks ran, 16 untouched on node 0".into())
}

fn register() -> Result<String, String> {
    let rt = host_runtime()?;
    let page = placement::page_size();
    let len = PAGES * page / 8;
    // Written by a thread of node 1: the kernel places the pages there (first touch).
    let (_, values) = pinned::on_node(1, || Ok((0..len as u64).collect::<Vec<u64>>()))?;
    let at = values.as_ptr() as usize;
    let (ptr, bytes) = bytes_of(&values);
    let before = nodes_of(ptr, bytes)?;
    let d = rt.register("user", values).map_err(|e| e.to_string())?;
    let table = rt.bytes_per_node(&d).unwrap();
    let mut kernel = vec![0u64; 4];
    for (i, &n) in before.iter().enumerate() {
        // Bytes of the vector in page i, as the runtime's table counts them.
        let lo = (at / page * page + i * page).max(at);
        let hi = (at / page * page + (i + 1) * page).min(at + bytes);
        kernel[n.min(3)] += (hi - lo) as u64;
    }
    if table != kernel {
        return Err(format!(
            "runtime table {table:?}, kernel {kernel:?} (bytes per node)"
        ));
    }
    let seen = on(&rt, 3, d.read(), move |v| {
        let (p, n) = bytes_of(v);
        if p as usize != at {
            return Err(format!("the task sees {p:?}, the vector was at {at:#x}"));
        }
        nodes_of(p, n).map(|now| format!("{:?}", histogram(&now, 4)))
    })?;
    let after = nodes_of(at as *const u8, bytes)?;
    if after != before {
        return Err(format!(
            "pages moved: before {:?}, after {:?}",
            histogram(&before, 4),
            histogram(&after, 4)
        ));
    }
    let back = rt.fetch(&d).map_err(|e| e.to_string())?;
    if back.iter().enumerate().any(|(i, &x)| x != i as u64) {
        return Err("contents changed".into());
    }
    Ok(format!(
        "no copy (same address), pages per node {seen} by the kernel before and after a \
         task of node 3, runtime table agrees"
    ))
}

fn twisted_auto() -> Result<String, String> {
    const BLOCKS: usize = 4;
    const ITERATIONS: usize = 3;
    let rt = Runtime::builder()
        .topology(Topology::host().map_err(|e| e.to_string())?)
        .config(Config::DsaOpt)
        .migration(Migration::Auto)
        .build()
        .map_err(|e| e.to_string())?;
    if rt.topology().num_nodes() != 4 {
        return Err(format!(
            "the host has {} node(s), 4 expected",
            rt.topology().num_nodes()
        ));
    }
    let block = 16 * placement::page_size() / 8;
    // sets[k][v][b]: block b of vector v (a, b, c) of node k's team.
    let mut sets: Vec<Vec<Vec<Data<f64>>>> = Vec::new();
    for k in 0..4 {
        let mut set = Vec::new();
        for v in 0..3 {
            let mut blocks = Vec::new();
            for b in 0..BLOCKS {
                blocks.push(
                    rt.shared::<f64>(format!("v{k}.{v}.{b}"), block, RegionPolicy::FirstTouch)
                        .map_err(|e| e.to_string())?,
                );
            }
            set.push(blocks);
        }
        sets.push(set);
    }
    let init = |k: usize, v: usize| (k * 3 + v + 1) as f64;
    // Phase 1: each team first-touches its own vectors.
    rt.run(|s| -> Result<(), locus::Error> {
        for (k, set) in sets.iter().enumerate() {
            for (v, blocks) in set.iter().enumerate() {
                for d in blocks {
                    let x = init(k, v);
                    s.task("init", d.write())
                        .affinity(Affinity::node(k).strict())
                        .spawn(move |_, out| out.fill(x))?;
                }
            }
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?
    .value
    .map_err(|e| e.to_string())?;
    // Phase 2: team k sweeps set k + 1, hinted (not bound) to its own node.
    let (local, remote) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let finished = rt
        .run(|s| -> Result<(), locus::Error> {
            for _ in 0..ITERATIONS {
                for k in 0..4 {
                    let j = (k + 1) % 4;
                    let [av, bv, cv] = [0, 1, 2].map(|v| &sets[j][v]);
                    for ((a, bv), c) in av.iter().zip(bv).zip(cv) {
                        let (l, r) = (local.clone(), remote.clone());
                        s.task("triad", (a.write(), bv.read(), c.read()))
                            .affinity(Affinity::node(k))
                            .spawn(move |ctx, (a, b, c)| {
                                for (a, (b, c)) in a.iter_mut().zip(b.iter().zip(c.iter())) {
                                    *a = b + 3.0 * c;
                                }
                                let views = [bytes_of(a), bytes_of(b), bytes_of(c)];
                                for (at, n) in views {
                                    match nodes_of(at, n) {
                                        Ok(nodes) => {
                                            let here =
                                                nodes.iter().filter(|&&p| p == ctx.node()).count();
                                            l.fetch_add(here as u64, Ordering::Relaxed);
                                            r.fetch_add(
                                                (nodes.len() - here) as u64,
                                                Ordering::Relaxed,
                                            );
                                        }
                                        Err(_) => {
                                            r.fetch_add(1, Ordering::Relaxed);
                                        }
                                    }
                                }
                            })?;
                    }
                }
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    finished.value.map_err(|e| e.to_string())?;
    let report = finished.report;
    let (local, remote) = (
        local.load(Ordering::Relaxed),
        remote.load(Ordering::Relaxed),
    );
    let tasks = (ITERATIONS * 4 * BLOCKS) as u64;
    if remote != 0 {
        return Err(format!(
            "{remote} of {} pages accessed in phase 2 were on another node than their \
             task's, by the kernel ({} tasks moved)",
            local + remote,
            report.migration.tasks_moved
        ));
    }
    if report.migration.tasks_moved != tasks || report.migration.auto_pages != 0 {
        return Err(format!(
            "{} of {tasks} tasks moved, {} pages migrated (expected all moved, none migrated)",
            report.migration.tasks_moved, report.migration.auto_pages
        ));
    }
    for (k, set) in sets.iter().enumerate() {
        let want = init(k, 1) + 3.0 * init(k, 2);
        for d in &set[0] {
            let got = rt.fetch(d).map_err(|e| e.to_string())?;
            if got.iter().any(|&x| x != want) {
                return Err(format!("set {k}: a triad result is wrong"));
            }
        }
    }
    Ok(format!(
        "{tasks} phase-2 tasks moved to their data, {local} pages accessed, all on the \
         task's node by the kernel, no page migrated"
    ))
}
