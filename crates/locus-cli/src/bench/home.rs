//! `locus bench --suite home`: paper 4's study of home-based scheduling (Muddukrishna
//! et al., "Locality-aware task scheduling and data distribution on NUMA systems",
//! section 4): BOTS SparseLU under home-based scheduling with steal vicinities of 1, 4,
//! 16 and 50 workers, against a breadth-first global queue (Nanos++ `bf`, here the
//! `bf` configuration) and a Cilk-like policy (eager execution of the newest task,
//! random stealing: `ws`), plus Locus's weighted work-pushing, which weighs every
//! block a task touches where home-based scheduling looks at the largest only.
//!
//! As in the paper, the blocks are homed round-robin, one block per node in turn,
//! under home-based scheduling and weighted pushing (`layout` 1), and interleaved page
//! by page ("hash-for-home", `layout` 2) under the breadth-first and Cilk-like
//! policies. The default machine is the `tilepro64` preset in the simulator with 50
//! workers, at paper 4's size (30 x 30 blocks of 125 x 125).
//!
//! It draws the paper's three figures: time per policy (Figure 4), tasks per worker
//! (Figure 5: median, with the least and the most loaded worker) and the local and
//! remote shares of the bytes accessed (Figure 6).

use std::path::{Path, PathBuf};

use locus::{Config, Runtime};
use locus_bench::{Control, KernelOutcome, Size, SizeSpec, Workload};
use serde_json::{json, Value};

use crate::bench::figures::write_picture;
use crate::bench::svg::{grouped_bars, GroupedBars};

/// The pictures of the study.
pub const NAMES: [&str; 3] = ["home-time", "home-tasks", "home-locality"];

/// The steal vicinities paper 4 measures, in workers.
pub const VICINITIES: [usize; 4] = [1, 4, 16, 50];

/// One scheduling policy of the study.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Its name in the tables and pictures (`HS 4`, `BF`, ...).
    pub label: String,
    /// The configuration that carries it out.
    pub config: Config,
    /// The steal vicinity (home-based scheduling only).
    pub vicinity: Option<usize>,
    /// SparseLU's `layout`: 1 homed round-robin, 2 interleaved.
    pub layout: usize,
}

/// The policies of the study on `workers` workers: HS with each vicinity of
/// [`VICINITIES`] no larger than the workers (the full vicinity always), BF,
/// Cilk-like and weighted pushing.
pub fn policies(workers: usize) -> Vec<Policy> {
    let mut vicinities: Vec<usize> = VICINITIES.iter().map(|&v| v.min(workers)).collect();
    vicinities.dedup();
    let mut all: Vec<Policy> = vicinities
        .into_iter()
        .map(|v| Policy {
            label: format!("HS {v}"),
            config: Config::Home,
            vicinity: Some(v),
            layout: 1,
        })
        .collect();
    all.push(Policy {
        label: "BF".into(),
        config: Config::Bf,
        vicinity: None,
        layout: 2,
    });
    all.push(Policy {
        label: "Cilk-like".into(),
        config: Config::Ws,
        vicinity: None,
        layout: 2,
    });
    all.push(Policy {
        label: "push-weighted".into(),
        config: Config::PushWeighted,
        vicinity: None,
        layout: 1,
    });
    all
}

/// Where and how the study runs.
pub struct Setup {
    /// The machine.
    pub topology: locus::Topology,
    /// Workers (paper 4: 50).
    pub threads: usize,
    /// On the simulator (else on threads).
    pub sim: bool,
    /// Simulator only: skip the task bodies (nothing to verify then).
    pub skip_bodies: bool,
    /// SparseLU's size.
    pub size: Size,
}

/// One policy's run.
pub struct Measured {
    /// The policy.
    pub policy: Policy,
    /// The run, or why it could not run.
    pub outcome: Result<KernelOutcome, String>,
}

impl Measured {
    /// Whether the run failed: an error, or a result that differs from the reference.
    pub fn failed(&self) -> bool {
        match &self.outcome {
            Ok(o) => o.checked && !o.verified,
            Err(_) => true,
        }
    }
}

