//! What the `locus omp` tests share: the programs of `tests/omp/` built with gcc or clang
//! and run through `locus omp`, and the checks that hold for either compiler.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{locus_env, stderr, stdout};

/// The scratch directory of the programs built by `compiler`.
pub fn scratch(compiler: &str) -> PathBuf {
    let name = if compiler == "gcc" {
        "omp".to_string()
    } else {
        format!("omp-{compiler}")
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds `tests/omp/NAME.c` with `COMPILER -fopenmp`; `None` (said on stderr) without
/// that compiler.
pub fn build(compiler: &str, name: &str) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/omp/{name}.c"));
    let bin = scratch(compiler).join(name);
    // Tests running at once may build the same program: each builds its own file and
    // renames it into place, so that none runs a file another is writing.
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let own = bin.with_extension(format!(
        "{}-{}",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    ));
    let out = match Command::new(compiler)
        .args(["-fopenmp", "-O2", "-Wall", "-o"])
        .arg(&own)
        .arg(&src)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{compiler} is not available ({e}): {name} not tested");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "{compiler} {name}.c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&own, &bin).unwrap();
    Some(bin)
}

/// Runs `locus omp OPTS -- BIN ARGS`.
pub fn run(bin: &Path, opts: &[&str], args: &[&str]) -> Output {
    let mut all = vec!["omp"];
    all.extend_from_slice(opts);
    all.push("--");
    all.push(bin.to_str().unwrap());
    all.extend_from_slice(args);
    // LD_BIND_NOW: every symbol the program needs is resolved at load, so a missing one
    // fails the test even where the program never calls it.
    locus_env(&all, &[("LD_BIND_NOW", "1")])
}

/// The stdout of a run of a `tests/omp/` program that checks its own results: the run
/// must succeed and the program's last line be `ok` (`context` says which run failed).
pub fn ok_stdout(o: &Output, context: &str) -> String {
    let out = stdout(o);
    assert!(
        o.status.success() && out.ends_with("ok\n"),
        "{context}: {out}{}",
        stderr(o)
    );
    out
}

/// A JSON file a run wrote (Locus's report, a trace).
pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs `bin` on 4 threads over the virtual topology `4x1` with `option value` (say
/// `--migrate now`), writing its report to `report`: the run must end with `ok`;
/// returns the program's stdout and the report.
pub fn run_4x1_with_report(
    bin: &Path,
    option: &str,
    value: &str,
    report: &Path,
) -> (String, serde_json::Value) {
    let o = run(
        bin,
        &[
            "--threads",
            "4",
            "--topology",
            "4x1",
            option,
            value,
            "--report",
            report.to_str().unwrap(),
        ],
        &[],
    );
    let out = ok_stdout(&o, &format!("{option} {value}"));
    (out, read_json(report))
}

/// `tests/omp/refused.c` stops in one line naming what is refused (with `needle`).
pub fn refused_in_one_line(bin: &Path, needle: &str) {
    let o = run(bin, &[], &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(needle) && err.contains("is not supported by Locus's OpenMP runtime"),
        "{err}"
    );
    assert!(!stdout(&o).contains("ran"), "the construct must not run");
}

/// `tests/omp/misuse.c`: each misuse stops the program in one line.
pub fn misuse_in_one_line(bin: &Path) {
    for (case, needle) in [
        ("destroyed-lock", "destroyed lock"),
        ("barrier-in-task", "barrier inside an explicit task"),
    ] {
        let o = run(bin, &["--threads", "2"], &[case]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{case}: {err}");
        assert_eq!(err.lines().count(), 1, "{case}: {err}");
        assert!(err.contains(needle), "{case}: {err}");
    }
}
