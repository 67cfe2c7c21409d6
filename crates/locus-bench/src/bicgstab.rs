//! `bicgstab`: the BiCGStab solver (van der Vorst) over row partitions, paper 3's
//! motivating workload (Virouleau et al., "Description, Implementation and Evaluation
//! of an Affinity Clause for Task Directives", sections 2 and 4.3).
//!
//! The matrix is cut into row partitions and placed as in [`crate::spmv`]; so are the
//! vectors `b, x, r, r̂, p, v, s, t`, one slice per partition, written first by one
//! initialisation task per partition on its home node. `b = A x*` for a known `x*`;
//! the solve starts from `x = 0`. One iteration is, per partition (each task hinted
//! towards the partition's home by `--affinity`, as the products of `spmv`):
//!
//! 1. `v = A p` (product); `(r̂, v)` partial; combine: `α = ρ / (r̂, v)`;
//! 2. `s = r - α v`; `t = A s` (product); `(t, s)` and `(t, t)` partials; combine:
//!    `ω = (t, s) / (t, t)`;
//! 3. `x += α p + ω s`, `r = s - ω t`, with the `(r̂, r)` and `(r, r)` partials;
//!    combine: `β = (ρ' / ρ)(α / ω)`, `ρ = ρ'`;
//! 4. `p = r + β (p - ω v)`.
//!
//! Dot products are partial sums per partition (each over its rows in order) written
//! to a small datum, then one combine task adding the partials in partition order into
//! the scalars datum: a reduction with a fixed combining order, which a runtime
//! reduction with the same order can replace without changing a bit of the results.
//!
//! The solve stops when `‖r‖ ≤ 10^-tolerance_digits ‖b‖` or after `max_iterations`.
//! One task (`bicgstab`) submits the iterations as its children and reads the
//! residual after each (`TaskCtx::fetch`), so the run ends when the solver converges.
//! When the engine skips task bodies (a simulation at a size whose data are not
//! kept), there are no values to test: the run submits [`ITERATIONS_WITHOUT_BODIES`]
//! iterations (at most `max_iterations`) from the control program.
//!
//! Verification: the solution and the iteration count equal, bit for bit, those of a
//! sequential loop doing the same operations in the same order, and the true residual
//! `‖b - A x‖ / ‖b‖` is at most ten times the residual the solver reached (the
//! tolerance, or its recursively updated residual when `max_iterations` stopped it:
//! the two drift apart by rounding). A breakdown (a NaN) fails.
//!
//! # Sizes
//!
//! `--size N`: `mesh`; `--iterations N`: `max_iterations`; `--param partitions=P`,
//! `--param tolerance_digits=D`; `--matrix FILE.mtx`; `--affinity MODE`. Paper size:
//! the 2000 × 2000 mesh in 192 partitions.

use std::sync::Arc;

use locus::{Data, Runtime, Scope};

use serde::{Deserialize, Serialize};

use crate::affinity::{hinted, AffinityMode};
use crate::csr::{laplacian_nnz, Csr, Placed, Plan};
use crate::replay::{Hints, Spawn};
use crate::size::{kernel_params, KernelParams, Options};
use crate::spmv::{check_mesh, read_square};

/// Iterations a run submits when the engine skips task bodies.
pub const ITERATIONS_WITHOUT_BODIES: usize = 50;

/// Size of the problem, tolerance and hints.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Side of the mesh of the Laplacian (`mesh²` rows); unused with `matrix`.
    pub mesh: usize,
    /// Row partitions.
    pub partitions: usize,
    /// The solve stops when `‖r‖ ≤ 10^-tolerance_digits ‖b‖`.
    pub tolerance_digits: usize,
    /// The solve stops after this many iterations in any case.
    pub max_iterations: usize,
    /// Which tasks carry affinity hints.
    pub affinity: AffinityMode,
    /// A Matrix Market file to use instead of the Laplacian.
    pub matrix: Option<String>,
}

