//! Measures the cost of the per-node pool locks: allocation/free pairs per second with
//! one thread, with two threads on the same node's pool (contended lock), and with two
//! threads on different nodes' pools (no shared lock), against the system allocator;
//! and the cost of one allocation per task of about a microsecond when two workers share
//! one node's pool.
//!
//! Run with `cargo run --release -p locus-mem --example contention [pairs-per-thread]`.

use std::alloc::{alloc, dealloc, Layout};
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use locus_mem::placement;
use locus_mem::pool::{PoolConfig, Pools};

/// Blocks held at once by each thread: allocate a batch, then free it.
const BATCH: usize = 16;
const BYTES: usize = 4096;

fn run(
    threads: usize,
    pairs: usize,
    body: impl Fn(usize, usize) + Send + Sync + 'static,
) -> Duration {
    let body = Arc::new(body);
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (body, barrier) = (body.clone(), barrier.clone());
            std::thread::spawn(move || {
                let cpus = placement::thread_affinity().unwrap_or_default();
                if !cpus.is_empty() {
                    let _ = placement::pin_thread_to_cpu(cpus[t % cpus.len()]);
                }
                barrier.wait();
                body(t, pairs);
                barrier.wait();
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    barrier.wait();
    let elapsed = start.elapsed();
    for h in handles {
        h.join().unwrap();
    }
    elapsed
}

fn report(name: &str, threads: usize, pairs: usize, elapsed: Duration) {
    let total = (threads * pairs) as f64;
    println!(
        "{name:<34} threads={threads} {:>7.1} ns/pair per thread  {:>7.2} M pairs/s total",
        elapsed.as_nanos() as f64 * threads as f64 / total,
        total / elapsed.as_secs_f64() / 1e6
    );
}

fn pools_loop(
    pools: Arc<Pools>,
    node_of_thread: fn(usize) -> usize,
) -> impl Fn(usize, usize) + Send + Sync {
    move |t, pairs| {
        let node = node_of_thread(t);
        let mut held = Vec::with_capacity(BATCH);
        for _ in 0..pairs / BATCH {
            for _ in 0..BATCH {
                held.push(black_box(pools.alloc(node, BYTES).unwrap()));
            }
            held.clear();
        }
    }
}

/// Spins for about `iters` loop iterations: the stand-in for a task body.
fn work(iters: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..iters {
        x = black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    x
}

/// Like a worker: allocate one output block, run a task body of `WORK` iterations,
/// free the block. With `pools == None`, the body alone (the baseline).
fn task_loop(pools: Option<Arc<Pools>>) -> impl Fn(usize, usize) + Send + Sync {
    move |_t, pairs| {
        for _ in 0..pairs {
            let block = pools.as_ref().map(|p| p.alloc(0, BYTES).unwrap());
            black_box(work(WORK));
            drop(black_box(block));
        }
    }
}

/// Iterations of the stand-in task body (about a microsecond).
const WORK: u64 = 1000;

fn system_loop(_t: usize, pairs: usize) {
    let layout = Layout::from_size_align(BYTES, 64).unwrap();
    let mut held = Vec::with_capacity(BATCH);
    for _ in 0..pairs / BATCH {
        for _ in 0..BATCH {
            // SAFETY: the layout has a non-zero size.
            held.push(black_box(unsafe { alloc(layout) }));
        }
        for p in held.drain(..) {
            // SAFETY: `p` was allocated above with this layout.
            unsafe { dealloc(p, layout) };
        }
    }
}

fn main() {
    let pairs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let cpus = placement::thread_affinity().map(|c| c.len()).unwrap_or(1);
    println!(
        "{BYTES}-byte blocks, batches of {BATCH}, {pairs} alloc/free pairs per thread, {cpus} CPUs"
    );
    for round in 0..2 {
        println!("round {round}");
        let pools = Pools::new(PoolConfig::virtual_nodes(2)).unwrap();
        report(
            "pools, one node",
            1,
            pairs,
            run(1, pairs, pools_loop(pools.clone(), |_| 0)),
        );
        report(
            "pools, same node (shared lock)",
            2,
            pairs,
            run(2, pairs, pools_loop(pools.clone(), |_| 0)),
        );
        report(
            "pools, one node each",
            2,
            pairs,
            run(2, pairs, pools_loop(pools.clone(), |t| t % 2)),
        );
        report("system allocator", 1, pairs, run(1, pairs, system_loop));
        report("system allocator", 2, pairs, run(2, pairs, system_loop));
        let tasks = pairs / 10;
        let body = run(2, tasks, task_loop(None));
        let with = run(2, tasks, task_loop(Some(pools.clone())));
        println!(
            "{:<34} threads=2 {:>7.1} ns/task body alone, {:>7.1} ns/task with a block from one shared node",
            "tasks of ~1 us",
            body.as_nanos() as f64 * 2.0 / (2 * tasks) as f64,
            with.as_nanos() as f64 * 2.0 / (2 * tasks) as f64,
        );
        let s = pools.stats();
        assert_eq!(pools.bytes_in_use(), 0);
        println!(
            "  reused {} of {} allocations",
            s[0].reused + s[1].reused,
            s[0].allocs + s[1].allocs
        );
    }
}
