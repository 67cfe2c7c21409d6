//! Random nested task programs against their sequential execution, under every
//! configuration: each task declares some of the data its parent hands it (strongly or
//! weakly, reading or writing as its parent allows), does arithmetic on what it sees,
//! and spawns children. Sequentially, a task's body runs, then its children's
//! subtrees in spawn order: the order nesting semantics promise.

use std::sync::OnceLock;

use locus::{Config, Data, Runtime, TaskCtx, Topology};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const DATA: usize = 5;
const LEN: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Read,
    Write,
    ReadWrite,
}

#[derive(Clone, Debug)]
struct Access {
    datum: usize,
    mode: Mode,
    weak: bool,
}

#[derive(Clone, Debug)]
struct Node {
    id: u64,
    accesses: Vec<Access>,
    children: Vec<Node>,
}

/// What a task may hand its children: per datum, whether they may write it.
fn generate(rng: &mut SmallRng, allowed: &[(usize, bool)], depth: usize, next: &mut u64) -> Node {
    let id = *next;
    *next += 1;
    let mut accesses = Vec::new();
    for &(datum, writable) in allowed {
        if !rng.random_bool(0.6) {
            continue;
        }
        let mode = match (writable, rng.random_range(0..3)) {
            (false, _) | (true, 0) => Mode::Read,
            (true, 1) => Mode::Write,
            _ => Mode::ReadWrite,
        };
        let weak = depth < 2 && rng.random_bool(0.35);
        accesses.push(Access { datum, mode, weak });
    }
    let handed: Vec<(usize, bool)> = accesses
        .iter()
        .map(|a| (a.datum, a.mode != Mode::Read))
        .collect();
    let children = if depth < 2 && !handed.is_empty() {
        (0..rng.random_range(0..4))
            .map(|_| generate(rng, &handed, depth + 1, next))
            .collect()
    } else {
        Vec::new()
    };
    Node {
        id,
        accesses,
        children,
    }
}

fn program(seed: u64) -> Vec<Node> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let all: Vec<(usize, bool)> = (0..DATA).map(|d| (d, true)).collect();
    let mut next = 1;
    (0..rng.random_range(1..6))
        .map(|_| generate(&mut rng, &all, 0, &mut next))
        .collect()
}

/// The body's arithmetic: `sum` of what the task reads, then its writes.
fn apply(id: u64, sum: u64, mode: Mode, v: &mut [u64]) {
    for (i, e) in v.iter_mut().enumerate() {
        *e = match mode {
            Mode::Write => id.wrapping_mul(31).wrapping_add(sum).wrapping_add(i as u64),
            _ => e.wrapping_mul(3).wrapping_add(id).wrapping_add(sum),
        };
    }
}

fn run_sequentially(nodes: &[Node], state: &mut [Vec<u64>]) {
    for n in nodes {
        let strong = || n.accesses.iter().filter(|a| !a.weak);
        let sum = strong()
            .filter(|a| a.mode != Mode::Write)
            .flat_map(|a| state[a.datum].iter())
            .fold(0u64, |s, &e| s.wrapping_add(e));
        for a in strong().filter(|a| a.mode != Mode::Read) {
            apply(n.id, sum, a.mode, &mut state[a.datum]);
        }
        run_sequentially(&n.children, state);
    }
}

/// One access as the runtime sees it: its views come as `Vec<&[u64]>` (reads),
/// `Vec<&mut [u64]>` (writes and read-writes), and `()` (weak).
type Lists = (
    Vec<locus::Read<u64>>,
    Vec<locus::Write<u64>>,
    Vec<locus::ReadWrite<u64>>,
    Vec<locus::Weak>,
);

fn accesses(n: &Node, data: &[Data<u64>]) -> Lists {
    let mut lists: Lists = Default::default();
    for a in &n.accesses {
        let d = &data[a.datum];
        match (a.mode, a.weak) {
            (Mode::Read, false) => lists.0.push(d.read()),
            (Mode::Write, false) => lists.1.push(d.write()),
            (Mode::ReadWrite, false) => lists.2.push(d.read_write()),
            (Mode::Read, true) => lists.3.push(d.weak_read()),
            (Mode::Write, true) => lists.3.push(d.weak_write()),
            (Mode::ReadWrite, true) => lists.3.push(d.weak_read_write()),
        }
    }
    lists
}

fn spawn(scope: &locus::Scope, n: Node, data: Vec<Data<u64>>) {
    let lists = accesses(&n, &data);
    scope
        .spawn("t", lists, move |ctx: &TaskCtx, (reads, writes, rws, _)| {
            let sum = reads
                .iter()
                .map(|r| &r[..])
                .chain(rws.iter().map(|r| &r[..]))
                .flat_map(|v| v.iter())
                .fold(0u64, |s, &e| s.wrapping_add(e));
            for w in writes {
                apply(n.id, sum, Mode::Write, w);
            }
            for rw in rws {
                apply(n.id, sum, Mode::ReadWrite, rw);
            }
            for child in n.children {
                spawn(ctx.scope(), child, data.clone());
            }
        })
        .unwrap();
}

impl Default for Access {
    fn default() -> Self {
        Access {
            datum: 0,
            mode: Mode::Read,
            weak: false,
        }
    }
}

fn runtimes() -> &'static Vec<(Config, &'static str, Runtime)> {
    static RUNTIMES: OnceLock<Vec<(Config, &'static str, Runtime)>> = OnceLock::new();
    RUNTIMES.get_or_init(|| {
        Config::ALL
            .into_iter()
            .flat_map(|c| [(c, "1x1"), (c, "2x1")])
            .map(|(config, spec)| {
                let rt = Runtime::builder()
                    .topology(Topology::from_spec(spec).unwrap())
                    .config(config)
                    .build()
                    .unwrap();
                (config, spec, rt)
            })
            .collect()
    })
}

fn check(seed: u64) {
    // The runtimes are shared by the tests of this file: one program at a time, so
    // that each can count the versions it leaves.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let nodes = program(seed);
    let mut want: Vec<Vec<u64>> = (0..DATA).map(|d| vec![d as u64 + 1; LEN]).collect();
    run_sequentially(&nodes, &mut want);
    let total: u64 = {
        fn count(n: &[Node]) -> u64 {
            n.iter().map(|n| 1 + count(&n.children)).sum()
        }
        count(&nodes)
    };
    for (config, spec, rt) in runtimes() {
        let data: Vec<Data<u64>> = (0..DATA)
            .map(|d| rt.data_from(format!("d{d}"), &[d as u64 + 1; LEN]).unwrap())
            .collect();
        let report = rt
            .run(|s| {
                for n in nodes.clone() {
                    spawn(s, n, data.clone());
                }
            })
            .unwrap_or_else(|e| panic!("seed {seed}, {config} on {spec}: {e}"))
            .report;
        assert_eq!(report.tasks, total, "seed {seed}, {config} on {spec}");
        for (d, want) in want.iter().enumerate() {
            assert_eq!(
                &rt.fetch(&data[d]).unwrap(),
                want,
                "seed {seed}, {config} on {spec}: datum {d}\n{nodes:#?}"
            );
        }
        drop(data);
        assert_eq!(rt.live_versions(), 0, "seed {seed}, {config} on {spec}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_nested_programs_match_sequential_execution(seed in any::<u64>()) {
        check(seed);
    }
}

#[test]
fn fixed_seeds() {
    for seed in 0..50 {
        check(seed);
    }
}
