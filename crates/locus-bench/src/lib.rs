//! Benchmark workloads for Locus. Every workload has a sequential reference and every
//! run verifies its result against it.
//!
//! - [`random_dag`]: seeded random task graphs over versioned data of random sizes.
//! - [`jacobi_1d`]: a blocked 1-D Jacobi stencil, the chain-of-stencils shape.
//! - [`overhead`]: many tiny dependent tasks in chains and fan-in/fan-out rounds.
//! - [`jacobi_2d`]: a blocked 2-D five-point Jacobi stencil, column halos as outputs.
//! - [`jacobi_3d`]: a blocked 3-D seven-point Jacobi stencil, faces as outputs.
//! - [`seidel_1d`]: a blocked 1-D Gauss-Seidel stencil (current-iteration left halo).
//! - [`seidel_2d`]: a blocked 2-D five-point Gauss-Seidel stencil.
//! - [`seidel_3d`]: a blocked 3-D seven-point Gauss-Seidel stencil.
//! - [`kmeans`]: k-means clustering; point blocks flow from iteration to iteration,
//!   partial sums reduce into the centroids.
//! - [`blur_roberts`]: a Gaussian blur then a Roberts cross over image blocks.
//! - [`bitonic`]: a blocked bitonic sorting network over 64-bit integers.
//! - [`sparselu`]: BOTS's LU factorisation of a sparse block matrix (paper 4).
//! - [`cholesky`]: the tiled Cholesky factorisation, tile kernels shared with the peers.
//! - [`spmv`]: repeated sparse matrix-vector products over row partitions placed on
//!   the nodes (paper 3), the matrix generated or read from a Matrix Market file
//!   ([`mtx`]).
//! - [`bicgstab`]: the BiCGStab solver over the same partitions, to a tolerance.
//! - [`stream`]: STREAM's copy, scale, add and triad over blocks of three vectors, with
//!   [`nested_stream`] (one set of vectors per node) and [`twisted_stream`] (teams swap
//!   data between two phases: migrate the data, or move the tasks), paper 2's
//!   benchmarks.
//!
//! Every reference is its own sequential loop over the whole problem, written from the
//! kernel's definition and calling none of the functions the task bodies run; it does
//! the same floating-point operations in the same order, so results are compared bit
//! for bit ([`verify`]) and a failure names the first differing element.
//!
//! The paper-1 kernels (section 4.3) run through one dispatch point, [`run_kernel`], at
//! a [`Size`] and under a [`Control`] program ([`control`]). A [`Workload`] runs any of
//! them at a [`SizeSpec`]: a named size with explicit overrides (`--size`, `--blocks`,
//! `--block-len`, `--iterations`, `--param FIELD=VALUE`), validated before anything
//! runs ([`size`] gives the rules, each kernel's module docs its mapping).
//!
//! "Paper 1" is Drebes et al. 2016 (work-pushing and deferred allocation), whose
//! evaluation these kernels reproduce; `docs/papers.md` of the repository lists it.

pub mod affinity;
mod alloc;
pub mod bicgstab;
pub mod bitonic;
pub mod blur_roberts;
pub mod cholesky;
pub mod control;
pub mod csr;
pub mod jacobi_1d;
pub mod jacobi_2d;
pub mod jacobi_3d;
pub mod kmeans;
pub mod mtx;
pub mod nested_stream;
pub mod overhead;
pub mod random_dag;
pub mod replay;
pub mod seidel_1d;
pub mod seidel_2d;
pub mod seidel_3d;
pub mod size;
pub mod sparselu;
pub mod spmv;
mod stencil;
pub mod stream;
pub mod twisted_stream;
pub mod verify;

pub use control::Control;
pub use size::SizeSpec;
pub use verify::Mismatch;

use locus::Runtime;
use serde::Serialize;

use size::KernelParams;

/// The paper-1 kernels (section 4.3), by their command-line names.
pub const KERNELS: &[&str] = &[
    "jacobi-1d",
    "jacobi-2d",
    "jacobi-3d",
    "seidel-1d",
    "seidel-2d",
    "seidel-3d",
    "kmeans",
    "blur-roberts",
    "bitonic",
];

/// Every workload [`run_kernel`] knows: the [`KERNELS`], then `random-dag` and
/// `overhead`.
pub const BENCHES: &[&str] = &[
    "random-dag",
    "overhead",
    "jacobi-1d",
    "jacobi-2d",
    "jacobi-3d",
    "seidel-1d",
    "seidel-2d",
    "seidel-3d",
    "kmeans",
    "blur-roberts",
    "bitonic",
    "sparselu",
    "cholesky",
    "spmv",
    "bicgstab",
    "stream",
    "nested-stream",
    "twisted-stream",
];

