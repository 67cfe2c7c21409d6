//! The STREAM triad, `a[i] = b[i] + s * c[i]`: the host's sustainable memory bandwidth,
//! the yardstick that `locus bench --engine threads` holds memory-bound kernels against.
//!
//! Three arrays much larger than the caches, split into one contiguous chunk per core,
//! each chunk first touched and then swept by the thread that owns it (so on a NUMA
//! host each chunk lives on its sweeper's node). Every element moves 3 x 8 bytes: two
//! reads and one write, as STREAM counts them (write-allocate traffic not counted). The
//! figure is the best of several sweeps.

use std::hint::black_box;
use std::time::Instant;

/// Size and repetitions of a triad measurement.
#[derive(Clone, Copy, Debug)]
pub struct Triad {
    /// Elements per array.
    pub len: usize,
    /// Timed sweeps; the fastest counts.
    pub repetitions: usize,
    /// Threads sweeping in parallel.
    pub threads: usize,
}

impl Default for Triad {
    /// Three arrays of 64 MiB of `f64`, best of 5, one thread per available CPU.
    fn default() -> Self {
        Triad {
            len: (64 << 20) / std::mem::size_of::<f64>(),
            repetitions: 5,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// What a triad measurement found.
#[derive(Clone, Copy, Debug)]
pub struct Bandwidth {
    /// Bytes per second of the fastest sweep.
    pub bytes_per_s: f64,
    /// Seconds of the fastest sweep.
    pub best_s: f64,
    /// The measurement's parameters.
    pub triad: Triad,
}

impl Bandwidth {
    /// Gigabytes (10^9 bytes) per second.
    pub fn gb_per_s(&self) -> f64 {
        self.bytes_per_s / 1e9
    }
}

/// The scalar of the triad.
const SCALAR: f64 = 3.0;

/// Measures the triad. Panics only if a sweep computed a wrong element (a broken
/// machine or compiler, not a measurement).
pub fn measure(triad: Triad) -> Bandwidth {
    let threads = triad.threads.max(1);
    let len = triad.len.max(threads);
    // Zeroed allocations this large come straight from the OS as untouched pages, so
    // each chunk is first touched below by the thread that sweeps it.
    let mut a = vec![0.0f64; len];
    let mut b = vec![0.0f64; len];
    let mut c = vec![0.0f64; len];
    let chunk = len.div_ceil(threads);
    std::thread::scope(|s| {
        for ((a, b), c) in a
            .chunks_mut(chunk)
            .zip(b.chunks_mut(chunk))
            .zip(c.chunks_mut(chunk))
        {
            s.spawn(move || {
                a.fill(0.0);
                b.fill(1.0);
                c.fill(2.0);
            });
        }
    });
    let mut best = f64::INFINITY;
    for _ in 0..triad.repetitions.max(1) {
        let start = Instant::now();
        sweep(&mut a, &b, &c, chunk);
        best = best.min(start.elapsed().as_secs_f64());
        black_box(&mut a);
    }
    let expected = 1.0 + SCALAR * 2.0;
    assert!(
        a.iter().step_by(4096).all(|&x| x == expected),
        "the triad computed a wrong element"
    );
    let bytes = 3.0 * std::mem::size_of::<f64>() as f64 * len as f64;
    Bandwidth {
        bytes_per_s: bytes / best,
        best_s: best,
        triad: Triad {
            len,
            threads,
            ..triad
        },
    }
}

/// One parallel sweep `a = b + s * c`, one chunk per thread.
fn sweep(a: &mut [f64], b: &[f64], c: &[f64], chunk: usize) {
    let s = black_box(SCALAR);
    std::thread::scope(|scope| {
        for ((a, b), c) in a
            .chunks_mut(chunk)
            .zip(b.chunks(chunk))
            .zip(c.chunks(chunk))
        {
            scope.spawn(move || {
                for ((a, &b), &c) in a.iter_mut().zip(b).zip(c) {
                    *a = b + s * c;
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_triad_counts_three_words_per_element() {
        let bw = measure(Triad {
            len: 10_000,
            repetitions: 2,
            threads: 3,
        });
        assert!(bw.bytes_per_s > 0.0 && bw.best_s > 0.0);
        let bytes = bw.bytes_per_s * bw.best_s;
        assert!((bytes - 240_000.0).abs() < 1.0, "{bytes}");
    }
}
