//! Sparse matrices in compressed sparse row (CSR) form, cut into row partitions that
//! live on one node each: the data layout of `spmv` and `bicgstab`.
//!
//! # Partitioning
//!
//! Rows are cut into contiguous ranges holding as even a share of the non-zeros as the
//! row boundaries allow ([`partition_by_nnz`]). Paper 3 partitioned its matrix with
//! METIS; Locus does not, for three reasons. (1) Contiguous ranges keep every
//! partition's rows, its output slice and its input slice contiguous in the natural
//! numbering, so a product task declares its neighbours' slices as byte ranges and the
//! results stay bit for bit those of a sequential product in the file's order; a graph
//! partition would renumber the unknowns and need gathers. (2) On the paper's matrix
//! (the five-point Laplacian of a square mesh, rows in natural order) a contiguous range
//! is a band of mesh rows, which touches two neighbours through one mesh row each: the
//! communication volume per partition is the band's two edges, the same order as a
//! graph partitioner's up to a few hundred partitions. (3) The maintained binding
//! (`metis`, over `metis-sys`) builds METIS from C sources or needs `libmetis-dev`; a
//! benchmark crate that every engineer builds should not need a C toolchain for it.
//!
//! # Placement
//!
//! `Placed` holds one partition's rows (its `row_ptr`, columns and values) as three
//! data, written by one initialisation task per partition bound to the partition's
//! home node (see [`crate::affinity`]): with deferred allocation the buffers are
//! allocated on that node, as first touch places them in paper 3's programs.

use std::ops::Range;
use std::sync::Arc;

use locus::{Affinity, Data, Read, Runtime, Scope, Write};

use crate::affinity::{hinted, owner_of, worker_nodes, AffinityMode};
use crate::replay::{Hints, Spawn};

/// A sparse matrix in CSR form: row `i`'s entries are `col_idx[k]`, `vals[k]` for `k` in
/// `row_ptr[i]..row_ptr[i + 1]`, columns increasing within a row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Csr {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Start of each row's entries, and the number of entries at the end.
    pub row_ptr: Vec<usize>,
    /// Column of each entry.
    pub col_idx: Vec<u32>,
    /// Value of each entry.
    pub vals: Vec<f64>,
}

impl Csr {
    /// Entries stored (non-zeros).
    pub fn nnz(&self) -> usize {
        self.vals.len()
    }

    /// The matrix of `(row, col, value)` triplets (0-based), sorted by row then column;
    /// duplicates are summed in the order given.
    pub fn from_triplets(
        rows: usize,
        cols: usize,
        mut t: Vec<(u32, u32, f64)>,
    ) -> Result<Csr, crate::Error> {
        // Stable: duplicates keep their order, so their sum is the file's.
        t.sort_by_key(|&(i, j, _)| (i, j));
        let mut row_ptr = crate::alloc::filled("the matrix's row pointers", rows + 1, 0usize)?;
        let mut col_idx = crate::alloc::with_capacity("the matrix's columns", t.len())?;
        let mut vals: Vec<f64> = crate::alloc::with_capacity("the matrix's values", t.len())?;
        let mut last = None;
        for (i, j, v) in t {
            if last == Some((i, j)) {
                *vals.last_mut().expect("a previous entry") += v;
                continue;
            }
            last = Some((i, j));
            row_ptr[i as usize + 1] += 1;
            col_idx.push(j);
            vals.push(v);
        }
        for i in 0..rows {
            row_ptr[i + 1] += row_ptr[i];
        }
        Ok(Csr {
            rows,
            cols,
            row_ptr,
            col_idx,
            vals,
        })
    }