/// Problem size of a [`run_kernel`] run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Size {
    /// A few milliseconds per run: for tests.
    Tiny,
    /// Each module's `Params::default()`: well under a second on two cores.
    #[default]
    Small,
    /// Paper 1 Table 3 for the Opteron-64: gigabytes of data, minutes of work.
    Paper,
    /// Paper 1 Table 3 for the SGI-192: the same problems with the block sizes tuned
    /// for that machine, and blur-roberts at 2^16 x 2^16.
    PaperSgi,
}

impl Size {
    /// Paper 1 Table 3 for the machine `topology` names: [`Size::PaperSgi`] for the
    /// `sgi-uv2000` preset, [`Size::Paper`] (the Opteron-64's) for any other.
    pub fn paper_for(topology: &str) -> Size {
        if topology.starts_with("sgi-uv2000") {
            Size::PaperSgi
        } else {
            Size::Paper
        }
    }

    /// Whether this is one of paper 1's sizes.
    pub fn is_paper(self) -> bool {
        matches!(self, Size::Paper | Size::PaperSgi)
    }
}

impl std::str::FromStr for Size {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tiny" => Ok(Size::Tiny),
            "small" => Ok(Size::Small),
            "paper" => Ok(Size::Paper),
            "paper-sgi" => Ok(Size::PaperSgi),
            _ => Err(format!(
                "unknown size `{}` (expected tiny, small, paper or paper-sgi)",
                size::one_line(s)
            )),
        }
    }
}

/// Outcome of one run of a kernel.
#[derive(Debug)]
pub struct Outcome {
    /// Whether the result equals the sequential reference bit for bit.
    pub verified: bool,
    /// The first element that differs from the reference, when one does.
    pub mismatch: Option<Mismatch>,
    /// The run's report.
    pub report: locus::Report,
}

impl Outcome {
    /// The outcome of a run whose bodies were skipped: nothing to verify.
    pub(crate) fn unchecked(report: locus::Report) -> Self {
        Outcome {
            verified: false,
            mismatch: None,
            report,
        }
    }

    /// The outcome of a run compared with its reference: verified when nothing differs.
    pub(crate) fn checked(report: locus::Report, mismatch: Option<Mismatch>) -> Self {
        Outcome {
            verified: mismatch.is_none(),
            mismatch,
            report,
        }
    }
}

/// Outcome of one run through [`run_kernel`].
#[derive(Debug)]
pub struct KernelOutcome {
    /// Whether the result equals the sequential reference.
    pub verified: bool,
    /// Whether the result was checked at all: not when the engine skipped the task
    /// bodies (a simulation at paper size), then `verified` is false.
    pub checked: bool,
    /// The first element that differs from the reference, when one does.
    pub mismatch: Option<Mismatch>,
    /// The run's report.
    pub report: locus::Report,
    /// The parameters the kernel ran with, control program included.
    pub params: serde_json::Value,
    /// Figures of the kernel's own, beyond the report (the STREAM family's rates per
    /// operation and phase), or `Null`.
    pub figures: serde_json::Value,
}

fn params_json(p: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(p).expect("parameters serialise to JSON")
}

