//! Random task graphs checked against sequential execution, under every available
//! configuration, on one node, two virtual nodes and four virtual nodes.

use std::sync::OnceLock;

use locus::{AllocMode, Config, Runtime, Topology};
use locus_bench::random_dag::{self, Params};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngAlgorithm, TestRng, TestRunner};

const TOPOLOGIES: [&str; 3] = ["1x2", "2x1", "4x1"];
/// Every configuration (`Config::ALL`; `docs/guide.md`, "Choosing a configuration").
const CONFIGS: [Config; 10] = Config::ALL;

/// One runtime per (topology, configuration), shared by all cases.
fn runtimes() -> &'static Vec<Runtime> {
    static RUNTIMES: OnceLock<Vec<Runtime>> = OnceLock::new();
    RUNTIMES.get_or_init(|| {
        let mut v = Vec::new();
        for spec in TOPOLOGIES {
            for config in CONFIGS {
                v.push(
                    Runtime::builder()
                        .topology(Topology::from_spec(spec).unwrap())
                        .config(config)
                        // Small enough that random graphs exercise pushing.
                        .push_threshold(256)
                        .build()
                        .unwrap(),
                );
            }
        }
        v
    })
}

fn params() -> impl Strategy<Value = Params> {
    (
        1usize..80,
        2usize..12,
        1usize..96,
        0usize..5,
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(tasks, data, max_len, max_inputs, seed, hints)| Params {
            tasks,
            data,
            max_len,
            max_inputs,
            seed,
            hints,
        })
}

#[test]
fn random_graphs_match_sequential_execution() {
    // Seeded, so a failure reproduces; 200 graphs per runtime, 4800 in all, half of
    // them with random affinity hints (strict tasks check where they run).
    let config = ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    for rt in runtimes() {
        let mut runner = TestRunner::new_with_rng(
            config.clone(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
        );
        runner
            .run(&params(), |p| {
                let out =
                    random_dag::run(rt, &p).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert!(
                    out.verified,
                    "{} mismatching data under {} on {}",
                    out.mismatches,
                    rt.config(),
                    rt.topology().name()
                );
                if rt.allocation() == AllocMode::Deferred {
                    prop_assert_eq!(out.report.locality.write_remote_bytes, 0);
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(rt.live_versions(), 0, "every version released");
        assert_eq!(rt.pool_bytes_in_use(), 0, "every buffer back in its pool");
    }
}

#[test]
fn stress_a_large_graph_repeatedly() {
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x2").unwrap())
        .config(Config::DsaBase)
        .build()
        .unwrap();
    for seed in 0..8 {
        let p = Params {
            tasks: 5000,
            data: 96,
            max_len: 512,
            max_inputs: 4,
            seed,
            hints: seed % 2 == 1,
        };
        let out = random_dag::run(&rt, &p).unwrap();
        assert!(out.verified, "seed {seed}: {} mismatches", out.mismatches);
        assert_eq!(out.report.tasks, 5000);
    }
    assert_eq!(rt.live_versions(), 0);
}

#[test]
fn batch_steals_keep_random_graphs_correct() {
    for spec in ["1x2", "4x1"] {
        let rt = Runtime::builder()
            .topology(Topology::from_spec(spec).unwrap())
            .config(Config::DsaOpt)
            .steal_half(true)
            .last_victim_first(true)
            .push_threshold(256)
            .build()
            .unwrap();
        for seed in 0..40 {
            let p = Params {
                tasks: 300,
                data: 24,
                max_len: 256,
                max_inputs: 4,
                seed,
                hints: seed % 3 == 0,
            };
            let out = random_dag::run(&rt, &p).unwrap();
            assert!(
                out.verified,
                "{spec}, seed {seed}: {} mismatches",
                out.mismatches
            );
            assert_eq!(out.report.settings.get("steal_half"), Some("true"));
        }
        assert_eq!(rt.live_versions(), 0);
    }
}
