//! Running one benchmark on a runtime, for `locus run` (the `threads` engine) and
//! `locus sim` (the simulator): building the runtime, verifying, and printing the
//! report as text or as one JSON object (`docs/guide.md`, "Reading the report").

use clap::ValueEnum as _;
use locus::{Config, Runtime, Topology};
use locus_bench::{Control as BenchControl, Size as BenchSize, SizeSpec, Workload};
use serde_json::{json, Map, Value};

use crate::args::{Bench, Bind, Control, MigrateArg, SharedArg, Size, SizePreset};
use crate::cmd::Failure;

/// What `run` and `sim` have in common.
pub struct Job<'a> {
    pub bench: Bench,
    pub config: Config,
    pub topology: Topology,
    pub threads: Option<u32>,
    /// `--bind`: which CPUs fewer workers than CPUs take.
    pub bind: Bind,
    /// `--shared`: where `shm-base` places shared data.
    pub shared: Option<SharedArg>,
    /// `--vicinity`: steal vicinity of `home`.
    pub vicinity: Option<u32>,
    /// `--huge-pages`: whether the pools ask for transparent huge pages.
    pub huge_pages: bool,
    pub control: Control,
    pub size: &'a Size,
    pub json: bool,
    /// `--replay`: the kernel runs as a recorded graph.
    pub replay: bool,
    /// `--replay-placement`: the recorded graph's placement.
    pub replay_placement: Option<locus::ReplayPlacement>,
}

/// The name of a benchmark as the bench crate and reports spell it.
pub fn bench_name(b: Bench) -> &'static str {
    match b {
        Bench::RandomDag => "random-dag",
        Bench::Overhead => "overhead",
        Bench::Jacobi1d => "jacobi-1d",
        Bench::Jacobi2d => "jacobi-2d",
        Bench::Jacobi3d => "jacobi-3d",
        Bench::Seidel1d => "seidel-1d",
        Bench::Seidel2d => "seidel-2d",
        Bench::Seidel3d => "seidel-3d",
        Bench::Kmeans => "kmeans",
        Bench::BlurRoberts => "blur-roberts",
        Bench::Bitonic => "bitonic",
        Bench::Sparselu => "sparselu",
        Bench::Cholesky => "cholesky",
        Bench::Spmv => "spmv",
        Bench::Bicgstab => "bicgstab",
        Bench::Stream => "stream",
        Bench::NestedStream => "nested-stream",
        Bench::TwistedStream => "twisted-stream",
    }
}

/// The problem size the options name: a named size (`--preset paper` or `--param
/// size=tiny|small|paper`, not both; `small` when neither), then the explicit options
/// and the other `--param FIELD=VALUE` overrides on top of it. The kernel checks them
/// ([`locus_bench::Workload::new`]); see `locus_bench::size` for the mapping. Paper 1
/// tuned its block sizes per machine (Table 3): `paper` on the `sgi-uv2000` topology is
/// the SGI-192's sizes, on any other the Opteron-64's.
///
/// A `--param` field is given at most once, and is a field of the kernel's parameters:
/// the `--NAME=VALUE` keys by which the options of their own reach the kernel are not
/// `--param`s.
fn size(s: &Size, topology: &str, name: &str, control: BenchControl) -> Result<SizeSpec, Failure> {
    let mut spec = SizeSpec {
        base: match s.preset {
            Some(SizePreset::Paper) => BenchSize::Paper,
            None => BenchSize::Small,
        },
        size: s.size,
        blocks: s.blocks,
        block_len: s.block_len,
        iterations: s.iterations,
        fields: Vec::new(),
    };
    for (i, (k, v)) in s.params.iter().enumerate() {
        if s.params[..i].iter().any(|(earlier, _)| earlier == k) {
            return Err(Failure::Usage(format!(
                "--param {} is given twice; give each field once",
                k.escape_debug()
            )));
        }
        if k.starts_with('-') {
            return Err(Failure::Usage(format!(
                "{name}: unknown --param `{}` (fields: {}; size=tiny|small|paper)",
                k.escape_debug(),
                param_fields(name, control)
            )));
        }
        if k == "size" {
            if s.preset.is_some() {
                return Err(Failure::Usage(
                    "--param size and --preset both name a size; give one".into(),
                ));
            }
            spec.base = v
                .parse()
                .map_err(|e: String| Failure::Usage(format!("--param size: {e}")))?;
        } else {
            spec.fields.push((k.clone(), v.clone()));
        }
    }
    // Options of their own set the kernel's text fields (`locus_bench::size`).
    if let Some(a) = s.affinity {
        let name = a.to_possible_value().expect("no skipped value");
        spec.fields
            .push(("--affinity".into(), name.get_name().into()));
    }
    if let Some(m) = &s.matrix {
        spec.fields.push(("--matrix".into(), m.clone()));
    }
    if let Some(m) = s.migrate {
        let name = m.to_possible_value().expect("no skipped value");
        spec.fields
            .push(("--migrate".into(), name.get_name().into()));
    }
    if spec.base == BenchSize::Paper {
        spec.base = BenchSize::paper_for(topology);
    }
    Ok(spec)
}

