//! `blur-roberts`: a 3 × 3 Gaussian blur followed by a Roberts cross edge detector over
//! an `f64` image cut into blocks (paper 1 Figure 4e): unbalanced dependences, short
//! dependence paths.
//!
//! - Blur task `(I, J)` reads its image block whole and its Moore halo: the facing row of
//!   the north and south neighbours (one-row ranges), the facing column of the west and
//!   east neighbours (columns are strided, so each image block comes with its first and
//!   last column as separate data, as if its producer had written them as outputs) and
//!   one corner element of each diagonal neighbour (one-element ranges). It writes the
//!   blurred block and, as a separate output, the blurred block's first column.
//! - Roberts task `(I, J)` reads its blurred block, the first row of the south
//!   neighbour, the first column of the east neighbour and the first element of the
//!   south-east neighbour, and writes the output block.
//!
//! Blur: `(nw + 2n + ne + 2w + 4c + 2e + sw + 2s + se) / 16`; Roberts:
//! `|b(y, x) - b(y+1, x+1)| + |b(y+1, x) - b(y, x+1)|`. Coordinates outside the image
//! are clamped to its edge.
//!
//! With [`Control::Parallel`] one creator per band of block rows (at most 16) submits
//! the band's blur tasks and another its Roberts tasks; a Roberts creator follows the
//! blur creators of its band and the next one (tokens, see [`crate::control`]). Blur
//! creators read only the initial image, produced before the run.
//!
//! Verification: bitwise equality with both filters applied sequentially to the whole
//! image (same operands, same order).
//!
//! # Sizes
//!
//! `rows` and `cols` are positive multiples of `block_rows` and `block_cols`, and the
//! image has at most 2^32 pixels (the initial values hash the pixel index in 64 bits).
//! There are no iterations. The options of `locus run` / `locus sim` (see
//! [`crate::size`]) map as:
//!
//! - `--size N`: `rows` = `cols` = N;
//! - `--block-len L`: `block_rows` = `block_cols` = L;
//! - `--blocks B`: B blocks along each axis (`block_rows` = `rows / B`, `block_cols` =
//!   `cols / B`);
//! - `--iterations`: refused.
//!
//! `--param FIELD=N` sets any field of [`Params`] by its name.

use std::sync::Arc;

use locus::{Data, Read, Runtime, Scope};
use serde::{Deserialize, Serialize};

use crate::control::{opt, spawn_creator, split, BandTokens, Control, MAX_CREATORS};
use crate::size::{kernel_params, Axis, KernelParams, Options};

/// Size of the problem and control program.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Rows of the image.
    pub rows: usize,
    /// Columns of the image.
    pub cols: usize,
    /// Rows of a block (divides `rows`).
    pub block_rows: usize,
    /// Columns of a block (divides `cols`).
    pub block_cols: usize,
    /// Who submits the tasks.
    pub control: Control,
}

impl Default for Params {
    /// 2048 × 2048 pixels in 512 × 64 blocks (128 blocks).
    fn default() -> Self {
        Params {
            rows: 2048,
            cols: 2048,
            block_rows: 512,
            block_cols: 64,
            control: Control::Sequential,
        }
    }
}

impl Params {
    /// Paper 1 Table 3 (Opteron-64): 2^15 × 2^15 pixels (8 GiB of `f64`) in blocks of
    /// 2^9 × 2^6. SGI-192 used 2^16 × 2^16 in blocks of 2^10 × 2^6.
    pub fn paper() -> Self {
        Params {
            rows: 1 << 15,
            cols: 1 << 15,
            block_rows: 1 << 9,
            block_cols: 1 << 6,
            control: Control::Sequential,
        }
    }

    /// Paper 1 Table 3 for the SGI-192: 2^16 × 2^16 pixels (32 GiB of `f64`) in blocks of 2^10 × 2^6.
    pub fn paper_sgi() -> Self {
        Params {
            rows: 1 << 16,
            cols: 1 << 16,
            block_rows: 1 << 10,
            block_cols: 1 << 6,
            ..Params::paper()
        }
    }

