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
    "kmeans",
    "spmv",
    "bicgstab",
    "cholesky",
];

/// The kernels whose default runs hint their tasks towards their data's owners
/// ([`crate::affinity::AffinityMode::Strict`]), hints which a replay refuses.
pub const HINTED_BY_DEFAULT: &[&str] = &["spmv", "bicgstab"];

/// Makes `spec` one that `kernel` replays with: for a kernel of [`HINTED_BY_DEFAULT`],
/// `--affinity none`, so that a bench of recorded graphs runs every kernel it names
/// without the hints a recorded graph would refuse (it places its tasks itself).
pub fn without_default_hints(kernel: &str, spec: &mut crate::size::SizeSpec) {
    if HINTED_BY_DEFAULT.contains(&kernel) {
        spec.fields.push(("--affinity".into(), "none".into()));
    }
}

/// Where a kernel's tasks go: a run's scope (the dynamic run) or a recorder (the
/// replay), so that both submit the very same tasks. Bodies that need neither the
/// task's context nor the iteration run either way.
pub(crate) trait Spawn {
    /// Spawns (or records) a task declaring `accesses`.
    fn spawn_task<L, F>(&self, name: &'static str, accesses: L, body: F) -> Result<(), locus::Error>
    where
        L: locus::AccessList + Sync,
        F: for<'a> Fn(L::Views<'a>) + Send + Sync + 'static,
    {
        self.spawn_hinted(name, accesses, Hints::default(), body)
    }

    /// [`spawn_task`](Self::spawn_task) with the hints of a dynamic run: an affinity
    /// and a cost. A recorder takes neither (a recorded graph places its tasks itself,
    /// docs/guide.md, "Recorded graphs"): kernels refuse affinity hints before they
    /// record (see [`no_hints`]), and a cost only steers the dynamic scheduler.
    fn spawn_hinted<L, F>(
        &self,
        name: &'static str,
        accesses: L,
        hints: Hints,
        body: F,
    ) -> Result<(), locus::Error>
    where
        L: locus::AccessList + Sync,
        F: for<'a> Fn(L::Views<'a>) + Send + Sync + 'static;
}

/// The hints of a dynamic task (see [`Spawn::spawn_hinted`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Hints {
    /// Where the task should run.
    pub affinity: Option<locus::Affinity>,
    /// The task's cost, for the scheduler.
    pub cost: Option<u64>,
}

impl Hints {
    /// An affinity hint alone.
    pub(crate) fn affinity(affinity: Option<locus::Affinity>) -> Self {
        Hints {
            affinity,
            cost: None,
        }
    }
}

impl Spawn for locus::Scope {
    fn spawn_hinted<L, F>(
        &self,
        name: &'static str,
        accesses: L,
        hints: Hints,
        body: F,
    ) -> Result<(), locus::Error>
    where
        L: locus::AccessList + Sync,
        F: for<'a> Fn(L::Views<'a>) + Send + Sync + 'static,
    {
        let mut task = crate::affinity::hinted(self.task(name, accesses), hints.affinity);
        if let Some(cost) = hints.cost {
            task = task.cost(cost);
        }
        task.spawn(move |_, views| body(views))
    }
}

impl Spawn for locus::Recorder {
    fn spawn_hinted<L, F>(
        &self,
        name: &'static str,
        accesses: L,
        hints: Hints,
        body: F,
    ) -> Result<(), locus::Error>
    where
        L: locus::AccessList + Sync,
        F: for<'a> Fn(L::Views<'a>) + Send + Sync + 'static,
    {
        debug_assert!(
            hints.affinity.is_none(),
            "kernels refuse affinity hints before recording"
        );
        self.spawn(name, accesses, move |_, views| body(views))
    }
}

/// Adds `replayed`, the report of a replay, to `report` ([`locus::Report::then`]),
/// keeping the settings that mark a replay: the graph's name and settings from the
/// first replay, the replayed iterations summed over all.
pub(crate) fn then_replayed(report: &mut locus::Report, replayed: &locus::Report) {
    report.then(replayed);
    let settings = &mut report.settings.0;
    for (key, value) in &replayed.settings.0 {
        match settings.iter_mut().find(|(k, _)| k == key) {
            Some((_, sum)) if key == "replayed_iterations" => {
                let total = sum.parse::<u64>().unwrap_or(0) + value.parse::<u64>().unwrap_or(0);
                *sum = total.to_string();
            }
            Some(_) => {}
            None => settings.push((key.clone(), value.clone())),
        }
    }
}

/// Refuses affinity hints: a recorded graph places its tasks itself.
pub(crate) fn no_hints(mode: crate::affinity::AffinityMode) -> Result<(), crate::Error> {
    match mode {
        crate::affinity::AffinityMode::None => Ok(()),
        _ => Err(crate::Error::Params(
            "--replay: affinity hints are not recorded; run with --affinity none".into(),
        )),
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
    /// Runs the workload as a recorded graph and verifies it (see [`REPLAYABLE`]),
    /// with the tasks the run described when only the run can tell (a solve to a
    /// tolerance); other workloads give [`crate::Error::Params`].
    pub(crate) fn replayed(
        &self,
        rt: &locus::Runtime,
    ) -> Result<(crate::Outcome, Option<u64>), crate::Error> {
        use crate::Workload as W;
        if let W::Bicgstab(p) = self {
            let (out, tasks) = crate::bicgstab::run_replay(rt, p)?;
            return Ok((out, Some(tasks)));
        }
        let out = match self {
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
            W::Cholesky(p) => crate::cholesky::run_replay(rt, p),
            other => Err(crate::Error::Params(format!(
                "--replay: {} does not run as a recorded graph; these do: {}",
                other.name(),
                REPLAYABLE.join(", ")
            ))),
        }?;
        Ok((out, None))
    }
}
