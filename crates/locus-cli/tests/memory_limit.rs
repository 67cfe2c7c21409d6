//! `locus run` under a limit on the process's address space (`setrlimit(RLIMIT_AS)`, as
//! `ulimit -v` sets it): a size the host allows (it passes the up-front check against
//! physical memory) but the limit does not is one error line and exit status 1, never
//! an abort through the global allocator or a panic.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Output, Stdio};

/// The limit on the child's address space.
const LIMIT: u64 = 1 << 30;

/// Runs `locus ARGS` with its address space limited to [`LIMIT`].
fn locus_limited(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_locus"));
    command.args(args).stdin(Stdio::null());
    let limit_address_space = || {
        let limit = libc::rlimit {
            rlim_cur: LIMIT,
            rlim_max: LIMIT,
        };
        // SAFETY: `limit` is a valid `rlimit` for the duration of the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // `setrlimit`, which is async-signal-safe; it allocates nothing.
    unsafe { command.pre_exec(limit_address_space) };
    command.output().expect("the locus binary runs")
}

/// Checks that `locus run ARGS` under the limit failed with one error line naming the
/// allocation that could not be made.
fn fails_with_one_error_line(args: &[&str]) {
    let out = locus_limited(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), None, "killed by a signal: {stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("locus: jacobi-2d: "))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("cannot allocate"), "{stderr}");
    // The progress line and the error line, nothing else.
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(out.stdout.is_empty());
}

/// Arrays of 200 MiB: the run's two sets and the pools' cache fit under the limit, the
/// reference's two arrays on top of them do not, so the sequential reference is what
/// cannot be allocated (on a machine whose base footprint differs, the run's own buffers
/// may be: that is an error line too).
#[test]
fn a_reference_beyond_the_limit_is_an_error_line() {
    fails_with_one_error_line(&[
        "run",
        "jacobi-2d",
        "--topology",
        "2x1",
        "--size",
        "5120",
        "--block-len",
        "512",
        "--iterations",
        "1",
    ]);
}

/// Arrays of 288 MiB: the run's data and the reference take four of them, more than the
/// limit wherever the allocation fails.
#[test]
fn data_beyond_the_limit_is_an_error_line() {
    fails_with_one_error_line(&[
        "run",
        "jacobi-2d",
        "--topology",
        "2x1",
        "--size",
        "6144",
        "--block-len",
        "768",
        "--iterations",
        "1",
    ]);
}