    /// 12 × 16 pixels in 4 × 4 blocks (12 blocks): for tests.
    pub fn tiny() -> Self {
        Params {
            rows: 12,
            cols: 16,
            block_rows: 4,
            block_cols: 4,
            control: Control::Sequential,
        }
    }

    /// Checks every constraint the kernel relies on (see the [module docs](self)). The
    /// message names the field and the option that sets it.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.divides(("rows", self.rows), ("block_rows", self.block_rows))?;
        o.divides(("cols", self.cols), ("block_cols", self.block_cols))?;
        if (self.rows as u128) * (self.cols as u128) > 1 << 32 {
            return Err(format!(
                "blur-roberts: {} × {} = {} × {} pixels are more than 2^32",
                o.label("rows"),
                o.label("cols"),
                self.rows,
                self.cols
            ));
        }
        o.elements::<f64>(&[("rows", self.rows), ("cols", self.cols)])?;
        o.blocks(&[
            ("rows", self.rows, "block_rows", self.block_rows),
            ("cols", self.cols, "block_cols", self.block_cols),
        ])
    }

    /// Blocks down and across.
    /// Tasks the kernel submits, creators excluded: a blur and a Roberts task per
    /// block.
    pub(crate) fn tasks(&self) -> u64 {
        let (nby, nbx) = self.nb();
        (2 * nby * nbx) as u64
    }

    fn nb(&self) -> (usize, usize) {
        (self.rows / self.block_rows, self.cols / self.block_cols)
    }
}

kernel_params!(
    Options {
        name: "blur-roberts",
        axes: &[
            Axis::Extent("rows", "block_rows"),
            Axis::Extent("cols", "block_cols"),
        ],
        size: None,
        iterations: None,
    },
    bytes: |p| crate::size::bytes::<f64>(&[p.rows, p.cols])
);

/// The initial value of pixel `(y, x)`.
fn initial(p: &Params, y: usize, x: usize) -> f64 {
    (((y * p.cols + x) * 2_654_435_761) % 4093) as f64 / 4093.0
}

/// The blur of one pixel from its 3 × 3 neighbourhood, row-major.
#[inline]
pub fn blur_point(v: [f64; 9]) -> f64 {
    (v[0] + 2.0 * v[1] + v[2] + 2.0 * v[3] + 4.0 * v[4] + 2.0 * v[5] + v[6] + 2.0 * v[7] + v[8])
        / 16.0
}

/// The Roberts cross of one pixel from `b(y, x)`, `b(y, x+1)`, `b(y+1, x)`, `b(y+1, x+1)`.
#[inline]
pub fn roberts_point(c: f64, e: f64, s: f64, se: f64) -> f64 {
    (c - se).abs() + (s - e).abs()
}

