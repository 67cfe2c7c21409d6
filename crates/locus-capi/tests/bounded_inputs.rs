//! `locus_data_shared` of sizes no machine here holds (1 TiB to 1 PiB mapped and touched
//! memory for seconds before failing) fails at once with `LOCUS_E_OUT_OF_MEMORY`, as
//! a versioned datum of the same size does: each call within 2 s, the process within
//! 100 MB.
//!
//! This file holds one test, so that the process's peak memory (`VmHWM` of
//! `/proc/self/status`, proc(5)) is that test's and no other's.

use std::ffi::CStr;
use std::ptr;
use std::time::{Duration, Instant};

use locus_capi::*;

/// Peak resident memory of this process, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status");
    kb * 1024
}

#[test]
fn shared_data_of_impossible_sizes_fail_at_once() {
    // SAFETY: every pointer passed is valid for what the function reads or writes.
    unsafe {
        let mut rt = locus_runtime::default();
        let status = locus_runtime_create(
            c"shm-base".as_ptr(),
            c"2x1".as_ptr(),
            2,
            locus_settings::default(),
            &mut rt,
        );
        assert_eq!(status, locus_status::LOCUS_OK);
        for bytes in [1usize << 40, 1 << 45, 1 << 50] {
            for policy in 0..4 {
                let mut fastest = Duration::MAX;
                // On a loaded machine one try may be slow with no fault of the
                // program: up to three tries, the fastest counts.
                for _ in 0..3 {
                    let mut data = locus_data::default();
                    let start = Instant::now();
                    let status = locus_data_shared(
                        rt,
                        c"big".as_ptr(),
                        8,
                        bytes / 8,
                        policy,
                        1,
                        ptr::null(),
                        &mut data,
                    );
                    fastest = fastest.min(start.elapsed());
                    let error = CStr::from_ptr(locus_last_error()).to_string_lossy();
                    assert_eq!(
                        status,
                        locus_status::LOCUS_E_OUT_OF_MEMORY,
                        "{bytes} bytes, policy {policy}: {error}"
                    );
                    assert!(error.contains("more than this machine's memory"), "{error}");
                    if fastest < Duration::from_secs(2) {
                        break;
                    }
                }
                assert!(
                    fastest < Duration::from_secs(2),
                    "{bytes} bytes, policy {policy}: {fastest:?} at best"
                );
            }
        }
        assert_eq!(locus_runtime_destroy(rt), locus_status::LOCUS_OK);
    }
    let peak = peak_rss();
    assert!(peak < 100 << 20, "{peak} bytes at peak");
}
