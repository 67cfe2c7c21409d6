//! The trace file of `RuntimeBuilder::trace` is replaced whole or not at all: `build`
//! leaves a previous trace as it is, a run replaces it with complete JSON, and no
//! temporary file stays behind.

use std::path::{Path, PathBuf};

use locus::{Config, Runtime, Topology};

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locus-trace-file-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn traced(path: &Path) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec("2x1").unwrap())
        .config(Config::Dfa)
        .trace(path)
        .build()
        .unwrap()
}

#[test]
fn build_leaves_a_previous_trace_as_it_is() {
    let dir = scratch("build");
    let path = dir.join("trace.json");
    std::fs::write(&path, "{\"previous\":true}\n").unwrap();
    let rt = traced(&path);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"previous\":true}\n",
        "build must not truncate the trace of an earlier run"
    );
    assert_eq!(entries(&dir), ["trace.json"]);
    drop(rt);
    // Nor does build create the file when there is none.
    std::fs::remove_file(&path).unwrap();
    let rt = traced(&path);
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    drop(rt);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_run_replaces_the_trace_with_complete_json_and_no_temporary() {
    let dir = scratch("run");
    let path = dir.join("trace.json");
    std::fs::write(&path, "not json").unwrap();
    let rt = traced(&path);
    let a = rt.data_from("a", &[1u64; 256]).unwrap();
    let b = rt.data::<u64>("b", 256);
    rt.run(|s| {
        s.spawn("double", (a.read(), b.write()), |_, (x, y)| {
            y.iter_mut().zip(x).for_each(|(o, i)| *o = 2 * i);
        })
    })
    .unwrap()
    .value
    .unwrap();
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["args"]["task"] == "double"));
    assert_eq!(entries(&dir), ["trace.json"]);
    drop(rt);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_trace_that_cannot_be_written_is_refused_at_build() {
    let dir = scratch("refused");
    for path in [dir.join("missing/trace.json"), dir.clone()] {
        let e = Runtime::builder()
            .topology(Topology::from_spec("1x1").unwrap())
            .trace(&path)
            .build()
            .err()
            .unwrap_or_else(|| panic!("{} was accepted", path.display()));
        assert!(e.to_string().contains("cannot write the trace"), "{e}");
    }
    assert!(entries(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
