//! `random-dag`: a seeded random task graph over versioned data of random sizes.
//!
//! Every task reads a few data (some through a sub-range), writes one or two others
//! whole, and may read-write one more; its body combines its inputs into its outputs
//! deterministically. The same program runs sequentially on plain vectors, from its own
//! loop, to give the reference, so any lost or reordered dependence shows as a mismatch.
//!
//! # Sizes
//!
//! Through [`crate::run_kernel`] and the command line, `tasks` and `max_len` are at
//! least 1 and `data` at least 2 ([`generate`] itself rounds `data` up to 2). `--size N`
//! sets `tasks` = N; `--blocks`, `--block-len` and `--iterations` are refused; `--param
//! FIELD=VALUE` sets any field of [`Params`] (`hints=true|false`).

use locus::{Affinity, Data, Read, ReadWrite, Runtime, Write};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::size::{kernel_params, KernelParams, Options};

/// Shape of a random graph.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Number of tasks.
    pub tasks: usize,
    /// Number of data.
    pub data: usize,
    /// Largest datum, in `u64` elements (sizes are drawn in `1..=max_len`).
    pub max_len: usize,
    /// Most inputs of one task.
    pub max_inputs: usize,
    /// Seed of the generator.
    pub seed: u64,
    /// Whether tasks carry random affinity hints (to a worker, a node or a datum; a
    /// third of them strict). Bodies of strict tasks check where they run.
    pub hints: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            tasks: 2000,
            data: 64,
            max_len: 4096,
            max_inputs: 4,
            seed: 1,
            hints: false,
        }
    }
}

impl Params {
    /// 100 tasks over 16 data of at most 64 elements: for tests.
    pub fn tiny() -> Self {
        Params {
            tasks: 100,
            data: 16,
            max_len: 64,
            ..Params::default()
        }
    }

    /// Checks the parameters (see the [module docs](self)). The message names the field
    /// and the option that sets it.
    pub fn validate(&self) -> Result<(), String> {
        let o = <Self as KernelParams>::OPTIONS;
        o.positive("tasks", self.tasks)?;
        o.positive("max_len", self.max_len)?;
        if self.data < 2 {
            return Err(format!(
                "random-dag: {} = {} must be at least 2",
                o.label("data"),
                self.data
            ));
        }
        o.count("tasks", &[("tasks", self.tasks)])?;
        o.count("data", &[("data", self.data)])?;
        o.elements::<u64>(&[("data", self.data), ("max_len", self.max_len)])
    }
}

kernel_params!(
    Options {
        name: "random-dag",
        axes: &[],
        size: Some("tasks"),
        iterations: None,
    },
    paper: none,
    bytes: |p| crate::size::bytes::<u64>(&[p.data, p.max_len])
);

/// One task of the graph.
#[derive(Clone, Debug)]
pub struct TaskSpec {
    /// Inputs: datum index and element range.
    pub reads: Vec<(usize, std::ops::Range<usize>)>,
    /// Data written whole.
    pub writes: Vec<usize>,
    /// A datum read and written, if any.
    pub read_write: Option<usize>,
    /// Mixed into every output value.
    pub salt: u64,
    /// An affinity hint, if any.
    pub hint: Option<Hint>,
}

/// A random affinity hint. Indices may exceed the number of workers or nodes: they wrap.
#[derive(Clone, Copy, Debug)]
pub enum Hint {
    /// To a worker.
    Worker(usize, bool),
    /// To a node.
    Node(usize, bool),
    /// To the node of a datum.
    Data(usize, bool),
}

/// A generated program: the data sizes and the tasks in submission order.
#[derive(Clone, Debug)]
pub struct Program {
    /// Length of each datum in elements.
    pub lens: Vec<usize>,
    /// The tasks, in submission order.
    pub tasks: Vec<TaskSpec>,
}

