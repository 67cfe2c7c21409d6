//! `jacobi-3d`: a 3-D seven-point Jacobi stencil over blocks, with halos as separate outputs.
//!
//! The `depth × rows × cols` array is cut into blocks, each a datum. Task `(t, K, I, J)`
//! reads its block's previous version whole, the facing plane of the upper and lower
//! neighbours (contiguous: one-plane ranges of their blocks) and the facing faces of
//! the four neighbours across rows and columns (strided, so every task also writes
//! those four faces of its block as small separate outputs), and writes its block's
//! next version with its four faces (paper 1 Figure 4c). The update of a point is
//! `(u + c + d + n + s + w + e) / 7`; a neighbour outside the array is replaced by the
//! point.
//!
//! Double buffering is by handle (two sets of blocks); every write is a new version.
//! With [`Control::Parallel`] one creator per band of block planes and iteration submits the
//! band's tasks; creators are ordered by band tokens as the tasks are by data (see
//! [`crate::control`]): creator `(t, g)` follows creators `(t - 1, g - 1..=g + 1)`.
//!
//! Verification: bitwise equality with the sequential sweep over the whole array (same
//! operands, same order).
//!
//! # Sizes
//!
//! Every extent is a positive multiple of its block extent, with at least one
//! iteration. The options of `locus run` / `locus sim` (see [`crate::size`]) map as:
//!
//! - `--size N`: `depth` = `rows` = `cols` = N;
//! - `--block-len L`: `block_depth` = `block_rows` = `block_cols` = L;
//! - `--blocks B`: B blocks along each axis (block extent = extent / B);
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
    /// Planes of the array (slowest axis).
    pub depth: usize,
    /// Rows of each plane.
    pub rows: usize,
    /// Columns of each row (fastest axis).
    pub cols: usize,
    /// Planes of a block (divides `depth`).
    pub block_depth: usize,
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
    /// 64 × 64 × 64 in 16 × 16 × 32 blocks (32 blocks), 10 iterations.
    fn default() -> Self {
        Params {
            depth: 64,
            rows: 64,
            cols: 64,
            block_depth: 16,
            block_rows: 16,
            block_cols: 32,
            iterations: 10,
            control: Control::Sequential,
        }
    }
}

impl Params {
    /// Paper 1 Table 3: 2^10 × 2^9 × 2^9 elements (2 GiB of `f64`), 60 iterations,
    /// blocks of 2^5 × 2^6 × 2^5 (Opteron-64; 2^4 × 2^6 × 2^6 on SGI-192).
    pub fn paper() -> Self {
        Params {
            depth: 1 << 10,
            rows: 1 << 9,
            cols: 1 << 9,
            block_depth: 1 << 5,
            block_rows: 1 << 6,
            block_cols: 1 << 5,
            iterations: 60,
            control: Control::Sequential,
        }
    }

    /// Paper 1 Table 3 for the SGI-192: blocks of 2^4 × 2^6 × 2^6.
    pub fn paper_sgi() -> Self {
        Params {
            block_depth: 1 << 4,
            block_rows: 1 << 6,
            block_cols: 1 << 6,
            ..Params::paper()
        }
    }

    /// 8 × 8 × 8 in 4 × 4 × 4 blocks, 2 iterations: for tests.
    pub fn tiny() -> Self {
        Params {
            depth: 8,
            rows: 8,
            cols: 8,
            block_depth: 4,
            block_rows: 4,
            block_cols: 4,
            iterations: 2,
            control: Control::Sequential,
        }
    }

    /// Checks every constraint the kernel relies on: each extent a positive multiple of
    /// its block extent, at least one iteration, at most [`crate::size::MAX_ELEMENTS`]
    /// elements. The message names the field and the option that sets it.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.divides(("depth", self.depth), ("block_depth", self.block_depth))?;
        o.divides(("rows", self.rows), ("block_rows", self.block_rows))?;
        o.divides(("cols", self.cols), ("block_cols", self.block_cols))?;
        o.positive("iterations", self.iterations)?;
        o.elements::<f64>(&[
            ("depth", self.depth),
            ("rows", self.rows),
            ("cols", self.cols),
        ])?;
        o.blocks(&[
            ("depth", self.depth, "block_depth", self.block_depth),
            ("rows", self.rows, "block_rows", self.block_rows),
            ("cols", self.cols, "block_cols", self.block_cols),
        ])?;
        crate::size::finishes(self)
    }

    /// The stencil problem of these parameters.
    pub(crate) fn grid(&self) -> Grid {
        Grid {
            name: "jacobi-3d",
            sweep: Sweep::Jacobi,
            dims: 3,
            n: [self.depth, self.rows, self.cols],
            b: [self.block_depth, self.block_rows, self.block_cols],
            iterations: self.iterations,
            control: self.control,
        }
    }
}

kernel_params!(
    Options {
        name: "jacobi-3d",
        axes: &[
            Axis::Extent("depth", "block_depth"),
            Axis::Extent("rows", "block_rows"),
            Axis::Extent("cols", "block_cols"),
        ],
        size: None,
        iterations: Some("iterations"),
    },
    bytes: |p| crate::size::bytes::<f64>(&[p.depth, p.rows, p.cols])
);

/// The sequential reference: the whole `depth × rows × cols` array, row-major, swept
/// `iterations` times out of place, every point
/// `(up + c + down + north + south + west + east) / 7` summed in that order (axes
/// slowest first, lower neighbour before upper) from the previous iteration's values,
/// the point itself in place of a neighbour outside the array.
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
    let (d, h, w) = (p.depth, p.rows, p.cols);
    let plane = h * w;
    let mut a: Vec<f64> = crate::alloc::collected(
        "the jacobi-3d reference's array",
        d * plane,
        (0..d * plane).map(stencil::initial),
    )?;
    let mut next = crate::alloc::filled("the jacobi-3d reference's second array", d * plane, 0.0)?;
    for _ in 0..p.iterations {
        for z in 0..d {
            for y in 0..h {
                for x in 0..w {
                    let i = z * plane + y * w + x;
                    let c = a[i];
                    let up = if z > 0 { a[i - plane] } else { c };
                    let down = if z + 1 < d { a[i + plane] } else { c };
                    let north = if y > 0 { a[i - w] } else { c };
                    let south = if y + 1 < h { a[i + w] } else { c };
                    let west = if x > 0 { a[i - 1] } else { c };
                    let east = if x + 1 < w { a[i + 1] } else { c };
                    next[i] = (up + c + down + north + south + west + east) / 7.0;
                }
            }
        }
        std::mem::swap(&mut a, &mut next);
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