/// One workload with the parameters it will run with, resolved from a [`SizeSpec`] and
/// validated.
///
/// ```
/// use locus::{Config, Runtime, Topology};
/// use locus_bench::{Control, Size, SizeSpec, Workload};
///
/// let spec = SizeSpec {
///     size: Some(32),
///     block_len: Some(8),
///     fields: vec![("block_rows".into(), "16".into())],
///     ..SizeSpec::from(Size::Tiny)
/// };
/// let w = Workload::new("jacobi-2d", &spec, Control::Sequential).unwrap();
/// assert_eq!(w.params()["rows"], 32);
/// assert_eq!(w.params()["block_rows"], 16);
/// assert_eq!(w.params()["block_cols"], 8);
///
/// let rt = Runtime::builder()
///     .topology(Topology::from_spec("2x1").unwrap())
///     .config(Config::DsaOpt)
///     .build()
///     .unwrap();
/// assert!(w.run(&rt).unwrap().verified);
///
/// let bad = SizeSpec { block_len: Some(5), ..spec };
/// let e = Workload::new("jacobi-2d", &bad, Control::Sequential).unwrap_err();
/// assert!(e.to_string().contains("--block-len"), "{e}");
/// ```
#[derive(Clone, Debug)]
pub enum Workload {
    /// [`random_dag`].
    RandomDag(random_dag::Params),
    /// [`overhead`].
    Overhead(overhead::Params),
    /// [`jacobi_1d`], whose parameters have no control program.
    Jacobi1d(jacobi_1d::Params, Control),
    /// [`jacobi_2d`].
    Jacobi2d(jacobi_2d::Params),
    /// [`jacobi_3d`].
    Jacobi3d(jacobi_3d::Params),
    /// [`seidel_1d`].
    Seidel1d(seidel_1d::Params),
    /// [`seidel_2d`].
    Seidel2d(seidel_2d::Params),
    /// [`seidel_3d`].
    Seidel3d(seidel_3d::Params),
    /// [`kmeans`].
    Kmeans(kmeans::Params),
    /// [`blur_roberts`].
    BlurRoberts(blur_roberts::Params),
    /// [`bitonic`].
    Bitonic(bitonic::Params),
    /// [`sparselu`].
    SparseLu(sparselu::Params),
    /// [`cholesky`].
    Cholesky(cholesky::Params),
    /// [`spmv`]; its control program is always sequential.
    Spmv(spmv::Problem),
    /// [`bicgstab`]; its control program is always sequential.
    Bicgstab(bicgstab::Problem),
    /// [`stream`]; no control program of its own (each operation is a run).
    Stream(stream::Params),
    /// [`nested_stream`].
    NestedStream(nested_stream::Params),
    /// [`twisted_stream`].
    TwistedStream(twisted_stream::Params),
}

impl Workload {
    /// The workload `name` (one of [`BENCHES`]) at `spec` under `control`, validated:
    /// an unknown name is [`Error::UnknownBench`], parameters the kernel cannot run
    /// [`Error::Params`] with a message naming the option.
    ///
    /// `random-dag` and `overhead` have no paper size (`Paper` gives their defaults) and
    /// no parallel control program (their tasks form one arbitrary graph, submitted in
    /// order); `control` is then ignored.
    pub fn new(name: &str, spec: &SizeSpec, control: Control) -> Result<Self, Error> {
        let p = |e: String| Error::Params(e);
        Ok(match name {
            "random-dag" => Workload::RandomDag(size::resolve(spec, control).map_err(p)?),
            "overhead" => Workload::Overhead(size::resolve(spec, control).map_err(p)?),
            "jacobi-1d" => Workload::Jacobi1d(size::resolve(spec, control).map_err(p)?, control),
            "jacobi-2d" => Workload::Jacobi2d(size::resolve(spec, control).map_err(p)?),
            "jacobi-3d" => Workload::Jacobi3d(size::resolve(spec, control).map_err(p)?),
            "seidel-1d" => Workload::Seidel1d(size::resolve(spec, control).map_err(p)?),
            "seidel-2d" => Workload::Seidel2d(size::resolve(spec, control).map_err(p)?),
            "seidel-3d" => Workload::Seidel3d(size::resolve(spec, control).map_err(p)?),
            "kmeans" => Workload::Kmeans(size::resolve(spec, control).map_err(p)?),
            "blur-roberts" => Workload::BlurRoberts(size::resolve(spec, control).map_err(p)?),
            "bitonic" => Workload::Bitonic(size::resolve(spec, control).map_err(p)?),
            "sparselu" => Workload::SparseLu(size::resolve(spec, control).map_err(p)?),
            "cholesky" => Workload::Cholesky(size::resolve(spec, control).map_err(p)?),
            "spmv" => Workload::Spmv(
                spmv::Problem::new(size::resolve(spec, control).map_err(p)?).map_err(p)?,
            ),
            "bicgstab" => Workload::Bicgstab(
                bicgstab::Problem::new(size::resolve(spec, control).map_err(p)?).map_err(p)?,
            ),
            "stream" => Workload::Stream(size::resolve(spec, control).map_err(p)?),
            "nested-stream" => Workload::NestedStream(size::resolve(spec, control).map_err(p)?),
            "twisted-stream" => Workload::TwistedStream(size::resolve(spec, control).map_err(p)?),
            _ => return Err(Error::UnknownBench(name.to_string())),
        })
    }

