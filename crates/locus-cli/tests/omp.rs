//! `locus omp`: gcc-compiled OpenMP programs (`tests/omp/*.c`, built here with
//! `gcc -fopenmp`) run on Locus's OpenMP runtime, on 1, 2 and 4 threads, checking their
//! own results; refused constructs and misuse stop them with one line and status 2.
//! Without gcc the tests say so and pass (CI has gcc).

mod common;
use std::path::{Path, PathBuf};

use common::omp::{ok_stdout, read_json, run};
use common::{locus, locus_env, stderr, stdout};

fn build(name: &str) -> Option<PathBuf> {
    common::omp::build("gcc", name)
}

#[test]
fn worksharing_constructs_and_locks_verify_on_1_2_and_4_threads() {
    let Some(bin) = build("worksharing") else {
        return;
    };
    for threads in ["1", "2", "4"] {
        let o = run(&bin, &["--threads", threads], &[]);
        ok_stdout(&o, &format!("{threads} threads"));
    }
}

#[test]
fn tasks_with_dependences_verify_and_the_report_counts_every_task() {
    let Some(bin) = build("tasks") else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp");
    for threads in ["1", "2", "4"] {
        for topology in ["host", "2x2"] {
            let report = dir.join(format!("tasks-{threads}-{topology}.json"));
            let o = run(
                &bin,
                &[
                    "--threads",
                    threads,
                    "--topology",
                    topology,
                    "--report",
                    report.to_str().unwrap(),
                ],
                &[],
            );
            let out = ok_stdout(&o, &format!("{threads} threads on {topology}"));
            let created: u64 = out
                .lines()
                .find_map(|l| l.strip_prefix("tasks "))
                .and_then(|n| n.parse().ok())
                .expect("the program prints its task count");
            let r = read_json(&report);
            let omp = &r["openmp"];
            assert_eq!(omp["explicit_tasks"], created, "{omp}");
            // Every deferred task and every implicit task is a task of Locus's report.
            assert_eq!(
                r["tasks"].as_u64().unwrap(),
                omp["deferred_tasks"].as_u64().unwrap() + omp["implicit_tasks"].as_u64().unwrap()
            );
            assert!(omp["deferred_tasks"].as_u64().unwrap() > 8000);
            if topology == "2x2" {
                assert_eq!(r["topology"]["nodes"], 2);
            }
        }
    }
}

#[test]
fn a_refused_construct_stops_the_program_with_one_line() {
    let Some(bin) = build("refused") else {
        return;
    };
    common::omp::refused_in_one_line(&bin, "taskloop");
}

#[test]
fn misuse_is_reported_in_one_line() {
    let Some(bin) = build("misuse") else {
        return;
    };
    common::omp::misuse_in_one_line(&bin);
}