/// The sequential reference: both filters over the whole image, row-major, with
/// coordinates outside the image clamped to its edge. The blur of a pixel is
/// `(nw + 2n + ne + 2w + 4c + 2e + sw + 2s + se) / 16` summed in that order (its 3 × 3
/// neighbourhood row by row), the Roberts cross of a blurred pixel
/// `|b(y, x) - b(y+1, x+1)| + |b(y+1, x) - b(y, x+1)|`.
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if its images cannot be allocated.
///
/// # Panics
///
/// If the parameters do not pass [`Params::validate`].
pub fn reference(p: &Params) -> Result<Vec<f64>, crate::Error> {
    if let Err(e) = p.validate() {
        panic!("{e}");
    }
    use crate::alloc::filled;
    let (h, w) = (p.rows, p.cols);
    let mut img = filled("the blur-roberts reference's image", h * w, 0.0)?;
    for y in 0..h {
        for x in 0..w {
            img[y * w + x] = initial(p, y, x);
        }
    }
    // Clamped neighbour coordinates: the previous and next row or column.
    let prev = |i: usize| i.saturating_sub(1);
    let next = |i: usize, n: usize| (i + 1).min(n - 1);
    let mut blurred = filled("the blur-roberts reference's blurred image", h * w, 0.0)?;
    for y in 0..h {
        let (n, s) = (prev(y) * w, next(y, h) * w);
        let c = y * w;
        for x in 0..w {
            let (l, r) = (prev(x), next(x, w));
            blurred[c + x] = (img[n + l]
                + 2.0 * img[n + x]
                + img[n + r]
                + 2.0 * img[c + l]
                + 4.0 * img[c + x]
                + 2.0 * img[c + r]
                + img[s + l]
                + 2.0 * img[s + x]
                + img[s + r])
                / 16.0;
        }
    }
    let mut out = filled("the blur-roberts reference's result", h * w, 0.0)?;
    for y in 0..h {
        let (c, s) = (y * w, next(y, h) * w);
        for x in 0..w {
            let r = next(x, w);
            let diagonal: f64 = blurred[c + x] - blurred[s + r];
            let anti: f64 = blurred[s + x] - blurred[c + r];
            out[c + x] = diagonal.abs() + anti.abs();
        }
    }
    Ok(out)
}

/// A block and the halos around it, resolving image coordinates relative to the block.
struct Window<'a> {
    p: &'a Params,
    /// Image coordinates of the block's first pixel.
    origin: (isize, isize),
    block: &'a [f64],
    /// `halo[(dy + 1) * 3 + (dx + 1)]`: the neighbour's facing row, column or corner.
    halo: [Option<&'a [f64]>; 9],
}

impl Window<'_> {
    /// The pixel at image coordinates `(y, x)` clamped to the image; it must lie in the
    /// block or in one of the halos.
    fn at(&self, y: isize, x: isize) -> f64 {
        let (br, bc) = (self.p.block_rows as isize, self.p.block_cols as isize);
        let y = y.clamp(0, self.p.rows as isize - 1) - self.origin.0;
        let x = x.clamp(0, self.p.cols as isize - 1) - self.origin.1;
        let dy = if y < 0 {
            -1
        } else if y >= br {
            1
        } else {
            0
        };
        let dx = if x < 0 {
            -1
        } else if x >= bc {
            1
        } else {
            0
        };
        let (ly, lx) = (y as usize, x as usize);
        match (dy, dx) {
            (0, 0) => self.block[ly * bc as usize + lx],
            (0, _) => self.halo[(4 + dx) as usize].expect("column halo")[ly],
            (_, 0) => self.halo[(4 + 3 * dy) as usize].expect("row halo")[lx],
            _ => self.halo[(4 + 3 * dy + dx) as usize].expect("corner halo")[0],
        }
    }
}

/// The data of one run.
struct Handles {
    image: Vec<Data<f64>>,
    /// First and last column of each image block.
    image_cols: [Vec<Data<f64>>; 2],
    blurred: Vec<Data<f64>>,
    /// First column of each blurred block.
    blurred_first_col: Vec<Data<f64>>,
    out: Vec<Data<f64>>,
}

