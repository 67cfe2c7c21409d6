//! `--replay`: kernels run as recorded graphs (`locus::Runtime::record`, then
//! `replay`), each iteration of the kernel one replayed iteration of the graph. Their
//! results are compared with the same references as their dynamic runs, bit for bit.

/// The kernels that run as recorded graphs.
pub const REPLAYABLE: &[&str] = &[
    "overhead",
    "jacobi-1d",
    "jacobi-2d",
    "jacobi-3d",
    "seidel-2d",
];

/// Where a kernel's tasks go: a run's scope (the dynamic run) or a recorder (the
/// replay), so that both submit the very same tasks. Bodies that need neither the
/// task's context nor the iteration run either way.
pub(crate) trait Spawn {
    /// Spawns (or records) a task declaring `accesses`.
    fn spawn_task<L, F>(
        &self,
        name: &'static str,
        accesses: L,
        body: F,
    ) -> Result<(), locus::Error>
    where
        L: locus::AccessList + Sync,
        F: for<'a> Fn(L::Views<'a>) + Send + Sync + 'static;
}

impl Spawn for locus::Scope {
    fn spawn_task<L, F>(&self, name: &'static str, accesses: L, body: F) -> Result<(), locus::Error>
    where
        L: locus::AccessList + Sync,
        F: for<'a> Fn(L::Views<'a>) + Send + Sync + 'static,
    {
        self.spawn(name, accesses, move |_, views| body(views))
    }
}

impl Spawn for locus::Recorder {
    fn spawn_task<L, F>(&self, name: &'static str, accesses: L, body: F) -> Result<(), locus::Error>
    where
        L: locus::AccessList + Sync,
        F: for<'a> Fn(L::Views<'a>) + Send + Sync + 'static,
    {
        self.spawn(name, accesses, move |_, views| body(views))
    }
}

/// Refuses a parallel control program: a recorded graph is one control program's
/// tasks, recorded in order.
pub(crate) fn sequential_only(control: crate::Control) -> Result<(), crate::Error> {
    match control {
        crate::Control::Sequential => Ok(()),
        crate::Control::Parallel => Err(crate::Error::Params(
            "--replay records the sequential control program; drop --control parallel".into(),
        )),
    }
}

impl crate::Workload {
    /// Runs the workload as a recorded graph and verifies it (see [`REPLAYABLE`]);
    /// other workloads give [`crate::Error::Params`].
    pub(crate) fn replayed(&self, rt: &locus::Runtime) -> Result<crate::Outcome, crate::Error> {
        use crate::Workload as W;
        match self {
            W::Overhead(p) => {
                let out = crate::overhead::run_replay(rt, p)?;
                Ok(crate::Outcome {
                    verified: out.verified,
                    mismatch: out.mismatch,
                    report: out.report,
                })
            }
            W::Jacobi1d(p, control) => {
                p.validate().map_err(crate::Error::Params)?;
                sequential_only(*control)?;
                crate::stencil::run_replay(rt, &crate::stencil::jacobi_1d(p, *control), || {
                    crate::jacobi_1d::reference(p)
                })
            }
            W::Jacobi2d(p) => crate::jacobi_2d::run_replay(rt, p),
            W::Jacobi3d(p) => crate::jacobi_3d::run_replay(rt, p),
            W::Seidel2d(p) => crate::seidel_2d::run_replay(rt, p),
            W::Kmeans(p) => crate::kmeans::run_replay(rt, p),
            W::Spmv(p) => crate::spmv::run_replay(rt, p),
            other => Err(crate::Error::Params(format!(
                "--replay: {} does not run as a recorded graph; these do: {}",
                other.name(),
                REPLAYABLE.join(", ")
            ))),
        }
    }
}
