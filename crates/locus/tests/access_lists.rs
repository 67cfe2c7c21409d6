//! Dynamic access lists: `Option`, `Vec` and arrays of one access type, whose views
//! arrive in the same shape, and which declare exactly their present elements.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locus::{Config, Data, Error, Read, Runtime, Topology};

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

/// One Jacobi step over blocks, each block reading its neighbours when they exist.
#[test]
fn a_stencil_reads_only_the_neighbours_that_exist() {
    const BLOCKS: usize = 5;
    const LEN: usize = 4;
    for config in [
        Config::Ws,
        Config::DsaBase,
        Config::Dfa,
        Config::DsaOpt,
        Config::ShmBase,
    ] {
        let rt = runtime("2x1", config);
        let input: Vec<Data<f64>> = (0..BLOCKS)
            .map(|b| {
                let v: Vec<f64> = (0..LEN).map(|i| (b * LEN + i) as f64).collect();
                rt.data_from(format!("in{b}"), &v).unwrap()
            })
            .collect();
        let output: Vec<Data<f64>> = (0..BLOCKS)
            .map(|b| rt.data(format!("out{b}"), LEN))
            .collect();
        let finished = rt
            .run(|s| {
                for b in 0..BLOCKS {
                    let left = b.checked_sub(1).map(|l| input[l].read_range(LEN - 1..LEN));
                    let right = input.get(b + 1).map(|r| r.read_range(0..1));
                    s.spawn(
                        "step",
                        (left, input[b].read(), right, output[b].write()),
                        move |_, (left, mid, right, out)| {
                            assert_eq!(left.is_none(), b == 0);
                            assert_eq!(right.is_none(), b == BLOCKS - 1);
                            for i in 0..LEN {
                                let l = if i == 0 {
                                    left.map_or(0.0, |l| l[0])
                                } else {
                                    mid[i - 1]
                                };
                                let r = if i == LEN - 1 {
                                    right.map_or(0.0, |r| r[0])
                                } else {
                                    mid[i + 1]
                                };
                                out[i] = (l + mid[i] + r) / 3.0;
                            }
                        },
                    )
                    .unwrap();
                }
            })
            .unwrap();
        let flat: Vec<f64> = (0..BLOCKS * LEN).map(|i| i as f64).collect();
        for (b, out) in output.iter().enumerate() {
            let got = rt.fetch(out).unwrap();
            for (i, &got) in got.iter().enumerate() {
                let g = b * LEN + i;
                let l = if g == 0 { 0.0 } else { flat[g - 1] };
                let r = flat.get(g + 1).copied().unwrap_or(0.0);
                assert_eq!(got, (l + flat[g] + r) / 3.0, "{config} block {b}");
            }
        }
        // Each inner block reads 1 element of each neighbour, the edges only one.
        let loc = &finished.report.locality;
        let read = loc.read_local_bytes + loc.read_remote_bytes;
        let want = (BLOCKS * LEN + 2 * (BLOCKS - 1)) * 8;
        assert_eq!(
            read, want as u64,
            "{config}: a missing neighbour reads no byte"
        );
    }
}

/// A `None` access declares nothing: the task does not wait for the datum's writer.
/// The writer holds its worker until the reader has run, so a false dependence
/// would hang the run; the writer gives up after a minute and fails it instead.
#[test]
fn an_absent_access_creates_no_dependence() {
    for config in [Config::DsaBase, Config::Dfa, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let x = rt.data::<u64>("x", 4);
        let y = rt.data::<u64>("y", 4);
        let reader_ran = Arc::new(AtomicBool::new(false));
        let absent: Option<Read<u64>> = None;
        rt.run(|s| {
            let ran = reader_ran.clone();
            s.spawn("writer", x.write(), move |_, x| {
                let give_up = Instant::now() + Duration::from_secs(60);
                while !ran.load(Ordering::Acquire) {
                    assert!(Instant::now() < give_up, "the reader waited for the writer");
                    std::thread::sleep(Duration::from_millis(1));
                }
                x.fill(1);
            })
            .unwrap();
            let ran = reader_ran.clone();
            s.spawn("reader", (absent, y.write()), move |_, (x, y)| {
                assert!(x.is_none());
                y.fill(2);
                ran.store(true, Ordering::Release);
            })
            .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&x).unwrap(), vec![1; 4], "{config}");
        assert_eq!(rt.fetch(&y).unwrap(), vec![2; 4], "{config}");
    }
}

