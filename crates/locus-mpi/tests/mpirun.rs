//! The launcher under `mpirun` (feature `mpi`; needs `mpirun` on the path): distributed
//! runs verified on rank 0, halos as the only traffic, and a panicking task on one rank
//! ending every rank with an error, each bounded by a timeout.
#![cfg(feature = "mpi")]

use std::process::{Command, Output};

fn mpirun(np: usize, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_locus-mpi");
    let np = np.to_string();
    let mut all = vec!["-np", np.as_str(), bin];
    all.extend_from_slice(args);
    mpirun_raw(&all)
}

/// `mpirun --oversubscribe ARGS` under a timeout: ARGS name the programs (`-np N
/// PROGRAM ...`, with `:` between the parts of an MPMD launch).
fn mpirun_raw(args: &[&str]) -> Output {
    Command::new("timeout")
        .arg("120")
        .args(["mpirun", "--oversubscribe"])
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("timeout and mpirun run")
}

#[test]
fn jacobi_2d_verified_and_only_halos_travel() {
    for np in [2, 4] {
        for config in ["dsa-opt", "dsa-base"] {
            let out = mpirun(
                np,
                &[
                    "run",
                    "jacobi-2d",
                    "--config",
                    config,
                    "--size",
                    "128",
                    "--block-len",
                    "16",
                    "--json",
                ],
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "-np {np} {config}: {stderr}");
            let v: serde_json::Value =
                serde_json::from_slice(&out.stdout).expect("one JSON object");
            assert_eq!(v["verified"], true);
            assert_eq!(v["ranks"], np);
            let ranks = v["per_rank"].as_array().expect("per-rank sections");
            assert_eq!(ranks.len(), np);
            for r in ranks {
                assert_eq!(r["comm"]["sent_bytes"], r["min_sent_bytes"], "{r}");
                assert!(r["comm"]["sent_bytes"].as_u64() > Some(0));
            }
        }
    }
}

#[test]
fn cholesky_and_random_dag_verified() {
    for np in [2, 4] {
        for bench in ["cholesky", "random-dag"] {
            let out = mpirun(np, &["run", bench, "--json"]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "-np {np} {bench}: {stderr}");
            let v: serde_json::Value =
                serde_json::from_slice(&out.stdout).expect("one JSON object");
            assert_eq!(v["verified"], true, "{bench}");
            assert!(v["comm"]["sent_bytes"].as_u64() > Some(0), "{bench}");
        }
    }
}

#[test]
fn a_panic_on_one_rank_ends_every_rank() {
    for (bench, task) in [("jacobi-2d", "jacobi-2d"), ("random-dag", "t")] {
        let out = mpirun(4, &["run", bench, "--panic-on", "1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(124), "timed out: {stderr}");
        assert!(!out.status.success());
        // Rank 1 reports its own failure, unless mpirun killed it first because a rank
        // that received the failure exited before it; those ranks name rank 1's task.
        assert!(
            stderr.contains(&format!("rank 1 of 4: task `{task}"))
                || stderr.contains(&format!("rank 1 failed: task `{task}")),
            "{stderr}"
        );
        // The ranks that received the failure say so without a panic message of
        // their own: only rank 1's injected panic prints one.
        assert!(
            !stderr.contains("cluster.rs"),
            "a panic message of the receiving ranks: {stderr}"
        );
    }
}

#[test]
fn bad_arguments_exit_with_status_2() {
    for args in [
        &["run", "jacobi-2d", "--size", "100", "--block-len", "33"][..],
        &["run", "sparselu"],
        &["run", "cholesky", "--iterations", "3"],
        &["run", "jacobi-2d", "--config", "shm-base"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_locus-mpi"))
            .args(args)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}

/// Ranks launched with different arguments (an MPMD launch) would wait for messages that
/// never come: they are refused before the run, on every rank, naming what each runs.
#[test]
fn ranks_given_different_programs_are_refused() {
    let bin = env!("CARGO_BIN_EXE_locus-mpi");
    let rank = |size| ["-np", "1", bin, "run", "random-dag", "--size", size];
    let out = mpirun_raw(&[&rank("41")[..], &[":"], &rank("42")].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(124), "timed out: {stderr}");
    assert!(!out.status.success(), "{stderr}");
    // Each rank says so, unless mpirun killed it first because the other exited
    // before it.
    assert!(
        stderr.contains(
            "of 2: the ranks run different programs: rank 0 runs `random-dag --size 41`, \
             rank 1 runs `random-dag --size 42`"
        ),
        "{stderr}"
    );
}

/// A program whose ranks size one datum differently (`examples/unequal_lengths.rs`):
/// the receiving rank gets a message longer than it announced. The run fails on both
/// ranks, naming the lengths; MPI does not abort the job with `MPI_ERR_TRUNCATE`.
#[test]
fn a_message_longer_than_announced_fails_the_run_on_every_rank() {
    // Examples are built beside the test binaries' directory: target/PROFILE/examples.
    let exe = std::env::current_exe().expect("the test's own path");
    let example = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join("unequal_lengths"))
        .expect("target/PROFILE/examples");
    assert!(
        example.exists(),
        "{} is missing: `cargo test -p locus-mpi --features mpi` builds it",
        example.display()
    );
    let out = mpirun_raw(&["-np", "2", example.to_str().expect("a UTF-8 path")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(124), "timed out: {stderr}");
    assert!(!out.status.success(), "{stderr}");
    assert!(!stderr.contains("MPI_ERR_TRUNCATE"), "{stderr}");
    assert!(
        stderr.contains("rank 0 sent 64 bytes where 32 were expected"),
        "{stderr}"
    );
}
