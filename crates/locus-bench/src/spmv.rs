//! `spmv`: repeated sparse matrix-vector products over row partitions (paper 3 section
//! 4.3, Figure 3: Virouleau et al., "Description, Implementation and Evaluation of an
//! Affinity Clause for Task Directives").
//!
//! The matrix (the five-point Laplacian of a `mesh × mesh` grid, or a Matrix Market
//! file given by `--matrix`) is cut into `partitions` row ranges of balanced non-zeros
//! ([`crate::csr`]). Each partition's rows and its slice of the vectors are data of
//! their own, written first by one initialisation task per partition bound to the
//! partition's home node (contiguous runs of partitions per node with workers). Then
//! `products` products run, each one task per partition: `x_{k+1}[p] = A[p] · x_k`,
//! reading the partition's rows, its slice of `x_k` and the ranges of its neighbours'
//! slices its columns touch, and writing its slice of `x_{k+1}` (two sets of slices,
//! by handle). The matrix is scaled by a power of two (exact) so that its infinity
//! norm is at most 1 and the iterates stay finite over any number of products.
//!
//! `--affinity` ([`AffinityMode`]) chooses the hints: `strict` (the default) binds each
//! product to its partition's home node, paper 3's owner-computes rule (`affinity(data:
//! Y[i])` in its Figure 3a: the output slice lives on the home node); `init` places
//! only the initialisation, as paper 3's Clang and GCC runs do; `none` places nothing.
//!
//! Verification: bitwise equality of the last iterate with a sequential loop of the
//! same products (each row's entries summed in order).
//!
//! # Sizes
//!
//! - `--size N`: `mesh` (the matrix has `N²` rows); ignored with `--matrix`;
//! - `--iterations N`: `products`;
//! - `--param partitions=P`: row partitions (at most the rows);
//! - `--matrix FILE.mtx`: the matrix (square), instead of the Laplacian;
//! - `--affinity MODE`.
//!
//! Paper size: the 2000 × 2000 mesh (4 million rows, 20 million non-zeros), 500
//! products, 192 partitions (one per core of the SGI UV2000).

use std::sync::Arc;

use locus::{Data, Runtime};
use serde::{Deserialize, Serialize};

use crate::affinity::{hinted, AffinityMode};
use crate::csr::{laplacian_nnz, Csr, Placed, Plan};
use crate::size::{kernel_params, KernelParams, Options};

/// Size of the problem and its hints.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Side of the mesh of the Laplacian (`mesh²` rows); unused with `matrix`.
    pub mesh: usize,
    /// Row partitions.
    pub partitions: usize,
    /// Products.
    pub products: usize,
    /// Which tasks carry affinity hints.
    pub affinity: AffinityMode,
    /// A Matrix Market file to use instead of the Laplacian.
    pub matrix: Option<String>,
}

impl Default for Params {
    /// A 256 × 256 mesh (65536 rows) in 16 partitions, 50 products.
    fn default() -> Self {
        Params {
            mesh: 256,
            partitions: 16,
            products: 50,
            affinity: AffinityMode::Strict,
            matrix: None,
        }
    }
}

impl Params {
    /// Paper 3 section 4.3: the 2000 × 2000 mesh, 500 products, 192 partitions.
    pub fn paper() -> Self {
        Params {
            mesh: 2000,
            partitions: 192,
            products: 500,
            ..Params::default()
        }
    }

    /// The same problem on the SGI-192 (paper 3 ran on that machine).
    pub fn paper_sgi() -> Self {
        Params::paper()
    }

    /// An 8 × 8 mesh in 4 partitions, 3 products: for tests.
    pub fn tiny() -> Self {
        Params {
            mesh: 8,
            partitions: 4,
            products: 3,
            ..Params::default()
        }
    }

    /// Checks what does not need the matrix: at least one partition and one product,
    /// a mesh of at least one point and at most 2^32 - 1 rows, and with the Laplacian
    /// at most one partition per row. [`Problem::new`] checks the rest.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.positive("partitions", self.partitions)?;
        o.positive("products", self.products)?;
        o.count("partitions", &[("partitions", self.partitions)])?;
        if self.matrix.is_none() {
            check_mesh(&o, self.mesh, self.partitions)?;
        }
        o.tasks(&[("partitions", self.partitions), ("products", self.products)])?;
        crate::size::finishes(self)
    }
}

/// The Laplacian's mesh: at least one point, at most 2^32 - 1 rows, at least as many
/// rows as partitions.
pub(crate) fn check_mesh(o: &Options, mesh: usize, partitions: usize) -> Result<(), String> {
    o.positive("mesh", mesh)?;
    let rows = mesh as u128 * mesh as u128;
    if rows > u32::MAX as u128 {
        return Err(format!(
            "{}: {} = {mesh} gives {rows} rows, more than 2^32 - 1",
            o.name,
            o.label("mesh")
        ));
    }
    if (partitions as u128) > rows {
        return Err(format!(
            "{}: {} = {partitions} is more than the {rows} rows",
            o.name,
            o.label("partitions")
        ));
    }
    Ok(())
}

