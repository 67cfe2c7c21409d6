//! `--shared`: where `shm-base` places the shared data of a benchmark, interleaved
//! (paper 1's SHM versions) or by first touch (an OpenMP program's arrays, paper 3's
//! Clang and GCC runs).

mod common;
use common::{locus, stderr, stdout};

fn spmv(args: &[&str]) -> serde_json::Value {
    let mut all = vec![
        "sim",
        "spmv",
        "--topology",
        "4x2",
        "--config",
        "shm-base",
        "--json",
    ];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--param", "size=tiny"]);
    let o = locus(&all);
    assert!(o.status.success(), "{all:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("one JSON object")
}

#[test]
fn first_touch_leaves_the_data_where_its_initialisation_ran() {
    // Initialisation and products bound to each partition's node: by first touch every
    // access is local but the reads of a neighbouring partition's slice of `x` across a
    // node boundary; interleaved, pages go round the nodes.
    let touched = spmv(&["--shared", "first-touch", "--affinity", "strict"]);
    assert_eq!(touched["verified"], true);
    assert!(
        touched["settings"].to_string().contains("first-touch"),
        "{}",
        touched["settings"]
    );
    let local = touched["locality"]["r_loc_rt"].as_f64().unwrap();
    assert!(local > 0.9, "first touch: r_loc_rt {local}");
    let spread = spmv(&["--shared", "interleave", "--affinity", "strict"]);
    assert_eq!(spread["verified"], true);
    let interleaved = spread["locality"]["r_loc_rt"].as_f64().unwrap();
    assert!(interleaved < 0.75, "interleaved: r_loc_rt {interleaved}");
    assert!(
        interleaved < local - 0.25,
        "interleaved {interleaved}, first touch {local}"
    );
    // The default is interleaved.
    let default = spmv(&["--affinity", "strict"]);
    assert_eq!(
        default["locality"]["r_loc_rt"],
        spread["locality"]["r_loc_rt"]
    );
}

#[test]
fn shared_placement_is_for_shm_base_only() {
    let o = locus(&[
        "sim",
        "spmv",
        "--topology",
        "4x2",
        "--config",
        "dsa-opt",
        "--shared",
        "first-touch",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("--shared is for --config shm-base"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
