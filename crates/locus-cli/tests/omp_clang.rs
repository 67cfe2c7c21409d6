//! `locus omp` with clang-compiled OpenMP programs (clang's ABI, `libomp.so.5`): the
//! programs of `tests/omp/` built with `clang -fopenmp` verify on 1, 2 and 4 threads,
//! the affinity clause places tasks and the report counts them, and an entry point
//! Locus does not run stops the program with one line. Without clang the tests say so
//! and pass (CI has clang).

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::omp::{ok_stdout, read_json, run};
use common::{locus_env, stderr};

fn build(name: &str) -> Option<PathBuf> {
    common::omp::build("clang", name)
}

#[test]
fn clang_built_worksharing_and_tasks_verify_on_1_2_and_4_threads() {
    let (Some(ws), Some(tasks)) = (build("worksharing"), build("tasks")) else {
        return;
    };
    let dir = common::omp::scratch("clang");
    for threads in ["1", "2", "4"] {
        let o = run(&ws, &["--threads", threads], &[]);
        ok_stdout(&o, &format!("worksharing, {threads} threads"));
        let path = dir.join(format!("tasks-{threads}.json"));
        let o = run(
            &tasks,
            &["--threads", threads, "--report", path.to_str().unwrap()],
            &[],
        );
        let out = ok_stdout(&o, &format!("tasks, {threads} threads"));
        let created: u64 = out
            .lines()
            .find_map(|l| l.strip_prefix("tasks "))
            .and_then(|n| n.parse().ok())
            .expect("the program prints its task count");
        let r = read_json(&path);
        assert_eq!(r["openmp"]["explicit_tasks"], created, "{}", r["openmp"]);
    }
}

#[test]
fn the_affinity_clause_places_tasks_and_the_report_counts_them() {
    let Some(bin) = build("affinity") else {
        return;
    };
    let dir = common::omp::scratch("clang");
    for affinity in ["strict", "non-strict"] {
        let path = dir.join(format!("affinity-{affinity}.json"));
        let (out, report) = common::omp::run_4x1_with_report(&bin, "--affinity", affinity, &path);
        let compute: u64 = out
            .lines()
            .find_map(|l| l.strip_prefix("affinity tasks "))
            .and_then(|n| n.parse().ok())
            .expect("the program prints its count of tasks with affinity");
        let omp = &report["openmp"];
        let n = |k: &str| omp[k].as_u64().unwrap_or_else(|| panic!("{k}: {omp}"));
        assert_eq!(n("tasks_with_affinity"), compute, "{omp}");
        // The initialisation tasks wrote every block first: each compute task's block
        // has a node.
        assert_eq!(n("tasks_placed_by_affinity"), compute, "{omp}");
        assert!(n("tasks_on_affinity_node") <= compute, "{omp}");
        // Every compute task names its 64 KiB block, in its affinity and its dependence.
        assert_eq!(n("affinity_bytes"), compute * 65536, "{omp}");
        assert_eq!(n("dependence_bytes"), compute * 65536, "{omp}");
        if affinity == "strict" {
            assert_eq!(n("tasks_on_affinity_node"), compute, "{omp}");
            assert_eq!(n("affinity_bytes_local"), n("affinity_bytes"), "{omp}");
            assert_eq!(n("dependence_bytes_local"), n("dependence_bytes"), "{omp}");
        }
    }
}

#[test]
fn an_entry_point_locus_does_not_run_stops_the_program_with_one_line() {
    let Some(bin) = build("refused") else {
        return;
    };
    // clang's runtime entry point, named in the line.
    common::omp::refused_in_one_line(&bin, "(__kmpc_");
}

#[test]
fn clang_built_misuse_is_reported_in_one_line() {
    let Some(bin) = build("misuse") else {
        return;
    };
    common::omp::misuse_in_one_line(&bin);
}

#[test]
fn a_program_linked_with_intels_runtime_is_refused() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("omp-clang/iomp5");
    std::fs::create_dir_all(&dir).unwrap();
    // A real ELF program whose NEEDED entries name libiomp5.so (an empty stand-in).
    std::fs::write(dir.join("empty.c"), "").unwrap();
    std::fs::write(dir.join("main.c"), "int main(void) { return 0; }\n").unwrap();
    let cc = |args: &[&str]| Command::new("cc").current_dir(&dir).args(args).status();
    match cc(&[
        "-shared",
        "-fPIC",
        "-Wl,-soname,libiomp5.so",
        "-o",
        "libiomp5.so",
        "empty.c",
    ]) {
        Ok(s) if s.success() => {}
        other => {
            eprintln!("cc is not available ({other:?}): not tested");
            return;
        }
    }
    let linked = cc(&[
        "-o",
        "prog",
        "main.c",
        "-L.",
        "-Wl,--no-as-needed",
        "-liomp5",
    ])
    .unwrap();
    assert!(linked.success());
    let o = locus_env(&["omp", "--", dir.join("prog").to_str().unwrap()], &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("libiomp5.so"), "{err}");
}

#[test]
fn clang_dependences_count_their_bytes_and_their_pages_migrate() {
    let Some(bin) = build("migration") else {
        return;
    };
    let dir = common::omp::scratch("clang");
    for migration in ["none", "now"] {
        let path = dir.join(format!("migration-{migration}.json"));
        let (_, r) = common::omp::run_4x1_with_report(&bin, "--migrate", migration, &path);
        let omp = &r["openmp"];
        // clang gives each dependence's length (one double): 80 compute dependences of 8
        // bytes whose node is known, half on the node of their tasks unless moved.
        assert_eq!(omp["dependences_without_length"], 0, "{omp}");
        assert_eq!(omp["dependence_bytes"], 80 * 8, "{omp}");
        let (local, pages) = if migration == "none" {
            (40 * 8, 0)
        } else {
            (80 * 8, 4)
        };
        assert_eq!(omp["dependence_bytes_local"], local, "{omp}");
        // The page holding each odd block's dependence moved once.
        assert_eq!(r["migration"]["now_pages"], pages, "{}", r["migration"]);
    }
}
