//! Inputs that once cost without bound before failing: each is refused with one line
//! and exit status 2 within 2 s and 100 MB (CPU time, wall-clock time and peak memory
//! of the `locus` process, measured with `wait4`), and what a hostile file or argument
//! holds is shown escaped, on one line.

use std::path::{Path, PathBuf};

mod common;
use common::{assert_refused_within_bounds, locus, stderr, stdout};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bounded-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A sparse file of `bytes` zero bytes, no line end in it: no disk space used.
fn sparse(path: &Path, bytes: u64) {
    std::fs::File::create(path).unwrap().set_len(bytes).unwrap();
}

/// `--matrix /dev/zero` read to 3.7 GB and aborted; a 1 GB file without a line end
/// took 48 s and 2.1 GB to refuse.
#[test]
fn matrix_files_without_line_ends_are_refused_within_bounds() {
    let dir = scratch("matrix");
    let flat = dir.join("flat.mtx");
    sparse(&flat, 1 << 30);
    let link = dir.join("zero.mtx");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let banner = dir.join("banner.mtx");
    let mut text = b"%%MatrixMarket matrix coordinate real general\n".to_vec();
    text.resize(64 << 20, b'7');
    std::fs::write(&banner, text).unwrap();
    for (file, want) in [
        ("/dev/zero", "not a regular file"),
        (link.to_str().unwrap(), "not a regular file"),
        (flat.to_str().unwrap(), ":1: the line is longer than 1024"),
        (banner.to_str().unwrap(), ":2: the line is longer than 1024"),
    ] {
        for cmd in ["run", "sim"] {
            let mut args = vec![cmd, "spmv", "--matrix", file];
            if cmd == "sim" {
                args.extend(["--topology", "2x1"]);
            }
            assert_refused_within_bounds(&args, None, 2, want);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `compare` on a `summary.json` linked to `/dev/zero` reached 3.2 GB.
#[test]
fn summaries_that_are_no_summary_are_refused_within_bounds() {
    let good = scratch("summary-good");
    std::fs::write(
        good.join("summary.json"),
        r#"{"rows": [{"bench": "kmeans", "config": "ws", "median_s": 1.0}]}"#,
    )
    .unwrap();
    let zero = scratch("summary-zero");
    std::os::unix::fs::symlink("/dev/zero", zero.join("summary.json")).unwrap();
    let large = scratch("summary-large");
    sparse(&large.join("summary.json"), 1 << 30);
    let good = good.to_str().unwrap();
    for (dir, want) in [
        (zero.to_str().unwrap(), "not a regular file"),
        (large.to_str().unwrap(), "larger than 16 MiB"),
    ] {
        assert_refused_within_bounds(&["compare", good, dir], None, 2, want);
        assert_refused_within_bounds(&["compare", dir, good], None, 2, want);
    }
}

/// `--topology NxC:@FILE` read 64 MiB of `/dev/zero` (218 MB at peak) before refusing
/// it: a device is refused unread, a larger file after 16 MiB.
#[test]
fn distance_files_that_are_no_matrix_are_refused_within_bounds() {
    let dir = scratch("distances");
    let large = dir.join("large.txt");
    sparse(&large, 1 << 30);
    for (file, want) in [
        ("/dev/zero", "not a regular file"),
        (large.to_str().unwrap(), "larger than 16 MiB"),
    ] {
        let spec = format!("2x1:@{file}");
        for cmd in ["run", "sim"] {
            let args = [cmd, "jacobi-1d", "--topology", &spec];
            assert_refused_within_bounds(&args, None, 2, want);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--iterations 2^62` and `overhead --size 2^40` ran until killed.
#[test]
fn work_that_cannot_finish_is_refused_within_bounds() {
    let i62 = (1u64 << 62).to_string();
    let s40 = (1u64 << 40).to_string();
    for args in [
        vec!["run", "jacobi-1d", "--iterations", &i62],
        vec!["run", "jacobi-2d", "--iterations", &i62],
        vec!["run", "stream", "--iterations", &i62],
        vec![
            "sim",
            "seidel-2d",
            "--topology",
            "2x1",
            "--iterations",
            &i62,
        ],
        vec!["run", "overhead", "--size", &s40],
        vec!["run", "overhead", "--iterations", &s40],
        vec!["sim", "overhead", "--topology", "2x1", "--size", &s40],
    ] {
        let line = assert_refused_within_bounds(&args, None, 2, "more than the limit of 2^32");
        assert!(line.contains("tasks"), "{args:?}: {line}");
    }
    // Repetitions of a bench (each writes a report): at most 1000.
    let line = assert_refused_within_bounds(
        &[
            "bench",
            "--engine",
            "sim",
            "--topology",
            "2x1",
            "--repeat",
            "4000000000",
        ],
        Some(&scratch("repeat")),
        2,
        "--repeat",
    );
    assert!(line.contains("1..=1000"), "{line}");
    // Bytes: one block of 2^30 elements swept 2^20 times.
    let line = assert_refused_within_bounds(
        &[
            "sim",
            "jacobi-1d",
            "--topology",
            "2x1",
            "--size",
            "1073741824",
            "--blocks",
            "1",
            "--iterations",
            "1048576",
        ],
        None,
        2,
        "bytes swept, more than the limit of 2^48",
    );
    assert!(line.contains("--iterations"), "{line}");
}

/// `compare` printed control characters from a hostile summary raw (NUL, U+202E,
/// newlines); they are escaped now, and the table keeps one line per row.
#[test]
fn compare_escapes_what_a_hostile_summary_holds() {
    let hostile = [
        "nul\0here",
        "right\u{202e}left",
        "two\nlines",
        "tab\there\u{2066}",
    ];
    let rows: Vec<serde_json::Value> = hostile
        .iter()
        .map(|name| serde_json::json!({"bench": name, "config": "ws\r", "median_s": 1.0}))
        .collect();
    let summary = serde_json::json!({
        "engine": "sim\u{202e}",
        "topology": {"name": "2x1\n2x2"},
        "rows": rows,
    });
    let a = scratch("hostile-a");
    std::fs::write(a.join("summary.json"), summary.to_string()).unwrap();
    let b = scratch("hostile-b");
    std::fs::write(b.join("summary.json"), summary.to_string()).unwrap();
    let o = locus(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let shown: Vec<&str> = out.lines().collect();
    for c in out.chars() {
        assert!(
            c == '\n' || !(c.is_control() || ('\u{2066}'..='\u{2069}').contains(&c)),
            "{c:?} in {out}"
        );
        assert_ne!(c, '\u{202e}', "{out}");
    }
    // A, B, the note, a blank line, the header, the rule, one line per row.
    assert_eq!(shown.len(), 6 + hostile.len(), "{out}");
    for name in [
        "nul\\u{0}here",
        "right\\u{202e}left",
        "two\\nlines",
        "tab\\there\\u{2066}",
        "ws\\r",
        "sim\\u{202e} engine on 2x1\\n2x2",
    ] {
        assert!(out.contains(name), "{name} in {out}");
    }
}

/// A value containing a newline gave a one-line error cut at the newline; the whole
/// value is shown, escaped.
#[test]
fn a_value_with_a_newline_is_escaped_in_the_error() {
    for (args, want) in [
        (
            vec!["run", "jacobi-2d", "--topology", "2x1\nthe rest"],
            "--topology 2x1\\nthe rest",
        ),
        (
            vec!["run", "spmv", "--matrix", "/nonexistent\nthe rest"],
            "/nonexistent\\nthe rest",
        ),
        (
            vec!["compare", "/nonexistent\nthe rest", "/b"],
            "/nonexistent\\nthe rest",
        ),
        // Values clap refuses.
        (
            vec!["run", "jacobi-2d", "--config", "ws\nthe rest"],
            "'ws\\nthe rest'",
        ),
        (
            vec!["run", "jacobi-2d", "--config=ws\r\nthe rest"],
            "'ws\\r\\nthe rest'",
        ),
        (vec!["run", "jac\u{202e}obi"], "'jac\\u{202e}obi'"),
        (vec!["run", "jacobi-2d", "--threads", "1\n2"], "'1\\n2'"),
    ] {
        let o = locus(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
