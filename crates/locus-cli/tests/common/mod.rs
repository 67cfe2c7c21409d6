//! What the command-line tests share: running the `locus` binary as a user would.

// Each test file uses some of these.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};

/// Runs `locus ARGS` with no standard input.
pub fn locus(args: &[&str]) -> Output {
    locus_env(args, &[])
}

/// Runs `locus ARGS` with no standard input and the environment variables `env` set.
pub fn locus_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("the locus binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// What one bounded run of `locus` cost: its output, the wall-clock time, the CPU time
/// (user and system) and the peak resident memory of the process.
pub struct Cost {
    pub output: Output,
    pub wall: std::time::Duration,
    pub cpu: std::time::Duration,
    pub peak_rss_bytes: u64,
}

/// Runs `locus ARGS` (with `dir` as its working directory, when given) and measures
/// it: the child is reaped with `wait4`, which gives its own resource usage
/// (getrusage(2)), so that the peak memory is that process's and nobody else's.
pub fn locus_cost(args: &[&str], dir: Option<&std::path::Path>) -> Cost {
    use std::io::Read;
    let mut command = Command::new(env!("CARGO_BIN_EXE_locus"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let start = std::time::Instant::now();
    // Reaped by `wait4` below, which `Child::wait` cannot replace: it gives no usage.
    #[allow(clippy::zombie_processes)]
    let mut child = command.spawn().expect("the locus binary runs");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).map(|_| bytes)
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: `status` and `usage` are valid for writes; the child is ours and not yet
    // reaped (`child.wait` is never called).
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    let wall = start.elapsed();
    let time = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    use std::os::unix::process::ExitStatusExt;
    Cost {
        output: Output {
            status: std::process::ExitStatus::from_raw(status),
            stdout: out.join().unwrap().unwrap(),
            stderr: err.join().unwrap().unwrap(),
        },
        wall,
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        // Linux counts `ru_maxrss` in kilobytes.
        peak_rss_bytes: usage.ru_maxrss as u64 * 1024,
    }
}

/// The bounds a refused input must fail within: 2 s and 100 MB.
pub const REFUSAL_SECONDS: f64 = 2.0;
pub const REFUSAL_BYTES: u64 = 100 << 20;

/// Runs `locus ARGS`, which must be refused with exit status `status` and one line on
/// stderr containing `want`, within [`REFUSAL_SECONDS`] of CPU time and of wall-clock
/// time and [`REFUSAL_BYTES`] of peak memory. On a loaded machine the wall-clock time
/// of one try can exceed the bound with no fault of the program: up to three tries,
/// the fastest counts (the CPU time and memory of every try must be within bounds).
pub fn assert_refused_within_bounds(
    args: &[&str],
    dir: Option<&std::path::Path>,
    status: i32,
    want: &str,
) -> String {
    let mut fastest = f64::INFINITY;
    let mut line = String::new();
    for _ in 0..3 {
        let cost = locus_cost(args, dir);
        let err = stderr(&cost.output);
        assert_eq!(cost.output.status.code(), Some(status), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(
            cost.cpu.as_secs_f64() < REFUSAL_SECONDS,
            "{args:?}: {:?} of CPU time",
            cost.cpu
        );
        assert!(
            cost.peak_rss_bytes > 0 && cost.peak_rss_bytes < REFUSAL_BYTES,
            "{args:?}: {} bytes at peak",
            cost.peak_rss_bytes
        );
        fastest = fastest.min(cost.wall.as_secs_f64());
        line = err;
        if fastest < REFUSAL_SECONDS {
            break;
        }
    }
    assert!(fastest < REFUSAL_SECONDS, "{args:?}: {fastest} s at best");
    line
}
pub mod omp;