    /// The five-point finite-volume Laplacian of an `n × n` mesh with Dirichlet
    /// boundaries (paper 3 section 4.3): unknowns in natural order, 4 on the diagonal,
    /// -1 for each of the up to four neighbours.
    pub fn laplacian(n: usize) -> Result<Csr, crate::Error> {
        let rows = n * n;
        let nnz = laplacian_nnz(n);
        let mut row_ptr = crate::alloc::with_capacity("the Laplacian's row pointers", rows + 1)?;
        let mut col_idx = crate::alloc::with_capacity("the Laplacian's columns", nnz)?;
        let mut vals = crate::alloc::with_capacity("the Laplacian's values", nnz)?;
        row_ptr.push(0);
        for y in 0..n {
            for x in 0..n {
                let i = y * n + x;
                let mut push = |j: usize, v: f64| {
                    col_idx.push(j as u32);
                    vals.push(v);
                };
                if y > 0 {
                    push(i - n, -1.0);
                }
                if x > 0 {
                    push(i - 1, -1.0);
                }
                push(i, 4.0);
                if x + 1 < n {
                    push(i + 1, -1.0);
                }
                if y + 1 < n {
                    push(i + n, -1.0);
                }
                row_ptr.push(col_idx.len());
            }
        }
        Ok(Csr {
            rows,
            cols: rows,
            row_ptr,
            col_idx,
            vals,
        })
    }

    /// The largest sum of absolute values of a row (the infinity norm).
    pub fn norm_inf(&self) -> f64 {
        (0..self.rows)
            .map(|i| {
                self.vals[self.row_ptr[i]..self.row_ptr[i + 1]]
                    .iter()
                    .map(|v| v.abs())
                    .sum::<f64>()
            })
            .fold(0.0, f64::max)
    }
}

/// Non-zeros of the Laplacian of an `n × n` mesh: `5 n² - 4 n`.
pub fn laplacian_nnz(n: usize) -> usize {
    (5 * n * n).saturating_sub(4 * n)
}

/// Cuts the rows of `a` into `parts` contiguous, non-empty ranges with as even a share
/// of the non-zeros as row boundaries allow: range `p` starts at the row boundary
/// nearest `p / parts` of the non-zeros (then moved, if need be, so that every range
/// has a row). Needs `1 <= parts <= a.rows`.
pub fn partition_by_nnz(a: &Csr, parts: usize) -> Vec<Range<usize>> {
    assert!(parts >= 1 && parts <= a.rows, "1 <= parts <= rows");
    let nnz = a.nnz() as u128;
    let mut starts = Vec::with_capacity(parts + 1);
    starts.push(0usize);
    for p in 1..parts {
        let target = (nnz * p as u128 / parts as u128) as usize;
        // The row boundary nearest the target (the earlier on a tie).
        let mut first = a.row_ptr.partition_point(|&k| k < target).min(a.rows);
        if first > 0 && target - a.row_ptr[first - 1] <= a.row_ptr[first] - target {
            first -= 1;
        }
        let lo = starts[p - 1] + 1;
        let hi = a.rows - (parts - p);
        starts.push(first.clamp(lo, hi));
    }
    starts.push(a.rows);
    starts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// The partitions of the rows, the matrix and what each product task reads of the
/// input vector: everything a product needs, without its data.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The matrix.
    pub a: Arc<Csr>,
    /// Rows of each partition.
    pub parts: Vec<Range<usize>>,
    /// For each partition, the slices of the input vector its rows' columns fall in:
    /// `(partition q, range within q's slice)`, in order; together they cover the
    /// partition's columns from its smallest to its largest.
    pub halo: Vec<Vec<(usize, Range<usize>)>>,
    /// For each partition, which of its rows read its own slice in place ([`Reach`]).
    pub reach: Vec<Reach>,
}

/// How the product of one partition reads its halo: the rows whose columns all fall in
/// the partition's own slice (the longest run of such rows) read that slice where it
/// lies; the rows before and after the run read a copy of the columns they reach,
/// joined from the halo's slices. On a banded matrix (the Laplacian) only the rows
/// next to the partition's edges need the copy.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Reach {
    /// The first column of each of the halo's slices, in the halo's order.
    pub starts: Vec<usize>,
    /// Which of the halo's slices is the partition's own, if its columns reach it.
    pub own: Option<usize>,
    /// Rows (from the partition's first) that read the own slice in place.
    pub inner: Range<usize>,
    /// Columns read by the rows before `inner`, and by the rows after it.
    pub head: Range<usize>,
    pub tail: Range<usize>,
}

