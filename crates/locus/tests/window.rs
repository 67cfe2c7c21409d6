//! The submission window bounds memory and never deadlocks, whatever the nesting: only
//! the run's root waits for room (see `RuntimeBuilder::window`).

use locus::{Config, Runtime, Topology};

mod common;
use common::within;

#[test]
fn a_writer_spawning_readers_of_its_output_finishes_under_a_small_window() {
    within(60, || {
        for config in [Config::DsaBase, Config::DsaOpt, Config::ShmBase] {
            for window in [1, 2, 4] {
                let rt = Runtime::builder()
                    .topology(Topology::from_spec("2x1").unwrap())
                    .config(config)
                    .window(window)
                    .build()
                    .unwrap();
                let x = rt.data::<u64>("x", 4);
                let outs: Vec<_> = (0..3).map(|i| rt.data::<u64>(format!("o{i}"), 4)).collect();
                let (x2, outs2) = (x.clone(), outs.clone());
                let weak: Vec<_> = outs.iter().map(|o| o.weak_write()).collect();
                rt.run(move |s| {
                    s.spawn("parent", (x2.write(), weak), move |ctx, (v, _)| {
                        v.fill(5);
                        // The children wait for the parent's output: a parent waiting
                        // for window room here would wait for ever.
                        for o in &outs2 {
                            ctx.scope()
                                .spawn("child", (x2.read(), o.write()), |_, (x, o)| {
                                    o.copy_from_slice(x)
                                })
                                .unwrap();
                        }
                    })
                    .unwrap();
                })
                .unwrap();
                for o in &outs {
                    assert_eq!(
                        rt.fetch(o).unwrap(),
                        vec![5; 4],
                        "{config}, window {window}"
                    );
                }
            }
        }
    });
}

#[test]
fn recursive_spawning_finishes_under_a_window_of_one() {
    within(60, || {
        let rt = Runtime::builder()
            .topology(Topology::from_spec("2x1").unwrap())
            .window(1)
            .build()
            .unwrap();
        let leaves = rt.data::<u64>("leaves", 64);
        fn split(ctx: &locus::TaskCtx, leaves: locus::Data<u64>, lo: usize, hi: usize) {
            if hi - lo == 1 {
                ctx.scope()
                    .spawn("leaf", leaves.read_write(), move |_, v| v[lo] += 1)
                    .unwrap();
                return;
            }
            let mid = (lo + hi) / 2;
            for (a, b) in [(lo, mid), (mid, hi)] {
                let leaves = leaves.clone();
                ctx.scope()
                    .spawn_control("split", (), move |ctx| split(ctx, leaves, a, b))
                    .unwrap();
            }
        }
        let l = leaves.clone();
        rt.run(move |s| {
            s.spawn_control("split", (), move |ctx| split(ctx, l, 0, 64))
                .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&leaves).unwrap(), vec![1; 64]);
    });
}
