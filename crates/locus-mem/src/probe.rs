//! Probes of the host's memory: the cost of migrating pages between two nodes, and a
//! STREAM triad.
//!
//! [`migration`] measures the linear model of Broquedis et al. ("Dynamic Task and Data
//! Placement over NUMA Architectures: An OpenMP Runtime Perspective", section 3.2: MaMI's
//! `120 + 11 x pages` microseconds): pages bound to one node and faulted in are moved to
//! another with `move_pages`, in calls of several sizes, and a least-squares line
//! through the fastest time of each size gives `a` (per call) and `b` (per page).
//! [`triad`] runs McCalpin's STREAM triad `a[i] = b[i] + s x c[i]` over vectors each
//! thread touches first, and reports the bandwidth it sustains.
//!
//! Both take wall-clock time: they are for `locus topo --probe`, not for tests that
//! assert on figures.

use std::time::Instant;

use crate::placement::{self, BindMode, PageStatus, PlacementError};
use crate::pool::os;

/// A measured migration model: `fixed_ns + per_page_ns x pages`.
#[derive(Clone, Debug, PartialEq)]
pub struct MigrationFit {
    /// `a`: the cost of one `move_pages` call, in nanoseconds.
    pub fixed_ns: f64,
    /// `b`: the cost of each page moved, in nanoseconds.
    pub per_page_ns: f64,
    /// The page size, in bytes.
    pub page_bytes: usize,
    /// The (pages, fastest nanoseconds) measurements the line goes through.
    pub samples: Vec<(usize, f64)>,
}

/// Why the migration cost could not be measured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The two nodes are the same, or the machine has one node only.
    #[error("migration cannot be measured: {0}")]
    OneNode(String),
    /// The kernel refused a call.
    #[error(transparent)]
    Os(#[from] PlacementError),
    /// The kernel did not move the pages (the status names the first failure).
    #[error("move_pages did not move the pages to node {node}: {status:?}")]
    NotMoved {
        /// The target OS node.
        node: usize,
        /// The status of the first page that did not move.
        status: PageStatus,
    },
}

/// Call sizes of the migration probe, in pages.
const SIZES: [usize; 5] = [1, 8, 32, 128, 512];
/// Calls per size; the fastest counts.
const REPEATS: usize = 5;

/// Measures the migration model between OS nodes `from` and `to`: pages bound to
/// `from` and faulted in are moved to `to` and back, in calls of 1 to 512 pages.
pub fn migration(from: usize, to: usize) -> Result<MigrationFit, ProbeError> {
    if from == to || !placement::numa_available() || placement::online_nodes() < 2 {
        return Err(ProbeError::OneNode(format!(
            "the machine has {} NUMA node(s) available; two distinct nodes are needed",
            placement::online_nodes()
        )));
    }
    let page = placement::page_size();
    let max = SIZES[SIZES.len() - 1];
    let len = max * page;
    let ptr = os::map(len)?;
    let base = ptr.as_ptr().cast_const();
    let result = (|| {
        let _ = placement::madvise_nohugepage(base, len);
        placement::bind(base, len, from, BindMode::PolicyOnly)?;
        for i in 0..max {
            // SAFETY: page `i` is inside the mapping made above, used by this probe only.
            unsafe { ptr.as_ptr().add(i * page).write_volatile(1) };
        }
        // The policy must not pull pages back: reset it, then move explicitly.
        placement::reset_policy(base, len)?;
        let mut samples = Vec::with_capacity(SIZES.len());
        for &pages in &SIZES {
            let mut best = f64::INFINITY;
            for _ in 0..REPEATS {
                let target = to;
                let start = Instant::now();
                let status = placement::migrate(base, pages * page, target)?;
                let ns = start.elapsed().as_nanos() as f64;
                if let Some(bad) = status.iter().find(|s| s.node() != Some(target)) {
                    return Err(ProbeError::NotMoved {
                        node: target,
                        status: *bad,
                    });
                }
                // Bring them back, untimed, so that every timed call moves them again.
                placement::migrate(base, pages * page, from)?;
                best = best.min(ns);
            }
            samples.push((pages, best));
        }
        let (fixed_ns, per_page_ns) = fit_line(&samples);
        Ok(MigrationFit {
            fixed_ns,
            per_page_ns,
            page_bytes: page,
            samples,
        })
    })();
    // SAFETY: the mapping made above, no longer used.
    unsafe { os::unmap(ptr, len) };
    result
}

/// The least-squares line `y = a + b x` through `points`, with `a` and `b` at least 0.
pub fn fit_line(points: &[(usize, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    if points.is_empty() {
        return (0.0, 0.0);
    }
    let mx = points.iter().map(|p| p.0 as f64).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 as f64 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 as f64 - mx) * (p.1 - my)).sum();
    let b = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
    ((my - b * mx).max(0.0), b)
}

/// Result of the STREAM triad probe.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Triad {
    /// Bytes moved per second (three vectors of `len` doubles: two read, one written),
    /// best of the repetitions, in GB/s (10^9 bytes).
    pub gb_per_s: f64,
    /// Seconds of the fastest repetition.
    pub best_s: f64,
    /// Repetitions timed.
    pub repeats: usize,
    /// Threads that ran it.
    pub threads: usize,
    /// Doubles per vector.
    pub len: usize,
}