impl Default for Params {
    /// A 128 × 128 mesh in 16 partitions, to 10^-8, at most 2000 iterations.
    fn default() -> Self {
        Params {
            mesh: 128,
            partitions: 16,
            tolerance_digits: 8,
            max_iterations: 2000,
            affinity: AffinityMode::Strict,
            matrix: None,
        }
    }
}

impl Params {
    /// Paper 3 section 4.3's matrix: the 2000 × 2000 mesh, 192 partitions.
    pub fn paper() -> Self {
        Params {
            mesh: 2000,
            partitions: 192,
            max_iterations: 20000,
            ..Params::default()
        }
    }

    /// The same problem on the SGI-192 (paper 3 ran on that machine).
    pub fn paper_sgi() -> Self {
        Params::paper()
    }

    /// An 8 × 8 mesh in 4 partitions: for tests.
    pub fn tiny() -> Self {
        Params {
            mesh: 8,
            partitions: 4,
            ..Params::default()
        }
    }

    /// The tolerance on the relative residual.
    pub fn tolerance(&self) -> f64 {
        10f64.powi(-(self.tolerance_digits.min(300) as i32))
    }

    /// Checks what does not need the matrix (as [`crate::spmv::Params::validate`]),
    /// and a tolerance of 1 to 300 digits.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.positive("partitions", self.partitions)?;
        o.positive("max_iterations", self.max_iterations)?;
        o.positive("tolerance_digits", self.tolerance_digits)?;
        if self.tolerance_digits > 300 {
            return Err(format!(
                "bicgstab: {} = {} is more than 300",
                o.label("tolerance_digits"),
                self.tolerance_digits
            ));
        }
        o.count("partitions", &[("partitions", self.partitions)])?;
        if self.matrix.is_none() {
            check_mesh(&o, self.mesh, self.partitions)?;
        }
        o.tasks(&[
            ("partitions", self.partitions),
            ("max_iterations", self.max_iterations),
        ])?;
        crate::size::finishes(self)
    }
}

kernel_params!(
    Options {
        name: "bicgstab",
        axes: &[],
        size: Some("mesh"),
        iterations: Some("max_iterations"),
    },
    bytes: |p| crate::spmv::bytes(laplacian_nnz(p.mesh) as u64, (p.mesh as u64).saturating_mul(p.mesh as u64), 8)
);

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
    /// The problem of `params`, reading its matrix file if it names one (errors as
    /// [`crate::spmv::Problem::new`]).
    pub fn new(params: Params) -> Result<Problem, String> {
        let file = read_square("bicgstab", params.matrix.as_deref(), params.partitions)?;
        Ok(Problem { params, file })
    }

    /// Bytes of the matrix and of the eight vectors.
    pub fn data_bytes(&self) -> u64 {
        match &self.file {
            Some(a) => crate::spmv::bytes(a.nnz() as u64, a.rows as u64, 8),
            None => self.params.data_bytes(),
        }
    }

    /// Tasks of a run of `iterations` iterations, with the solver task if `solver`:
    /// per partition two initialisations, then per iteration seven tasks per
    /// partition and three combines, after one combine of the initialisation.
    pub fn tasks(&self, iterations: usize, solver: bool) -> u64 {
        let p = self.params.partitions as u64;
        let per_iteration = 7 * p + 3;
        (2 * p + 1)
            .saturating_add(per_iteration.saturating_mul(iterations as u64))
            .saturating_add(u64::from(solver))
    }

    pub(crate) fn matrix(&self) -> Result<Arc<Csr>, crate::Error> {
        match &self.file {
            Some(a) => Ok(a.clone()),
            None => Ok(Arc::new(Csr::laplacian(self.params.mesh)?)),
        }
    }
}

/// The known solution's element `i`.
pub fn solution(i: usize) -> f64 {
    crate::spmv::initial(i)
}

// Entries of the scalars datum.
const RHO: usize = 0;
const ALPHA: usize = 1;
const OMEGA: usize = 2;
const BETA: usize = 3;
const RR: usize = 4;
const BB: usize = 5;
const SCALARS: usize = 6;

