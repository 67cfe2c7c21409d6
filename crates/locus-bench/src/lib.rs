//! Benchmark workloads for Locus. Every workload has a sequential reference and every
//! run verifies its result against it.
//!
//! - [`random_dag`]: seeded random task graphs over versioned data of random sizes.
//! - [`jacobi_1d`]: a blocked 1-D Jacobi stencil, the chain-of-stencils shape.
//! - [`overhead`]: many tiny dependent tasks in chains and fan-in/fan-out rounds.

pub mod jacobi_1d;
pub mod overhead;
pub mod random_dag;

/// Why a workload did not produce an outcome.
#[derive(Debug)]
pub enum Error {
    /// Setting the workload up failed (creating its data).
    Setup(locus::Error),
    /// The run failed; its report says what ran.
    Run(locus::RunError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Setup(e) => write!(f, "{e}"),
            Error::Run(e) => write!(f, "{e}"),
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
