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
//!
//! The paper-1 kernels (section 4.3) run through one dispatch point, [`run_kernel`], at
//! a [`Size`] and under a [`Control`] program ([`control`]).

pub mod bitonic;
pub mod blur_roberts;
pub mod control;
pub mod jacobi_1d;
pub mod jacobi_2d;
pub mod jacobi_3d;
pub mod kmeans;
pub mod overhead;
pub mod random_dag;
pub mod seidel_1d;
pub mod seidel_2d;
pub mod seidel_3d;
mod stencil;

pub use control::Control;

use locus::Runtime;
use serde::Serialize;

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
    /// Paper 1 Table 3 (Opteron-64 block sizes): gigabytes of data, minutes of work.
    Paper,
}

impl std::str::FromStr for Size {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tiny" => Ok(Size::Tiny),
            "small" => Ok(Size::Small),
            "paper" => Ok(Size::Paper),
            _ => Err(format!(
                "unknown size `{s}` (expected tiny, small or paper)"
            )),
        }
    }
}

/// Outcome of one run of a kernel.
#[derive(Debug)]
pub struct Outcome {
    /// Whether the result equals the sequential reference (see each kernel's rule).
    pub verified: bool,
    /// The run's report.
    pub report: locus::Report,
}

impl Outcome {
    /// The outcome of a run whose bodies were skipped: nothing to verify.
    pub(crate) fn unchecked(report: locus::Report) -> Self {
        Outcome {
            verified: false,
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
    /// The run's report.
    pub report: locus::Report,
    /// The parameters the kernel ran with, control program included.
    pub params: serde_json::Value,
}

fn params_json(p: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(p).expect("parameters serialise to JSON")
}

fn kernel<P: Serialize>(
    p: P,
    run: impl FnOnce(&P) -> Result<Outcome, Error>,
) -> Result<(Outcome, serde_json::Value), Error> {
    Ok((run(&p)?, params_json(&p)))
}

/// Picks a kernel's parameters for a size, with the control program set.
macro_rules! sized {
    ($module:ident, $size:expr, $control:expr) => {{
        let mut p = match $size {
            Size::Tiny => $module::Params::tiny(),
            Size::Small => $module::Params::default(),
            Size::Paper => $module::Params::paper(),
        };
        p.control = $control;
        p
    }};
}

/// Runs the workload `name` (one of [`BENCHES`]) on `rt` at `size` under `control` and
/// verifies it.
///
/// `random-dag` and `overhead` have no paper size (`Paper` runs their defaults) and no
/// parallel control program (their tasks form one arbitrary graph, submitted in order).
/// `jacobi-1d` runs [`jacobi_1d::run`] under sequential control and, under parallel
/// control, the same blocks, halos and arithmetic through the stencil engine of the other
/// stencils, with creators per band of blocks.
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
    let (Outcome { verified, report }, params) = run_named(name, rt, size, control)?;
    Ok(KernelOutcome {
        verified,
        checked: !rt.skips_bodies(),
        report,
        params,
    })
}

/// The outcome of workload `name` and the parameters it ran with.
fn run_named(
    name: &str,
    rt: &Runtime,
    size: Size,
    control: Control,
) -> Result<(Outcome, serde_json::Value), Error> {
    match name {
        "random-dag" => {
            let p = match size {
                Size::Tiny => random_dag::Params {
                    tasks: 100,
                    data: 16,
                    max_len: 64,
                    ..Default::default()
                },
                Size::Small | Size::Paper => random_dag::Params::default(),
            };
            let out = random_dag::run(rt, &p)?;
            let outcome = Outcome {
                verified: out.verified,
                report: out.report,
            };
            Ok((outcome, params_json(&p)))
        }
        "overhead" => {
            let p = match size {
                Size::Tiny => overhead::Params {
                    chains: 4,
                    length: 50,
                    rounds: 10,
                    fan: 4,
                },
                Size::Small | Size::Paper => overhead::Params::default(),
            };
            let out = overhead::run(rt, &p)?;
            let outcome = Outcome {
                verified: out.verified,
                report: out.report,
            };
            Ok((outcome, params_json(&p)))
        }
        "jacobi-1d" => {
            let p = match size {
                Size::Tiny => jacobi_1d::Params {
                    blocks: 8,
                    block_len: 8,
                    iterations: 3,
                },
                Size::Small => jacobi_1d::Params::default(),
                // Paper 1 Table 3: 2^28 elements in blocks of 2^16, 60 iterations.
                Size::Paper => jacobi_1d::Params {
                    blocks: 1 << 12,
                    block_len: 1 << 16,
                    iterations: 60,
                },
            };
            let out = match control {
                Control::Sequential => {
                    let out = jacobi_1d::run(rt, &p)?;
                    Outcome {
                        verified: out.verified,
                        report: out.report,
                    }
                }
                Control::Parallel => stencil::run(rt, &stencil::jacobi_1d(&p, control))?,
            };
            let mut params = params_json(&p);
            params["control"] = params_json(&control);
            Ok((out, params))
        }
        "jacobi-2d" => kernel(sized!(jacobi_2d, size, control), |p| jacobi_2d::run(rt, p)),
        "jacobi-3d" => kernel(sized!(jacobi_3d, size, control), |p| jacobi_3d::run(rt, p)),
        "seidel-1d" => kernel(sized!(seidel_1d, size, control), |p| seidel_1d::run(rt, p)),
        "seidel-2d" => kernel(sized!(seidel_2d, size, control), |p| seidel_2d::run(rt, p)),
        "seidel-3d" => kernel(sized!(seidel_3d, size, control), |p| seidel_3d::run(rt, p)),
        "kmeans" => kernel(sized!(kmeans, size, control), |p| kmeans::run(rt, p)),
        "blur-roberts" => kernel(sized!(blur_roberts, size, control), |p| {
            blur_roberts::run(rt, p)
        }),
        "bitonic" => kernel(sized!(bitonic, size, control), |p| bitonic::run(rt, p)),
        _ => Err(Error::UnknownBench(name.to_string())),
    }
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
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Setup(e) => write!(f, "{e}"),
            Error::Run(e) => write!(f, "{e}"),
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
/// neither computed nor stored.
pub(crate) fn initial<T: locus::Element>(
    rt: &Runtime,
    name: impl Into<String>,
    len: usize,
    values: impl FnOnce() -> Vec<T>,
) -> Result<locus::Data<T>, locus::Error> {
    if rt.skips_bodies() {
        Ok(rt.data(name, len))
    } else {
        let v = values();
        debug_assert_eq!(v.len(), len);
        rt.data_from(name, &v)
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