/// What the sequential reference gives.
#[derive(Debug, Clone)]
pub struct Solved {
    /// The solution.
    pub x: Vec<f64>,
    /// Iterations run.
    pub iterations: usize,
    /// Whether the residual reached the tolerance.
    pub converged: bool,
    /// The solver's own (recursively updated) relative residual `‖r‖ / ‖b‖` at the end.
    pub residual: f64,
}

/// ω = (t, s) / (t, t), or 0 when t = 0. Then s = 0 (the matrix is non-singular):
/// the half step solved the system, and r = s - ω t = 0 ends the solve.
fn omega(ts: f64, tt: f64) -> f64 {
    if tt == 0.0 {
        0.0
    } else {
        ts / tt
    }
}

/// β = (ρ' / ρ)(α / ω), or 0 when ω = 0: the system is solved and p is not used
/// again (the quotient would be 0 / 0).
fn beta(rho_next: f64, rho: f64, alpha: f64, omega: f64) -> f64 {
    if omega == 0.0 {
        0.0
    } else {
        (rho_next / rho) * (alpha / omega)
    }
}

fn converged(sc: &[f64], tol: f64) -> bool {
    sc[RR] <= tol * tol * sc[BB]
}

/// The sequential reference: the same operations as the tasks, in the same order, over
/// the whole vectors, with the dot products summed per partition of `parts` and the
/// partial sums added in partition order.
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if its vectors cannot be allocated.
pub fn reference(
    a: &Csr,
    parts: &[std::ops::Range<usize>],
    tol: f64,
    max_iterations: usize,
) -> Result<Solved, crate::Error> {
    let n = a.rows;
    let vector = |what: &str| crate::alloc::filled(what, n, 0.0);
    let product = |x: &[f64], y: &mut [f64]| {
        for (i, out) in y.iter_mut().enumerate() {
            let mut sum = 0.0;
            for k in a.row_ptr[i]..a.row_ptr[i + 1] {
                sum += a.vals[k] * x[a.col_idx[k] as usize];
            }
            *out = sum;
        }
    };
    // A dot product summed per partition, then the partials in order.
    let dot = |u: &[f64], w: &[f64]| {
        let mut total = 0.0;
        for r in parts {
            let mut partial = 0.0;
            for i in r.clone() {
                partial += u[i] * w[i];
            }
            total += partial;
        }
        total
    };
    let xs: Vec<f64> = crate::alloc::collected("the solution", n, (0..n).map(solution))?;
    let mut b = vector("b")?;
    product(&xs, &mut b);
    let mut x = vector("x")?;
    let mut r = crate::alloc::copied("r", &b)?;
    let rhat = crate::alloc::copied("r̂", &b)?;
    let mut p = crate::alloc::copied("p", &b)?;
    let (mut v, mut s, mut t) = (vector("v")?, vector("s")?, vector("t")?);
    let bb = dot(&b, &b);
    let mut sc = [0.0; SCALARS];
    sc[RHO] = bb;
    sc[RR] = bb;
    sc[BB] = bb;
    let mut iterations = 0;
    while !converged(&sc, tol) && iterations < max_iterations {
        product(&p, &mut v);
        sc[ALPHA] = sc[RHO] / dot(&rhat, &v);
        for i in 0..n {
            s[i] = r[i] - sc[ALPHA] * v[i];
        }
        product(&s, &mut t);
        sc[OMEGA] = omega(dot(&t, &s), dot(&t, &t));
        for i in 0..n {
            x[i] = x[i] + sc[ALPHA] * p[i] + sc[OMEGA] * s[i];
            r[i] = s[i] - sc[OMEGA] * t[i];
        }
        let rho = dot(&rhat, &r);
        sc[RR] = dot(&r, &r);
        sc[BETA] = beta(rho, sc[RHO], sc[ALPHA], sc[OMEGA]);
        sc[RHO] = rho;
        for i in 0..n {
            p[i] = r[i] + sc[BETA] * (p[i] - sc[OMEGA] * v[i]);
        }
        iterations += 1;
    }
    Ok(Solved {
        x,
        iterations,
        converged: converged(&sc, tol),
        residual: if sc[BB] == 0.0 {
            sc[RR].sqrt()
        } else {
            (sc[RR] / sc[BB]).sqrt()
        },
    })
}

