//! `jacobi-2d` (`crates/locus-bench/src/jacobi_2d.rs`) fork-join: every iteration is one
//! parallel loop over the blocks, each task computing its block of the next array from
//! the previous one row by row (two arrays, swapped every iteration); the loop's end is
//! the barrier between iterations.
//!
//! Verification: bitwise equality with the sequential sweep.

use rayon::prelude::*;

use crate::stencil::{surroundings, sweep_row_from, sweep_whole, Grid};
use crate::Outcome;

/// Cuts `a` into its blocks: for each block (row-major by block), its rows as slices.
fn blocks_of<'a>(g: &Grid, a: &'a mut [f64]) -> Vec<Vec<&'a mut [f64]>> {
    let across = g.blocks_across();
    let mut blocks: Vec<Vec<&mut [f64]>> = (0..g.blocks_down() * across)
        .map(|_| Vec::with_capacity(g.block_rows))
        .collect();
    for (i, row) in a.chunks_mut(g.cols).enumerate() {
        for (bj, piece) in row.chunks_mut(g.block_cols).enumerate() {
            blocks[(i / g.block_rows) * across + bj].push(piece);
        }
    }
    blocks
}

/// Runs the kernel with the arguments after its name.
pub fn run(args: &[String]) -> Result<Outcome, String> {
    let g = Grid::parse(args)?;
    let mut a = g.initial();
    let mut b = vec![0.0; g.len()];
    let across = g.blocks_across();
    let ((), wall_s) = crate::timed(|| {
        for _ in 0..g.iterations {
            let src = &a;
            blocks_of(&g, &mut b)
                .into_par_iter()
                .enumerate()
                .for_each(|(block, rows)| {
                    let (bi, bj) = (block / across, block % across);
                    for (r, row) in rows.into_iter().enumerate() {
                        let (n, c, s, w0, e_last) =
                            surroundings(&g, src, bi * g.block_rows + r, bj * g.block_cols);
                        sweep_row_from(n, c, s, w0, e_last, row);
                    }
                });
            std::mem::swap(&mut a, &mut b);
        }
    });

    let mut want = g.initial();
    let mut next = vec![0.0; g.len()];
    for _ in 0..g.iterations {
        sweep_whole(&g, &mut want, Some(&mut next));
        std::mem::swap(&mut want, &mut next);
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