    /// The workload's name, one of [`BENCHES`].
    pub fn name(&self) -> &'static str {
        match self {
            Workload::RandomDag(_) => "random-dag",
            Workload::Overhead(_) => "overhead",
            Workload::Jacobi1d(..) => "jacobi-1d",
            Workload::Jacobi2d(_) => "jacobi-2d",
            Workload::Jacobi3d(_) => "jacobi-3d",
            Workload::Seidel1d(_) => "seidel-1d",
            Workload::Seidel2d(_) => "seidel-2d",
            Workload::Seidel3d(_) => "seidel-3d",
            Workload::Kmeans(_) => "kmeans",
            Workload::BlurRoberts(_) => "blur-roberts",
            Workload::Bitonic(_) => "bitonic",
            Workload::SparseLu(_) => "sparselu",
            Workload::Cholesky(_) => "cholesky",
            Workload::Spmv(_) => "spmv",
            Workload::Bicgstab(_) => "bicgstab",
            Workload::Stream(_) => "stream",
            Workload::NestedStream(_) => "nested-stream",
            Workload::TwistedStream(_) => "twisted-stream",
        }
    }

    /// The parameters the workload runs with, control program included (for reports).
    pub fn params(&self) -> serde_json::Value {
        match self {
            Workload::RandomDag(p) => params_json(p),
            Workload::Overhead(p) => params_json(p),
            Workload::Jacobi1d(p, control) => {
                let mut params = params_json(p);
                params["control"] = params_json(control);
                params
            }
            Workload::Jacobi2d(p) => params_json(p),
            Workload::Jacobi3d(p) => params_json(p),
            Workload::Seidel1d(p) => params_json(p),
            Workload::Seidel2d(p) => params_json(p),
            Workload::Seidel3d(p) => params_json(p),
            Workload::Kmeans(p) => params_json(p),
            Workload::BlurRoberts(p) => params_json(p),
            Workload::Bitonic(p) => params_json(p),
            Workload::SparseLu(p) => params_json(p),
            Workload::Cholesky(p) => {
                let mut params = params_json(p);
                params["flops"] = serde_json::json!(p.flops());
                params
            }
            Workload::Spmv(p) => params_json(&p.params),
            Workload::Bicgstab(p) => params_json(&p.params),
            Workload::Stream(p) => params_json(p),
            Workload::NestedStream(p) => params_json(p),
            Workload::TwistedStream(p) => params_json(p),
        }
    }

    /// Bytes of one version of the workload's main data: what a run holds at least, and
    /// what decides whether a simulation can afford to run the task bodies.
    pub fn data_bytes(&self) -> u64 {
        match self {
            Workload::RandomDag(p) => p.data_bytes(),
            Workload::Overhead(p) => p.data_bytes(),
            Workload::Jacobi1d(p, _) => p.data_bytes(),
            Workload::Jacobi2d(p) => p.data_bytes(),
            Workload::Jacobi3d(p) => p.data_bytes(),
            Workload::Seidel1d(p) => p.data_bytes(),
            Workload::Seidel2d(p) => p.data_bytes(),
            Workload::Seidel3d(p) => p.data_bytes(),
            Workload::Kmeans(p) => p.data_bytes(),
            Workload::BlurRoberts(p) => p.data_bytes(),
            Workload::Bitonic(p) => p.data_bytes(),
            Workload::SparseLu(p) => p.data_bytes(),
            Workload::Cholesky(p) => p.data_bytes(),
            Workload::Spmv(p) => p.data_bytes(),
            Workload::Bicgstab(p) => p.data_bytes(),
            Workload::Stream(p) => p.data_bytes(),
            Workload::NestedStream(p) => p.data_bytes(),
            Workload::TwistedStream(p) => p.data_bytes(),
        }
    }

    /// Tasks the workload's program describes, control tasks (creators) excluded: what
    /// every run of it must run, whatever the engine and the control program.
    pub fn kernel_tasks(&self) -> u64 {
        match self {
            Workload::RandomDag(p) => p.tasks as u64,
            Workload::Overhead(p) => overhead::tasks(p),
            Workload::Jacobi1d(p, control) => stencil::jacobi_1d(p, *control).tasks(),
            Workload::Jacobi2d(p) => p.tasks(),
            Workload::Jacobi3d(p) => p.grid().tasks(),
            Workload::Seidel1d(p) => p.grid().tasks(),
            Workload::Seidel2d(p) => p.grid().tasks(),
            Workload::Seidel3d(p) => p.grid().tasks(),
            Workload::Kmeans(p) => p.tasks(),
            Workload::BlurRoberts(p) => p.tasks(),
            Workload::Bitonic(p) => bitonic::tasks(p),
            Workload::SparseLu(p) => sparselu::tasks(p),
            Workload::Cholesky(p) => cholesky::tasks(p),
            Workload::Spmv(p) => p.tasks(),
            // Its solve stops when it converges: a run at the most iterations.
            Workload::Bicgstab(p) => p.tasks(p.params.max_iterations, true),
            Workload::Stream(p) => p.tasks(),
            // One set per node with workers: known once the runtime is.
            Workload::NestedStream(p) => p.tasks(1),
            Workload::TwistedStream(p) => p.tasks(1),
        }
    }

    /// Runs the workload on `rt` and verifies it.
    ///
    /// `jacobi-1d` runs [`jacobi_1d::run`] under sequential control and, under parallel
    /// control, the same blocks, halos and arithmetic through the stencil engine of the
    /// other stencils, with creators per band of blocks.
    pub fn run(&self, rt: &Runtime) -> Result<KernelOutcome, Error> {
        self.run_as(rt, false)
    }

    /// Runs the workload as a recorded graph (module [`replay`]) and verifies it
    /// against the same reference as [`run`](Self::run); workloads not in
    /// [`replay::REPLAYABLE`] give [`Error::Params`].
    pub fn run_replay(&self, rt: &Runtime) -> Result<KernelOutcome, Error> {
        self.run_as(rt, true)
    }

    fn run_as(&self, rt: &Runtime, replay: bool) -> Result<KernelOutcome, Error> {
        // The tasks a run described, when only the run can tell (a solve to a tolerance,
        // sets of vectors per node).
        let mut described = None;
        let mut figures = serde_json::Value::Null;
        let Outcome {
            verified,
            mismatch,
            report,
        } = match self {
            _ if replay => {
                let (out, tasks) = self.replayed(rt)?;
                described = tasks;
                out
            }
            Workload::RandomDag(p) => {
                let out = random_dag::run(rt, p)?;
                Outcome {
                    verified: out.verified,
                    mismatch: out.mismatch,
                    report: out.report,
                }
            }
            Workload::Overhead(p) => {
                let out = overhead::run(rt, p)?;
                Outcome {
                    verified: out.verified,
                    mismatch: out.mismatch,
                    report: out.report,
                }
            }
            Workload::Jacobi1d(p, Control::Sequential) => {
                let out = jacobi_1d::run(rt, p)?;
                Outcome {
                    verified: out.verified,
                    mismatch: out.mismatch,
                    report: out.report,
                }
            }
            Workload::Jacobi1d(p, control @ Control::Parallel) => {
                p.validate().map_err(Error::Params)?;
                stencil::run(rt, &stencil::jacobi_1d(p, *control), || {
                    jacobi_1d::reference(p)
                })?
            }
            Workload::Jacobi2d(p) => jacobi_2d::run(rt, p)?,
            Workload::Jacobi3d(p) => jacobi_3d::run(rt, p)?,
            Workload::Seidel1d(p) => seidel_1d::run(rt, p)?,
            Workload::Seidel2d(p) => seidel_2d::run(rt, p)?,
            Workload::Seidel3d(p) => seidel_3d::run(rt, p)?,
            Workload::Kmeans(p) => kmeans::run(rt, p)?,
            Workload::BlurRoberts(p) => blur_roberts::run(rt, p)?,
            Workload::Bitonic(p) => bitonic::run(rt, p)?,
            Workload::SparseLu(p) => sparselu::run(rt, p)?,
            Workload::Cholesky(p) => cholesky::run(rt, p)?,
            Workload::Spmv(p) => spmv::run(rt, p)?,
            Workload::Bicgstab(p) => {
                let (out, tasks) = bicgstab::run(rt, p)?;
                described = Some(tasks);
                out
            }
            Workload::Stream(p) => {
                let (out, f) = stream::run(rt, p)?;
                figures = f;
                out
            }
            Workload::NestedStream(p) => {
                let (out, f) = nested_stream::run(rt, p)?;
                described = Some(p.tasks(affinity::worker_nodes(rt).len()));
                figures = f;
                out
            }
            Workload::TwistedStream(p) => {
                let (out, f) = twisted_stream::run(rt, p)?;
                described = Some(p.tasks(affinity::worker_nodes(rt).len()));
                figures = f;
                out
            }
        };
        // A run that did less (or more) than its program describes is not a result.
        let expected = described.unwrap_or_else(|| self.kernel_tasks());
        let ran = report.tasks - report.control_tasks;
        if ran != expected {
            return Err(Error::TaskCount {
                bench: self.name(),
                expected,
                ran,
            });
        }
        Ok(KernelOutcome {
            verified,
            checked: !rt.skips_bodies(),
            mismatch,
            report,
            params: self.params(),
            figures,
        })
    }
}