/// `‖b - A x‖ / ‖b‖` with `b = A x*`, in plain sequential sums.
pub fn true_residual(a: &Csr, x: &[f64]) -> f64 {
    let (mut rr, mut bb) = (0.0, 0.0);
    for i in 0..a.rows {
        let (mut ax, mut b) = (0.0, 0.0);
        for k in a.row_ptr[i]..a.row_ptr[i + 1] {
            let j = a.col_idx[k] as usize;
            ax += a.vals[k] * x[j];
            b += a.vals[k] * solution(j);
        }
        rr += (b - ax) * (b - ax);
        bb += b * b;
    }
    if bb == 0.0 {
        rr.sqrt()
    } else {
        (rr / bb).sqrt()
    }
}

/// The solver's data: the matrix's partitions, one slice per partition of each vector,
/// one datum of partial sums per partition, the scalars.
struct Solver {
    placed: Placed,
    b: Vec<Data<f64>>,
    x: Vec<Data<f64>>,
    r: Vec<Data<f64>>,
    rhat: Vec<Data<f64>>,
    p: Vec<Data<f64>>,
    v: Vec<Data<f64>>,
    s: Vec<Data<f64>>,
    t: Vec<Data<f64>>,
    partial: Vec<Data<f64>>,
    sc: Data<f64>,
    /// The scalars before the first iteration, for the solver's first test.
    start: Data<f64>,
    mode: AffinityMode,
}

fn dot(u: &[f64], w: &[f64]) -> f64 {
    u.iter().zip(w).fold(0.0, |acc, (a, b)| acc + a * b)
}

impl Solver {
    fn new(rt: &Runtime, plan: Arc<Plan>, mode: AffinityMode) -> Solver {
        let slices = |name: &str| -> Vec<Data<f64>> {
            plan.parts
                .iter()
                .enumerate()
                .map(|(q, r)| rt.data(format!("bicgstab.{name}.{q}"), r.len()))
                .collect()
        };
        Solver {
            b: slices("b"),
            x: slices("x"),
            r: slices("r"),
            rhat: slices("rhat"),
            p: slices("p"),
            v: slices("v"),
            s: slices("s"),
            t: slices("t"),
            partial: (0..plan.parts.len())
                .map(|q| rt.data(format!("bicgstab.partial.{q}"), 2))
                .collect(),
            sc: rt.data("bicgstab.scalars", SCALARS),
            start: rt.data("bicgstab.start", SCALARS),
            placed: Placed::new(rt, "bicgstab", plan),
            mode,
        }
    }

    fn parts(&self) -> usize {
        self.b.len()
    }