kernel_params!(
    Options {
        name: "spmv",
        axes: &[],
        size: Some("mesh"),
        iterations: Some("products"),
    },
    bytes: |p| bytes(laplacian_nnz(p.mesh) as u64, (p.mesh as u64).saturating_mul(p.mesh as u64), 2)
);

/// Bytes of a matrix of `nnz` entries and `rows` rows (row pointers, columns, values)
/// and `vectors` vectors.
pub(crate) fn bytes(nnz: u64, rows: u64, vectors: u64) -> u64 {
    nnz.saturating_mul(12)
        .saturating_add(rows.saturating_add(1).saturating_mul(8))
        .saturating_add(rows.saturating_mul(8).saturating_mul(vectors))
}

/// The problem: parameters and, with `--matrix`, the matrix read from the file.
#[derive(Clone)]
pub struct Problem {
    /// The parameters.
    pub params: Params,
    /// The matrix of `params.matrix`, read; `None` for the Laplacian (built when run).
    pub file: Option<Arc<Csr>>,
}

impl std::fmt::Debug for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Problem")
            .field("params", &self.params)
            .field("file_nnz", &self.file.as_ref().map(|a| a.nnz()))
            .finish()
    }
}

impl Problem {
    /// The problem of `params`, reading its matrix file if it names one: a file that
    /// cannot be read, is malformed (the message names the line), is not square or has
    /// fewer rows than partitions is an `Err` with one line.
    pub fn new(params: Params) -> Result<Problem, String> {
        let file = read_square("spmv", params.matrix.as_deref(), params.partitions)?;
        Ok(Problem { params, file })
    }

    /// Bytes of the matrix and of one set of vector slices.
    pub fn data_bytes(&self) -> u64 {
        match &self.file {
            Some(a) => bytes(a.nnz() as u64, a.rows as u64, 2),
            None => self.params.data_bytes(),
        }
    }

    /// Tasks: two initialisations per partition (its rows, its slice of the first
    /// vector), one per partition per product.
    pub fn tasks(&self) -> u64 {
        let p = self.params.partitions as u64;
        (2 * p).saturating_add(p.saturating_mul(self.params.products as u64))
    }

    /// The matrix: the file's, or the Laplacian of the mesh.
    pub(crate) fn matrix(&self) -> Result<Arc<Csr>, crate::Error> {
        match &self.file {
            Some(a) => Ok(a.clone()),
            None => Ok(Arc::new(Csr::laplacian(self.params.mesh)?)),
        }
    }
}

/// Reads the square matrix of `path`, if any, with at least `partitions` rows.
pub(crate) fn read_square(
    name: &str,
    path: Option<&str>,
    partitions: usize,
) -> Result<Option<Arc<Csr>>, String> {
    let Some(path) = path else { return Ok(None) };
    let a = crate::mtx::read(path).map_err(|e| format!("{name}: --matrix {e}"))?;
    if a.rows != a.cols {
        return Err(format!(
            "{name}: --matrix {path}: the matrix is {} x {}, not square",
            a.rows, a.cols
        ));
    }
    if a.rows < partitions {
        return Err(format!(
            "{name}: partitions (--param partitions) = {partitions} is more than the {} rows of {path}",
            a.rows
        ));
    }
    Ok(Some(Arc::new(a)))
}

/// The power of two that scales `a` to an infinity norm of at most 1 (1 for a zero
/// matrix): multiplying by it is exact.
pub(crate) fn scale(a: &Csr) -> f64 {
    let norm = a.norm_inf();
    if norm.is_finite() && norm > 1.0 {
        0.5f64.powi(norm.log2().ceil() as i32)
    } else {
        1.0
    }
}

/// The matrix of the products: `a` scaled by [`scale`].
fn scaled(a: &Csr) -> Result<Csr, crate::Error> {
    let s = scale(a);
    let mut vals = crate::alloc::copied("the scaled matrix's values", &a.vals)?;
    for v in &mut vals {
        *v *= s;
    }
    Ok(Csr {
        rows: a.rows,
        cols: a.cols,
        row_ptr: crate::alloc::copied("the scaled matrix's row pointers", &a.row_ptr)?,
        col_idx: crate::alloc::copied("the scaled matrix's columns", &a.col_idx)?,
        vals,
    })
}

/// The initial vector's element `i`.
pub(crate) fn initial(i: usize) -> f64 {
    crate::stencil::initial(i) + 0.5
}

/// The sequential reference: `products` products `x ← A x` of the scaled matrix from
/// the initial vector, every row's entries summed in order.
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if its vectors cannot be allocated.
pub fn reference(a: &Csr, products: usize) -> Result<Vec<f64>, crate::Error> {
    let a = scaled(a)?;
    let mut x: Vec<f64> = crate::alloc::collected(
        "the spmv reference's vector",
        a.rows,
        (0..a.rows).map(initial),
    )?;
    let mut y = crate::alloc::filled("the spmv reference's second vector", a.rows, 0.0)?;
    for _ in 0..products {
        for (i, out) in y.iter_mut().enumerate() {
            let mut sum = 0.0;
            for k in a.row_ptr[i]..a.row_ptr[i + 1] {
                sum += a.vals[k] * x[a.col_idx[k] as usize];
            }
            *out = sum;
        }
        std::mem::swap(&mut x, &mut y);
    }
    Ok(x)
}

