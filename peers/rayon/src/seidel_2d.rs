//! `seidel-2d` (`crates/locus-bench/src/seidel_2d.rs`) fork-join, as a wavefront: the
//! update of block `(bi, bj)` in iteration `t` belongs to wavefront `bi + bj + 2t`, and
//! the wavefronts run one after the other, each as one parallel loop over its blocks
//! (blocks of several iterations in one wavefront, so iterations overlap as in the
//! dataflow versions). A block's north and west neighbours of the same iteration and its
//! south and east neighbours of the previous one are on the wavefront just before, and
//! so is the block itself in the previous iteration: every update sees exactly what it
//! sees in the sequential in-place sweep, bit for bit.
//!
//! Two updates of one wavefront are never of the same block or of neighbouring blocks
//! (their `bi + bj` differ by an even number), so the tasks of a wavefront touch disjoint
//! points: that is what makes the shared in-place array below sound.

use rayon::prelude::*;

use crate::stencil::{sweep_row_in_place, sweep_whole, Grid};
use crate::Outcome;

/// The array, updated in place by the tasks of a wavefront.
#[derive(Clone, Copy)]
struct Shared(*mut f64);

// SAFETY: the pointer is only dereferenced by `sweep_block`, whose callers guarantee that
// concurrent calls touch disjoint points (see the module doc).
unsafe impl Send for Shared {}
// SAFETY: as for `Send`.
unsafe impl Sync for Shared {}

/// Updates block `(bi, bj)` of `a` in place, row by row: per row its north and south
/// rows (the row itself at the array's edge) and its end values are chosen once, then
/// [`sweep_row_in_place`] updates it.
///
/// # Safety
///
/// `a` points to `g.len()` initialised values that outlive the call, and while it runs
/// no other thread accesses the block, nor writes its four neighbouring blocks.
unsafe fn sweep_block(g: &Grid, a: Shared, bi: usize, bj: usize) {
    let (cols, bc, j0) = (g.cols, g.block_cols, bj * g.block_cols);
    let at = |q: usize| {
        // SAFETY: every index below is of a point of the array (`q < g.len()`).
        unsafe { a.0.add(q) }
    };
    for i in bi * g.block_rows..(bi + 1) * g.block_rows {
        let p = i * cols + j0;
        // The rows above and below (the row itself at the array's edge) and the points
        // beside the row's ends (the end points themselves at the edge).
        let north = if i > 0 { p - cols } else { p };
        let south = if i + 1 < g.rows { p + cols } else { p };
        let west = if j0 > 0 { p - 1 } else { p };
        let east = if j0 + bc < cols { p + bc } else { p + bc - 1 };
        // SAFETY: both points are in this block or a neighbouring one, which no other
        // thread writes (the caller's guarantee).
        let (w0, e_last) = unsafe { (at(west).read(), at(east).read()) };
        // SAFETY: the rows at `north`, `p` and `south` hold `bc` values each, in this
        // block or a neighbouring one: no other thread accesses this block nor writes
        // the others (the caller's guarantee).
        unsafe { sweep_row_in_place(at(north), at(p), at(south), w0, e_last, bc) };
    }
}

/// Runs the kernel with the arguments after its name.
pub fn run(args: &[String]) -> Result<Outcome, String> {
    let g = Grid::parse(args)?;
    let mut a = g.initial();
    let (down, across) = (g.blocks_down(), g.blocks_across());
    let wavefronts = if g.iterations == 0 {
        0
    } else {
        down + across - 1 + 2 * (g.iterations - 1)
    };
    let shared = Shared(a.as_mut_ptr());
    let ((), wall_s) = crate::timed(|| {
        for front in 0..wavefronts {
            // The updates (t, bi, bj) with bi + bj + 2t == front.
            let updates: Vec<(usize, usize)> = (0..g.iterations)
                .filter(|&t| 2 * t <= front)
                .flat_map(|t| {
                    let diagonal = front - 2 * t;
                    (0..down)
                        .filter(move |&bi| bi <= diagonal && diagonal - bi < across)
                        .map(move |bi| (bi, diagonal - bi))
                })
                .collect();
            updates.into_par_iter().for_each(|(bi, bj)| {
                // SAFETY: `a` lives until after the loop and is not otherwise used meanwhile;
                // the updates of one wavefront touch disjoint blocks and neighbourhoods
                // (module doc).
                unsafe { sweep_block(&g, shared, bi, bj) }
            });
        }
    });

    let mut want = g.initial();
    for _ in 0..g.iterations {
        sweep_whole(&g, &mut want, None);
    }
    let verified = want
        .iter()
        .map(|x| x.to_bits())
        .eq(a.iter().map(|x| x.to_bits()));
    Ok(Outcome {
        tasks: g.tasks(),
        wall_s,
        verified,
        params: g.params(),
    })
}
