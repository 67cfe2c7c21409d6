//! What a failed run leaves behind: versioned data keep their last complete version;
//! shared data written in place by a task that panicked are poisoned until written
//! whole.

use locus::{Config, Error, RegionPolicy, Runtime, Topology};

fn runtime(config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .config(config)
        .build()
        .unwrap()
}

const VERSIONED: [Config; 4] = [Config::DsaBase, Config::Dfa, Config::DsaOpt, Config::Ws];

#[test]
fn a_skipped_writer_leaves_the_last_complete_version() {
    for config in VERSIONED {
        let rt = runtime(config);
        let x = rt.data_from("x", &[1u64, 2, 3, 4]).unwrap();
        let y = rt.data::<u64>("y", 4);
        let outcome = rt.run(|s| {
            s.spawn("fails", y.write(), |_, _| panic!("injected"))
                .unwrap();
            // Waits for `fails`, so it is skipped once the run has failed.
            let _ = s.spawn("overwrite", (y.read(), x.write()), |_, (_, x)| x.fill(9));
        });
        assert!(outcome.is_err(), "{config}");
        assert_eq!(rt.fetch(&x).unwrap(), vec![1, 2, 3, 4], "{config}");
        // The next run binds to the same contents.
        let z = rt.data::<u64>("z", 4);
        rt.run(|s| {
            s.spawn("copy", (x.read(), z.write()), |_, (x, z)| {
                z.copy_from_slice(x)
            })
            .unwrap();
        })
        .unwrap();
        assert_eq!(rt.fetch(&z).unwrap(), vec![1, 2, 3, 4], "{config}");
    }
}

#[test]
fn a_partial_write_of_a_task_that_panicked_is_not_published() {
    for config in VERSIONED {
        let rt = runtime(config);
        let x = rt.data_from("x", &[5u64; 8]).unwrap();
        let outcome = rt.run(|s| {
            s.spawn("step", x.read_write(), |_, v| v.fill(6)).unwrap();
            s.spawn("partial", x.read_write(), |_, v| {
                v[0] = 99;
                panic!("after a partial write");
            })
            .unwrap();
            let _ = s.spawn("after", x.read_write(), |_, v| v.fill(7));
        });
        let err = outcome.unwrap_err();
        assert!(err.error.to_string().contains("after a partial write"));
        // `step` completed; `partial` did not, and `after` never ran.
        assert_eq!(rt.fetch(&x).unwrap(), vec![6; 8], "{config}");
    }
}

#[test]
fn versions_of_a_failed_run_are_all_released() {
    let rt = runtime(Config::DsaOpt);
    {
        let x = rt.data_from("x", &[1u64; 1024]).unwrap();
        let _ = rt.run(|s| {
            for k in 0..20u64 {
                s.spawn("step", x.read_write(), move |_, v| {
                    assert!(k != 10, "injected");
                    v[0] += 1;
                })
                .ok();
            }
        });
        assert_eq!(rt.fetch(&x).unwrap()[0], 11);
    }
    assert_eq!(rt.live_versions(), 0);
    assert_eq!(rt.pool_bytes_in_use(), 0);
}

#[test]
fn shared_data_written_by_a_task_that_panicked_are_poisoned_until_written_whole() {
    let rt = runtime(Config::DsaOpt);
    let g = rt
        .shared_from("grid", &[1u64; 512], RegionPolicy::Interleave)
        .unwrap();
    let outcome = rt.run(|s| {
        s.spawn("partial", g.read_write(), |_, v| {
            v[..10].fill(2);
            panic!("half-way");
        })
        .unwrap();
    });
    assert!(outcome.is_err());
    match rt.fetch(&g) {
        Err(Error::Poisoned { data, task }) => assert_eq!((&*data, &*task), ("grid", "partial")),
        other => panic!("expected Poisoned, got {other:?}"),
    }
    // Reading it is refused; writing it whole heals it.
    let refused = rt.run(|s| s.spawn("read", g.read(), |_, _| {}));
    assert!(refused
        .unwrap_err()
        .error
        .to_string()
        .contains("partly written"));
    rt.run(|s| s.spawn("heal", g.write(), |_, v| v.fill(3)).unwrap())
        .unwrap();
    assert_eq!(rt.fetch(&g).unwrap(), vec![3; 512]);
}

#[test]
fn shared_data_whose_writer_was_skipped_keep_their_contents() {
    let rt = runtime(Config::ShmBase);
    let x = rt.data_from("x", &[4u64; 64]).unwrap();
    let y = rt.data::<u64>("y", 64);
    let outcome = rt.run(|s| {
        s.spawn("fails", y.write(), |_, _| panic!("injected"))
            .unwrap();
        let _ = s.spawn("skipped", (y.read(), x.write()), |_, (_, x)| x.fill(0));
    });
    assert!(outcome.is_err());
    assert_eq!(rt.fetch(&x).unwrap(), vec![4; 64]);
}
