//! `seidel-2d`: a 2-D five-point Gauss-Seidel stencil over blocks, with halos as separate outputs.
//!
//! The `rows × cols` array is cut into `block_rows × block_cols` blocks, each a datum.
//! Task `(t, I, J)` reads its block's previous version whole, the facing row of the
//! north and south neighbours (one-row ranges of their blocks) and the facing column
//! of the west and east neighbours (columns are strided, so every task also writes its
//! first and last column as two small separate outputs), and writes its block's next
//! version with its two edge columns (paper 1 Figure 4b). The update of a point is
//! `(n + c + s + w + e) / 5`, in place in row-major order; a neighbour outside the array is replaced by the point.
//!
//! Gauss-Seidel: the north and west neighbours (lower in block order) are read at the
//! current iteration, the others at the previous one; blocks are double-buffered by
//! handle, and submission in block order makes every read bind to the right version.
//! With [`Control::Parallel`] one creator per band of block rows and iteration submits the
//! band's tasks in block order; creator `(t, g)` follows creators `(t, g - 1)` and
//! `(t - 1, g + 1)` through band tokens (see [`crate::control`]), a wavefront of
//! creators.
//!
//! Verification: bitwise equality with the sequential sweep over the whole array (same
//! operands, same order).
//!
//! # Sizes
//!
//! Every extent is a positive multiple of its block extent, with at least one
//! iteration. The options of `locus run` / `locus sim` (see [`crate::size`]) map as:
//!
//! - `--size N`: `rows` = `cols` = N;
//! - `--block-len L`: `block_rows` = `block_cols` = L;
//! - `--blocks B`: B blocks along each axis (`block_rows` = `rows / B`, `block_cols` =
//!   `cols / B`);
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
    /// Rows of the array.
    pub rows: usize,
    /// Columns of the array.
    pub cols: usize,
    /// Rows of a block (divides `rows`).
    pub block_rows: usize,
    /// Columns of a block (divides `cols`).
    pub block_cols: usize,
    /// Iterations.
    pub iterations: usize,
    /// Who submits the tasks.
    pub control: Control,
}

impl Default for Params {
    /// 512 × 512 in 64 × 128 blocks (32 blocks), 20 iterations.
    fn default() -> Self {
        Params {
            rows: 512,
            cols: 512,
            block_rows: 64,
            block_cols: 128,
            iterations: 20,
            control: Control::Sequential,
        }
    }
}

impl Params {
    /// Paper 1 Table 3: 2^14 × 2^14 elements (2 GiB of `f64`), 60 iterations, blocks of
    /// 2^8 × 2^8 (Opteron-64; 2^7 × 2^9 on SGI-192).
    pub fn paper() -> Self {
        Params {
            rows: 1 << 14,
            cols: 1 << 14,
            block_rows: 1 << 8,
            block_cols: 1 << 8,
            iterations: 60,
            control: Control::Sequential,
        }
    }

    /// Paper 1 Table 3 for the SGI-192: blocks of 2^7 × 2^9.
    pub fn paper_sgi() -> Self {
        Params {
            block_rows: 1 << 7,
            block_cols: 1 << 9,
            ..Params::paper()
        }
    }

    /// 16 × 16 in 4 × 8 blocks, 3 iterations: for tests.
    pub fn tiny() -> Self {
        Params {
            rows: 16,
            cols: 16,
            block_rows: 4,
            block_cols: 8,
            iterations: 3,
            control: Control::Sequential,
        }
    }

    /// Checks every constraint the kernel relies on: each extent a positive multiple of
    /// its block extent, at least one iteration, at most [`crate::size::MAX_ELEMENTS`]
    /// elements. The message names the field and the option that sets it.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.divides(("rows", self.rows), ("block_rows", self.block_rows))?;
        o.divides(("cols", self.cols), ("block_cols", self.block_cols))?;
        o.positive("iterations", self.iterations)?;
        o.elements::<f64>(&[("rows", self.rows), ("cols", self.cols)])?;
        o.blocks(&[
            ("rows", self.rows, "block_rows", self.block_rows),
            ("cols", self.cols, "block_cols", self.block_cols),
        ])?;
        crate::size::finishes(self)
    }

    /// The stencil problem of these parameters.
    pub(crate) fn grid(&self) -> Grid {
        Grid {
            name: "seidel-2d",
            sweep: Sweep::Seidel,
            dims: 2,
            n: [1, self.rows, self.cols],
            b: [1, self.block_rows, self.block_cols],
            iterations: self.iterations,
            control: self.control,
        }
    }
}

kernel_params!(
    Options {
        name: "seidel-2d",
        axes: &[
            Axis::Extent("rows", "block_rows"),
            Axis::Extent("cols", "block_cols"),
        ],
        size: None,
        iterations: Some("iterations"),
    },
    bytes: |p| crate::size::bytes::<f64>(&[p.rows, p.cols])
);

/// The sequential reference: the whole `rows × cols` array, row-major, swept
/// `iterations` times in place in row-major order: every point becomes
/// `(n + c + s + w + e) / 5` summed in that order, where the north and west neighbours
/// are already this iteration's and the point itself stands in for a neighbour outside
/// the array.
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
    let (h, w) = (p.rows, p.cols);
    let mut a: Vec<f64> = crate::alloc::collected(
        "the seidel-2d reference's array",
        h * w,
        (0..h * w).map(stencil::initial),
    )?;
    for _ in 0..p.iterations {
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                let c = a[i];
                let north = if y > 0 { a[i - w] } else { c };
                let south = if y + 1 < h { a[i + w] } else { c };
                let west = if x > 0 { a[i - 1] } else { c };
                let east = if x + 1 < w { a[i + 1] } else { c };
                a[i] = (north + c + south + west + east) / 5.0;
            }
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

/// [`run`] as a recorded graph (`--replay`): sequential control only.
pub fn run_replay(rt: &Runtime, p: &Params) -> Result<crate::Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    crate::replay::sequential_only(p.control)?;
    stencil::run_replay(rt, &p.grid(), || reference(p))
}