/// Runs SparseLU under `policy`.
pub fn run(setup: &Setup, policy: &Policy) -> Result<KernelOutcome, String> {
    let mut builder = Runtime::builder()
        .topology(setup.topology.clone())
        .config(policy.config)
        .threads(setup.threads);
    if let Some(v) = policy.vicinity {
        builder = builder.vicinity(v);
    }
    if setup.sim {
        let sim = locus_sim::Sim::new();
        builder = builder.engine(if setup.skip_bodies {
            sim.bodies(locus::engine::Bodies::Skip)
        } else {
            sim
        });
    }
    let rt = builder.build().map_err(|e| e.to_string())?;
    let spec = SizeSpec {
        fields: vec![("layout".into(), policy.layout.to_string())],
        ..SizeSpec::from(setup.size)
    };
    let workload =
        Workload::new("sparselu", &spec, Control::Sequential).map_err(|e| e.to_string())?;
    workload.run(&rt).map_err(|e| e.to_string())
}

/// Tasks run by each worker.
fn tasks_per_worker(o: &KernelOutcome) -> Vec<u64> {
    o.report.workers.iter().map(|w| w.tasks).collect()
}

/// The least, the median and the most tasks any worker ran.
fn spread(tasks: &[u64]) -> Option<(u64, u64, u64)> {
    let mut sorted = tasks.to_vec();
    sorted.sort_unstable();
    Some((*sorted.first()?, sorted[sorted.len() / 2], *sorted.last()?))
}

/// Local and remote bytes (reads and writes) of a run.
fn bytes(o: &KernelOutcome) -> (u64, u64) {
    let l = &o.report.locality;
    (
        l.read_local_bytes + l.write_local_bytes,
        l.read_remote_bytes + l.write_remote_bytes,
    )
}

/// The table `locus bench --suite home` prints.
pub fn table(runs: &[Measured], sim: bool) -> String {
    let time = if sim {
        "time (s, simulated)"
    } else {
        "time (s)"
    };
    let mut out = format!(
        "{:<14} {:>20} {:>26} {:>12} {:>12}  verified\n",
        "policy", time, "tasks per worker min/med/max", "local share", "remote share"
    );
    for m in runs {
        match &m.outcome {
            Err(e) => out.push_str(&format!("{:<14} failed: {e}\n", m.policy.label)),
            Ok(o) => {
                let (lo, med, hi) = spread(&tasks_per_worker(o)).unwrap_or((0, 0, 0));
                let (local, remote) = bytes(o);
                let all = (local + remote).max(1) as f64;
                let verified = match (o.checked, o.verified) {
                    (false, _) => "skipped",
                    (true, true) => "yes",
                    (true, false) => "NO",
                };
                out.push_str(&format!(
                    "{:<14} {:>20.4} {:>26} {:>12.3} {:>12.3}  {verified}\n",
                    m.policy.label,
                    o.report.wall_s,
                    format!("{lo} / {med} / {hi}"),
                    local as f64 / all,
                    remote as f64 / all
                ));
            }
        }
    }
    out
}

/// `home.json`: one object per policy.
pub fn report(runs: &[Measured], setup: &Setup) -> Value {
    json!({
        "study": "home",
        "bench": "sparselu",
        "engine": if setup.sim { "sim" } else { "threads" },
        "topology": setup.topology.name(),
        "threads": setup.threads,
        "policies": runs.iter().map(|m| {
            let mut object = json!({
                "policy": m.policy.label,
                "config": m.policy.config.name(),
                "vicinity": m.policy.vicinity,
                "layout": m.policy.layout,
            });
            match &m.outcome {
                Err(e) => object["error"] = json!(e),
                Ok(o) => {
                    let (local, remote) = bytes(o);
                    object["wall_s"] = json!(o.report.wall_s);
                    object["verified"] = if o.checked { json!(o.verified) } else { Value::Null };
                    object["tasks_per_worker"] = json!(tasks_per_worker(o));
                    object["local_bytes"] = json!(local);
                    object["remote_bytes"] = json!(remote);
                    object["r_loc_rt"] = json!(o.report.locality.r_loc_rt);
                }
            }
            object
        }).collect::<Vec<_>>(),
    })
}

