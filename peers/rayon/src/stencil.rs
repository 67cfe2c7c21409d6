//! What `jacobi-2d` and `seidel-2d` share: Locus's 2-D five-point stencil
//! (`crates/locus-bench/src/stencil.rs`) on one row-major `rows × cols` array of `f64`.
//!
//! A point becomes `(n + c + s + w + e) / 5`, summed in that order as Locus does, and a
//! neighbour outside the array is replaced by the point itself; so the results equal
//! Locus's and the sequential references bit for bit.
//!
//! The tasks sweep a block row by row as Locus's `step_block` does: per row the north
//! and south rows (the row itself at the array's edge) and the west value of the first
//! point and the east value of the last are chosen once, then the first point, the
//! points between without a branch, and the last point ([`sweep_row_from`] for Jacobi,
//! [`sweep_row_in_place`] for Gauss-Seidel). The sequential reference, [`sweep_whole`],
//! computes every point from the definition ([`point`]), so it checks them.

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

/// Row `i`'s points `j0..j0 + block_cols` of `a` with what surrounds them, as
/// [`sweep_row_from`] takes them: the rows above and below (the row itself at the array's
/// edge), the west neighbour of the first point and the east neighbour of the last (the
/// point itself at the edge).
pub fn surroundings<'a>(
    g: &Grid,
    a: &'a [f64],
    i: usize,
    j0: usize,
) -> (&'a [f64], &'a [f64], &'a [f64], f64, f64) {
    let (cols, bc) = (g.cols, g.block_cols);
    let p = i * cols + j0;
    let c = &a[p..p + bc];
    let n = if i > 0 {
        &a[p - cols..p - cols + bc]
    } else {
        c
    };
    let s = if i + 1 < g.rows {
        &a[p + cols..p + cols + bc]
    } else {
        c
    };
    let w0 = if j0 > 0 { a[p - 1] } else { c[0] };
    let e_last = if j0 + bc < cols { a[p + bc] } else { c[bc - 1] };
    (n, c, s, w0, e_last)
}

/// One row of a Jacobi sweep, from `c` into `d` (as long as `c`): `n` and `s` are the rows
/// above and below (`c` itself at the array's edge), `w0` the west neighbour of the first
/// point and `e_last` the east neighbour of the last. Compiled for AVX2 when the CPU has
/// it, as Locus's row is (`crates/locus-bench/src/stencil.rs`, `Rows::jacobi`), with the
/// same results to the bit.
#[inline]
pub fn sweep_row_from(n: &[f64], c: &[f64], s: &[f64], w0: f64, e_last: f64, d: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { sweep_row_avx2(n, c, s, w0, e_last, d) };
    }
    sweep_row_any(n, c, s, w0, e_last, d);
}

/// [`sweep_row_from`] compiled for AVX2.
///
/// # Safety
///
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sweep_row_avx2(n: &[f64], c: &[f64], s: &[f64], w0: f64, e_last: f64, d: &mut [f64]) {
    sweep_row_any(n, c, s, w0, e_last, d);
}

/// [`sweep_row_from`] for the instructions its caller was compiled for.
#[inline(always)]
fn sweep_row_any(n: &[f64], c: &[f64], s: &[f64], w0: f64, e_last: f64, d: &mut [f64]) {
    let last = d.len() - 1;
    let (n, c, s) = (&n[..=last], &c[..=last], &s[..=last]);
    if last == 0 {
        d[0] = (n[0] + c[0] + s[0] + w0 + e_last) / 5.0;
        return;
    }
    d[0] = (n[0] + c[0] + s[0] + w0 + c[1]) / 5.0;
    for x in 1..last {
        d[x] = (n[x] + c[x] + s[x] + c[x - 1] + c[x + 1]) / 5.0;
    }
    d[last] = (n[last] + c[last] + s[last] + c[last - 1] + e_last) / 5.0;
}

/// One row of `len` points of a Gauss-Seidel sweep, in place at `c`: `n` is the row above
/// as this sweep left it and `s` the row below as the previous one did (each `c` itself
/// at the array's edge, where `n`'s and `s`'s point `x` is read before `c`'s is
/// written), `w0` the west neighbour of the first point and `e_last` the east neighbour
/// of the last; a point's west neighbour is the point just updated, carried in `v`.
///
/// # Safety
///
/// `n`, `c` and `s` each point to `len` (at least 1) initialised values; while the call
/// runs no other thread accesses `c`'s, nor writes `n`'s and `s`'s.
#[inline]
pub unsafe fn sweep_row_in_place(
    n: *const f64,
    c: *mut f64,
    s: *const f64,
    w0: f64,
    e_last: f64,
    len: usize,
) {
    // SAFETY: `x < len`, so every read is of one of the `len` values of `n`, `c` or `s`,
    // which no other thread writes (the caller's guarantee).
    let at = |p: *const f64, x: usize| unsafe { p.add(x).read() };
    let c_read = c.cast_const();
    let last = len - 1;
    let set = |x: usize, v: f64| {
        // SAFETY: `x < len`, and no other thread accesses `c`'s values.
        unsafe { c.add(x).write(v) }
    };
    if last == 0 {
        set(0, (at(n, 0) + at(c_read, 0) + at(s, 0) + w0 + e_last) / 5.0);
        return;
    }
    let mut v = (at(n, 0) + at(c_read, 0) + at(s, 0) + w0 + at(c_read, 1)) / 5.0;
    set(0, v);
    for x in 1..last {
        v = (at(n, x) + at(c_read, x) + at(s, x) + v + at(c_read, x + 1)) / 5.0;
        set(x, v);
    }
    set(
        last,
        (at(n, last) + at(c_read, last) + at(s, last) + v + e_last) / 5.0,
    );
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
