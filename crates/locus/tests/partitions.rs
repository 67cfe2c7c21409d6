//! Partitioned data: parts as data of their own, dependences by overlap, gathered
//! wholes, bytes and placement per part, bad partitions, and random programs over
//! overlapping partitions against sequential execution under every configuration.

// A list of one range is a partition of one part, as meant.
#![allow(clippy::single_range_in_vec_init)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use locus::{Affinity, Config, Data, Error, Partition, Runtime, Topology};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

#[test]
fn tiles_are_tile_major_and_the_whole_is_gathered_by_fetch_and_by_tasks() {
    for config in [Config::DsaBase, Config::Dfa, Config::ShmBase] {
        let rt = runtime("2x1", config);
        // A 4 x 6 matrix in 2 x 3 tiles.
        let values: Vec<u32> = (0..24).collect();
        let m = rt.data_from("m", &values).unwrap();
        let tiles = rt.partition(&m, Partition::tiles(4, 6, 2, 3)).unwrap();
        assert_eq!((tiles.len(), tiles.grid()), (4, Some((2, 2))));
        // Tile (1, 0): rows 2..4, columns 0..3, row after row.
        assert_eq!(
            rt.fetch(tiles.tile(1, 0).unwrap()).unwrap(),
            vec![12, 13, 14, 18, 19, 20]
        );
        assert!(tiles.tile(2, 0).is_none());
        let copy = rt.data::<u32>("copy", 24);
        rt.run(|s| {
            for (k, t) in tiles.iter().enumerate() {
                s.spawn("tile", t.read_write(), move |_, t| {
                    t.iter_mut().for_each(|x| *x += 100 * k as u32)
                })
                .unwrap();
            }
            s.spawn("whole", (m.read(), copy.write()), |_, (m, c)| {
                c.copy_from_slice(m)
            })
            .unwrap();
        })
        .unwrap();
        let want: Vec<u32> = (0..24u32)
            .map(|e| {
                let (r, c) = (e / 6, e % 6);
                e + 100 * ((r / 2) * 2 + c / 3)
            })
            .collect();
        assert_eq!(rt.fetch(&m).unwrap(), want, "{config}");
        assert_eq!(rt.fetch(&copy).unwrap(), want, "{config}");
        // A write of the whole scatters back into the tiles.
        rt.run(|s| {
            s.spawn("fill", m.write(), |_, m| {
                for (i, x) in m.iter_mut().enumerate() {
                    *x = 1000 + i as u32;
                }
            })
            .unwrap();
        })
        .unwrap();
        assert_eq!(
            rt.fetch(&tiles[3]).unwrap(),
            vec![1015, 1016, 1017, 1021, 1022, 1023],
            "{config}"
        );
    }
}

#[test]
fn parts_and_the_whole_depend_on_each_other_by_overlap_in_submission_order() {
    for config in [Config::Ws, Config::DsaBase, Config::Dfa, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let v = rt.data_from("v", &[1u64; 8]).unwrap();
        let halves = rt.partition(&v, Partition::blocks(4)).unwrap();
        let middle = rt.partition(&v, Partition::ranges([2..6])).unwrap();
        let seen = rt.data::<u64>("seen", 8);
        let seen_middle = rt.data::<u64>("seen-middle", 4);
        let before = rt.data::<u64>("before", 8);
        rt.run(|s| {
            // Read of the whole before the part writes: sees the old contents.
            s.spawn("old", (v.read(), before.write()), |_, (v, b)| {
                std::thread::sleep(Duration::from_millis(5));
                b.copy_from_slice(v);
            })
            .unwrap();
            s.spawn("left", halves[0].write(), |_, h| h.fill(2))
                .unwrap();
            s.spawn("right", halves[1].read_write(), |_, h| {
                h.iter_mut().for_each(|x| *x += 2)
            })
            .unwrap();
            // Overlaps both halves: sees both writes, its own write is seen by the whole.
            s.spawn("middle", middle[0].read_write(), |_, m| {
                m.iter_mut().for_each(|x| *x *= 10)
            })
            .unwrap();
            s.spawn("new", (v.read(), seen.write()), |_, (v, o)| {
                o.copy_from_slice(v)
            })
            .unwrap();
            s.spawn("whole", v.read_write(), |_, v| v[7] = 99).unwrap();
            s.spawn(
                "mid-read",
                (middle[0].read(), seen_middle.write()),
                |_, (m, o)| o.copy_from_slice(m),
            )
            .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&before).unwrap(), vec![1; 8], "{config}");
        assert_eq!(
            rt.fetch(&seen).unwrap(),
            vec![2, 2, 20, 20, 30, 30, 3, 3],
            "{config}"
        );
        assert_eq!(
            rt.fetch(&seen_middle).unwrap(),
            vec![20, 20, 30, 30],
            "{config}"
        );
        assert_eq!(
            rt.fetch(&v).unwrap(),
            vec![2, 2, 20, 20, 30, 30, 3, 99],
            "{config}"
        );
        assert_eq!(
            rt.fetch(&halves[1]).unwrap(),
            vec![30, 30, 3, 99],
            "{config}"
        );
    }
}

