//! `locus bench --suite twisted`: Figures 2 and 3 of Broquedis et al., "Dynamic Task
//! and Data Placement over NUMA Architectures: An OpenMP Runtime Perspective"
//! (ForestGOMP and MaMI): the time of Twisted-STREAM's second phase against the number
//! of STREAM iterations, one line per policy at the phase change.
//!
//! - `twisted-remote` (Figure 2): every vector of a team's second phase is on another
//!   node; migrate nothing, migrate the vectors now or on next touch, or move the
//!   tasks to the data.
//! - `twisted-mixed` (Figure 3): two of the three vectors are remote, one read and the
//!   one written; migrate nothing, both, only the read one, only the written one, or
//!   move the tasks next to them and migrate the team's own vector there; the times
//!   normalised by "migrate nothing", as the paper draws them.
//!
//! Both also draw `auto`: nothing explicit at the phase change, the runtime's `auto`
//! migration setting deciding per task.
//!
//! The default machine is the `opteron-16` preset in the simulator at paper size
//! (20 million doubles per vector), iterations 1 to 128; on real threads a small
//! problem, iterations 1 to 16. The phase-2 time includes the migrations.

use std::path::{Path, PathBuf};

use locus::{Runtime, Topology};
use locus_bench::twisted_stream::Policy;
use locus_bench::{Control, KernelOutcome, Size, SizeSpec, Workload};
use serde_json::{json, Value};

use crate::bench::figures::write_picture;
use crate::bench::svg::{line_chart, LineChart};

/// The pictures of the study.
pub const NAMES: [&str; 2] = ["twisted-remote", "twisted-mixed"];

/// One figure: the remote vectors and the policies drawn, with their labels.
pub struct Figure {
    /// The picture's name ([`NAMES`]).
    pub name: &'static str,
    /// Vectors on another node in phase 2.
    pub remote: usize,
    /// The policies, with the paper's legend for each.
    pub policies: &'static [(Policy, &'static str)],
}

/// Figures 2 and 3.
pub const FIGURES: [Figure; 2] = [
    Figure {
        name: NAMES[0],
        remote: 3,
        policies: &[
            (Policy::None, "migrate nothing"),
            (Policy::Now, "migrate memory"),
            (Policy::NextTouch, "migrate on next touch"),
            (Policy::Tasks, "migrate tasks"),
            (Policy::Auto, "auto (runtime decides)"),
        ],
    },
    Figure {
        name: NAMES[1],
        remote: 2,
        policies: &[
            (Policy::None, "migrate nothing"),
            (Policy::Now, "migrate R + W"),
            (Policy::NowRead, "migrate R"),
            (Policy::NowWritten, "migrate W"),
            (Policy::Mixed, "tasks + migrate own vector"),
            (Policy::NextTouch, "next touch"),
            (Policy::Auto, "auto (runtime decides)"),
        ],
    },
];

/// The machine and problem of the study.
pub struct Setup {
    /// The topology.
    pub topology: Topology,
    /// Workers.
    pub threads: usize,
    /// Whether the simulator runs it.
    pub sim: bool,
    /// The problem size.
    pub size: Size,
    /// The iteration counts of the curves.
    pub iterations: Vec<usize>,
}

/// One point of a curve.
pub struct Point {
    /// Remote vectors.
    pub remote: usize,
    /// The policy.
    pub policy: Policy,
    /// STREAM iterations per phase.
    pub iterations: usize,
    /// The run, or why it failed.
    pub outcome: Result<KernelOutcome, String>,
}

impl Point {
    /// Phase 2's time, migrations included.
    pub fn phase2_s(&self) -> Option<f64> {
        let o = self.outcome.as_ref().ok()?;
        o.figures["phase2_s"].as_f64()
    }

    /// Whether the run failed or did not verify (a skipped check is no failure).
    pub fn failed(&self) -> bool {
        match &self.outcome {
            Ok(o) => o.checked && !o.verified,
            Err(_) => true,
        }
    }
}

/// Runs one point.
pub fn run(
    setup: &Setup,
    remote: usize,
    policy: Policy,
    iterations: usize,
) -> Result<KernelOutcome, String> {
    let mut builder = Runtime::builder()
        .topology(setup.topology.clone())
        .threads(setup.threads);
    if policy == Policy::Auto {
        builder = builder.migration(locus::Migration::Auto);
    }
    if setup.sim {
        builder = builder.engine(locus_sim::Sim::new());
    }
    let rt = builder.build().map_err(|e| e.to_string())?;
    let spec = SizeSpec {
        iterations: Some(iterations),
        fields: vec![
            ("remote_vectors".into(), remote.to_string()),
            ("--migrate".into(), policy.name().into()),
        ],
        ..SizeSpec::from(setup.size)
    };
    let workload =
        Workload::new("twisted-stream", &spec, Control::Sequential).map_err(|e| e.to_string())?;
    workload.run(&rt).map_err(|e| e.to_string())
}