/// Builds, runs and verifies the products; `verified` means bitwise equality with
/// [`reference()`].
pub fn run(rt: &Runtime, problem: &Problem) -> Result<crate::Outcome, crate::Error> {
    let p = &problem.params;
    p.validate().map_err(crate::Error::Params)?;
    let a = problem.matrix()?;
    run_against(rt, problem, || reference(&a, p.products))
}

/// [`run`] against `want()` instead of the reference.
pub(crate) fn run_against(
    rt: &Runtime,
    problem: &Problem,
    want: impl FnOnce() -> Result<Vec<f64>, crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    let p = &problem.params;
    let a = problem.matrix()?;
    let plan = Arc::new(Plan::new(Arc::new(scaled(&a)?), p.partitions));
    drop(a);
    let placed = Placed::new(rt, "spmv", plan.clone());
    let xs = vectors(rt, &plan);
    let mode = p.affinity;
    let products = p.products;
    let finished = rt.run(|s| -> Result<(), locus::Error> {
        init(s, mode, &placed, &xs[0])?;
        for k in 0..products {
            for q in 0..plan.parts.len() {
                placed.product(s, mode, q, &xs[k % 2], &xs[(k + 1) % 2][q])?;
            }
        }
        Ok(())
    })?;
    let ((), report) = crate::finished(finished)?;
    verify(rt, &plan, &xs[products % 2], report, want)
}

/// The two vectors, each cut into slices like the rows.
fn vectors(rt: &Runtime, plan: &Plan) -> [Vec<Data<f64>>; 2] {
    [0, 1].map(|k| {
        plan.parts
            .iter()
            .enumerate()
            .map(|(q, r)| rt.data::<f64>(format!("spmv.x{k}.{q}"), r.len()))
            .collect()
    })
}

/// Submits the tasks writing the matrix's partitions and the first vector.
fn init(
    s: &locus::Scope,
    mode: crate::affinity::AffinityMode,
    placed: &Placed,
    x0: &[Data<f64>],
) -> Result<(), locus::Error> {
    for (q, x0) in x0.iter().enumerate() {
        placed.init(s, mode, q)?;
        let rows = placed.plan.parts[q].clone();
        hinted(s.task("init-x", x0.write()), mode.init(placed.owner(q))).spawn(move |_, x| {
            for (o, i) in x.iter_mut().zip(rows) {
                *o = initial(i);
            }
        })?;
    }
    Ok(())
}

/// [`run`] as a recorded graph (`--replay`): the initialisation runs dynamically, then
/// two products (the vectors swap roles every product) are recorded once and replayed
/// `products / 2` times; an odd last product runs dynamically after the replay. The
/// report adds the three up. No affinity hints.
pub fn run_replay(rt: &Runtime, problem: &Problem) -> Result<crate::Outcome, crate::Error> {
    let p = &problem.params;
    p.validate().map_err(crate::Error::Params)?;
    crate::replay::no_hints(p.affinity)?;
    let a = problem.matrix()?;
    let want = || reference(&a, p.products);
    let plan = Arc::new(Plan::new(Arc::new(scaled(&a)?), p.partitions));
    let placed = Placed::new(rt, "spmv", plan.clone());
    let xs = vectors(rt, &plan);
    let mode = p.affinity;
    let finished = rt.run(|s| init(s, mode, &placed, &xs[0]))?;
    let ((), mut report) = crate::finished(finished)?;
    let mut graph = rt.record("spmv", |r| {
        for k in 0..2 {
            for q in 0..plan.parts.len() {
                placed.product(r, mode, q, &xs[k % 2], &xs[(k + 1) % 2][q])?;
            }
        }
        Ok(())
    })?;
    crate::replay::then_replayed(
        &mut report,
        &rt.replay(&mut graph, (p.products / 2) as u64)?,
    );
    if p.products % 2 == 1 {
        let k = p.products - 1;
        let finished = rt.run(|s| -> Result<(), locus::Error> {
            (0..plan.parts.len())
                .try_for_each(|q| placed.product(s, mode, q, &xs[k % 2], &xs[(k + 1) % 2][q]))
        })?;
        report.then(&crate::finished(finished)?.1);
    }
    verify(rt, &plan, &xs[p.products % 2], report, want)
}

/// Compares the result vector, cut as `plan` cuts it, with `want()`.
fn verify(
    rt: &Runtime,
    plan: &Plan,
    result: &[Data<f64>],
    report: locus::Report,
    want: impl FnOnce() -> Result<Vec<f64>, crate::Error>,
) -> Result<crate::Outcome, crate::Error> {
    if rt.skips_bodies() {
        return Ok(crate::Outcome::unchecked(report));
    }
    let want = want()?;
    let mut check = crate::verify::Check::new();
    for (q, d) in result.iter().enumerate() {
        let start = plan.parts[q].start;
        check.block("x", &rt.fetch(d)?, &want, |i| start + i);
    }
    Ok(crate::Outcome::checked(report, check.finish()))
}
