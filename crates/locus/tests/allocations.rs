//! Heap allocations per task, counted by a global allocator: the difference between a
//! run of 2N tasks and a run of N tasks, over N, so that what a run costs once (the
//! root task, the report) cancels. One worker, so that no other thread allocates.
//!
//! The bounds are what the runtime does today; a change that adds an allocation per
//! task fails here. Run with `-- --nocapture` to see the counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use locus::{Config, Runtime, Topology};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn runtime(config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec("1x1").unwrap())
        .config(config)
        .build()
        .unwrap()
}

const N: u64 = 2000;

/// A program running its argument's number of tasks.
type Program = fn(&Runtime, u64);

/// Allocations per task of `program` (which runs its argument's number of tasks).
fn per_task(rt: &Runtime, program: impl Fn(&Runtime, u64)) -> f64 {
    // A first run warms the pools and the workers' queues up.
    program(rt, N);
    let count = |tasks| {
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        program(rt, tasks);
        ALLOCATIONS.load(Ordering::Relaxed) - before
    };
    let (one, two) = (count(N), count(2 * N));
    (two as f64 - one as f64) / N as f64
}

fn empty(rt: &Runtime, tasks: u64) {
    rt.run(|s| {
        for _ in 0..tasks {
            s.spawn("empty", (), |_, ()| {}).unwrap();
        }
    })
    .unwrap();
}

fn chain(rt: &Runtime, tasks: u64) {
    chain_on(rt, tasks, 1);
}

/// A chain on a datum above the pushing threshold, so that work-pushing weighs every
/// task's bytes per node (Algorithm 1) instead of keeping it below the threshold.
fn big_chain(rt: &Runtime, tasks: u64) {
    chain_on(rt, tasks, 4096);
}

/// `tasks` read-write tasks in a row on one datum of `len` words.
fn chain_on(rt: &Runtime, tasks: u64, len: usize) {
    let d = rt.data::<u64>("counter", len);
    rt.run(|s| {
        for _ in 0..tasks {
            s.spawn("inc", d.read_write(), |_, x| x[0] += 1).unwrap();
        }
    })
    .unwrap();
    assert_eq!(rt.fetch(&d).unwrap()[0], tasks);
}

fn churn(rt: &Runtime, tasks: u64) {
    let d = rt.data::<u64>("churned", 1);
    rt.run(|s| {
        for r in 0..tasks / 5 {
            s.spawn("write", d.write(), move |_, x| x[0] = r).unwrap();
            for _ in 0..4 {
                s.spawn("read", d.read(), move |_, x| assert_eq!(x[0], r))
                    .unwrap();
            }
        }
    })
    .unwrap();
}

#[test]
fn allocations_per_task() {
    // (program, bound on allocations per task under work-pushing, and without): the
    // task record, its body's box when it captures something, a version per write.
    // Work-pushing describes every activated task to the placement policy, and weighs
    // the bytes of those above its threshold per node, without allocating.
    let programs: [(&str, Program, f64, f64); 4] = [
        ("empty", empty, 1.1, 1.1),
        ("chain", chain, 3.1, 3.1),
        ("big", big_chain, 3.1, 3.1),
        ("churn", churn, 2.3, 2.9),
    ];
    for config in [Config::DsaOpt, Config::DsaBase, Config::ShmBase] {
        let rt = runtime(config);
        for (name, program, pushing, other) in programs {
            let bound = if config == Config::DsaOpt {
                pushing
            } else {
                other
            };
            let n = per_task(&rt, program);
            eprintln!("{name:6} {config:9}: {n:.2} allocations per task");
            assert!(
                n <= bound,
                "{name} under {config}: {n} allocations per task"
            );
        }
    }
}