    /// Spawns (or records) a task of partition `q`, hinted towards its owner.
    fn task<L, F>(
        &self,
        s: &impl Spawn,
        name: &'static str,
        q: usize,
        accesses: L,
        body: F,
    ) -> Result<(), locus::Error>
    where
        L: locus::AccessList + Sync,
        F: for<'a> Fn(L::Views<'a>) + Send + Sync + 'static,
    {
        let hint = self.mode.compute(self.placed.owner(q));
        s.spawn_hinted(name, accesses, Hints::affinity(hint), body)
    }

    /// The combine task: the partial sums of every partition, added in partition
    /// order, then `then(scalars, sums)`.
    fn combine(
        &self,
        s: &impl Spawn,
        name: &'static str,
        then: fn(&mut [f64], [f64; 2]),
    ) -> Result<(), locus::Error> {
        let partials: Vec<_> = self.partial.iter().map(Data::read).collect();
        s.spawn_task(
            name,
            (partials, self.sc.read_write()),
            move |(partials, sc)| {
                let mut sums = [0.0; 2];
                for part in partials {
                    sums[0] += part[0];
                    sums[1] += part[1];
                }
                then(sc, sums);
            },
        )
    }

    /// The initialisation: the matrix, `b = A x*`, `x = 0`, `r = r̂ = p = b`, the
    /// partials of `(b, b)`, and the scalars.
    fn init(&self, s: &Scope) -> Result<(), locus::Error> {
        let plan = &self.placed.plan;
        for q in 0..self.parts() {
            self.placed.init(s, self.mode, q)?;
            let plan = plan.clone();
            hinted(
                s.task(
                    "init-vectors",
                    (
                        self.b[q].write(),
                        self.x[q].write(),
                        self.r[q].write(),
                        self.rhat[q].write(),
                        self.p[q].write(),
                        self.partial[q].write(),
                    ),
                ),
                self.mode.init(self.placed.owner(q)),
            )
            .spawn(move |_, (b, x, r, rhat, p, partial)| {
                let (a, rows) = (&plan.a, plan.parts[q].clone());
                for (o, i) in b.iter_mut().zip(rows) {
                    let mut sum = 0.0;
                    for k in a.row_ptr[i]..a.row_ptr[i + 1] {
                        sum += a.vals[k] * solution(a.col_idx[k] as usize);
                    }
                    *o = sum;
                }
                x.fill(0.0);
                r.copy_from_slice(b);
                rhat.copy_from_slice(b);
                p.copy_from_slice(b);
                let bb = dot(b, b);
                partial.copy_from_slice(&[bb, bb]);
            })?;
        }
        let partials: Vec<_> = self.partial.iter().map(Data::read).collect();
        s.task(
            "init-scalars",
            (partials, self.sc.write(), self.start.write()),
        )
        .spawn(move |_, (partials, sc, start)| {
            let bb = partials.iter().fold(0.0, |acc, p| acc + p[0]);
            sc.fill(0.0);
            sc[RHO] = bb;
            sc[RR] = bb;
            sc[BB] = bb;
            start.copy_from_slice(sc);
        })
    }

    /// Submits (or records) one iteration.
    fn iteration(&self, s: &impl Spawn) -> Result<(), locus::Error> {
        let (parts, placed, mode) = (self.parts(), &self.placed, self.mode);
        for q in 0..parts {
            placed.product(s, mode, q, &self.p, &self.v[q])?;
            self.task(
                s,
                "dot",
                q,
                (
                    self.rhat[q].read(),
                    self.v[q].read(),
                    self.partial[q].write(),
                ),
                |(rhat, v, partial)| partial.copy_from_slice(&[dot(rhat, v), 0.0]),
            )?;
        }
        self.combine(s, "alpha", |sc, [rv, _]| sc[ALPHA] = sc[RHO] / rv)?;
        for q in 0..parts {
            self.task(
                s,
                "update-s",
                q,
                (
                    self.sc.read(),
                    self.r[q].read(),
                    self.v[q].read(),
                    self.s[q].write(),
                ),
                |(sc, r, v, out)| {
                    for ((o, r), v) in out.iter_mut().zip(r).zip(v) {
                        *o = r - sc[ALPHA] * v;
                    }
                },
            )?;
        }
        for q in 0..parts {
            placed.product(s, mode, q, &self.s, &self.t[q])?;
            self.task(
                s,
                "dot",
                q,
                (self.t[q].read(), self.s[q].read(), self.partial[q].write()),
                |(t, s, partial)| partial.copy_from_slice(&[dot(t, s), dot(t, t)]),
            )?;
        }
        self.combine(s, "omega", |sc, [ts, tt]| sc[OMEGA] = omega(ts, tt))?;
        for q in 0..parts {
            self.task(
                s,
                "update-x-r",
                q,
                (
                    (self.sc.read(), self.p[q].read(), self.s[q].read()),
                    (self.t[q].read(), self.rhat[q].read()),
                    (
                        self.x[q].read_write(),
                        self.r[q].write(),
                        self.partial[q].write(),
                    ),
                ),
                |((sc, p, s), (t, rhat), (x, r, partial))| {
                    for i in 0..x.len() {
                        x[i] = x[i] + sc[ALPHA] * p[i] + sc[OMEGA] * s[i];
                        r[i] = s[i] - sc[OMEGA] * t[i];
                    }
                    partial.copy_from_slice(&[dot(rhat, r), dot(r, r)]);
                },
            )?;
        }
        self.combine(s, "beta", |sc, [rho, rr]| {
            sc[RR] = rr;
            sc[BETA] = beta(rho, sc[RHO], sc[ALPHA], sc[OMEGA]);
            sc[RHO] = rho;
        })?;
        for q in 0..parts {
            self.task(
                s,
                "update-p",
                q,
                (
                    self.sc.read(),
                    self.r[q].read(),
                    self.v[q].read(),
                    self.p[q].read_write(),
                ),
                |(sc, r, v, p)| {
                    for i in 0..p.len() {
                        p[i] = r[i] + sc[BETA] * (p[i] - sc[OMEGA] * v[i]);
                    }
                },
            )?;
        }
        Ok(())
    }

    /// Every datum the iterations use, for the solver task's weak declarations.
    fn weak(&self) -> Vec<locus::Weak> {
        let mut w: Vec<locus::Weak> = Vec::new();
        for d in &self.placed.parts {
            w.push(d.row_ptr.weak_read());
            w.push(d.cols.weak_read());
            w.push(d.vals.weak_read());
        }
        for set in [&self.x, &self.r, &self.p, &self.v, &self.s, &self.t] {
            w.extend(set.iter().map(Data::weak_read_write));
        }
        w.extend(self.rhat.iter().map(Data::weak_read));
        w.extend(self.partial.iter().map(Data::weak_read_write));
        w.push(self.sc.weak_read_write());
        w
    }
}

