//! `jacobi-1d`: a 1-D three-point Jacobi stencil over blocks, the chain-of-stencils
//! shape of paper 1 section 4.3 (Figure 4a).
//!
//! The array is cut into `blocks` blocks, each a datum; iteration `t` of block `b` reads
//! its own block whole and one element from each neighbour (the halo, declared as a
//! one-element range so that the metrics count what is really read) and writes the
//! block's next version. A sequential control program submits all iterations up front,
//! which is what makes immediate allocation hold every version's buffer at once and
//! deferred allocation only the live ones (paper 1 section 3.2, Figure 3).
//!
//! # Sizes
//!
//! At least one block of at least one element, at least one iteration. The options of
//! `locus run` / `locus sim` (see [`crate::size`]) map as:
//!
//! - `--size N`: `blocks × block_len` = N (`blocks` = `N / block_len`);
//! - `--block-len L`: `block_len` = L;
//! - `--blocks B`: `blocks` = B (with `--size N`: `block_len` = `N / B`; alone, the
//!   array keeps its length and `block_len` becomes `length / B`);
//! - `--iterations N`: `iterations`.
//!
//! `--param FIELD=N` sets any field of [`Params`] by its name.

use locus::{Data, Runtime};
use serde::{Deserialize, Serialize};

use crate::size::{kernel_params, Axis, KernelParams, Options};

/// Size of the problem.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Number of blocks.
    pub blocks: usize,
    /// Elements per block.
    pub block_len: usize,
    /// Iterations.
    pub iterations: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            blocks: 32,
            block_len: 16 * 1024,
            iterations: 64,
        }
    }
}

impl Params {
    /// Paper 1 Table 3: 2^28 elements in blocks of 2^16, 60 iterations.
    pub fn paper() -> Self {
        Params {
            blocks: 1 << 12,
            block_len: 1 << 16,
            iterations: 60,
        }
    }

    /// Paper 1 Table 3 for the SGI-192: as on the Opteron-64 (blocks of 2^16).
    pub fn paper_sgi() -> Self {
        Params::paper()
    }

    /// 8 blocks of 8 elements, 3 iterations: for tests.
    pub fn tiny() -> Self {
        Params {
            blocks: 8,
            block_len: 8,
            iterations: 3,
        }
    }

    /// Checks every constraint the kernel relies on: at least one block of at least one
    /// element, at least one iteration, at most [`crate::size::MAX_ELEMENTS`] elements.
    /// The message names the field and the option that sets it.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.positive("blocks", self.blocks)?;
        o.positive("block_len", self.block_len)?;
        o.positive("iterations", self.iterations)?;
        o.elements::<f64>(&[("blocks", self.blocks), ("block_len", self.block_len)])?;
        o.count("blocks", &[("blocks", self.blocks)])?;
        crate::size::finishes(self)
    }
}

kernel_params!(
    Options {
        name: "jacobi-1d",
        axes: &[Axis::Count("blocks", "block_len")],
        size: None,
        iterations: Some("iterations"),
    },
    bytes: |p| crate::size::bytes::<f64>(&[p.blocks, p.block_len])
);

fn initial(i: usize) -> f64 {
    ((i * 7919) % 1000) as f64 / 1000.0
}

/// One step of one block: `out[i] = (left + mid + right) / 3` with fixed boundaries.
/// `left` and `right` are the neighbours' halo elements, `None` at the array's ends.
pub fn step_block(cur: &[f64], left: Option<f64>, right: Option<f64>, out: &mut [f64]) {
    let n = cur.len();
    for i in 0..n {
        let l = if i == 0 {
            left.unwrap_or(cur[0])
        } else {
            cur[i - 1]
        };
        let r = if i + 1 == n {
            right.unwrap_or(cur[n - 1])
        } else {
            cur[i + 1]
        };
        out[i] = (l + cur[i] + r) / 3.0;
    }
}

