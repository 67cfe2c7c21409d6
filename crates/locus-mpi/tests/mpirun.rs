//! The launcher under `mpirun` (feature `mpi`; needs `mpirun` on the path): distributed
//! runs verified on rank 0, halos as the only traffic, a panicking task on one rank
//! ending every rank with an error, and a rank killed outright ending the others within
//! the bound on its silence, each bounded by a timeout.
#![cfg(feature = "mpi")]

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

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

/// The launcher run without mpirun (one rank), with `LOCUS_MPI_PEER_TIMEOUT` if given.
fn singleton(args: &[&str], peer_timeout: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_locus-mpi"));
    c.args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    if let Some(t) = peer_timeout {
        c.env("LOCUS_MPI_PEER_TIMEOUT", t);
    }
    c.output().expect("runs")
}

#[test]
fn bad_arguments_exit_with_status_2() {
    for args in [
        &["run", "jacobi-2d", "--size", "100", "--block-len", "33"][..],
        &["run", "sparselu"],
        &["run", "cholesky", "--iterations", "3"],
        &["run", "jacobi-2d", "--config", "shm-base"],
    ] {
        let out = singleton(args, None);
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

/// `mpirun` started with `args` (stderr piped), ended with SIGTERM (which it passes on
/// to its ranks) when dropped.
struct Job(Child);

impl Job {
    fn start(env: &[(&str, &str)], args: &[&str]) -> Job {
        let mut c = Command::new("mpirun");
        c.arg("--oversubscribe");
        for (k, v) in env {
            c.env(k, v).args(["-x", k]);
        }
        c.args(args)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("RUST_BACKTRACE", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        Job(c.spawn().expect("mpirun starts"))
    }

    /// The process of each rank (a child of mpirun, with `OMPI_COMM_WORLD_RANK` in its
    /// environment), once all `n` are there and have started their runtime's workers.
    fn ranks(&self, n: usize) -> Vec<u32> {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let mut pids = vec![None; n];
            for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
                let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                    continue;
                };
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                // pid (comm) state ppid ...: the fields after the last ')'.
                let ppid = stat
                    .rsplit(')')
                    .next()
                    .and_then(|rest| rest.split_whitespace().nth(1))
                    .and_then(|p| p.parse::<u32>().ok());
                if ppid != Some(self.0.id()) || !has_thread(pid, "locus-worker-0") {
                    continue;
                }
                let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                let rank = environ
                    .split(|&b| b == 0)
                    .filter_map(|v| v.strip_prefix(b"OMPI_COMM_WORLD_RANK="))
                    .find_map(|r| std::str::from_utf8(r).ok()?.parse::<usize>().ok());
                if let Some(r) = rank.filter(|&r| r < n) {
                    pids[r] = Some(pid);
                }
            }
            if pids.iter().all(Option::is_some) {
                return pids.into_iter().flatten().collect();
            }
            assert!(Instant::now() < until, "the ranks did not start: {pids:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Ends mpirun and its ranks; what they wrote on stderr.
    fn end(mut self) -> String {
        signal("TERM", self.0.id());
        let _ = self.0.wait();
        let mut stderr = String::new();
        if let Some(mut e) = self.0.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        stderr
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            signal("TERM", self.0.id());
            let _ = self.0.wait();
        }
    }
}

fn signal(name: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status();
}

fn has_thread(pid: u32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks.flatten().any(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name)
            })
        })
        .unwrap_or(false)
}

/// Whether the process has ended (gone, or a zombie its parent has not reaped).
fn ended(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            matches!(state, Some("Z" | "X"))
        })
        .unwrap_or(true)
}

/// A rank killed with SIGKILL mid-run, under a launcher told not to end the job: the
/// other ranks end with an error naming it within the bound on its silence
/// (`LOCUS_MPI_PEER_TIMEOUT`, 3 s here) and a margin, instead of waiting forever.
/// (OpenMPI 4.1's mpirun itself then stays until it is ended: the test ends it.)
#[test]
fn a_rank_killed_mid_run_ends_the_others_within_the_bound() {
    let bound = 3.0;
    let bin = env!("CARGO_BIN_EXE_locus-mpi");
    // A run of minutes: the kill comes while it computes and exchanges halos.
    let job = Job::start(
        &[
            ("OMPI_MCA_orte_abort_on_non_zero_status", "0"),
            ("LOCUS_MPI_PEER_TIMEOUT", "3"),
        ],
        &[
            "-np",
            "3",
            bin,
            "run",
            "jacobi-2d",
            "--size",
            "1024",
            "--block-len",
            "128",
            "--iterations",
            "1000000",
        ],
    );
    let pids = job.ranks(3);
    std::thread::sleep(Duration::from_secs(1));
    assert!(!pids.iter().any(|&p| ended(p)), "a rank ended early");
    signal("KILL", pids[1]);
    let killed = Instant::now();
    let margin = 10.0;
    while ![pids[0], pids[2]].iter().all(|&p| ended(p)) {
        if killed.elapsed().as_secs_f64() > bound + margin {
            let stderr = job.end();
            panic!("ranks 0 and 2 still run {bound} + {margin} s after rank 1 died: {stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = killed.elapsed().as_secs_f64();
    let stderr = job.end();
    // Silence counts from the last heartbeat, a quarter of the bound before the kill at
    // most (more if rank 1's communication thread was kept from running): the ranks
    // end about the bound after it, not at once (nothing else tells them).
    assert!(
        took >= 0.5 * bound,
        "ended after {took:.1} s, before the bound: {stderr}"
    );
    for rank in [0, 2] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("locus-mpi: rank {rank} of 3: "))
                    && l.contains("has heard nothing from rank 1 for")
                    && l.contains("rank 1 died or hangs")),
            "rank {rank}: {stderr}"
        );
    }
    eprintln!("ranks 0 and 2 ended {took:.2} s after rank 1 was killed (bound {bound} s)");
}

/// The bound is on silence, not on the length of a run or of a task: with a bound of
/// 1 s, a cholesky whose tiles take seconds each (rank 1 waits for rank 0's) and whose
/// reference takes longer still (every rank waits for rank 0's verdict) succeeds.
#[test]
fn runs_and_tasks_longer_than_the_bound_succeed() {
    let bin = env!("CARGO_BIN_EXE_locus-mpi");
    let out = Command::new("timeout")
        .args([
            "300",
            "mpirun",
            "--oversubscribe",
            "-x",
            "LOCUS_MPI_PEER_TIMEOUT",
            "-np",
            "2",
        ])
        .args([
            bin,
            "run",
            "cholesky",
            "--size",
            "4096",
            "--block-len",
            "2048",
            "--json",
        ])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("LOCUS_MPI_PEER_TIMEOUT", "1")
        .output()
        .expect("timeout and mpirun run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["verified"], true);
    for r in v["per_rank"].as_array().expect("per-rank sections") {
        let wall = r["report"]["wall_s"].as_f64().expect("wall_s");
        assert!(
            wall > 2.0,
            "a run of {wall} s does not outlast the bound twice"
        );
    }
}

/// A bad bound is a usage error on every rank.
#[test]
fn a_bad_peer_timeout_is_a_usage_error() {
    let out = singleton(&["run", "random-dag"], Some("soon"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "locus-mpi: LOCUS_MPI_PEER_TIMEOUT: `soon` is not a positive number of seconds, nor \
         `none`"
    );
}