/// Every point to run: each figure's policies at each iteration count.
pub fn plan(setup: &Setup) -> Vec<(usize, Policy, usize)> {
    let mut all = Vec::new();
    for f in &FIGURES {
        for &(policy, _) in f.policies {
            for &it in &setup.iterations {
                all.push((f.remote, policy, it));
            }
        }
    }
    all
}

fn find(points: &[Point], remote: usize, policy: Policy, iterations: usize) -> Option<&Point> {
    points
        .iter()
        .find(|p| p.remote == remote && p.policy == policy && p.iterations == iterations)
}

/// The tables: phase-2 time per policy (rows) and iteration count (columns), for each
/// figure, and the triad rates of both phases under `none`.
pub fn table(points: &[Point], setup: &Setup) -> String {
    let mut out = String::new();
    for f in &FIGURES {
        out.push_str(&format!(
            "{}: phase-2 time (s), {} of 3 vectors remote\n",
            f.name, f.remote
        ));
        out.push_str(&format!("{:<40}", "policy \\ iterations"));
        for it in &setup.iterations {
            out.push_str(&format!("{it:>9}"));
        }
        out.push('\n');
        for &(policy, label) in f.policies {
            out.push_str(&format!("{:<40}", format!("{label} ({policy})")));
            for &it in &setup.iterations {
                let cell = find(points, f.remote, policy, it)
                    .and_then(Point::phase2_s)
                    .map_or("-".to_string(), |s| format!("{s:.4}"));
                out.push_str(&format!("{cell:>9}"));
            }
            out.push('\n');
        }
        out.push('\n');
    }
    if let Some(o) = setup
        .iterations
        .first()
        .and_then(|&it| find(points, 3, Policy::None, it))
        .and_then(|p| p.outcome.as_ref().ok())
    {
        out.push_str(&format!(
            "triad, first touch (none): phase 1 {:.0} MB/s, phase 2 {:.0} MB/s\n",
            o.figures["phase1_triad_mb_s"].as_f64().unwrap_or(0.0),
            o.figures["phase2_triad_mb_s"].as_f64().unwrap_or(0.0)
        ));
    }
    out
}

/// `twisted.json`: every point with its figures and migrations.
pub fn report(points: &[Point], setup: &Setup) -> Value {
    let rows: Vec<Value> = points
        .iter()
        .map(|p| match &p.outcome {
            Ok(o) => json!({
                "remote_vectors": p.remote,
                "policy": p.policy.name(),
                "iterations": p.iterations,
                "verified": o.verified,
                "checked": o.checked,
                "figures": o.figures,
                "migration": o.report.migration,
                "r_loc_rt": o.report.locality.r_loc_rt,
                "wall_s": o.report.wall_s,
            }),
            Err(e) => json!({
                "remote_vectors": p.remote,
                "policy": p.policy.name(),
                "iterations": p.iterations,
                "error": e,
            }),
        })
        .collect();
    json!({
        "suite": "twisted",
        "topology": setup.topology.name(),
        "threads": setup.threads,
        "engine": if setup.sim { "sim" } else { "threads" },
        "iterations": setup.iterations,
        "points": rows,
    })
}

/// Draws Figures 2 and 3 into `dir` (SVG and PNG); returns the files written.
pub fn write_figures(
    dir: &Path,
    points: &[Point],
    setup: &Setup,
    machine: &str,
) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let xs: Vec<f64> = setup.iterations.iter().map(|&i| i as f64).collect();
    for f in &FIGURES {
        let series: Vec<String> = f.policies.iter().map(|(_, l)| l.to_string()).collect();
        let times: Vec<Vec<Option<f64>>> = f
            .policies
            .iter()
            .map(|&(policy, _)| {
                setup
                    .iterations
                    .iter()
                    .map(|&it| find(points, f.remote, policy, it).and_then(Point::phase2_s))
                    .collect()
            })
            .collect();
        let normalised = f.remote == 2;
        let values: Vec<Vec<Option<f64>>> = if normalised {
            let base: Vec<Option<f64>> = setup
                .iterations
                .iter()
                .map(|&it| find(points, f.remote, Policy::None, it).and_then(Point::phase2_s))
                .collect();
            times
                .iter()
                .map(|line| {
                    line.iter()
                        .zip(&base)
                        .map(|(t, b)| Some(t.as_ref()? / b.filter(|b| *b > 0.0)?))
                        .collect()
                })
                .collect()
        } else {
            times
        };
        if values.iter().flatten().all(Option::is_none) {
            continue;
        }
        let title = if normalised {
            format!("Twisted-STREAM, 2 of 3 vectors remote ({machine})")
        } else {
            format!("Twisted-STREAM, all vectors remote ({machine})")
        };
        let svg = line_chart(&LineChart {
            title: &title,
            x_label: "number of STREAM iterations",
            y_label: if normalised {
                "phase-2 time / migrate nothing (x, below 1: faster)"
            } else {
                "phase-2 time (s)"
            },
            xs: &xs,
            series: &series,
            values: &values,
            log_y: !normalised,
        });
        write_picture(dir, f.name, &svg, &mut written)?;
    }
    Ok(written)
}