#[test]
fn a_vec_of_reads_and_a_vec_of_writes_get_one_view_each_in_order() {
    for config in [Config::Ws, Config::Dfa, Config::ShmBase] {
        let rt = runtime("2x1", config);
        let parts: Vec<Data<u32>> = (0..7u32)
            .map(|k| rt.data_from(format!("p{k}"), &[k, 10 * k]).unwrap())
            .collect();
        let copies: Vec<Data<u32>> = (0..7).map(|k| rt.data(format!("c{k}"), 2)).collect();
        let total = rt.data::<u32>("total", 2);
        rt.run(|s| {
            let reads: Vec<Read<u32>> = parts.iter().map(Data::read).collect();
            let writes: Vec<_> = copies.iter().map(Data::write).collect();
            s.spawn("copy", (reads, writes), |_, (ins, outs)| {
                assert_eq!(ins.len(), 7);
                for (i, o) in ins.iter().zip(outs) {
                    o.copy_from_slice(i);
                }
            })
            .unwrap();
            let reads: Vec<Read<u32>> = copies.iter().map(Data::read).collect();
            s.spawn("sum", (reads, total.write()), |_, (ins, t)| {
                t.fill(0);
                for (k, i) in ins.iter().enumerate() {
                    assert_eq!(i[0], k as u32, "views in declaration order");
                    t[0] += i[0];
                    t[1] += i[1];
                }
            })
            .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&total).unwrap(), vec![21, 210], "{config}");
    }
}

#[test]
fn an_array_of_accesses_gets_an_array_of_views() {
    let rt = runtime("2x1", Config::Dfa);
    let a = rt.data_from("a", &[1u8, 2]).unwrap();
    let b = rt.data_from("b", &[3u8, 4]).unwrap();
    let out = rt.data::<u8>("out", 2);
    rt.run(|s| {
        s.spawn(
            "add",
            ([a.read(), b.read()], out.write()),
            |_, ([a, b], o)| {
                o[0] = a[0] + b[0];
                o[1] = a[1] + b[1];
            },
        )
        .unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&out).unwrap(), vec![4, 6]);
}

/// The same datum twice with a write is refused with the tuple path's error, whatever
/// the shape of the list; twice read is fine.
#[test]
fn a_duplicate_inside_a_dynamic_list_is_refused_as_in_a_tuple() {
    let message = |e: Error| match e {
        Error::Declaration { message, .. } => message,
        other => panic!("expected a refused declaration, got {other}"),
    };
    type Spawn = dyn Fn(&locus::Scope, &Data<u64>) -> Result<(), Error> + Sync;
    let refused = |spawn: &Spawn| {
        let rt = runtime("2x1", Config::Dfa);
        let x = rt.data::<u64>("x", 4);
        let mut error = None;
        let outcome = rt.run(|s| error = Some(spawn(s, &x)));
        assert!(outcome.is_err(), "the run fails too");
        message(error.unwrap().unwrap_err())
    };
    let tuple = refused(&|s, x| s.spawn("t", (x.write(), x.read()), |_, _| {}));
    assert!(tuple.contains("declared twice"), "{tuple}");
    let vec = refused(&|s, x| s.spawn("v", (vec![x.read(), x.read()], x.write()), |_, _| {}));
    assert_eq!(vec, tuple);
    let vec_of_writes = refused(&|s, x| s.spawn("w", vec![x.write(), x.write()], |_, _| {}));
    assert_eq!(vec_of_writes, tuple);
    let option = refused(&|s, x| s.spawn("o", (x.read_write(), Some(x.read())), |_, _| {}));
    assert_eq!(option, tuple);
    let array = refused(&|s, x| s.spawn("a", [x.read_write(), x.read_write()], |_, _| {}));
    assert_eq!(array, tuple);

    let rt = runtime("2x1", Config::Dfa);
    let x = rt.data_from("x", &[5u64]).unwrap();
    let out = rt.data::<u64>("out", 1);
    rt.run(|s| {
        s.spawn(
            "twice",
            (vec![x.read(), x.read()], out.write()),
            |_, (v, o)| {
                o[0] = v[0][0] + v[1][0];
            },
        )
        .unwrap();
    })
    .unwrap();
    assert_eq!(rt.fetch(&out).unwrap(), vec![10]);
}