/// Builds, runs and verifies the solve; gives the outcome and the tasks the run's
/// program described (which depend on the iterations the solve took).
pub fn run(rt: &Runtime, problem: &Problem) -> Result<(crate::Outcome, u64), crate::Error> {
    let (tol, max_iterations) = (problem.params.tolerance(), problem.params.max_iterations);
    run_against(rt, problem, |a, parts| {
        reference(a, parts, tol, max_iterations)
    })
}

/// [`run`] against `want(matrix, partitions)` instead of the reference.
pub(crate) fn run_against(
    rt: &Runtime,
    problem: &Problem,
    want: impl FnOnce(&Csr, &[std::ops::Range<usize>]) -> Result<Solved, crate::Error>,
) -> Result<(crate::Outcome, u64), crate::Error> {
    let params = &problem.params;
    params.validate().map_err(crate::Error::Params)?;
    let a = problem.matrix()?;
    let plan = Arc::new(Plan::new(a.clone(), params.partitions));
    let solver = Arc::new(Solver::new(rt, plan.clone(), params.affinity));
    let (tol, max_iterations) = (params.tolerance(), params.max_iterations);
    let skip = rt.skips_bodies();
    let done = rt.data::<u64>("bicgstab.iterations", 1);
    let finished = rt.run(|s| -> Result<usize, locus::Error> {
        solver.init(s)?;
        if skip {
            let iterations = ITERATIONS_WITHOUT_BODIES.min(max_iterations);
            for _ in 0..iterations {
                solver.iteration(s)?;
            }
            return Ok(iterations);
        }
        let sv = solver.clone();
        s.spawn(
            "bicgstab",
            (solver.weak(), solver.start.read(), done.write()),
            move |ctx, (_, start, iterations)| {
                let mut i = 0;
                let mut done = converged(start, tol);
                // Stops early otherwise only when the run has failed: the run says why.
                while !done && i < max_iterations && sv.iteration(ctx.scope()).is_ok() {
                    i += 1;
                    done = ctx.fetch(&sv.sc).map_or(true, |sc| converged(&sc, tol));
                }
                iterations[0] = i as u64;
            },
        )?;
        Ok(0)
    })?;
    let (skipped_iterations, report) = crate::finished(finished)?;
    if skip {
        return Ok((
            crate::Outcome::unchecked(report),
            problem.tasks(skipped_iterations, false),
        ));
    }
    let iterations = rt.fetch(&done)?[0] as usize;
    let tasks = problem.tasks(iterations, true);
    let want = want(&a, &plan.parts)?;
    let mismatch = verify(rt, &a, &solver, &want, iterations, tol)?;
    Ok((crate::Outcome::checked(report, mismatch), tasks))
}

