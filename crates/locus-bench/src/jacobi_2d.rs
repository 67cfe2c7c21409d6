//! `jacobi-2d`: a 2-D five-point Jacobi stencil over blocks, with halos as separate outputs.
//!
//! The `rows × cols` array is cut into `block_rows × block_cols` blocks, each a datum.
//! Task `(t, I, J)` reads its block's previous version whole, the facing row of the
//! north and south neighbours (one-row ranges of their blocks) and the facing column
//! of the west and east neighbours (columns are strided, so every task also writes its
//! first and last column as two small separate outputs), and writes its block's next
//! version with its two edge columns (paper 1 Figure 4b). The update of a point is
//! `(n + c + s + w + e) / 5`; a neighbour outside the array is replaced by the point.
//!
//! Double buffering is by handle (two sets of blocks); every write is a new version.
//! With [`Control::Parallel`] one creator per band of block rows and iteration submits the
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
//! - `--size N`: `rows` = `cols` = N;
//! - `--block-len L`: `block_rows` = `block_cols` = L;
//! - `--blocks B`: B blocks along each axis (`block_rows` = `rows / B`, `block_cols` =
//!   `cols / B`);
//! - `--iterations N`: `iterations`.
//!
//! `--param FIELD=N` sets any field of [`Params`] by its name.

use locus::Runtime;
use serde::{Deserialize, Serialize};

use crate::affinity::AffinityMode;
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
    /// Paper 3's KASTORS program (`--affinity MODE`): initialisation tasks write the
    /// blocks, and the initialisation and block tasks carry the mode's hints towards
    /// the block's owner. `None`: the initial blocks are given (paper 1's program).
    #[serde(default)]
    pub affinity: Option<AffinityMode>,
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
            affinity: None,
        }
    }
}

impl Params {
    /// Paper 1 Table 3: 2^14 × 2^14 elements (2 GiB of `f64`), 60 iterations, blocks of
    /// 2^10 × 2^6 (Opteron-64; 2^8 × 2^8 on SGI-192).
    pub fn paper() -> Self {
        Params {
            rows: 1 << 14,
            cols: 1 << 14,
            block_rows: 1 << 10,
            block_cols: 1 << 6,
            iterations: 60,
            control: Control::Sequential,
            affinity: None,
        }
    }

    /// Paper 1 Table 3 for the SGI-192: blocks of 2^8 × 2^8.
    pub fn paper_sgi() -> Self {
        Params {
            block_rows: 1 << 8,
            block_cols: 1 << 8,
            ..Params::paper()
        }
    }

    /// Paper 3 section 4.3's KASTORS Jacobi: 49152 × 49152 in blocks of 1024 × 1024
    /// (48 × 48 blocks), with `affinity`; 10 iterations.
    pub fn kastors(affinity: AffinityMode) -> Self {
        Params {
            rows: 49152,
            cols: 49152,
            block_rows: 1024,
            block_cols: 1024,
            iterations: 10,
            control: Control::Sequential,
            affinity: Some(affinity),
        }
    }

    /// Tasks the program describes, creators excluded: one per block per iteration,
    /// and one initialisation per block with `affinity`.
    pub fn tasks(&self) -> u64 {
        let g = self.grid();
        let init = if self.affinity.is_some() {
            g.tasks() / self.iterations.max(1) as u64
        } else {
            0
        };
        g.tasks() + init
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
            affinity: None,
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
            name: "jacobi-2d",
            sweep: Sweep::Jacobi,
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
        name: "jacobi-2d",
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
/// `iterations` times out of place, every point `(n + c + s + w + e) / 5` summed in that
/// order from the previous iteration's values, the point itself in place of a
/// neighbour outside the array.
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
        "the jacobi-2d reference's array",
        h * w,
        (0..h * w).map(stencil::initial),
    )?;
    let mut next = crate::alloc::filled("the jacobi-2d reference's second array", h * w, 0.0)?;
    for _ in 0..p.iterations {
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                let c = a[i];
                let north = if y > 0 { a[i - w] } else { c };
                let south = if y + 1 < h { a[i + w] } else { c };
                let west = if x > 0 { a[i - 1] } else { c };
                let east = if x + 1 < w { a[i + 1] } else { c };
                next[i] = (north + c + south + west + east) / 5.0;
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
    stencil::run_placed(rt, &p.grid(), p.affinity, || reference(p))
}

/// [`run`] as a recorded graph (`--replay`): sequential control only.
pub fn run_replay(rt: &Runtime, p: &Params) -> Result<crate::Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    crate::replay::sequential_only(p.control)?;
    if p.affinity.is_some() {
        return Err(crate::Error::Params(
            "--replay: affinity hints are not recorded; run without --affinity".into(),
        ));
    }
    stencil::run_replay(rt, &p.grid(), || reference(p))
}