/// Runs the workload `name` (one of [`BENCHES`]) on `rt` at the named `size` under
/// `control` and verifies it: [`Workload::new`] then [`Workload::run`]; [`run_sized`]
/// takes explicit sizes.
///
/// ```
/// use locus::{Config, Runtime, Topology};
/// use locus_bench::{run_kernel, Control, Size};
///
/// let rt = Runtime::builder()
///     .topology(Topology::from_spec("2x1").unwrap())
///     .config(Config::DsaOpt)
///     .build()
///     .unwrap();
/// let out = run_kernel("seidel-2d", &rt, Size::Tiny, Control::Parallel).unwrap();
/// assert!(out.verified);
/// assert_eq!(out.params["control"], "parallel");
/// ```
pub fn run_kernel(
    name: &str,
    rt: &Runtime,
    size: Size,
    control: Control,
) -> Result<KernelOutcome, Error> {
    run_sized(name, rt, &SizeSpec::from(size), control)
}

/// Runs the workload `name` on `rt` at an explicit size (see [`SizeSpec`]) under
/// `control` and verifies it. Parameters the kernel cannot run give
/// [`Error::Params`], before anything runs.
pub fn run_sized(
    name: &str,
    rt: &Runtime,
    spec: &SizeSpec,
    control: Control,
) -> Result<KernelOutcome, Error> {
    Workload::new(name, spec, control)?.run(rt)
}

