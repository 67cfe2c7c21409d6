//! Paper 4's experiment from the command line: `sparselu` in the simulator on the
//! `tilepro64` preset under home-based scheduling with a chosen steal vicinity.

mod common;
use common::{locus, stderr, stdout};

fn sim_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["sim", "sparselu", "--topology", "tilepro64", "--json"];
    all.extend_from_slice(args);
    let o = locus(&all);
    assert!(o.status.success(), "{all:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("one JSON object")
}

#[test]
fn home_with_a_vicinity_of_one_never_steals() {
    // Under `home` the blocks are homed round-robin by default (`layout` 0).
    let base = ["--threads", "4", "--config", "home", "--param", "size=tiny"];
    let alone = sim_json(&[&base[..], &["--vicinity", "1"]].concat());
    assert_eq!(alone["verified"], true);
    assert_eq!(alone["threads"], 4);
    assert_eq!(alone["steals"]["same_node"], 0);
    assert_eq!(alone["steals"]["remote"], 0);
    // Every block is homed on one of the four workers' tiles: with no stealing every
    // access of a task to the block it writes is local.
    assert_eq!(alone["locality"]["write_remote_bytes"], 0);
    // ... and the blocks' homes spread the tasks over every worker.
    for w in alone["workers"].as_array().unwrap() {
        assert!(w["tasks"].as_u64().unwrap() > 0, "{w}");
    }
    let full = sim_json(&[&base[..], &["--vicinity", "4"]].concat());
    assert_eq!(full["verified"], true);
    let steals = full["steals"]["remote"].as_u64().unwrap();
    assert!(steals > 0, "{}", full["steals"]);
}

#[test]
fn a_vicinity_needs_home_and_a_worker() {
    for (args, needle) in [
        (
            &["--config", "ws", "--vicinity", "2"][..],
            "--vicinity is for --config home",
        ),
        (&["--config", "home", "--vicinity", "0"][..], "--vicinity"),
    ] {
        let mut all = vec!["sim", "sparselu", "--topology", "tilepro64"];
        all.extend_from_slice(args);
        let o = locus(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}");
        assert!(stderr(&o).contains(needle), "{}", stderr(&o));
    }
}