/// [`run`] as a recorded graph (`--replay`): the initialisation runs dynamically, then
/// one iteration is recorded and replayed one iteration at a time, the control program
/// testing the residual before each replay as the solver task of [`run`] does between
/// its iterations; the same operations in the same order, so the same bits. When the
/// engine skips task bodies, [`ITERATIONS_WITHOUT_BODIES`] iterations (at most
/// `max_iterations`) are replayed at once. No affinity hints.
pub fn run_replay(rt: &Runtime, problem: &Problem) -> Result<(crate::Outcome, u64), crate::Error> {
    let params = &problem.params;
    params.validate().map_err(crate::Error::Params)?;
    crate::replay::no_hints(params.affinity)?;
    let a = problem.matrix()?;
    let plan = Arc::new(Plan::new(a.clone(), params.partitions));
    let solver = Solver::new(rt, plan.clone(), params.affinity);
    let (tol, max_iterations) = (params.tolerance(), params.max_iterations);
    let finished = rt.run(|s| solver.init(s))?;
    let ((), mut report) = crate::finished(finished)?;
    let mut graph = rt.record("bicgstab", |r| solver.iteration(r))?;
    if rt.skips_bodies() {
        let iterations = ITERATIONS_WITHOUT_BODIES.min(max_iterations);
        crate::replay::then_replayed(&mut report, &rt.replay(&mut graph, iterations as u64)?);
        return Ok((
            crate::Outcome::unchecked(report),
            problem.tasks(iterations, false),
        ));
    }
    let mut iterations = 0;
    while iterations < max_iterations && !converged(&rt.fetch(&solver.sc)?, tol) {
        crate::replay::then_replayed(&mut report, &rt.replay(&mut graph, 1)?);
        iterations += 1;
    }
    let want = reference(&a, &plan.parts, tol, max_iterations)?;
    let mismatch = verify(rt, &a, &solver, &want, iterations, tol)?;
    Ok((
        crate::Outcome::checked(report, mismatch),
        problem.tasks(iterations, false),
    ))
}

/// Compares the solution and the iteration count with `want`'s, and checks the true
/// residual (see the [module docs](self)).
fn verify(
    rt: &Runtime,
    a: &Csr,
    solver: &Solver,
    want: &Solved,
    iterations: usize,
    tol: f64,
) -> Result<Option<crate::Mismatch>, crate::Error> {
    let parts = &solver.placed.plan.parts;
    let mut check = crate::verify::Check::new();
    for (q, d) in solver.x.iter().enumerate() {
        let start = parts[q].start;
        check.block("x", &rt.fetch(d)?, &want.x, |i| start + i);
    }
    let mut mismatch = check.finish();
    if mismatch.is_none() && iterations != want.iterations {
        mismatch = Some(crate::Mismatch {
            what: "iterations".into(),
            index: 0,
            got: iterations.to_string(),
            want: want.iterations.to_string(),
        });
    }
    if mismatch.is_none() {
        // The true residual must be what the solver believes it reached (to the
        // tolerance, or where `max_iterations` stopped it), within a factor of ten.
        let residual = true_residual(a, &want.x);
        let bound = 10.0 * want.residual.max(tol);
        if residual.is_nan() || residual > bound {
            mismatch = Some(crate::Mismatch {
                what: "true residual".into(),
                index: iterations,
                got: format!("{residual:e} after {iterations} iterations"),
                want: format!("at most {bound:e}"),
            });
        }
    }
    Ok(mismatch)
}