/// Writers of disjoint parts do not wait for each other: the first holds its worker
/// until the second has run (a false dependence would hang it; it gives up after a
/// minute and fails the run instead).
#[test]
fn writers_of_disjoint_parts_do_not_wait_for_each_other() {
    for config in [Config::DsaBase, Config::Dfa, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let v = rt.data::<u64>("v", 8);
        let parts = rt.partition(&v, Partition::ranges([0..4, 4..8])).unwrap();
        let second_ran = Arc::new(AtomicBool::new(false));
        rt.run(|s| {
            let ran = second_ran.clone();
            s.spawn("first", parts[0].write(), move |_, p| {
                let give_up = Instant::now() + Duration::from_secs(60);
                while !ran.load(Ordering::Acquire) {
                    assert!(
                        Instant::now() < give_up,
                        "the second part waited for the first"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
                p.fill(1);
            })
            .unwrap();
            let ran = second_ran.clone();
            s.spawn("second", parts[1].write(), move |_, p| {
                p.fill(2);
                ran.store(true, Ordering::Release);
            })
            .unwrap();
        })
        .unwrap();
        assert_eq!(
            rt.fetch(&v).unwrap(),
            vec![1, 1, 1, 1, 2, 2, 2, 2],
            "{config}"
        );
    }
}

/// Overlapping accesses in one task are refused when one writes; reads may overlap.
#[test]
fn overlapping_accesses_in_one_task_are_refused_when_one_writes() {
    let rt = runtime("2x1", Config::Dfa);
    let v = rt.data::<u64>("v", 8);
    let parts = rt.partition(&v, Partition::blocks(4)).unwrap();
    let mut error = None;
    let outcome = rt.run(|s| error = Some(s.spawn("t", (v.read(), parts[1].write()), |_, _| {})));
    assert!(outcome.is_err());
    let message = error.unwrap().unwrap_err().to_string();
    assert!(message.contains("overlap"), "{message}");
    let out = rt.data::<u64>("out", 1);
    // A range of the whole that falls in one block, against that block's part: both
    // resolve to the same stored segment alone. Refused under every configuration:
    // updated in place, the two views would be one buffer, read and written at once
    // (and the task would wait for its own read).
    for config in [Config::Dfa, Config::DsaBase, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let v = rt.data::<u64>("v", 8);
        let parts = rt.partition(&v, Partition::blocks(4)).unwrap();
        let out = rt.data::<u64>("out", 1);
        let mut error = None;
        let outcome = rt
            .run(|s| error = Some(s.spawn("t", (v.read_range(4..8), parts[1].write()), |_, _| {})));
        assert!(outcome.is_err(), "{config}");
        let message = error.unwrap().unwrap_err().to_string();
        assert!(
            message.contains("`v` and `v[4..8]` overlap"),
            "{config}: {message}"
        );
        // Reading both is no clash.
        rt.run(|s| {
            s.spawn(
                "reads",
                (v.read_range(4..6), parts[1].read(), out.write()),
                |_, (r, p, o)| o[0] = (r.len() + p.len()) as u64,
            )
            .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&out).unwrap(), vec![6], "{config}");
    }
    rt.run(|s| {
        s.spawn(
            "reads",
            (v.read(), parts[1].read(), out.write()),
            |_, (v, p, o)| o[0] = (v.len() + p.len()) as u64,
        )
        .unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&out).unwrap(), vec![12]);
}

/// The report proves a part write touches the part only: its bytes, one allocation
/// of the part's size, no copy of the whole.
#[test]
fn writing_a_part_copies_nothing_but_the_part() {
    const LEN: usize = 1 << 16;
    for config in [Config::DsaBase, Config::Dfa] {
        let rt = runtime("2x1", config);
        let v = rt.data_from("v", &vec![1u64; LEN]).unwrap();
        let parts = rt.partition(&v, Partition::blocks(LEN / 8)).unwrap();
        let part_bytes = (LEN / 8 * 8) as u64;
        let written = |f: &locus::Finished<()>| {
            let l = &f.report.locality;
            (
                l.read_local_bytes + l.read_remote_bytes,
                l.write_local_bytes + l.write_remote_bytes,
            )
        };
        let f = rt
            .run(|s| {
                s.spawn("write", parts[3].write(), |_, p| p.fill(7))
                    .unwrap()
            })
            .unwrap();
        assert_eq!(written(&f), (0, part_bytes), "{config}");
        assert_eq!(
            f.report.memory.allocations, 1,
            "{config}: one buffer of one part"
        );
        let f = rt
            .run(|s| {
                s.spawn("bump", parts[5].read_write(), |_, p| {
                    p.iter_mut().for_each(|x| *x += 1)
                })
                .unwrap()
            })
            .unwrap();
        assert_eq!(written(&f), (part_bytes, part_bytes), "{config}");
        // The part's segment is its only holder's: updated in place (with one copy of
        // the part kept until the body has run, for a failure to put back), or,
        // under deferred allocation on another node, one new buffer for the part.
        let in_place = f.report.versions.in_place;
        assert_eq!(f.report.memory.allocations, 1, "{config}");
        if config == Config::DsaBase {
            assert_eq!(in_place, 1, "{config}: immediate allocation, any node");
        }
        // Every part's buffer is alive plus at most one old version of one part.
        assert!(rt.pool_bytes_in_use() <= (LEN * 8) as u64 + 2 * part_bytes);
        let whole = rt.fetch(&v).unwrap();
        assert_eq!(whole[3 * LEN / 8], 7);
        assert_eq!(whole[5 * LEN / 8], 2);
        assert_eq!(whole[0], 1);
    }
}

/// Deferred allocation places each part's new version on its writer's node.
#[test]
fn deferred_allocation_places_each_part_on_its_writers_node() {
    let rt = runtime("4x1", Config::Dfa);
    let v = rt.data::<u64>("v", 4096);
    let parts = rt.partition(&v, Partition::blocks(1024)).unwrap();
    rt.run(|s| {
        for (n, p) in parts.iter().enumerate() {
            s.task("fill", p.write())
                .affinity(Affinity::node(n).strict())
                .spawn(move |ctx, p| {
                    assert_eq!(ctx.node(), n);
                    p.fill(n as u64)
                })
                .unwrap();
        }
    })
    .unwrap();
    for (n, p) in parts.iter().enumerate() {
        assert_eq!(rt.node_of(p).unwrap(), Some(n));
    }
    assert_eq!(rt.bytes_per_node(&v).unwrap(), vec![8192; 4]);
}

#[test]
fn bad_partitions_are_errors() {
    let rt = runtime("1x1", Config::Dfa);
    let v = rt.data::<u64>("v", 24);
    let bad = |p: Partition| rt.partition(&v, p).err().map(|e| e.to_string());
    for (p, says) in [
        (Partition::blocks(0), "0 elements"),
        (Partition::ranges([0..4, 20..25]), "out of bounds"),
        (Partition::ranges([3..3]), "empty"),
        (Partition::tiles(4, 6, 0, 3), "tiles of 0 x 3"),
        (Partition::tiles(4, 6, 3, 3), "do not divide"),
        (Partition::tiles(5, 5, 1, 1), "has 25 elements"),
    ] {
        let message = bad(p).expect("refused");
        assert!(
            message.contains(says) && message.contains("`v`"),
            "{message}"
        );
    }
    let tiles = rt.partition(&v, Partition::tiles(4, 6, 2, 3)).unwrap();
    let message = rt
        .partition(&tiles[0], Partition::blocks(2))
        .unwrap_err()
        .to_string();
    assert!(message.contains("is a part"), "{message}");
    // Unions of tiles are fine, a cut through one is not.
    let rows = rt
        .partition(&v, Partition::ranges([0..12, 12..24]))
        .unwrap();
    assert_eq!(rows.len(), 2);
    let message = bad(Partition::ranges([0..4])).unwrap();
    assert!(message.contains("unions of them"), "{message}");
    // One block larger than the datum is the whole datum.
    let w = rt.data::<u64>("w", 5);
    assert_eq!(
        rt.partition(&w, Partition::blocks(usize::MAX))
            .unwrap()
            .len(),
        1
    );
    let other = runtime("1x1", Config::Dfa);
    assert!(matches!(
        other.partition(&v, Partition::blocks(4)),
        Err(Error::ForeignData { .. })
    ));
}

/// A parent declaring the whole hands its parts' segments to its children.
#[test]
fn children_of_a_task_declaring_the_whole_write_its_parts() {
    for config in [Config::DsaBase, Config::Dfa, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let v = rt.data::<u64>("v", 8);
        let parts = rt.partition(&v, Partition::blocks(2)).unwrap();
        let parts: Vec<Data<u64>> = parts.iter().cloned().collect();
        let sum = rt.data::<u64>("sum", 1);
        rt.run(|s| {
            s.spawn("parent", v.weak_write(), move |ctx, ()| {
                for (k, p) in parts.iter().enumerate() {
                    ctx.scope()
                        .spawn("child", p.write(), move |_, p| p.fill(k as u64 + 1))
                        .unwrap();
                }
            })
            .unwrap();
            s.spawn("sum", (v.read(), sum.write()), |_, (v, s)| {
                s[0] = v.iter().sum()
            })
            .unwrap();
        })
        .unwrap();
        assert_eq!(
            rt.fetch(&sum).unwrap(),
            vec![2 * (1 + 2 + 3 + 4)],
            "{config}"
        );
    }
}

// Random programs over overlapping partitions.

/// A handle of the random programs: its datum, and the elements of the datum its view
/// shows, in view order.
struct Handle {
    datum: usize,
    elements: Vec<usize>,
    /// Whether tasks may reduce into it (one stored segment, or unpartitioned).
    reducible: bool,
}

const V_LEN: usize = 24;
const M_ROWS: usize = 6;

/// The handles: `v` whole, blocks of 6, overlapping ranges; `m` whole (6 x 6), its 2 x 3
/// tiles, its two row blocks (unions of tiles).
fn handles() -> Vec<Handle> {
    let mut h = vec![Handle {
        datum: 0,
        elements: (0..V_LEN).collect(),
        reducible: false,
    }];
    for s in (0..V_LEN).step_by(6) {
        h.push(Handle {
            datum: 0,
            elements: (s..s + 6).collect(),
            reducible: false,
        });
    }
    for r in [3..9, 9..21, 0..2, 20..24] {
        h.push(Handle {
            datum: 0,
            elements: r.collect(),
            reducible: false,
        });
    }
    h.push(Handle {
        datum: 1,
        elements: (0..M_ROWS * M_ROWS).collect(),
        reducible: false,
    });
    for ti in 0..3 {
        for tj in 0..2 {
            let elements = (0..2)
                .flat_map(|r| (0..3).map(move |c| (ti * 2 + r) * M_ROWS + tj * 3 + c))
                .collect();
            h.push(Handle {
                datum: 1,
                elements,
                reducible: false,
            });
        }
    }
    h.push(Handle {
        datum: 1,
        elements: (0..12).collect(),
        reducible: false,
    });
    h.push(Handle {
        datum: 1,
        elements: (12..36).collect(),
        reducible: false,
    });
    // `s`: 8 elements in two blocks, each one segment; `a`: 3 elements, unpartitioned.
    h.push(Handle {
        datum: 2,
        elements: (0..8).collect(),
        reducible: false,
    });
    for b in [0..4, 4..8] {
        h.push(Handle {
            datum: 2,
            elements: b.collect(),
            reducible: true,
        });
    }
    h.push(Handle {
        datum: 3,
        elements: (0..3).collect(),
        reducible: true,
    });
    h
}

fn initial() -> Vec<Vec<u64>> {
    vec![
        (0..V_LEN as u64).collect(),
        (0..36u64).map(|x| x * 7).collect(),
        (0..8u64).map(|x| x << 60).collect(),
        vec![1, 2, 3],
    ]
}

fn runtime_handles(rt: &Runtime) -> (Vec<Data<u64>>, Vec<Data<u64>>) {
    let init = initial();
    let v = rt.data_from("v", &init[0]).unwrap();
    let m = rt.data_from("m", &init[1]).unwrap();
    let sd = rt.data_from("s", &init[2]).unwrap();
    let a = rt.data_from("a", &init[3]).unwrap();
    let mut out = vec![v.clone()];
    out.extend(
        rt.partition(&v, Partition::blocks(6))
            .unwrap()
            .iter()
            .cloned(),
    );
    out.extend(
        rt.partition(&v, Partition::ranges([3..9, 9..21, 0..2, 20..24]))
            .unwrap()
            .iter()
            .cloned(),
    );
    out.push(m.clone());
    out.extend(
        rt.partition(&m, Partition::tiles(6, 6, 2, 3))
            .unwrap()
            .iter()
            .cloned(),
    );
    out.extend(
        rt.partition(&m, Partition::ranges([0..12, 12..36]))
            .unwrap()
            .iter()
            .cloned(),
    );
    out.push(sd.clone());
    out.extend(
        rt.partition(&sd, Partition::blocks(4))
            .unwrap()
            .iter()
            .cloned(),
    );
    out.push(a.clone());
    (vec![v, m, sd, a], out)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Read,
    Write,
    ReadWrite,
    Reduce,
}

#[derive(Clone, Debug)]
struct Access {
    handle: usize,
    mode: Mode,
    /// A read of part of the view only.
    range: Option<std::ops::Range<usize>>,
}

fn program(seed: u64, handles: &[Handle]) -> Vec<Vec<Access>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut tasks = Vec::new();
    for _ in 0..rng.random_range(1..25) {
        tasks.push(task(&mut rng, handles, false).0);
    }
    tasks
}

/// One task's accesses, 1 to 3 of them; with `clashes`, accesses that the runtime must
/// refuse are kept too. Whether any was kept.
fn task(rng: &mut SmallRng, handles: &[Handle], clashes: bool) -> (Vec<Access>, bool) {
    let mut accesses: Vec<Access> = Vec::new();
    let mut clashed = false;
    // Per access: handle, datum, elements, whether it writes.
    let mut taken: Vec<(usize, usize, BTreeSet<usize>, bool)> = Vec::new();
    for _ in 0..rng.random_range(1..4) {
        let handle = rng.random_range(0..handles.len());
        let mode = match rng.random_range(0..4) {
            0 => Mode::Read,
            1 => Mode::Write,
            2 => Mode::ReadWrite,
            _ if handles[handle].reducible => Mode::Reduce,
            _ => Mode::Read,
        };
        let n = handles[handle].elements.len();
        let range = (mode == Mode::Read && rng.random_bool(0.3)).then(|| {
            let a = rng.random_range(0..n);
            a..rng.random_range(a..=n)
        });
        let els: BTreeSet<usize> = handles[handle].elements[range.clone().unwrap_or(0..n)]
            .iter()
            .copied()
            .collect();
        let datum = handles[handle].datum;
        // The same handle twice with a write is refused whatever the ranges, as for
        // any datum; different handles when their elements overlap.
        let clash = taken.iter().any(|(h, d, e, w)| {
            (*w || mode != Mode::Read) && (*h == handle || (*d == datum && !e.is_disjoint(&els)))
        });
        if !clash || clashes {
            clashed |= clash;
            taken.push((handle, datum, els, mode != Mode::Read));
            accesses.push(Access {
                handle,
                mode,
                range,
            });
        }
    }
    (accesses, clashed)
}

fn apply(id: u64, sum: u64, mode: Mode, v: &mut [u64]) {
    for (i, e) in v.iter_mut().enumerate() {
        *e = match mode {
            Mode::Write => id.wrapping_mul(31).wrapping_add(sum).wrapping_add(i as u64),
            // A contribution: the datum's elements plus these, in any order.
            Mode::Reduce => e
                .wrapping_add(id.wrapping_mul(5) ^ sum)
                .wrapping_add(i as u64),
            _ => e.wrapping_mul(3).wrapping_add(id).wrapping_add(sum),
        };
    }
}

fn add(a: &mut u64, b: &u64) {
    *a = a.wrapping_add(*b);
}

fn run_sequentially(tasks: &[Vec<Access>], handles: &[Handle], state: &mut [Vec<u64>]) {
    for (id, accesses) in tasks.iter().enumerate() {
        let mut sum = 0u64;
        for a in accesses
            .iter()
            .filter(|a| matches!(a.mode, Mode::Read | Mode::ReadWrite))
        {
            let h = &handles[a.handle];
            let els = &h.elements[a.range.clone().unwrap_or(0..h.elements.len())];
            sum = els
                .iter()
                .fold(sum, |s, &e| s.wrapping_add(state[h.datum][e]));
        }
        for a in accesses.iter().filter(|a| a.mode != Mode::Read) {
            let h = &handles[a.handle];
            let mut view: Vec<u64> = h.elements.iter().map(|&e| state[h.datum][e]).collect();
            apply(id as u64, sum, a.mode, &mut view);
            for (&e, x) in h.elements.iter().zip(view) {
                state[h.datum][e] = x;
            }
        }
    }
}

type Lists = (
    Vec<locus::Read<u64>>,
    Vec<locus::Write<u64>>,
    Vec<locus::ReadWrite<u64>>,
    Vec<locus::Reduce<u64>>,
);

/// A task's access lists for `accesses` of the handles `data`.
fn declare(accesses: &[Access], data: &[Data<u64>]) -> Lists {
    let mut lists: Lists = Default::default();
    for a in accesses {
        let d = &data[a.handle];
        match (a.mode, &a.range) {
            (Mode::Read, None) => lists.0.push(d.read()),
            (Mode::Read, Some(r)) => lists.0.push(d.read_range(r.clone())),
            (Mode::Write, _) => lists.1.push(d.write()),
            (Mode::ReadWrite, _) => lists.2.push(d.read_write()),
            (Mode::Reduce, _) => lists.3.push(d.reduce(0, add)),
        }
    }
    lists
}

fn runtimes() -> &'static Vec<(Config, &'static str, Runtime)> {
    static RUNTIMES: OnceLock<Vec<(Config, &'static str, Runtime)>> = OnceLock::new();
    RUNTIMES.get_or_init(|| {
        Config::ALL
            .into_iter()
            .flat_map(|c| [(c, "1x1"), (c, "2x1")])
            .map(|(config, spec)| (config, spec, runtime(spec, config)))
            .collect()
    })
}

/// Held by each test that uses [`runtimes`]: their data would count in each other's
/// live versions.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn check(seed: u64) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let model = handles();
    let tasks = program(seed, &model);
    let mut want = initial();
    run_sequentially(&tasks, &model, &mut want);
    for (config, spec, rt) in runtimes() {
        let (wholes, data) = runtime_handles(rt);
        rt.run(|s| {
            for (id, accesses) in tasks.iter().enumerate() {
                let lists = declare(accesses, &data);
                let id = id as u64;
                s.spawn("t", lists, move |_, (reads, writes, rws, reductions)| {
                    let sum = reads
                        .iter()
                        .map(|r| &r[..])
                        .chain(rws.iter().map(|r| &r[..]))
                        .flat_map(|v| v.iter())
                        .fold(0u64, |s, &e| s.wrapping_add(e));
                    for w in writes {
                        apply(id, sum, Mode::Write, w);
                    }
                    for rw in rws {
                        apply(id, sum, Mode::ReadWrite, rw);
                    }
                    for r in reductions {
                        apply(id, sum, Mode::Reduce, r);
                    }
                })
                .unwrap();
            }
        })
        .unwrap_or_else(|e| panic!("seed {seed}, {config} on {spec}: {e}"));
        for (d, want) in want.iter().enumerate() {
            assert_eq!(
                &rt.fetch(&wholes[d]).unwrap(),
                want,
                "seed {seed}, {config} on {spec}: datum {d}\n{tasks:?}"
            );
        }
        for (h, handle) in model.iter().enumerate() {
            let part: Vec<u64> = handle
                .elements
                .iter()
                .map(|&e| want[handle.datum][e])
                .collect();
            assert_eq!(
                rt.fetch(&data[h]).unwrap(),
                part,
                "seed {seed}, {config}: handle {h}"
            );
        }
        drop((wholes, data));
        assert_eq!(rt.live_versions(), 0, "seed {seed}, {config} on {spec}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_programs_over_partitions_match_sequential_execution(seed in any::<u64>()) {
        check(seed);
    }
}

#[test]
fn fixed_seeds() {
    for seed in 0..20 {
        check(seed);
    }
}

/// A task writing a part and reading a range of the whole inside the part's first run
/// of elements, in either order: a clash, whether the two resolve to several stored
/// segments or to the same one alone.
fn part_against_whole(rng: &mut SmallRng, handles: &[Handle]) -> (Vec<Access>, bool) {
    let whole = |d: usize| handles.iter().position(|h| h.datum == d).expect("a whole");
    let parts: Vec<usize> = (0..handles.len())
        .filter(|&h| whole(handles[h].datum) != h)
        .collect();
    let part = parts[rng.random_range(0..parts.len())];
    let els = &handles[part].elements;
    let run = els
        .iter()
        .zip(els[0]..)
        .take_while(|(e, i)| *e == i)
        .count();
    let a = rng.random_range(0..run);
    let range = els[a]..els[0] + rng.random_range(a + 1..=run);
    let mode = if rng.random_bool(0.5) {
        Mode::Write
    } else {
        Mode::ReadWrite
    };
    let mut accesses = vec![
        Access {
            handle: whole(handles[part].datum),
            mode: Mode::Read,
            range: Some(range),
        },
        Access {
            handle: part,
            mode,
            range: None,
        },
    ];
    if rng.random_bool(0.5) {
        accesses.reverse();
    }
    (accesses, true)
}

/// Random tasks whose declarations may clash, one per run under every configuration: a
/// task is refused exactly when two of its accesses overlap and one writes (or one
/// handle is declared twice and one access writes), and no run hangs. The task bodies
/// and results are the random programs' (above); this is about what is accepted.
#[test]
fn clashing_declarations_are_refused_exactly_and_no_run_hangs() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let model = handles();
    let mut rng = SmallRng::seed_from_u64(17);
    let (mut refused, mut accepted) = (0, 0);
    for _ in 0..300 {
        let (accesses, clash) = if rng.random_bool(0.5) {
            task(&mut rng, &model, true)
        } else {
            part_against_whole(&mut rng, &model)
        };
        for (config, spec, rt) in runtimes() {
            let (_wholes, data) = runtime_handles(rt);
            let lists = declare(&accesses, &data);
            // The run on its own thread, so that a hang fails the test instead of
            // stopping it.
            let (done, finished) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut spawned = None;
                let outcome = rt.run(|s| spawned = Some(s.spawn("t", lists, |_, _| {})));
                let _ = done.send((
                    spawned.map(|r| r.map_err(|e| e.to_string())),
                    outcome.is_ok(),
                ));
            });
            let (spawned, ran) = finished
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("{config} on {spec}: the run hangs: {accesses:?}"));
            match spawned.expect("the root ran") {
                Ok(()) => {
                    assert!(!clash, "{config} on {spec}: accepted: {accesses:?}");
                    assert!(ran, "{config} on {spec}: {accesses:?}");
                    accepted += 1;
                }
                Err(e) => {
                    assert!(clash, "{config} on {spec}: refused ({e}): {accesses:?}");
                    assert!(!ran, "{config} on {spec}: {accesses:?}");
                    assert!(e.contains("declared twice") || e.contains("overlap"), "{e}");
                    refused += 1;
                }
            }
        }
    }
    // Both sides were exercised.
    assert!(
        refused > 100 && accepted > 100,
        "{refused} refused, {accepted} accepted"
    );
}