/// Why a workload did not produce an outcome.
#[derive(Debug)]
pub enum Error {
    /// Setting the workload up failed (creating its data).
    Setup(locus::Error),
    /// The run failed; its report says what ran.
    Run(locus::RunError),
    /// No workload has this name (see [`BENCHES`]).
    UnknownBench(String),
    /// The parameters are not ones the workload can run; the message names the option
    /// or field (see [`size`]).
    Params(String),
    /// A buffer of the workload itself (initial data, the sequential reference, a
    /// vector of the verification) could not be allocated: the host has not that much
    /// memory, or a limit on the process forbids it.
    OutOfMemory {
        /// What the buffer holds.
        what: String,
        /// Its size in bytes.
        bytes: u64,
    },
    /// The run ran a different number of tasks than the program describes.
    TaskCount {
        /// The workload.
        bench: &'static str,
        /// Tasks the program describes ([`Workload::kernel_tasks`]).
        expected: u64,
        /// Tasks the run ran, control tasks excluded.
        ran: u64,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Setup(e) => write!(f, "{e}"),
            Error::Run(e) => write!(f, "{e}"),
            Error::Params(message) => f.write_str(message),
            Error::OutOfMemory { what, bytes } => write!(
                f,
                "cannot allocate {bytes} bytes for {what}: the host refused the memory \
                 (too little memory, or a limit on the process's address space)"
            ),
            Error::TaskCount {
                bench,
                expected,
                ran,
            } => write!(
                f,
                "{bench}: the run ran {ran} tasks where the program describes {expected}"
            ),
            Error::UnknownBench(name) => {
                write!(
                    f,
                    "unknown benchmark `{name}` (expected one of: {})",
                    BENCHES.join(" ")
                )
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<locus::Error> for Error {
    fn from(e: locus::Error) -> Self {
        Error::Setup(e)
    }
}

impl From<locus::RunError> for Error {
    fn from(e: locus::RunError) -> Self {
        Error::Run(e)
    }
}

/// A datum holding `values()`, or, when the runtime skips task bodies (a simulation
/// whose buffers hold no memory), an empty datum of `len` elements: the values are then
/// neither computed nor stored. `values` allocates fallibly ([`alloc`]).
pub(crate) fn initial<T: locus::Element>(
    rt: &Runtime,
    name: impl Into<String>,
    len: usize,
    values: impl FnOnce() -> Result<Vec<T>, Error>,
) -> Result<locus::Data<T>, Error> {
    if rt.skips_bodies() {
        Ok(rt.data(name, len))
    } else {
        let v = values()?;
        debug_assert_eq!(v.len(), len);
        Ok(rt.data_from(name, &v)?)
    }
}

/// Turns a finished run whose control program returned an error into a failed run.
pub(crate) fn finished<R>(
    finished: locus::Finished<Result<R, locus::Error>>,
) -> Result<(R, locus::Report), Error> {
    match finished.value {
        Ok(v) => Ok((v, finished.report)),
        Err(error) => Err(Error::Run(locus::RunError {
            error,
            report: Box::new(finished.report),
        })),
    }
}

#[cfg(test)]
mod tests {
    //! Every workload compares its result with its reference bit for bit and names the
    //! first differing element: the task versions run against their reference with one
    //! element changed in its lowest bit (one unit in the last place for a float) fail
    //! at exactly that element, and pass against the reference as it is.

    use locus::{Config, Runtime, Topology};

    use crate::verify::tests::flip;
    use crate::verify::Exact;
    use crate::*;

    /// Runs a workload at its tiny size under `control`, against its reference with the
    /// element `flipped` (if any) changed by [`flip`]; gives the outcome and the part
    /// of the result that was changed.
    type Perturbed = fn(&Runtime, Control, Option<usize>) -> (Outcome, &'static str);

    fn flip_at<T: Exact>(mut v: Vec<T>, at: Option<usize>) -> Vec<T> {
        if let Some(i) = at {
            v[i] = flip(v[i]);
        }
        v
    }

    fn outcome(out: jacobi_1d::Outcome) -> Outcome {
        Outcome {
            verified: out.verified,
            mismatch: out.mismatch,
            report: out.report,
        }
    }

    fn table() -> Vec<(&'static str, usize, Perturbed)> {
        vec![
            ("jacobi-1d", 37, |rt, control, at| {
                let p = jacobi_1d::Params::tiny();
                let want = || Ok(flip_at(jacobi_1d::reference(&p)?, at));
                let out = match control {
                    Control::Sequential => outcome(jacobi_1d::run_against(rt, &p, want).unwrap()),
                    Control::Parallel => {
                        stencil::run(rt, &stencil::jacobi_1d(&p, control), want).unwrap()
                    }
                };
                (out, "array")
            }),
            ("jacobi-2d", 77, |rt, control, at| {
                let p = jacobi_2d::Params {
                    control,
                    ..jacobi_2d::Params::tiny()
                };
                let want = || Ok(flip_at(jacobi_2d::reference(&p)?, at));
                (stencil::run(rt, &p.grid(), want).unwrap(), "array")
            }),
            ("jacobi-3d", 300, |rt, control, at| {
                let p = jacobi_3d::Params {
                    control,
                    ..jacobi_3d::Params::tiny()
                };
                let want = || Ok(flip_at(jacobi_3d::reference(&p)?, at));
                (stencil::run(rt, &p.grid(), want).unwrap(), "array")
            }),
            ("seidel-1d", 41, |rt, control, at| {
                let p = seidel_1d::Params {
                    control,
                    ..seidel_1d::Params::tiny()
                };
                let want = || Ok(flip_at(seidel_1d::reference(&p)?, at));
                (stencil::run(rt, &p.grid(), want).unwrap(), "array")
            }),
            ("seidel-2d", 130, |rt, control, at| {
                let p = seidel_2d::Params {
                    control,
                    ..seidel_2d::Params::tiny()
                };
                let want = || Ok(flip_at(seidel_2d::reference(&p)?, at));
                (stencil::run(rt, &p.grid(), want).unwrap(), "array")
            }),
            ("seidel-3d", 257, |rt, control, at| {
                let p = seidel_3d::Params {
                    control,
                    ..seidel_3d::Params::tiny()
                };
                let want = || Ok(flip_at(seidel_3d::reference(&p)?, at));
                (stencil::run(rt, &p.grid(), want).unwrap(), "array")
            }),
            ("kmeans", 7, |rt, control, at| {
                let p = kmeans::Params {
                    control,
                    ..kmeans::Params::tiny()
                };
                let want = || {
                    let (centroids, assign) = kmeans::reference(&p)?;
                    Ok((flip_at(centroids, at), assign))
                };
                (kmeans::run_against(rt, &p, want).unwrap(), "centroids")
            }),
            ("kmeans", 120, |rt, control, at| {
                let p = kmeans::Params {
                    control,
                    ..kmeans::Params::tiny()
                };
                let want = || {
                    let (centroids, assign) = kmeans::reference(&p)?;
                    Ok((centroids, flip_at(assign, at)))
                };
                (kmeans::run_against(rt, &p, want).unwrap(), "assignments")
            }),
            ("blur-roberts", 101, |rt, control, at| {
                let p = blur_roberts::Params {
                    control,
                    ..blur_roberts::Params::tiny()
                };
                let want = || Ok(flip_at(blur_roberts::reference(&p)?, at));
                (blur_roberts::run_against(rt, &p, want).unwrap(), "image")
            }),
            ("bitonic", 99, |rt, control, at| {
                let p = bitonic::Params {
                    control,
                    ..bitonic::Params::tiny()
                };
                let want = || Ok(flip_at(bitonic::reference(&p)?, at));
                (bitonic::run_against(rt, &p, want).unwrap(), "keys")
            }),
            ("sparselu", 150, |rt, control, at| {
                let p = sparselu::Params {
                    control,
                    ..sparselu::Params::tiny()
                };
                let want = || Ok(flip_at(sparselu::reference(&p)?, at));
                (sparselu::run_against(rt, &p, want).unwrap(), "matrix")
            }),
            ("cholesky", 100, |rt, control, at| {
                let p = cholesky::Params {
                    control,
                    ..cholesky::Params::tiny()
                };
                let want = || Ok(flip_at(cholesky::reference(&p)?, at));
                (cholesky::run_against(rt, &p, want).unwrap(), "matrix")
            }),
            ("spmv", 37, |rt, _, at| {
                let problem = spmv::Problem::new(spmv::Params::tiny()).unwrap();
                let a = problem.matrix().unwrap();
                let want = || Ok(flip_at(spmv::reference(&a, 3)?, at));
                (spmv::run_against(rt, &problem, want).unwrap(), "x")
            }),
            ("bicgstab", 50, |rt, _, at| {
                let p = bicgstab::Params::tiny();
                let problem = bicgstab::Problem::new(p.clone()).unwrap();
                let want = |a: &csr::Csr, parts: &[std::ops::Range<usize>]| {
                    let mut solved =
                        bicgstab::reference(a, parts, p.tolerance(), p.max_iterations)?;
                    solved.x = flip_at(solved.x, at);
                    Ok(solved)
                };
                (bicgstab::run_against(rt, &problem, want).unwrap().0, "x")
            }),
            ("stream", 700, |rt, _, at| {
                let p = stream::Params::tiny();
                (stream::run_against(rt, &p, at).unwrap(), "stream.a")
            }),
            ("nested-stream", 900, |rt, _, at| {
                let p = nested_stream::Params::tiny();
                (
                    nested_stream::run_against(rt, &p, at).unwrap(),
                    "nested-stream.g0.a",
                )
            }),
            ("twisted-stream", 100, |rt, _, at| {
                let p = twisted_stream::Params::tiny();
                (
                    twisted_stream::run_against(rt, &p, at).unwrap(),
                    "twisted-stream.g0.a",
                )
            }),
            ("random-dag", 0, |rt, _, at| {
                let p = random_dag::Params::tiny();
                let want = |program: &random_dag::Program| {
                    let mut data = random_dag::reference(program)?;
                    data[1] = flip_at(std::mem::take(&mut data[1]), at);
                    Ok(data)
                };
                let out = random_dag::run_against(rt, &p, want).unwrap();
                let out = Outcome {
                    verified: out.verified,
                    mismatch: out.mismatch,
                    report: out.report,
                };
                (out, "datum 1")
            }),
            ("overhead", 2, |rt, _, at| {
                let p = overhead::Params::tiny();
                let want = || {
                    let (chains, total) = overhead::reference(&p)?;
                    Ok((flip_at(chains, at), total))
                };
                let out = overhead::run_against(rt, &p, want).unwrap();
                let out = Outcome {
                    verified: out.verified,
                    mismatch: out.mismatch,
                    report: out.report,
                };
                (out, "chains")
            }),
        ]
    }

    #[test]
    fn every_workload_finds_the_first_element_that_differs_by_one_bit() {
        let rt = Runtime::builder()
            .topology(Topology::from_spec("2x1").unwrap())
            .config(Config::DsaOpt)
            .build()
            .unwrap();
        let table = table();
        for &name in BENCHES {
            assert!(table.iter().any(|(n, ..)| *n == name), "{name} is tested");
        }
        for (name, at, run) in table {
            for control in Control::ALL {
                let (out, _) = run(&rt, control, None);
                assert!(out.verified, "{name} ({control}): {:?}", out.mismatch);
                assert_eq!(out.mismatch, None, "{name} ({control})");
                let (out, what) = run(&rt, control, Some(at));
                assert!(!out.verified, "{name} ({control})");
                let m = out.mismatch.expect("a mismatch");
                assert_eq!((m.what.as_str(), m.index), (what, at), "{name} ({control})");
            }
        }
    }
}
