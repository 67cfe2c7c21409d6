//! `locus soak`: a short soak passes, bad durations are usage errors, and the leak
//! detector and the watchdog fail the soak when a leak or a hang is injected.

mod common;
use common::{locus, stderr, stdout};

#[test]
fn a_short_soak_passes_and_reports_json() {
    let o = locus(&["soak", "--minutes", "0.1", "--seed", "1", "--json"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("seed 1"), "the seed is printed: {err}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["seed"], 1);
    assert!(v["runs"].as_u64().unwrap() > 0, "{v}");
    assert!(v["tasks"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["failures"], 0, "{v}");
    assert!(v["failure"].is_null(), "{v}");
    assert!(v["runtimes_created"].as_u64().unwrap() >= 1, "{v}");
    for field in [
        "injected_panics",
        "refused_declarations",
        "rss_samples",
        "long_lived_runs",
    ] {
        assert!(v[field].is_u64(), "{field} in {v}");
    }
    // Every run is counted once, under its runtime's number of workers.
    let by_workers = v["runs_by_workers"].as_object().expect("runs by workers");
    let counted: u64 = by_workers.values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(counted, v["runs"].as_u64().unwrap(), "{v}");
    assert!(
        by_workers
            .keys()
            .all(|w| w.parse::<usize>().is_ok_and(|w| w >= 1)),
        "{v}"
    );
    for field in ["rss_first_mib", "rss_max_mib", "rss_last_mib"] {
        assert!(v[field].is_number() || v[field].is_null(), "{field} in {v}");
    }
}

#[test]
fn the_default_seed_is_printed() {
    let o = locus(&["soak", "--minutes", "0.01"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("seed 1"), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("soak: seed 1"), "{out}");
    assert!(out.contains("failures 0"), "{out}");
}

#[test]
fn bad_durations_are_one_line_and_status_2() {
    for bad in ["-1", "0", "NaN", "inf", "ten", "", "1e9", "1e-300", "0.009"] {
        let o = locus(&["soak", "--minutes", bad]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "--minutes {bad:?}: {err}");
        assert_eq!(err.lines().count(), 1, "--minutes {bad:?}: {err:?}");
        assert!(err.contains("--minutes"), "--minutes {bad:?}: {err}");
        assert!(o.stdout.is_empty(), "--minutes {bad:?}");
    }
    let o = locus(&["soak", "--seed", "-3"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("invalid value '-3'"), "{}", stderr(&o));
    let o = locus(&["soak", "--minutes", "1e-300"]);
    assert!(
        stderr(&o).contains("at least 0.01 minutes"),
        "{}",
        stderr(&o)
    );
}

/// The shortest soak runs, and its duration is printed with a few decimals, not every
/// digit typed.
#[test]
fn the_shortest_soak_runs_and_prints_its_duration_briefly() {
    let o = locus(&["soak", "--minutes", "0.0100000000000000000001"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("soak for 0.01 minutes,"), "{err}");
    let out = stdout(&o);
    assert!(out.contains("of 0.01 minutes"), "{out}");
    assert!(!out.contains("  runs 0 "), "{out}");
}

/// A datum kept alive past its run (the hidden `--inject-leak`) is found right after
/// that run: status 1, one line naming the run and what is still held.
#[test]
fn a_kept_datum_fails_the_soak_as_a_leak() {
    let o = locus(&[
        "soak",
        "--minutes",
        "0.1",
        "--seed",
        "5",
        "--inject-leak",
        "--json",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("locus: soak failed: run 0 (seed 5,"),
        "{last}"
    );
    assert!(last.contains("leak"), "{last}");
    assert!(last.contains("still holds 1 live versions"), "{last}");
    assert!(last.contains("config "), "{last}");
    assert!(last.contains("topology "), "{last}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["failures"], 1, "{v}");
    assert_eq!(v["runs"], 1, "{v}");
}

/// A task that never returns (the hidden `--inject-hang`) ends the soak through the
/// watchdog, with status 1 and the run's description, instead of hanging.
#[test]
fn a_run_that_does_not_finish_fails_through_the_watchdog() {
    let o = locus(&[
        "soak",
        "--minutes",
        "0.1",
        "--seed",
        "3",
        "--inject-hang",
        "--watchdog-secs",
        "2",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("locus: soak failed: run 0 (seed 3,"),
        "{last}"
    );
    assert!(last.contains("task t10 hangs"), "{last}");
    assert!(last.contains("did not finish within 2 s"), "{last}");
}

/// Found by the soak: two creators that submit, concurrently from their scopes, tasks
/// writing one datum and then read-writing another, in opposite roles, could bind each
/// task's read-write input to the other creator's pending version when submissions
/// bound their accesses datum by datum: a dependence cycle, and the run never returned.
/// Submission now locks all of a task's data at once, in a fixed order.
#[test]
fn concurrent_creators_sharing_data_never_hang() {
    use locus::{Config, Runtime, Topology};
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = Runtime::builder()
            .topology(Topology::from_spec("2x1").unwrap())
            .config(Config::DsaOpt)
            .window_bound(None)
            .build()
            .unwrap();
        let x = rt.data::<u64>("x", 4);
        let y = rt.data::<u64>("y", 4);
        for _ in 0..200 {
            // The run may fail or not (the creators' order is a race); it must end.
            let _ = rt.run(|s| {
                for (a, b) in [(x.clone(), y.clone()), (y.clone(), x.clone())] {
                    s.spawn_control("creator", (), move |ctx| {
                        for _ in 0..200 {
                            let _ =
                                ctx.scope()
                                    .spawn("t", (a.write(), b.read_write()), |_, (a, b)| {
                                        a[0] = b[0] + 1;
                                        b[0] += 1;
                                    });
                        }
                    })
                    .unwrap();
                }
            });
        }
        let _ = tx.send(());
    });
    // Generous: the 200 runs take well under a second when nothing hangs.
    assert!(
        rx.recv_timeout(std::time::Duration::from_secs(60)).is_ok(),
        "a run did not return"
    );
}
