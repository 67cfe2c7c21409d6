//! Inputs that once cost without bound before failing, through the API: shared data of
//! sizes no machine here holds (1 TiB to 1 PiB mapped and touched memory for seconds,
//! 1 PiB growing toward the OOM killer) and a partition into 2^22 parts (10 s and
//! 6.9 GB) now fail at once, each within 2 s, and the process within 100 MB. (Shared
//! data in the simulator, which hold no memory, are bounded by their table of page
//! nodes: `locus-mem`'s region tests.)
//!
//! This file holds one test, so that the process's peak memory (`VmHWM` of
//! `/proc/self/status`, proc(5)) is that test's and no other's.

use std::time::{Duration, Instant};

use locus::{Config, Partition, RegionPolicy, Runtime, Topology};

/// Peak resident memory of this process, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

/// Runs `f`, which must fail, and checks it took less than 2 s. On a loaded machine one
/// try may be slow with no fault of the program: up to three tries, the fastest counts.
fn fails_at_once<T, E: std::fmt::Display>(what: &str, f: impl Fn() -> Result<T, E>) -> String {
    let mut fastest = Duration::MAX;
    let mut message = String::new();
    for _ in 0..3 {
        let start = Instant::now();
        let result = f();
        fastest = fastest.min(start.elapsed());
        match result {
            Ok(_) => panic!("{what}: accepted"),
            Err(e) => message = e.to_string(),
        }
        if fastest < Duration::from_secs(2) {
            break;
        }
    }
    assert!(
        fastest < Duration::from_secs(2),
        "{what}: {fastest:?} at best"
    );
    message
}

#[test]
fn impossible_sizes_fail_at_once_within_bounds() {
    let threads = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .config(Config::ShmBase)
        .build()
        .unwrap();
    let policies = [
        RegionPolicy::Interleave,
        RegionPolicy::Bind(1),
        RegionPolicy::Blocked,
        RegionPolicy::FirstTouch,
    ];
    // 8 TiB (2^40 elements of 8 bytes) to 8 PiB: more than this machine's memory.
    for len in [1usize << 40, 1 << 47, 1 << 50] {
        for policy in policies {
            let what = format!("shared of {len} f64, {policy:?}");
            let m = fails_at_once(&what, || threads.shared::<f64>("big", len, policy));
            assert!(m.contains("more than this machine's memory"), "{what}: {m}");
        }
        // Under shm-base, `data` makes shared data too: the tasks declaring it are
        // refused with the reason.
        let m = fails_at_once("data under shm-base", || {
            let d = threads.data::<f64>("big", len);
            let mut spawned = Ok(());
            threads
                .run(|s| spawned = s.spawn("touch", d.write(), |_, _| {}).map(drop))
                .map_err(|e| e.to_string())?;
            spawned.map_err(|e| e.to_string())
        });
        assert!(m.contains("more than this machine's memory"), "{m}");
    }
    // A partition into more than 2^20 parts, or more stored segments.
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .build()
        .unwrap();
    let v = rt.data::<u64>("v", 1 << 22);
    for partition in [
        Partition::blocks(1),
        Partition::blocks(3),
        Partition::tiles(1 << 11, 1 << 11, 1, 2),
        Partition::ranges((0..(1 << 20) + 1).map(|i| i..i + 1)),
    ] {
        let what = format!("{partition:?}")
            .chars()
            .take(60)
            .collect::<String>();
        let m = fails_at_once(&what, || rt.partition(&v, partition.clone()));
        assert!(m.contains("more than the limit of 2^2"), "{what}: {m}");
        assert!(m.contains("partition of `v`"), "{what}: {m}");
    }
    // Tiles of more than 2^24 rows in all (one run of elements each).
    let bytes = rt.data::<u8>("bytes", 1 << 25);
    let m = fails_at_once("rows", || {
        rt.partition(&bytes, Partition::tiles(1 << 25, 1, 1 << 20, 1))
    });
    assert!(m.contains("more than the limit of 2^24"), "{m}");
    // Within the limit.
    let halves = rt.partition(&v, Partition::blocks(1 << 21)).unwrap();
    assert_eq!(halves.len(), 2);
    assert_eq!(rt.fetch(&v).unwrap().len(), 1 << 22);
    let peak = peak_rss();
    assert!(peak < 100 << 20, "{peak} bytes at peak");
}
