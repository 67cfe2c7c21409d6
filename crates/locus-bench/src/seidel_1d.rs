//! `seidel-1d`: a 1-D three-point Gauss-Seidel stencil over blocks, the chain-of-stencils
//! shape of paper 1 Figure 4a with values of the current iteration.
//!
//! The array is cut into blocks, each a datum. Task `(t, b)` reads its block's previous
//! version whole, the last element of its left neighbour *at the current iteration* and
//! the first element of its right neighbour at the previous one (one-element ranges, so
//! that the metrics count what is really read), and writes the block's next version,
//! updating `a[i] = (a[i - 1] + a[i] + a[i + 1]) / 3` in place from left to right; a
//! neighbour outside the array is replaced by the point. Blocks are double-buffered by
//! handle; submission in block order makes every read bind to the right version.
//!
//! With [`Control::Parallel`] the blocks are grouped into at most
//! 16 bands; one creator per band and iteration submits the band's tasks, and creator
//! `(t, g)` follows creators `(t, g - 1)` and `(t - 1, g + 1)` through band tokens (see
//! [`crate::control`]).
//!
//! Verification: bitwise equality with the sequential in-place sweep over the whole
//! array (same operands, same order).
//!
//! # Sizes
//!
//! Every extent is a positive multiple of its block extent, with at least one
//! iteration. The options of `locus run` / `locus sim` (see [`crate::size`]) map as:
//!
//! - `--size N`: `len` = N;
//! - `--block-len L`: `block_len` = L;
//! - `--blocks B`: `block_len` = `len / B`;
//! - `--iterations N`: `iterations`.
//!
//! `--param FIELD=N` sets any field of [`Params`] by its name.

use locus::Runtime;
use serde::{Deserialize, Serialize};

use crate::control::Control;
use crate::size::{kernel_params, Axis, KernelParams, Options};
use crate::stencil::{self, Grid, Sweep};

/// Size of the problem and control program.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Elements of the array.
    pub len: usize,
    /// Elements of a block (divides `len`).
    pub block_len: usize,
    /// Iterations.
    pub iterations: usize,
    /// Who submits the tasks.
    pub control: Control,
}

impl Default for Params {
    /// 2^18 elements in 32 blocks of 2^13, 30 iterations.
    fn default() -> Self {
        Params {
            len: 1 << 18,
            block_len: 1 << 13,
            iterations: 30,
            control: Control::Sequential,
        }
    }
}

impl Params {
    /// Paper 1 Table 3: 2^28 elements (2 GiB of `f64`) in blocks of 2^16 (both machines),
    /// 60 iterations.
    pub fn paper() -> Self {
        Params {
            len: 1 << 28,
            block_len: 1 << 16,
            iterations: 60,
            control: Control::Sequential,
        }
    }

    /// Paper 1 Table 3 for the SGI-192: as on the Opteron-64 (blocks of 2^16).
    pub fn paper_sgi() -> Self {
        Params::paper()
    }

    /// 64 elements in 8 blocks, 3 iterations: for tests.
    pub fn tiny() -> Self {
        Params {
            len: 64,
            block_len: 8,
            iterations: 3,
            control: Control::Sequential,
        }
    }

    /// Checks every constraint the kernel relies on: each extent a positive multiple of
    /// its block extent, at least one iteration, at most [`crate::size::MAX_ELEMENTS`]
    /// elements. The message names the field and the option that sets it.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.divides(("len", self.len), ("block_len", self.block_len))?;
        o.positive("iterations", self.iterations)?;
        o.elements::<f64>(&[("len", self.len)])?;
        o.blocks(&[("len", self.len, "block_len", self.block_len)])?;
        crate::size::finishes(self)
    }

    /// The stencil problem of these parameters.
    pub(crate) fn grid(&self) -> Grid {
        Grid {
            name: "seidel-1d",
            sweep: Sweep::Seidel,
            dims: 1,
            n: [1, 1, self.len],
            b: [1, 1, self.block_len],
            iterations: self.iterations,
            control: self.control,
        }
    }
}

kernel_params!(
    Options {
        name: "seidel-1d",
        axes: &[Axis::Extent("len", "block_len")],
        size: None,
        iterations: Some("iterations"),
    },
    bytes: |p| crate::size::bytes::<f64>(&[p.len])
);

/// The sequential reference: the whole array swept `iterations` times in place from
/// left to right, `a[i] = (a[i - 1] + a[i] + a[i + 1]) / 3` summed in that order (the
/// left neighbour already this iteration's), the point itself in place of a neighbour
/// outside the array.
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
    let n = p.len;
    let mut a: Vec<f64> = crate::alloc::collected(
        "the seidel-1d reference's array",
        n,
        (0..n).map(stencil::initial),
    )?;
    for _ in 0..p.iterations {
        for i in 0..n {
            let c = a[i];
            let left = if i > 0 { a[i - 1] } else { c };
            let right = if i + 1 < n { a[i + 1] } else { c };
            a[i] = (left + c + right) / 3.0;
        }
    }
    Ok(a)
}

/// Builds, runs and verifies the stencil; `verified` means bitwise equality with
/// [`reference()`].
pub fn run(rt: &Runtime, p: &Params) -> Result<crate::Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    stencil::run(rt, &p.grid(), || reference(p))
}
