//! What `jacobi-2d` and `seidel-2d` share: Locus's 2-D five-point stencil
//! (`crates/locus-bench/src/stencil.rs`) on one row-major `rows × cols` array of `f64`.
//!
//! A point becomes `(n + c + s + w + e) / 5`, summed in that order as Locus does, and a
//! neighbour outside the array is replaced by the point itself; so the results equal
//! Locus's and the sequential references bit for bit.

/// The array, its blocks and the iterations.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
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
}

impl Grid {
    /// Reads `ROWS COLS BLOCK_ROWS BLOCK_COLS ITERATIONS` (all or none: Locus's small
    /// size, 512 × 512 in 64 × 128 blocks, 20 iterations).
    pub fn parse(args: &[String]) -> Result<Grid, String> {
        let [rows, cols, block_rows, block_cols, iterations] =
            crate::numbers(args, [512, 512, 64, 128, 20])?;
        let g = Grid {
            rows,
            cols,
            block_rows,
            block_cols,
            iterations,
        };
        if rows == 0 || cols == 0 || block_rows == 0 || block_cols == 0 {
            return Err("sizes must be positive".into());
        }
        if rows % block_rows != 0 || cols % block_cols != 0 {
            return Err("the blocks must divide the array".into());
        }
        Ok(g)
    }

    /// Blocks down the array.
    pub fn blocks_down(&self) -> usize {
        self.rows / self.block_rows
    }

    /// Blocks across the array.
    pub fn blocks_across(&self) -> usize {
        self.cols / self.block_cols
    }

    /// Points of the array.
    pub fn len(&self) -> usize {
        self.rows * self.cols
    }

    /// Tasks of a run: one per block and iteration.
    pub fn tasks(&self) -> usize {
        self.blocks_down() * self.blocks_across() * self.iterations
    }

    /// The sizes as a JSON object.
    pub fn params(&self) -> String {
        format!(
            "{{\"rows\": {}, \"cols\": {}, \"block_rows\": {}, \"block_cols\": {}, \"iterations\": {}}}",
            self.rows, self.cols, self.block_rows, self.block_cols, self.iterations
        )
    }

    /// Locus's initial array.
    pub fn initial(&self) -> Vec<f64> {
        (0..self.len())
            .map(|i| ((i * 7919) % 1000) as f64 / 1000.0)
            .collect()
    }
}

/// The new value of the point at `(i, j)` of the array `get` reads.
#[inline]
pub fn point(g: &Grid, i: usize, j: usize, get: impl Fn(usize) -> f64) -> f64 {
    let p = i * g.cols + j;
    let c = get(p);
    let n = if i > 0 { get(p - g.cols) } else { c };
    let s = if i + 1 < g.rows { get(p + g.cols) } else { c };
    let w = if j > 0 { get(p - 1) } else { c };
    let e = if j + 1 < g.cols { get(p + 1) } else { c };
    (n + c + s + w + e) / 5.0
}

/// The sequential reference: one sweep of the whole array, block by block, row-major
/// inside a block; from `src` into `dst`, or in place when `dst` is `None`.
pub fn sweep_whole(g: &Grid, src: &mut [f64], mut dst: Option<&mut [f64]>) {
    for bi in 0..g.blocks_down() {
        for bj in 0..g.blocks_across() {
            for i in bi * g.block_rows..(bi + 1) * g.block_rows {
                for j in bj * g.block_cols..(bj + 1) * g.block_cols {
                    let v = point(g, i, j, |p| src[p]);
                    match dst.as_deref_mut() {
                        Some(d) => d[i * g.cols + j] = v,
                        None => src[i * g.cols + j] = v,
                    }
                }
            }
        }
    }
}