/// Draws Figures 4 to 6 of paper 4 into `dir` (SVG and PNG); returns the paths written.
pub fn write_figures(
    dir: &Path,
    runs: &[Measured],
    machine: &str,
) -> std::io::Result<Vec<PathBuf>> {
    let ran: Vec<(&Policy, &KernelOutcome)> = runs
        .iter()
        .filter_map(|m| m.outcome.as_ref().ok().map(|o| (&m.policy, o)))
        .collect();
    let mut written = Vec::new();
    if ran.is_empty() {
        return Ok(written);
    }
    let groups: Vec<String> = ran.iter().map(|(p, _)| p.label.clone()).collect();

    let times: Vec<Vec<Option<f64>>> = ran
        .iter()
        .map(|(_, o)| vec![Some(o.report.wall_s)])
        .collect();
    write_picture(
        dir,
        NAMES[0],
        &grouped_bars(&GroupedBars {
            title: &format!("SparseLU: execution time per policy ({machine})"),
            x_label: "scheduling policy (HS v: home-based, steal vicinity of v workers)",
            y_label: "time (s)",
            groups: &groups,
            series: &["sparselu".to_string()],
            legend_title: "benchmark",
            values: &times,
            errors: None,
            error_label: "",
            y_max: None,
            references: &[],
        }),
        &mut written,
    )?;

    let spreads: Vec<(u64, u64, u64)> = ran
        .iter()
        .map(|(_, o)| spread(&tasks_per_worker(o)).unwrap_or((0, 0, 0)))
        .collect();
    let medians: Vec<Vec<Option<f64>>> = spreads.iter().map(|s| vec![Some(s.1 as f64)]).collect();
    let ranges: Vec<Vec<Option<(f64, f64)>>> = spreads
        .iter()
        .map(|s| vec![Some((s.0 as f64, s.2 as f64))])
        .collect();
    write_picture(
        dir,
        NAMES[1],
        &grouped_bars(&GroupedBars {
            title: &format!("SparseLU: load balance, tasks run per worker ({machine})"),
            x_label: "scheduling policy",
            y_label: "tasks per worker (count)",
            groups: &groups,
            series: &["median worker".to_string()],
            legend_title: "tasks",
            values: &medians,
            errors: Some(&ranges),
            error_label: "least to most loaded worker",
            y_max: None,
            references: &[],
        }),
        &mut written,
    )?;

    let shares: Vec<Vec<Option<f64>>> = ran
        .iter()
        .map(|(_, o)| {
            let (local, remote) = bytes(o);
            let all = (local + remote).max(1) as f64;
            vec![Some(local as f64 / all), Some(remote as f64 / all)]
        })
        .collect();
    write_picture(
        dir,
        NAMES[2],
        &grouped_bars(&GroupedBars {
            title: &format!("SparseLU: local and remote accesses ({machine})"),
            x_label: "scheduling policy",
            y_label: "share of the bytes accessed (0-1)",
            groups: &groups,
            series: &["local".to_string(), "remote".to_string()],
            legend_title: "accesses",
            values: &shares,
            errors: None,
            error_label: "",
            y_max: Some(1.0),
            references: &[],
        }),
        &mut written,
    )?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_study_has_paper_4s_policies_and_clips_vicinities_to_the_workers() {
        let labels = |w| policies(w).into_iter().map(|p| p.label).collect::<Vec<_>>();
        assert_eq!(
            labels(50),
            [
                "HS 1",
                "HS 4",
                "HS 16",
                "HS 50",
                "BF",
                "Cilk-like",
                "push-weighted"
            ]
        );
        assert_eq!(
            labels(8),
            ["HS 1", "HS 4", "HS 8", "BF", "Cilk-like", "push-weighted"]
        );
        assert_eq!(labels(2)[..2], ["HS 1", "HS 2"]);
        let bf = &policies(50)[4];
        assert_eq!((bf.config, bf.layout), (Config::Bf, 2));
    }

    #[test]
    fn spread_gives_least_median_and_most() {
        assert_eq!(spread(&[5, 1, 9, 3]), Some((1, 5, 9)));
        assert_eq!(spread(&[]), None);
    }
}
