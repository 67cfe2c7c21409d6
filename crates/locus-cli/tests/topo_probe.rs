//! `locus topo --probe`: the host's migration model and STREAM triad.

mod common;
use common::{locus, stdout};

#[test]
fn probe_prints_migration_or_why_not_and_the_triad() {
    let o = locus(&["topo", "--probe", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let nodes = locus_mem::placement::online_nodes();
    if nodes < 2 || !locus_mem::placement::numa_available() {
        let e = v["migration"]["error"].as_str().unwrap();
        assert!(e.contains("cannot be measured"), "{e}");
    } else {
        assert!(v["migration"]["per_page_ns"].as_f64().unwrap() >= 0.0);
        assert_eq!(v["migration"]["samples"].as_array().unwrap().len(), 5);
    }
    assert!(v["triad"]["gb_per_s"].as_f64().unwrap() > 0.0);
    let text = stdout(&locus(&["topo", "--probe"]));
    assert!(
        text.contains("STREAM triad:") && text.contains("migration"),
        "{text}"
    );
}

#[test]
fn presets_include_paper_2s_opteron() {
    let o = locus(&["topo", "--topology", "opteron-16", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (v["num_nodes"].as_u64(), v["num_cpus"].as_u64()),
        (Some(4), Some(16))
    );
    assert_eq!(v["read_cost"][0][2].as_f64(), Some(1.41));
    let m = &v["memory_costs"];
    assert_eq!(
        (m["local_read_ns"].as_f64(), m["source"].as_str()),
        (Some(83.0), Some("paper"))
    );
    assert_eq!(m["migration"]["per_page_ns"].as_f64(), Some(11_000.0));
    let text = stdout(&locus(&["topo", "--topology", "opteron-16"]));
    assert!(
        text.contains("migration 120 us + 11 us per 4096 B page"),
        "{text}"
    );
}