#[test]
fn the_exit_status_of_the_program_is_forwarded() {
    let o = locus(&["omp", "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
}

#[test]
fn bad_arguments_get_one_line_and_status_2() {
    for args in [
        &["omp", "--threads", "0", "--", "true"][..],
        &["omp", "--config", "fast", "--", "true"],
        &["omp", "--topology", "3y", "--", "true"],
        &["omp", "--affinity", "sometimes", "--", "true"],
        &["omp", "--migrate", "sometimes", "--", "true"],
        &["omp", "--migration", "later", "--", "true"],
        &["omp"],
        &["omp", "--", "/nonexistent/program"],
    ] {
        let o = locus(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn tasks_get_the_node_of_their_out_memory_as_home_on_virtual_nodes() {
    let Some(bin) = build("placement") else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp");
    for affinity in ["strict", "non-strict"] {
        let report = dir.join(format!("placement-{affinity}.json"));
        let o = run(
            &bin,
            &[
                "--threads",
                "4",
                "--topology",
                "2x2",
                "--affinity",
                affinity,
                "--report",
                report.to_str().unwrap(),
            ],
            &[],
        );
        ok_stdout(&o, affinity);
        let r = read_json(&report);
        let omp = &r["openmp"];
        // Every compute task names a block an initialisation task wrote first: each
        // has a home, the node of the worker that wrote it.
        assert_eq!(omp["tasks_with_home"], 80, "{omp}");
        if affinity == "strict" {
            assert_eq!(omp["tasks_on_home"], 80, "{omp}");
        }
    }
    // On one node there is nothing to place.
    let report = dir.join("placement-host.json");
    let o = run(
        &bin,
        &["--threads", "2", "--report", report.to_str().unwrap()],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read_json(&report);
    if r["topology"]["nodes"] == 1 {
        assert_eq!(r["openmp"]["tasks_with_home"], 0);
    }
}

#[test]
fn omp_display_env_prints_the_settings_at_start() {
    let Some(bin) = build("tasks") else {
        return;
    };
    let o = locus_env(
        &[
            "omp",
            "--threads",
            "2",
            "--config",
            "home",
            "--",
            bin.to_str().unwrap(),
        ],
        &[("OMP_DISPLAY_ENV", "verbose")],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("OPENMP DISPLAY ENVIRONMENT BEGIN"), "{err}");
    assert!(err.contains("OMP_NUM_THREADS = '2'"), "{err}");
    assert!(err.contains("LOCUS_CONFIG = 'home'"), "{err}");
    // A setting the runtime cannot use: one line, status 2.
    let o = locus_env(
        &["omp", "--", bin.to_str().unwrap()],
        &[("OMP_SCHEDULE", "fastest")],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("OMP_SCHEDULE"), "{err}");
}

#[test]
fn the_trace_keeps_every_region_with_slices_named_by_kind() {
    let Some(bin) = build("tasks") else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp");
    let (trace, report) = (
        dir.join("tasks-trace.json"),
        dir.join("tasks-trace-report.json"),
    );
    let o = run(
        &bin,
        &[
            "--threads",
            "2",
            "--trace",
            trace.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let r = read_json(&report);
    let t = read_json(&trace);
    let events = t["traceEvents"].as_array().expect("a Chrome trace");
    let slices = |name: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == name)
            .count() as u64
    };
    let omp = &r["openmp"];
    assert!(omp["regions"].as_u64().unwrap() > 1, "{omp}");
    assert_eq!(slices("omp-task"), omp["deferred_tasks"].as_u64().unwrap());
    assert_eq!(
        slices("omp-implicit-task"),
        omp["implicit_tasks"].as_u64().unwrap()
    );
}

#[test]
fn past_the_bound_on_queued_tasks_new_ones_run_in_their_creator() {
    let Some(bin) = build("throttle") else {
        return;
    };
    let dir = common::omp::scratch("gcc");
    let bin = bin.to_str().unwrap();
    // (LOCUS_OMP_THROTTLE, whether tasks are throttled)
    for (bound, throttles) in [(None, true), (Some("0"), false), (Some("100000"), false)] {
        for threads in ["1", "2"] {
            let context = format!("LOCUS_OMP_THROTTLE={bound:?}, {threads} threads");
            let report = dir.join(format!(
                "throttle-{threads}-{}.json",
                bound.unwrap_or("default")
            ));
            let report = report.to_str().unwrap();
            let mut env = vec![("LD_BIND_NOW", "1")];
            env.extend(bound.map(|b| ("LOCUS_OMP_THROTTLE", b)));
            let o = locus_env(
                &["omp", "--threads", threads, "--report", report, "--", bin],
                &env,
            );
            let out = ok_stdout(&o, &context);
            let created: u64 = out
                .lines()
                .find_map(|l| l.strip_prefix("tasks "))
                .and_then(|n| n.parse().ok())
                .expect("the program prints its task count");
            let r = read_json(Path::new(report));
            let omp = &r["openmp"];
            let n = |k: &str| {
                omp[k]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{context}: no {k} in {omp}"))
            };
            assert_eq!(n("explicit_tasks"), created, "{context}: {omp}");
            assert_eq!(
                n("deferred_tasks") + n("throttled_tasks"),
                created,
                "{context}: {omp}"
            );
            // The flat loop creates 20,000 tasks of 10 us at once: past 16 per thread
            // queued, the rest run in their creator. One thread runs none of them
            // before the taskwait; a second one takes one while its creator makes many.
            let expected = if threads == "1" { 19_000 } else { 1_000 };
            assert_eq!(
                n("throttled_tasks") > expected,
                throttles,
                "{context}: {omp}"
            );
            if !throttles {
                assert_eq!(n("throttled_tasks"), 0, "{context}: {omp}");
            }
            assert_eq!(
                r["tasks"].as_u64().unwrap(),
                n("deferred_tasks") + n("implicit_tasks"),
                "{context}"
            );
        }
    }
    let o = locus_env(
        &["omp", "--threads", "2", "--", bin],
        &[("LOCUS_OMP_THROTTLE", "some")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.trim().lines().count() == 1 && err.contains("LOCUS_OMP_THROTTLE=some"),
        "{err}"
    );
}

/// `tests/omp/migration.c` (8 one-page blocks, the odd ones first written on node 1,
/// updated 10 times by tasks on node 0) on 4 virtual nodes under `migration`: its report.
/// The bound counts queued tasks, not pending ones: at the bottom of a chain of 200
/// tasks each waiting in a taskwait, with every one of them pending and none queued,
/// the first tasks of a loop are still deferred, for idle threads to take. Counting
/// pending tasks (64 per thread, GNU libgomp's rule) deferred 64 tasks of the chain
/// and none of the loop's, and a second thread found nothing to run.
#[test]
fn tasks_waiting_in_a_taskwait_do_not_stop_new_tasks_from_being_deferred() {
    let Some(bin) = build("deep") else {
        return;
    };
    let dir = common::omp::scratch("gcc");
    for threads in ["1", "2"] {
        let report = dir.join(format!("deep-{threads}.json"));
        let o = locus(&[
            "omp",
            "--threads",
            threads,
            "--report",
            report.to_str().unwrap(),
            "--",
            bin.to_str().unwrap(),
        ]);
        let out = ok_stdout(&o, threads);
        assert!(out.contains("tasks 1200\n"), "{out}");
        let r = read_json(&report);
        let n = |k: &str| r["openmp"][k].as_u64().unwrap();
        assert_eq!(n("deferred_tasks") + n("throttled_tasks"), 1200, "{r}");
        // The chain's 200 tasks, each created with none queued, and 16 of the loop's
        // (its creator's bound) before the others ran in their creator. A second
        // thread takes tasks, and more are deferred in their place.
        let bound = 200 + 16;
        if threads == "1" {
            assert_eq!(n("deferred_tasks"), bound, "{r}");
        } else {
            assert!(n("deferred_tasks") >= bound, "{r}");
        }
    }
}

/// A `liblocus_omp.so` on an inherited `LD_LIBRARY_PATH` (cargo's holds
/// `target/<profile>`, where an older copy may lie) does not shadow the runtime of the
/// build `locus omp` belongs to: here it is not even a library, and the program runs.
#[test]
fn a_runtime_on_an_inherited_library_path_does_not_shadow_the_builds_own() {
    let Some(bin) = build("deep") else {
        return;
    };
    let decoy = common::omp::scratch("gcc").join("decoy");
    std::fs::create_dir_all(&decoy).unwrap();
    std::fs::write(decoy.join("liblocus_omp.so"), b"not a library").unwrap();
    let o = locus_env(
        &["omp", "--threads", "1", "--", bin.to_str().unwrap()],
        &[("LD_LIBRARY_PATH", decoy.to_str().unwrap())],
    );
    let out = ok_stdout(&o, "with a decoy on LD_LIBRARY_PATH");
    assert!(out.ends_with("ok\n"), "{out}");
}

fn migration_report(migration: &str) -> serde_json::Value {
    let bin = build("migration").expect("gcc");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp");
    let report = dir.join(format!("migration-{migration}.json"));
    common::omp::run_4x1_with_report(&bin, "--migrate", migration, &report).1
}

#[test]
fn gcc_dependences_count_the_page_holding_their_address_as_local_or_remote_bytes() {
    if build("migration").is_none() {
        return;
    }
    let r = migration_report("none");
    let omp = &r["openmp"];
    // 8 initialisation and 80 compute dependences, addresses only.
    assert_eq!(omp["dependences"], 88, "{omp}");
    assert_eq!(omp["dependences_without_length"], 88, "{omp}");
    // The compute tasks' blocks have a node (their initialisation wrote them; the
    // initialisation tasks' own pages had none yet): a page each, half on node 0 where
    // the tasks run.
    let page = 4096;
    assert_eq!(omp["dependence_bytes"], 80 * page, "{omp}");
    assert_eq!(omp["dependence_bytes_local"], 40 * page, "{omp}");
    assert_eq!(omp["dependence_bytes_remote"], 40 * page, "{omp}");
    assert_eq!(r["migration"]["bytes"], 0, "{}", r["migration"]);
    assert!(
        r["settings"].get("migration").is_none(),
        "{}",
        r["settings"]
    );
}

#[test]
fn dependence_memory_moves_to_its_tasks_node_under_each_migration_setting() {
    if build("migration").is_none() {
        return;
    }
    // `auto` by the cost rule of Locus's own setting: one page on node 1 written from
    // node 0 by a task that the 9 later updates of its block, already submitted, follow.
    let costs =
        locus::sched::migrate::MigrationCosts::of(&locus::Topology::from_spec("4x1").unwrap());
    let auto_moves =
        costs.choose(4096, 1, 1, 0, (true, true), 9) == locus::sched::migrate::Choice::Migrate;
    assert!(auto_moves, "the cost rule moves a page used 10 times");
    for (migration, key) in [
        ("now", "now_pages"),
        ("next-touch", "next_touch_pages"),
        ("auto", "auto_pages"),
    ] {
        let r = migration_report(migration);
        let m = &r["migration"];
        // The 4 odd blocks, one page each, moved once, before their first update.
        assert_eq!(m[key], 4, "{migration}: {m}");
        assert_eq!(m["bytes"], 4 * 4096, "{migration}: {m}");
        assert_eq!(r["settings"]["migration"], migration, "{}", r["settings"]);
        // Every update then finds its block on its node: the page records followed the
        // move, and the bytes are counted where they are when the task runs.
        let omp = &r["openmp"];
        assert_eq!(
            omp["dependence_bytes_local"],
            80 * 4096,
            "{migration}: {omp}"
        );
        assert_eq!(omp["dependence_bytes_remote"], 0, "{migration}: {omp}");
        assert_eq!(omp["tasks_with_home"], 80, "{migration}: {omp}");
        // Only the 4 first updates of the odd blocks had node 1 as home.
        assert_eq!(omp["tasks_on_home"], 76, "{migration}: {omp}");
    }
    // A setting the runtime cannot use, given without the command: one line, status 2.
    let bin = build("migration").unwrap();
    let o = locus_env(
        &["omp", "--", bin.to_str().unwrap()],
        &[("LOCUS_OMP_MIGRATION", "later")],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("LOCUS_OMP_MIGRATION"), "{err}");
}