fn submit_blur(
    s: &Scope,
    p: &Params,
    h: &Handles,
    bi: usize,
    bj: usize,
) -> Result<(), locus::Error> {
    let (nby, nbx) = p.nb();
    let (br, bc) = (p.block_rows, p.block_cols);
    let k = |i: usize, j: usize| i * nbx + j;
    let last_row = (br - 1) * bc..br * bc;
    let mut halos: Vec<Vec<Read<f64>>> = Vec::with_capacity(9);
    for dy in [-1isize, 0, 1] {
        for dx in [-1isize, 0, 1] {
            let (i, j) = (bi as isize + dy, bj as isize + dx);
            let inside =
                (dy, dx) != (0, 0) && i >= 0 && j >= 0 && i < nby as isize && j < nbx as isize;
            let n = inside.then(|| k(i as usize, j as usize));
            let access = n.map(|n| match (dy, dx) {
                (-1, 0) => h.image[n].read_range(last_row.clone()),
                (1, 0) => h.image[n].read_range(0..bc),
                (0, -1) => h.image_cols[1][n].read(),
                (0, _) => h.image_cols[0][n].read(),
                (-1, -1) => h.image[n].read_range(br * bc - 1..br * bc),
                (-1, _) => h.image[n].read_range((br - 1) * bc..(br - 1) * bc + 1),
                (_, -1) => h.image[n].read_range(bc - 1..bc),
                _ => h.image[n].read_range(0..1),
            });
            halos.push(opt(access));
        }
    }
    let me = k(bi, bj);
    let params = p.clone();
    s.spawn(
        "blur",
        (
            h.image[me].read(),
            halos,
            h.blurred[me].write(),
            h.blurred_first_col[me].write(),
        ),
        move |_, (block, halos, out, first_col)| {
            let w = Window {
                p: &params,
                origin: ((bi * br) as isize, (bj * bc) as isize),
                block,
                halo: std::array::from_fn(|i| halos[i].first().copied()),
            };
            for ly in 0..br {
                for lx in 0..bc {
                    let (y, x) = (w.origin.0 + ly as isize, w.origin.1 + lx as isize);
                    let v = [-1, 0, 1].map(|dy| [-1, 0, 1].map(|dx| w.at(y + dy, x + dx)));
                    out[ly * bc + lx] = blur_point(v.concat().try_into().expect("nine"));
                }
            }
            for (ly, c) in first_col.iter_mut().enumerate() {
                *c = out[ly * bc];
            }
        },
    )
}

fn submit_roberts(
    s: &Scope,
    p: &Params,
    h: &Handles,
    bi: usize,
    bj: usize,
) -> Result<(), locus::Error> {
    let (nby, nbx) = p.nb();
    let (br, bc) = (p.block_rows, p.block_cols);
    let k = |i: usize, j: usize| i * nbx + j;
    let (south, east) = (bi + 1 < nby, bj + 1 < nbx);
    let halos = vec![
        opt(east.then(|| h.blurred_first_col[k(bi, bj + 1)].read())),
        opt(south.then(|| h.blurred[k(bi + 1, bj)].read_range(0..bc))),
        opt((south && east).then(|| h.blurred[k(bi + 1, bj + 1)].read_range(0..1))),
    ];
    let me = k(bi, bj);
    let params = p.clone();
    s.spawn(
        "roberts",
        (h.blurred[me].read(), halos, h.out[me].write()),
        move |_, (block, halos, out)| {
            let mut halo = [None; 9];
            halo[5] = halos[0].first().copied();
            halo[7] = halos[1].first().copied();
            halo[8] = halos[2].first().copied();
            let w = Window {
                p: &params,
                origin: ((bi * br) as isize, (bj * bc) as isize),
                block,
                halo,
            };
            for ly in 0..br {
                for lx in 0..bc {
                    let (y, x) = (w.origin.0 + ly as isize, w.origin.1 + lx as isize);
                    out[ly * bc + lx] = roberts_point(
                        w.at(y, x),
                        w.at(y, x + 1),
                        w.at(y + 1, x),
                        w.at(y + 1, x + 1),
                    );
                }
            }
        },
    )
}

/// Builds, runs and verifies both filters against [`reference()`], bit for bit.
pub fn run(rt: &Runtime, p: &Params) -> Result<crate::Outcome, crate::Error> {
    run_against(rt, p, || reference(p))
}