impl Reach {
    /// The reach of partition `me` of `a` cut into `parts`, whose halo is `halo`.
    fn new(a: &Csr, parts: &[Range<usize>], me: usize, halo: &[(usize, Range<usize>)]) -> Reach {
        let rows = parts[me].clone();
        let starts: Vec<usize> = halo
            .iter()
            .map(|(q, r)| parts[*q].start + r.start)
            .collect();
        let own = halo.iter().position(|(q, _)| *q == me);
        let mine = own.map_or(0..0, |j| starts[j]..starts[j] + halo[j].1.len());
        let entries = |i: usize| a.row_ptr[i]..a.row_ptr[i + 1];
        let inside = |i: usize| {
            a.col_idx[entries(i)]
                .iter()
                .all(|&c| mine.contains(&(c as usize)))
        };
        // The longest run of rows reading only their own slice.
        let (mut inner, mut run) = (0..0, rows.start);
        for i in rows.clone() {
            if !inside(i) {
                run = i + 1;
            } else if i + 1 - run > inner.len() {
                inner = run..i + 1;
            }
        }
        // No run (or no own slice to read it from): every row reads the copy.
        let inner = if inner.is_empty() || own.is_none() {
            rows.end..rows.end
        } else {
            inner
        };
        Reach {
            head: columns(a, rows.start..inner.start).unwrap_or(0..0),
            tail: columns(a, inner.end..rows.end).unwrap_or(0..0),
            inner: inner.start - rows.start..inner.end - rows.start,
            starts,
            own,
        }
    }

    /// The columns `cols` of the input vector, copied from the halo's slices `halo` into
    /// `x` (emptied first).
    fn join(&self, halo: &[&[f64]], cols: Range<usize>, x: &mut Vec<f64>) {
        x.clear();
        for (slice, &start) in halo.iter().zip(&self.starts) {
            let lo = cols.start.clamp(start, start + slice.len());
            let hi = cols.end.clamp(start, start + slice.len());
            x.extend_from_slice(&slice[lo - start..hi - start]);
        }
    }
}

/// The columns the rows `rows` of `a` reach, from the smallest to the largest; `None`
/// if they hold no entry.
fn columns(a: &Csr, rows: Range<usize>) -> Option<Range<usize>> {
    let cols = &a.col_idx[a.row_ptr[rows.start]..a.row_ptr[rows.end]];
    let (&lo, &hi) = (cols.iter().min()?, cols.iter().max()?);
    Some(lo as usize..hi as usize + 1)
}