/// Generates the program of `params`.
pub fn generate(params: &Params) -> Program {
    let mut rng = SmallRng::seed_from_u64(params.seed);
    let data = params.data.max(2);
    let lens: Vec<usize> = (0..data)
        .map(|_| rng.random_range(1..=params.max_len.max(1)))
        .collect();
    let mut tasks = Vec::with_capacity(params.tasks);
    for t in 0..params.tasks {
        let mut pool: Vec<usize> = (0..data).collect();
        let mut take = |rng: &mut SmallRng| pool.swap_remove(rng.random_range(0..pool.len()));
        let n_reads = rng.random_range(0..=params.max_inputs.min(data - 1));
        let mut reads = Vec::with_capacity(n_reads);
        for _ in 0..n_reads {
            let d = take(&mut rng);
            let len = lens[d];
            let range = if rng.random_bool(0.3) {
                let a = rng.random_range(0..len);
                let b = rng.random_range(a + 1..=len);
                a..b
            } else {
                0..len
            };
            reads.push((d, range));
        }
        let remaining = data - n_reads;
        let n_writes = if remaining == 0 {
            0
        } else {
            rng.random_range(1..=remaining.min(2))
        };
        let writes: Vec<usize> = (0..n_writes).map(|_| take(&mut rng)).collect();
        let read_write =
            (data - n_reads - n_writes > 0 && rng.random_bool(0.3)).then(|| take(&mut rng));
        let hint = (params.hints && rng.random_bool(0.5)).then(|| {
            let strict = rng.random_bool(0.33);
            match rng.random_range(0..3) {
                0 => Hint::Worker(rng.random_range(0..16), strict),
                1 => Hint::Node(rng.random_range(0..8), strict),
                _ => Hint::Data(rng.random_range(0..data), false),
            }
        });
        tasks.push(TaskSpec {
            reads,
            writes,
            read_write,
            salt: t as u64 + 1,
            hint,
        });
    }
    Program { lens, tasks }
}

/// A cheap, well-mixing combination of two words.
#[inline]
fn mix(a: u64, b: u64) -> u64 {
    (a ^ b.rotate_left(17))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(29)
}

/// The body of every task: every output element depends on the task's salt, its
/// position, one element of each input and, for a read-write, its previous value.
/// [`reference()`] computes the same from its own loop.
pub fn apply(
    salt: u64,
    inputs: &[&[u64]],
    writes: &mut [&mut [u64]],
    read_write: Option<&mut [u64]>,
) {
    let fold = |i: usize| inputs.iter().fold(salt, |acc, x| mix(acc, x[i % x.len()]));
    for (k, out) in writes.iter_mut().enumerate() {
        for (i, o) in out.iter_mut().enumerate() {
            *o = mix(fold(i), k as u64);
        }
    }
    if let Some(rw) = read_write {
        for (i, o) in rw.iter_mut().enumerate() {
            *o = mix(*o, fold(i));
        }
    }
}

/// Runs the program sequentially on plain vectors (all data start at zero), task by
/// task in submission order, from the definition of a task's body (see [`apply`]),
/// written out here again: with `m(a, b) = rotl29((a ^ rotl17(b)) × 0x9E3779B97F4A7C15)`
/// and `f(i)` the fold of `m` over the task's inputs in order, starting from its salt,
/// with input `x` contributing `x[i mod len(x)]`, element `i` of the task's `k`-th
/// written datum becomes `m(f(i), k)` and element `i` of its read-write datum `o`
/// becomes `m(o, f(i))`.
///
/// # Errors
///
/// [`crate::Error::OutOfMemory`] if the data cannot be allocated.
pub fn reference(program: &Program) -> Result<Vec<Vec<u64>>, crate::Error> {
    use crate::alloc::{collected, copied, filled, with_capacity};
    let m = |a: u64, b: u64| {
        (a ^ b.rotate_left(17))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29)
    };
    let mut data: Vec<Vec<u64>> =
        with_capacity("the random-dag reference's data", program.lens.len())?;
    for &len in &program.lens {
        data.push(filled("a datum of the random-dag reference", len, 0)?);
    }
    for t in &program.tasks {
        // Every input is read before any output is written (a task never writes what
        // it reads).
        let mut inputs: Vec<Vec<u64>> = with_capacity("a task's inputs", t.reads.len())?;
        for (d, r) in &t.reads {
            inputs.push(copied("a task's input", &data[*d][r.clone()])?);
        }
        let fold = |i: usize| {
            let mut acc = t.salt;
            for x in &inputs {
                acc = m(acc, x[i % x.len()]);
            }
            acc
        };
        for (k, &d) in t.writes.iter().enumerate() {
            let len = program.lens[d];
            data[d] = collected(
                "a datum of the random-dag reference",
                len,
                (0..len).map(|i| m(fold(i), k as u64)),
            )?;
        }
        if let Some(d) = t.read_write {
            for (i, o) in data[d].iter_mut().enumerate() {
                *o = m(*o, fold(i));
            }
        }
    }
    Ok(data)
}

/// The handles of a program's data in one runtime.
pub struct Handles(pub Vec<Data<u64>>);