/// [`run`], comparing the result with `want()` (the whole image, row-major).
pub(crate) fn run_against(
    rt: &Runtime,
    p: &Params,
    want: impl FnOnce() -> Result<Vec<f64>, crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    let (nby, nbx) = p.nb();
    let (br, bc) = (p.block_rows, p.block_cols);
    let mut image = Vec::with_capacity(nby * nbx);
    let mut image_cols = [Vec::new(), Vec::new()];
    for bi in 0..nby {
        for bj in 0..nbx {
            if rt.skips_bodies() {
                for (side, cols) in image_cols.iter_mut().enumerate() {
                    cols.push(rt.data(format!("image{bi}.{bj}.col{side}"), br));
                }
                image.push(rt.data(format!("image{bi}.{bj}"), br * bc));
                continue;
            }
            let block: Vec<f64> = crate::alloc::collected(
                "the initial values of a block",
                br * bc,
                (0..br * bc).map(|q| initial(p, bi * br + q / bc, bj * bc + q % bc)),
            )?;
            for (side, cols) in image_cols.iter_mut().enumerate() {
                let x = if side == 0 { 0 } else { bc - 1 };
                let col: Vec<f64> = crate::alloc::collected(
                    "the initial values of a block's column",
                    br,
                    (0..br).map(|ly| block[ly * bc + x]),
                )?;
                cols.push(rt.data_from(format!("image{bi}.{bj}.col{side}"), &col)?);
            }
            image.push(rt.data_from(format!("image{bi}.{bj}"), &block)?);
        }
    }
    let n = nby * nbx;
    let h = Arc::new(Handles {
        image,
        image_cols,
        blurred: (0..n)
            .map(|b| rt.data(format!("blurred{b}"), br * bc))
            .collect(),
        blurred_first_col: (0..n)
            .map(|b| rt.data(format!("blurred{b}.col0"), br))
            .collect(),
        out: (0..n)
            .map(|b| rt.data(format!("out{b}"), br * bc))
            .collect(),
    });
    let bands = split(nby, MAX_CREATORS);
    let tokens = BandTokens::new(rt, bands.len());
    let finished = rt.run(|s| -> Result<(), locus::Error> {
        // Blur of band g + 1 is submitted before Roberts of band g, which needs it.
        let blur = |g: usize| -> Result<(), locus::Error> {
            let rows = bands[g].clone();
            let each = move |s: &Scope, p: &Params, h: &Handles| {
                rows.clone()
                    .try_for_each(|bi| (0..nbx).try_for_each(|bj| submit_blur(s, p, h, bi, bj)))
            };
            match p.control {
                Control::Sequential => each(s, p, &h),
                Control::Parallel => {
                    let (h, p) = (h.clone(), p.clone());
                    spawn_creator(s, tokens.get(g).write(), move |s| each(s, &p, &h))
                }
            }
        };
        let roberts = |g: usize| -> Result<(), locus::Error> {
            let rows = bands[g].clone();
            let each = move |s: &Scope, p: &Params, h: &Handles| {
                rows.clone()
                    .try_for_each(|bi| (0..nbx).try_for_each(|bj| submit_roberts(s, p, h, bi, bj)))
            };
            match p.control {
                Control::Sequential => each(s, p, &h),
                Control::Parallel => {
                    let reads: Vec<Read<u64>> = (g..(g + 2).min(bands.len()))
                        .map(|b| tokens.get(b).read())
                        .collect();
                    let (h, p) = (h.clone(), p.clone());
                    spawn_creator(s, reads, move |s| each(s, &p, &h))
                }
            }
        };
        blur(0)?;
        for g in 0..bands.len() {
            if g + 1 < bands.len() {
                blur(g + 1)?;
            }
            roberts(g)?;
        }
        Ok(())
    })?;
    let ((), report) = crate::finished(finished)?;
    if rt.skips_bodies() {
        return Ok(crate::Outcome::unchecked(report));
    }
    let want = want()?;
    let mut check = crate::verify::Check::new();
    for (b, d) in h.out.iter().enumerate() {
        let (bi, bj) = (b / nbx, b % nbx);
        check.block("image", &rt.fetch(d)?, &want, |q| {
            (bi * br + q / bc) * p.cols + bj * bc + q % bc
        });
    }
    Ok(crate::Outcome::checked(report, check.finish()))
}