thread_local! {
    /// Each thread's buffer for the columns a product's edge rows read
    /// ([`product_rows`]), kept from one product to the next.
    static JOINED: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Plan {
    /// The plan of `a` cut into `parts` partitions ([`partition_by_nnz`]).
    pub fn new(a: Arc<Csr>, parts: usize) -> Plan {
        let ranges = partition_by_nnz(&a, parts);
        let halo: Vec<Vec<(usize, Range<usize>)>> = ranges
            .iter()
            .map(|r| {
                let Some(Range { start: lo, end: hi }) = columns(&a, r.clone()) else {
                    return Vec::new();
                };
                ranges
                    .iter()
                    .enumerate()
                    .filter(|(_, q)| q.start < hi && lo < q.end)
                    .map(|(q, qr)| (q, lo.max(qr.start) - qr.start..hi.min(qr.end) - qr.start))
                    .collect()
            })
            .collect();
        let reach = (0..ranges.len())
            .map(|p| Reach::new(&a, &ranges, p, &halo[p]))
            .collect();
        Plan {
            a,
            parts: ranges,
            halo,
            reach,
        }
    }

    /// The reads of partition `p`'s halo of the vector cut into `slices`.
    pub fn halo_reads(&self, p: usize, slices: &[Data<f64>]) -> Vec<Read<f64>> {
        self.halo[p]
            .iter()
            .map(|(q, r)| slices[*q].read_range(r.clone()))
            .collect()
    }
}

/// `y[i] = Σ_k vals[k] · x[cols[k]]` over each row `i` of one partition, the entries in
/// order; `halo` is the input vector's slices that `reach` describes. The rows of
/// `reach.inner` read the partition's own slice in place; the others read a copy of the
/// columns they reach, joined in a buffer each thread keeps. (Reading every entry in
/// place, with a check of its slice, measured 5-21% slower on spmv and bicgstab than a
/// copy of the whole halo for every row.)
pub(crate) fn product_rows(
    row_ptr: &[u64],
    cols: &[u32],
    vals: &[f64],
    halo: &[&[f64]],
    reach: &Reach,
    y: &mut [f64],
) {
    let (inner, rows) = (reach.inner.clone(), y.len());
    if let Some(own) = reach.own {
        let x = halo[own];
        let base = reach.starts[own];
        product_range(row_ptr, cols, vals, x, base, inner.clone(), y);
    }
    for (span, reached) in [
        (0..inner.start, &reach.head),
        (inner.end..rows, &reach.tail),
    ] {
        if !span.is_empty() {
            JOINED.with_borrow_mut(|x| {
                reach.join(halo, reached.clone(), x);
                product_range(row_ptr, cols, vals, x, reached.start, span, y);
            });
        }
    }
}

/// [`product_rows`] over the rows `span`, reading column `c` at `x[c - base]`. (Reading
/// `x` without its bounds check measured no faster on spmv; checking the span's columns
/// in one pass first, so as to read without the check, 20% slower.)
#[inline]
fn product_range(
    row_ptr: &[u64],
    cols: &[u32],
    vals: &[f64],
    x: &[f64],
    base: usize,
    span: Range<usize>,
    y: &mut [f64],
) {
    let ends = &row_ptr[span.start..=span.end];
    for (out, ends) in y[span].iter_mut().zip(ends.windows(2)) {
        let entries = ends[0] as usize..ends[1] as usize;
        let mut sum = 0.0;
        for (v, &c) in vals[entries.clone()].iter().zip(&cols[entries]) {
            sum += v * x[c as usize - base];
        }
        *out = sum;
    }
}

/// One partition's rows as data: row pointers (relative to the partition's first
/// entry), columns and values.
pub(crate) struct PartData {
    pub row_ptr: Data<u64>,
    pub cols: Data<u32>,
    pub vals: Data<f64>,
}

/// The matrix's partitions as data, with their home nodes.
pub(crate) struct Placed {
    pub plan: Arc<Plan>,
    pub parts: Vec<PartData>,
    /// Home node of each partition.
    pub home: Vec<usize>,
}

impl Placed {
    /// The data of every partition (empty until [`Placed::init`]'s tasks write them);
    /// homes spread the partitions over the nodes with workers in contiguous runs.
    pub fn new(rt: &Runtime, name: &str, plan: Arc<Plan>) -> Placed {
        let nodes = worker_nodes(rt);
        let a = &plan.a;
        let parts = plan
            .parts
            .iter()
            .enumerate()
            .map(|(p, r)| PartData {
                row_ptr: rt.data(format!("{name}.A{p}.row_ptr"), r.len() + 1),
                cols: rt.data(
                    format!("{name}.A{p}.cols"),
                    a.row_ptr[r.end] - a.row_ptr[r.start],
                ),
                vals: rt.data(
                    format!("{name}.A{p}.vals"),
                    a.row_ptr[r.end] - a.row_ptr[r.start],
                ),
            })
            .collect();
        let home = (0..plan.parts.len())
            .map(|p| nodes[owner_of(p, plan.parts.len(), nodes.len())])
            .collect();
        Placed { plan, parts, home }
    }

    /// The affinity of partition `p`'s owner: its home node.
    pub fn owner(&self, p: usize) -> Affinity {
        Affinity::node(self.home[p])
    }

    /// Submits the task writing partition `p`'s rows, hinted by `mode`.
    pub fn init(&self, s: &Scope, mode: AffinityMode, p: usize) -> Result<(), locus::Error> {
        let plan = self.plan.clone();
        let d = &self.parts[p];
        hinted(
            s.task(
                "init-matrix",
                (d.row_ptr.write(), d.cols.write(), d.vals.write()),
            ),
            mode.init(self.owner(p)),
        )
        .spawn(move |_, (row_ptr, cols, vals)| {
            let (a, r) = (&plan.a, &plan.parts[p]);
            let first = a.row_ptr[r.start];
            for (o, &k) in row_ptr.iter_mut().zip(&a.row_ptr[r.start..=r.end]) {
                *o = (k - first) as u64;
            }
            let entries = first..a.row_ptr[r.end];
            cols.copy_from_slice(&a.col_idx[entries.clone()]);
            vals.copy_from_slice(&a.vals[entries]);
        })
    }

    /// Submits the product of partition `p`: `out = A[p] · x`, where `x` is the vector
    /// cut into slices like the rows; hinted by `mode` towards the partition's owner
    /// (paper 3's owner-computes rule: the task runs where its output slice lives).
    pub fn product(
        &self,
        s: &impl Spawn,
        mode: AffinityMode,
        p: usize,
        x: &[Data<f64>],
        out: &Data<f64>,
    ) -> Result<(), locus::Error> {
        let plan = self.plan.clone();
        s.spawn_hinted(
            "spmv",
            self.product_accesses(p, x, out),
            Hints::affinity(mode.compute(self.owner(p))),
            move |(row_ptr, cols, vals, halo, y)| {
                product_rows(row_ptr, cols, vals, &halo, &plan.reach[p], y)
            },
        )
    }

    /// What the product of partition `p` declares: its rows, the slices of `x` its
    /// columns reach, its slice of the result.
    #[allow(clippy::type_complexity)]
    fn product_accesses(
        &self,
        p: usize,
        x: &[Data<f64>],
        out: &Data<f64>,
    ) -> (Read<u64>, Read<u32>, Read<f64>, Vec<Read<f64>>, Write<f64>) {
        let d = &self.parts[p];
        (
            d.row_ptr.read(),
            d.cols.read(),
            d.vals.read(),
            self.plan.halo_reads(p, x),
            out.write(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_laplacian_has_its_stencil() {
        let a = Csr::laplacian(3).unwrap();
        assert_eq!(a.nnz(), laplacian_nnz(3));
        // The centre of the mesh: four neighbours and the diagonal, columns in order.
        let centre = a.row_ptr[4]..a.row_ptr[5];
        assert_eq!(a.col_idx[centre.clone()], [1, 3, 4, 5, 7]);
        assert_eq!(a.vals[centre], [-1.0, -1.0, 4.0, -1.0, -1.0]);
        assert_eq!(a.norm_inf(), 8.0);
    }

    /// A matrix whose row pointers cannot be held is an error, not an abort (a
    /// Matrix Market file may declare billions of rows).
    #[test]
    fn rows_beyond_memory_are_an_error() {
        let err = Csr::from_triplets(usize::MAX / 8, 1, Vec::new()).unwrap_err();
        assert!(err.to_string().contains("row pointers"), "{err}");
    }

    #[test]
    fn partitions_balance_the_nonzeros() {
        // Rows of 1, 1, 1, 1, 8, 8 entries over 3 parts: 20 entries, targets 6 and 13;
        // the nearest boundaries are before row 4 (4 entries) and before row 5 (12).
        let mut t = Vec::new();
        for (i, n) in [1u32, 1, 1, 1, 8, 8].into_iter().enumerate() {
            for j in 0..n {
                t.push((i as u32, j, 1.0));
            }
        }
        let a = Csr::from_triplets(6, 8, t).unwrap();
        assert_eq!(partition_by_nnz(&a, 3), vec![0..4, 4..5, 5..6]);
        // As many parts as rows: one row each, whatever the non-zeros.
        assert_eq!(
            partition_by_nnz(&a, 6),
            (0..6).map(|i| i..i + 1).collect::<Vec<_>>()
        );
        let l = Csr::laplacian(10).unwrap();
        let parts = partition_by_nnz(&l, 4);
        for r in &parts {
            let nnz = l.row_ptr[r.end] - l.row_ptr[r.start];
            assert!(nnz.abs_diff(l.nnz() / 4) <= 5, "{parts:?}");
        }
    }

    #[test]
    fn the_halo_covers_the_columns_of_a_partition() {
        // Two partitions of two mesh rows (32 of the 64 entries each): each reads the
        // mesh row across the boundary from the other's slice.
        let plan = Plan::new(Arc::new(Csr::laplacian(4).unwrap()), 2);
        assert_eq!(plan.parts, vec![0..8, 8..16]);
        assert_eq!(plan.halo[0], vec![(0, 0..8), (1, 0..4)]);
        assert_eq!(plan.halo[1], vec![(0, 4..8), (1, 0..8)]);
        // Rows 0..4 reach only their own slice; rows 4..8 reach the next one's first mesh
        // row, and row 4 reaches back to column 0.
        assert_eq!(
            plan.reach[0],
            Reach {
                starts: vec![0, 8],
                own: Some(0),
                inner: 0..4,
                head: 0..0,
                tail: 0..12,
            }
        );
        assert_eq!(
            plan.reach[1],
            Reach {
                starts: vec![4, 8],
                own: Some(1),
                inner: 4..8,
                head: 4..16,
                tail: 0..0,
            }
        );
    }

    /// The product of each partition, in place and through the copies, is the plain
    /// sequential product, bit for bit, on matrices whose rows reach their own slice,
    /// their neighbours' or none at all.
    #[test]
    fn the_product_of_every_partition_is_the_sequential_one() {
        let mut t = Vec::new();
        for i in 0..40u32 {
            match i % 7 {
                0 => {}                               // an empty row
                1 => t.push((i, (i * 13) % 40, 1.5)), // far from its own slice
                _ => {
                    for j in i.saturating_sub(2)..(i + 3).min(40) {
                        t.push((i, j, f64::from(i) - 0.25 * f64::from(j)));
                    }
                }
            }
        }
        let mut matrices = vec![Csr::from_triplets(40, 40, t).unwrap()];
        matrices.push(Csr::laplacian(6).unwrap());
        for a in matrices {
            let x: Vec<f64> = (0..a.cols).map(|i| 1.0 + (i as f64).sin()).collect();
            let want: Vec<f64> = (0..a.rows)
                .map(|i| {
                    (a.row_ptr[i]..a.row_ptr[i + 1])
                        .fold(0.0, |s, k| s + a.vals[k] * x[a.col_idx[k] as usize])
                })
                .collect();
            for parts in [1, 3, 5, 8] {
                let plan = Plan::new(Arc::new(a.clone()), parts);
                for (p, r) in plan.parts.iter().enumerate() {
                    let first = a.row_ptr[r.start];
                    let row_ptr: Vec<u64> = a.row_ptr[r.start..=r.end]
                        .iter()
                        .map(|&k| (k - first) as u64)
                        .collect();
                    let entries = first..a.row_ptr[r.end];
                    let halo: Vec<&[f64]> = plan.halo[p]
                        .iter()
                        .map(|(q, h)| &x[plan.parts[*q].start..][h.clone()])
                        .collect();
                    let mut y = vec![f64::NAN; r.len()];
                    product_rows(
                        &row_ptr,
                        &a.col_idx[entries.clone()],
                        &a.vals[entries],
                        &halo,
                        &plan.reach[p],
                        &mut y,
                    );
                    assert_eq!(y, want[r.clone()], "{parts} parts, partition {p}");
                }
            }
        }
    }
}