impl Handles {
    /// Creates the program's data in `rt`, all zero.
    pub fn new(rt: &Runtime, program: &Program) -> Self {
        Handles(
            program
                .lens
                .iter()
                .enumerate()
                .map(|(i, &len)| rt.data::<u64>(format!("d{i}"), len))
                .collect(),
        )
    }

    /// The final contents of every datum.
    pub fn fetch(&self, rt: &Runtime) -> Result<Vec<Vec<u64>>, locus::Error> {
        self.0.iter().map(|d| rt.fetch(d)).collect()
    }
}

/// Submits the whole program from the control program's scope. `workers` and `nodes`
/// are the runtime's, for the bodies of strict tasks to check where they run.
pub fn submit(
    scope: &locus::Scope,
    program: &Program,
    handles: &Handles,
    workers: usize,
    nodes: usize,
) -> Result<(), locus::Error> {
    for (t, spec) in program.tasks.iter().enumerate() {
        let reads: Vec<Read<u64>> = spec
            .reads
            .iter()
            .map(|(d, r)| handles.0[*d].read_range(r.clone()))
            .collect();
        let writes: Vec<Write<u64>> = spec.writes.iter().map(|&d| handles.0[d].write()).collect();
        let rw: Vec<ReadWrite<u64>> = spec
            .read_write
            .iter()
            .map(|&d| handles.0[d].read_write())
            .collect();
        let salt = spec.salt;
        let mut task = scope.task(format!("t{t}"), (reads, writes, rw));
        let mut strict_worker = None;
        let mut strict_node = None;
        if let Some(hint) = spec.hint {
            let affinity = match hint {
                Hint::Worker(w, strict) => {
                    strict_worker = strict.then_some(w % workers);
                    Affinity::worker(w)
                }
                Hint::Node(n, strict) => {
                    strict_node = strict.then_some(n % nodes);
                    Affinity::node(n)
                }
                Hint::Data(d, _) => Affinity::data(&handles.0[d]),
            };
            let strict = strict_worker.is_some() || strict_node.is_some();
            task = task.affinity(if strict { affinity.strict() } else { affinity });
        }
        task.spawn(move |ctx, (ins, mut outs, mut rw)| {
            if let Some(w) = strict_worker {
                assert_eq!(ctx.worker(), w, "strict task ran on another worker");
            }
            if let Some(n) = strict_node {
                assert_eq!(ctx.node(), n, "strict task ran on another node");
            }
            apply(salt, &ins, &mut outs, rw.pop());
        })?;
    }
    Ok(())
}

/// Outcome of one run of a random graph on a runtime.
#[derive(Debug)]
pub struct Outcome {
    /// Whether every datum matched the sequential reference.
    pub verified: bool,
    /// Data whose contents differ from the reference.
    pub mismatches: usize,
    /// The first differing element (of the lowest-numbered such datum), if any.
    pub mismatch: Option<crate::Mismatch>,
    /// The run's report.
    pub report: locus::Report,
}

/// Generates, runs and verifies one random graph against [`reference()`].
pub fn run(rt: &Runtime, params: &Params) -> Result<Outcome, crate::Error> {
    run_against(rt, params, reference)
}

/// [`run`], comparing the result with `want(program)`.
pub(crate) fn run_against(
    rt: &Runtime,
    params: &Params,
    want: impl FnOnce(&Program) -> Result<Vec<Vec<u64>>, crate::Error>,
) -> Result<Outcome, crate::Error> {
    let program = generate(params);
    let handles = Handles::new(rt, &program);
    let (workers, nodes) = (rt.workers(), rt.topology().num_nodes());
    let finished = rt.run(|s| submit(s, &program, &handles, workers, nodes))?;
    let ((), report) = crate::finished(finished)?;
    if rt.skips_bodies() {
        return Ok(Outcome {
            verified: false,
            mismatches: 0,
            mismatch: None,
            report,
        });
    }
    let expected = want(&program)?;
    let got = handles.fetch(rt)?;
    let mut mismatches = 0;
    let mut mismatch = None;
    for (d, (g, e)) in got.iter().zip(&expected).enumerate() {
        if let Some(m) = crate::verify::first_mismatch(&format!("datum {d}"), g, e) {
            mismatches += 1;
            mismatch.get_or_insert(m);
        }
    }
    Ok(Outcome {
        verified: mismatches == 0 && got.len() == expected.len(),
        mismatches,
        mismatch,
        report,
    })
}