/// The fields `--param` sets on `name`'s parameters, for messages: those that hold a
/// number or a boolean and take their own value back (not the figures the report adds,
/// such as cholesky's `flops`).
fn param_fields(name: &str, control: BenchControl) -> String {
    let tiny = || SizeSpec::from(BenchSize::Tiny);
    let Ok(workload) = Workload::new(name, &tiny(), control) else {
        return String::new();
    };
    let params = workload.params();
    let Some(object) = params.as_object() else {
        return String::new();
    };
    object
        .iter()
        .filter(|(_, v)| v.is_number() || v.is_boolean())
        .filter(|(k, v)| {
            let spec = SizeSpec {
                fields: vec![(k.to_string(), v.to_string())],
                ..tiny()
            };
            Workload::new(name, &spec, control).is_ok()
        })
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `threads` run holds its data at least twice (the runtime's versions and the
/// sequential reference) in this machine's memory: a size whose data do not fit is a
/// bad argument, refused before anything is allocated (`locus sim` models larger
/// problems without their memory).
fn fits_in_memory(name: &str, workload: &Workload) -> Result<(), Failure> {
    // SAFETY: `sysconf` only reads system constants; no memory of ours is involved.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let (Ok(pages), Ok(page)) = (u64::try_from(pages), u64::try_from(page)) else {
        return Ok(());
    };
    let memory = pages.saturating_mul(page);
    let needed = workload.data_bytes().saturating_mul(2);
    if memory > 0 && needed > memory {
        return Err(Failure::Usage(format!(
            "{name}: the data take {} and a run holds them twice, more than this machine's {} of memory; `locus sim` models larger problems",
            gib(workload.data_bytes()),
            gib(memory)
        )));
    }
    Ok(())
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Problems whose data exceed this are simulated without running the task bodies
/// (their buffers would not fit this machine): every paper size, no smaller named size.
const SIM_BODIES_UP_TO: u64 = 1 << 30;

/// The simulator for a problem size: bodies run (and results verify) at small sizes,
/// and are skipped at paper sizes, whose buffers would not fit this machine.
pub fn sim_for(size: BenchSize) -> locus_sim::Sim {
    let sim = locus_sim::Sim::new();
    match size {
        BenchSize::Paper | BenchSize::PaperSgi => sim.bodies(locus::engine::Bodies::Skip),
        BenchSize::Tiny | BenchSize::Small => sim,
    }
}

/// `"verified": true|false` (with `"mismatch"` naming the first differing element when
/// false), or `null` with `"bodies": "skipped"` when the bodies were skipped and there
/// is nothing to verify.
pub fn insert_verified(object: &mut Map<String, Value>, outcome: &locus_bench::KernelOutcome) {
    if outcome.checked {
        object.insert("verified".into(), json!(outcome.verified));
        if let Some(m) = &outcome.mismatch {
            object.insert("mismatch".into(), json!(m.to_string()));
        }
    } else {
        object.insert("verified".into(), Value::Null);
        object.insert("bodies".into(), json!("skipped"));
    }
}

/// Builds the runtime, runs the benchmark and prints the report; a result that does
/// not match the sequential reference is a failure (exit status 1), after the report.
/// With `trace`, also writes the run's Chrome trace there (`--trace`):
/// whether the file can be written is checked before the run (without touching a
/// previous trace), a failure then being a usage error (exit status 2), and the file
/// is replaced whole after it, a failure then being a failure of the command (exit
/// status 1: the argument was good, the write did not happen).
pub fn execute_traced(
    job: Job<'_>,
    sim: Option<locus_sim::Sim>,
    trace: Option<&std::path::Path>,
) -> Result<(), Failure> {
    let cannot_write = |path: &std::path::Path, e: std::io::Error| {
        format!("cannot write the trace to {}: {e}", path.display())
    };
    let recorder = match trace {
        Some(path) => {
            // Checks the file can be written without truncating a previous trace: the
            // recorder replaces it whole after the run.
            locus::observe::check_replaceable(path)
                .map_err(|e| Failure::Usage(cannot_write(path, e)))?;
            Some(std::sync::Arc::new(locus::observe::TraceRecorder::new()))
        }
        None => None,
    };
    let name = bench_name(job.bench);
    let control = match job.control {
        Control::Seq => BenchControl::Sequential,
        Control::Parallel => BenchControl::Parallel,
    };
    let mut spec = size(job.size, job.topology.name(), name, control)?;
    // `--migrate`: twisted-stream's policy at its phase change; for every benchmark
    // `none`, `now`, `next-touch` and `auto` are also the runtime's migration setting
    // (twisted-stream takes `auto` only: its other values are its own policies).
    let twisted = name == "twisted-stream";
    let migration = match job.size.migrate {
        None => None,
        Some(MigrateArg::Auto) => Some(locus::Migration::Auto),
        Some(_) if twisted => None,
        Some(MigrateArg::None) => Some(locus::Migration::None),
        Some(MigrateArg::Now) => Some(locus::Migration::Now),
        Some(MigrateArg::NextTouch) => Some(locus::Migration::NextTouch),
        Some(other) => {
            let value = other.to_possible_value().expect("no skipped value");
            return Err(Failure::Usage(format!(
                "--migrate {}: only twisted-stream has it; the runtime's setting is none, \
                 now, next-touch or auto",
                value.get_name()
            )));
        }
    };
    if !twisted {
        spec.fields.retain(|(k, _)| k != "--migrate");
    }
    let workload = Workload::new(name, &spec, control).map_err(|e| match e {
        locus_bench::Error::Params(message) => Failure::Usage(message),
        other => Failure::Failed(format!("{name}: {other}")),
    })?;
    if sim.is_none() {
        fits_in_memory(name, &workload)?;
    }
    // Said once the options are known to be good (a usage error stays one line).
    let oversubscribed = match sim {
        None => crate::render::oversubscribed(&job.topology, job.threads.map(|t| t as usize)),
        Some(_) => None,
    };
    let mut builder = Runtime::builder().topology(job.topology).config(job.config);
    if let Some(m) = migration {
        builder = builder.migration(m);
    }
    if let Some(t) = job.threads {
        builder = builder.threads(t as usize);
    }
    builder = builder.huge_pages(job.huge_pages);
    if let Some(p) = job.replay_placement {
        builder = builder.replay_placement(p);
    }
    builder = builder.proc_bind(match job.bind {
        Bind::Spread => locus::ProcBind::Spread,
        Bind::Close => locus::ProcBind::Close,
    });
    if let Some(shared) = job.shared {
        if !job.config.shared_data() {
            return Err(Failure::Usage(format!(
                "--shared is for --config shm-base, not {}",
                job.config
            )));
        }
        builder = builder.shared_placement(match shared {
            SharedArg::Interleave => locus::RegionPolicy::Interleave,
            SharedArg::FirstTouch => locus::RegionPolicy::FirstTouch,
        });
    }
    if let Some(v) = job.vicinity {
        if job.config != Config::Home {
            return Err(Failure::Usage(format!(
                "--vicinity is for --config home, not {}",
                job.config
            )));
        }
        builder = builder.vicinity(v as usize);
    }
    if let Some(recorder) = &recorder {
        builder = builder.observer(recorder.clone());
    }
    if let Some(sim) = sim {
        builder = builder.engine(if workload.data_bytes() > SIM_BODIES_UP_TO {
            sim.bodies(locus::engine::Bodies::Skip)
        } else {
            sim
        });
    }
    let rt = builder.build().map_err(|e| match e {
        locus::Error::Startup { .. } => Failure::Failed(e.to_string()),
        other => Failure::Usage(other.to_string()),
    })?;
    if let Some(w) = oversubscribed {
        eprintln!("locus: warning: {w}");
    }
    eprintln!(
        "locus: {name} under {} on {} ({}, {} engine)",
        rt.config(),
        rt.topology().name(),
        crate::render::plural(rt.workers(), "worker"),
        rt.engine_name()
    );
    let outcome = if job.replay {
        workload.run_replay(&rt)
    } else {
        workload.run(&rt)
    };
    let outcome = outcome.map_err(|e| match e {
        // Parameters only the runtime can refuse (more nodes than elements): a bad
        // argument all the same.
        locus_bench::Error::Params(message) => Failure::Usage(message),
        other => Failure::Failed(format!("{name}: {other}")),
    })?;
    if let (Some(recorder), Some(path)) = (&recorder, trace) {
        recorder
            .write_file(path)
            .map_err(|e| Failure::Failed(cannot_write(path, e)))?;
        eprintln!(
            "locus: trace of {} tasks written to {} (open it at https://ui.perfetto.dev)",
            recorder.tasks(),
            path.display()
        );
    }
    let mut object = Map::new();
    object.insert("bench".into(), json!(name));
    object.insert("params".into(), outcome.params.clone());
    insert_verified(&mut object, &outcome);
    // Kernels that count their floating-point operations (cholesky) get a rate.
    let gflop_s = outcome.params["flops"]
        .as_f64()
        .filter(|_| outcome.report.wall_s > 0.0)
        .map(|flops| flops / outcome.report.wall_s / 1e9);
    if let Some(rate) = gflop_s {
        object.insert("gflop_s".into(), json!(rate));
    }
    if !outcome.figures.is_null() {
        object.insert("figures".into(), outcome.figures.clone());
    }
    let report = serde_json::to_value(&outcome.report).expect("reports serialise to JSON");
    if let Value::Object(fields) = report {
        object.extend(fields);
    }
    let object = Value::Object(object);
    if job.json {
        println!("{object}");
    } else {
        print!(
            "{}",
            text(name, &outcome.report, outcome.verified, outcome.checked)
        );
        if let Some(rate) = gflop_s {
            println!("  {rate:.3} GFLOP/s (n^3/3 operations)");
        }
        print!("{}", figures_text(&outcome.figures));
    }
    if outcome.verified || !outcome.checked {
        Ok(())
    } else {
        Err(Failure::Failed(format!(
            "{name}: the result does not match the sequential reference{}",
            outcome
                .mismatch
                .as_ref()
                .map_or(String::new(), |m| format!(" ({m})"))
        )))
    }
}

/// The kernel's own figures, one line each (the STREAM family's rates and phases).
fn figures_text(figures: &Value) -> String {
    let mut out = String::new();
    let Value::Object(fields) = figures else {
        return out;
    };
    for (name, value) in fields {
        match value {
            Value::Object(inner) => {
                let parts: Vec<String> = inner
                    .iter()
                    .map(|(k, v)| format!("{k} {}", number(v)))
                    .collect();
                out.push_str(&format!("  {name}: {}\n", parts.join(", ")));
            }
            v => out.push_str(&format!("  {name}: {}\n", number(v))),
        }
    }
    out
}

/// A figure as text: floats with four significant decimals.
fn number(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if v.is_f64() => format!("{x:.4}"),
        _ => v.to_string(),
    }
}

/// Bytes in the largest binary unit that keeps a number of at least 1 (`0 B`, `512 B`,
/// `4.00 KiB`, `12.50 MiB`, `115.49 GiB`).
fn bytes_scaled(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

/// The human-readable report.
fn text(name: &str, r: &locus::Report, verified: bool, checked: bool) -> String {
    let mut out = String::new();
    let l = &r.locality;
    out.push_str(&format!(
        "{name}: {} ({} on {}, {}, {}, {} engine)\n",
        match (checked, verified) {
            (false, _) => "not verified: task bodies were skipped (buffers hold no memory)",
            (true, true) => "verified against the sequential reference",
            (true, false) => "MISMATCH with the sequential reference",
        },
        r.config,
        r.topology.name,
        crate::render::plural(r.topology.nodes, "node"),
        crate::render::plural(r.threads, "worker"),
        r.engine
    ));
    let time = if r.engine == "sim" {
        "simulated"
    } else {
        "wall"
    };
    // Worker-time (time x workers) over tasks: what a task costs one worker, all
    // overheads included; wall time over tasks would divide by the workers again.
    let per_task = if r.tasks > 0 {
        r.wall_s * r.threads as f64 * 1e9 / r.tasks as f64
    } else {
        0.0
    };
    out.push_str(&format!(
        "  time (s) {:.6} ({time}), tasks {}, worker-time per task (ns) {per_task:.0} (time x {} workers / tasks)\n",
        r.wall_s, r.tasks, r.threads
    ));
    out.push_str(&format!(
        "  locality: r_loc_rt {:.3}; read {} local, {} remote; write {} local, {} remote\n",
        l.r_loc_rt,
        bytes_scaled(l.read_local_bytes),
        bytes_scaled(l.read_remote_bytes),
        bytes_scaled(l.write_local_bytes),
        bytes_scaled(l.write_remote_bytes)
    ));
    out.push_str(&format!(
        "  steals: {} same node, {} remote; pushes: {} attempted, {} transferred, {} rejected, {} kept local (below threshold)\n",
        r.steals.same_node, r.steals.remote, r.pushes.attempted, r.pushes.transferred, r.pushes.rejected, r.pushes.kept_local
    ));
    if r.pushes.with_preference > 0 {
        out.push_str(&format!(
            "  tasks with a preferred node: {}, started there: {}\n",
            r.pushes.with_preference, r.pushes.started_on_preferred
        ));
    }
    let per_node: Vec<String> = r
        .memory
        .peak_bytes_per_node
        .iter()
        .map(|&b| bytes_scaled(b))
        .collect();
    out.push_str(&format!(
        "  memory: peak {} (per node: {}), {} allocations, {} reused, {} fallbacks\n",
        bytes_scaled(r.memory.peak_bytes),
        per_node.join(", "),
        r.memory.allocations,
        r.memory.reused,
        r.memory.fallbacks
    ));
    let m = &r.migration;
    if m.bytes > 0 {
        out.push_str(&format!(
            "  migration: {} pages moved ({}): {} now, {} on next touch, {} by auto\n",
            m.now_pages + m.next_touch_pages + m.auto_pages,
            bytes_scaled(m.bytes),
            m.now_pages,
            m.next_touch_pages,
            m.auto_pages
        ));
    }
    if r.traffic.len() <= 8 {
        out.push_str("  traffic (MiB; row: node of the task, column: node of the data)\n");
        let head: Vec<String> = (0..r.traffic.len())
            .map(|j| format!("{:>9}", format!("n{j}")))
            .collect();
        out.push_str(&format!("    {:<4}{}\n", "", head.join("")));
        for (i, row) in r.traffic.iter().enumerate() {
            let cells: Vec<String> = row
                .iter()
                .map(|&b| format!("{:>9.2}", b as f64 / (1u64 << 20) as f64))
                .collect();
            out.push_str(&format!("    n{i:<3}{}\n", cells.join("")));
        }
    }
    let settings: Vec<String> = r
        .settings
        .0
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    out.push_str(&format!("  settings: {}\n", settings.join(", ")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_the_unit_that_fits() {
        assert_eq!(bytes_scaled(0), "0 B");
        assert_eq!(bytes_scaled(512), "512 B");
        assert_eq!(bytes_scaled(4096), "4.00 KiB");
        assert_eq!(bytes_scaled(12 << 20 | 1 << 19), "12.50 MiB");
        // Not 118264.36 MiB.
        assert_eq!(bytes_scaled(124_010_000_000), "115.49 GiB");
    }
}