/// The sequential reference: the whole array of `blocks × block_len` elements, swept
/// `iterations` times out of place, `a'[i] = (a[i - 1] + a[i] + a[i + 1]) / 3` summed
/// left to right, with `a[i]` itself in place of a neighbour outside the array.
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if its arrays cannot be allocated.
///
/// # Panics
///
/// If the parameters do not pass [`Params::validate`].
pub fn reference(p: &Params) -> Result<Vec<f64>, crate::Error> {
    if let Err(e) = p.validate() {
        panic!("{e}");
    }
    let n = p.blocks * p.block_len;
    let mut a: Vec<f64> =
        crate::alloc::collected("the jacobi-1d reference's array", n, (0..n).map(initial))?;
    let mut next = crate::alloc::filled("the jacobi-1d reference's second array", n, 0.0)?;
    for _ in 0..p.iterations {
        for i in 0..n {
            let left = if i > 0 { a[i - 1] } else { a[i] };
            let right = if i + 1 < n { a[i + 1] } else { a[i] };
            next[i] = (left + a[i] + right) / 3.0;
        }
        std::mem::swap(&mut a, &mut next);
    }
    Ok(a)
}

/// Outcome of one run.
#[derive(Debug)]
pub struct Outcome {
    /// Whether the result equals the reference bit for bit (same operations in the same
    /// order).
    pub verified: bool,
    /// The first element that differs from the reference, when one does.
    pub mismatch: Option<crate::Mismatch>,
    /// The run's report.
    pub report: locus::Report,
}

/// Builds, runs and verifies the stencil against [`reference()`], bit for bit.
pub fn run(rt: &Runtime, p: &Params) -> Result<Outcome, crate::Error> {
    run_against(rt, p, || reference(p))
}

/// [`run`], comparing the result with `want()` (the whole array).
pub(crate) fn run_against(
    rt: &Runtime,
    p: &Params,
    want: impl FnOnce() -> Result<Vec<f64>, crate::Error>,
) -> Result<Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    let cur: Vec<Data<f64>> = (0..p.blocks)
        .map(|b| {
            crate::initial(rt, format!("block{b}"), p.block_len, || {
                crate::alloc::collected(
                    "the initial values of a block",
                    p.block_len,
                    (0..p.block_len).map(|i| initial(b * p.block_len + i)),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let next: Vec<Data<f64>> = (0..p.blocks)
        .map(|b| rt.data::<f64>(format!("next{b}"), p.block_len))
        .collect();
    let n = p.block_len;
    let finished = rt.run(|s| -> Result<(), locus::Error> {
        for t in 0..p.iterations {
            // Double buffering by name only: every write is a new version anyway.
            let (src, dst) = if t % 2 == 0 {
                (&cur, &next)
            } else {
                (&next, &cur)
            };
            for b in 0..p.blocks {
                let left = (b > 0).then(|| src[b - 1].read_range(n - 1..n));
                let right = (b + 1 < p.blocks).then(|| src[b + 1].read_range(0..1));
                let halos: Vec<_> = left.into_iter().chain(right).collect();
                let (has_left, has_right) = (b > 0, b + 1 < p.blocks);
                s.spawn(
                    "jacobi",
                    (src[b].read(), halos, dst[b].write()),
                    move |_, (mid, halos, out)| {
                        let mut h = halos.iter();
                        let left = has_left.then(|| h.next().expect("left halo")[0]);
                        let right = has_right.then(|| h.next().expect("right halo")[0]);
                        step_block(mid, left, right, out);
                    },
                )?;
            }
        }
        Ok(())
    })?;
    let ((), report) = crate::finished(finished)?;
    if rt.skips_bodies() {
        return Ok(Outcome {
            verified: false,
            mismatch: None,
            report,
        });
    }
    let result = if p.iterations % 2 == 0 { &cur } else { &next };
    let want = want()?;
    let mut check = crate::verify::Check::new();
    for (b, d) in result.iter().enumerate() {
        check.block("array", &rt.fetch(d)?, &want, |i| b * n + i);
    }
    let mismatch = check.finish();
    Ok(Outcome {
        verified: mismatch.is_none(),
        mismatch,
        report,
    })
}