/// Doubles per vector for a STREAM run on this host: McCalpin's rule, each vector at
/// least four times the largest cache of CPU 0 (read from
/// `/sys/devices/system/cpu/cpu0/cache`), and at least 2 Mi doubles (16 MiB); at most
/// 64 Mi doubles (512 MiB).
pub fn stream_len() -> usize {
    let largest = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("size")).ok())
        .filter_map(|s| parse_cache_size(&s))
        .max()
        .unwrap_or(0);
    (4 * largest / 8).clamp(2 << 20, 64 << 20)
}

/// A sysfs cache size (`32768K`, `2M`, `512`) in bytes.
fn parse_cache_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let n: usize = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// Runs the STREAM triad `a[i] = b[i] + 3 x c[i]` over three vectors of `len`
/// doubles, with one thread per entry of `cpus` (each pinned, each initialising its own
/// chunk so that first touch places it on its node), `repeats` times; the best counts.
/// Panics only if a sweep computed a wrong element (a broken machine or compiler, not a
/// measurement).
pub fn triad(len: usize, cpus: &[usize], repeats: usize) -> Triad {
    let threads = cpus.len().max(1);
    let chunk = len.div_ceil(threads);
    let mut a = Vec::<f64>::with_capacity(len);
    let mut b = Vec::<f64>::with_capacity(len);
    let mut c = Vec::<f64>::with_capacity(len);
    // The spare capacity is initialised by the threads below (first touch), then the
    // lengths are set.
    let (sa, sb, sc) = (
        &mut a.spare_capacity_mut()[..len],
        &mut b.spare_capacity_mut()[..len],
        &mut c.spare_capacity_mut()[..len],
    );
    let parts: Vec<_> = sa
        .chunks_mut(chunk)
        .zip(sb.chunks_mut(chunk))
        .zip(sc.chunks_mut(chunk))
        .enumerate()
        .collect();
    let barrier = std::sync::Barrier::new(parts.len());
    let barrier = &barrier;
    // Each worker stamps the start and end of its part of every repetition; a
    // repetition lasts from the first start to the last end, so a thread descheduled
    // between repetitions (a loaded host) does not shorten it.
    let stamps: Vec<Vec<(Instant, Instant)>> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|(i, ((pa, pb), pc))| {
                let cpu = cpus.get(i).copied();
                s.spawn(move || {
                    if let Some(cpu) = cpu {
                        let _ = placement::pin_thread_to_cpu(cpu);
                    }
                    for ((x, y), z) in pa.iter_mut().zip(pb.iter_mut()).zip(pc.iter_mut()) {
                        x.write(0.0);
                        y.write(1.0);
                        z.write(2.0);
                    }
                    // SAFETY: every element of the three chunks was written just above.
                    let (pa, pb, pc) = unsafe {
                        (
                            &mut *(pa as *mut [std::mem::MaybeUninit<f64>] as *mut [f64]),
                            &*(pb as *const [std::mem::MaybeUninit<f64>] as *const [f64]),
                            &*(pc as *const [std::mem::MaybeUninit<f64>] as *const [f64]),
                        )
                    };
                    let mut mine = Vec::with_capacity(repeats);
                    for _ in 0..repeats {
                        barrier.wait();
                        let start = Instant::now();
                        for ((x, y), z) in pa.iter_mut().zip(pb).zip(pc) {
                            *x = y + 3.0 * z;
                        }
                        mine.push((start, Instant::now()));
                    }
                    std::hint::black_box(&pa[0]);
                    // Verified against the sequential result: every element is
                    // 1 + 3 x 2.
                    assert!(
                        pa.iter().step_by(512).all(|&x| x == 7.0),
                        "the triad computed a wrong element"
                    );
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let best = (0..repeats)
        .filter_map(|r| {
            let first = stamps.iter().filter_map(|t| t.get(r)).map(|t| t.0).min()?;
            let last = stamps.iter().filter_map(|t| t.get(r)).map(|t| t.1).max()?;
            Some(last.duration_since(first).as_secs_f64())
        })
        .fold(f64::INFINITY, f64::min);
    let bytes = 3.0 * 8.0 * len as f64;
    let best = best.max(1e-9);
    Triad {
        gb_per_s: bytes / best / 1e9,
        best_s: best,
        repeats,
        threads,
        len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_goes_through_exact_points() {
        let pts: Vec<(usize, f64)> = [1usize, 8, 32]
            .iter()
            .map(|&p| (p, 120_000.0 + 11_000.0 * p as f64))
            .collect();
        let (a, b) = fit_line(&pts);
        assert!(
            (a - 120_000.0).abs() < 1e-6 && (b - 11_000.0).abs() < 1e-6,
            "{a} {b}"
        );
        assert_eq!(fit_line(&[]), (0.0, 0.0));
        assert_eq!(fit_line(&[(4, 10.0)]), (10.0, 0.0));
    }

    #[test]
    fn cache_sizes_parse_and_bound_the_stream_length() {
        assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("12Q"), None);
        assert_eq!(parse_cache_size(""), None);
        let len = stream_len();
        assert!(((2 << 20)..=(64 << 20)).contains(&len), "{len}");
    }

    #[test]
    fn one_node_cannot_measure_migration() {
        assert!(matches!(migration(0, 0), Err(ProbeError::OneNode(_))));
    }

    #[test]
    fn triad_runs_and_reports_a_bandwidth() {
        let t = triad(1 << 12, &[], 2);
        assert!(t.gb_per_s > 0.0 && t.gb_per_s.is_finite());
        assert_eq!((t.threads, t.len), (1, 1 << 12));
    }
}
