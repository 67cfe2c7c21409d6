//! The stencil and overhead workloads verify under every available configuration, and
//! deferred allocation shrinks the stencil's footprint.

use locus::{Config, Runtime, Topology};
use locus_bench::{jacobi_1d, overhead};

fn runtime(spec: &str, config: Config) -> Runtime {
    Runtime::builder()
        .topology(Topology::from_spec(spec).unwrap())
        .config(config)
        .build()
        .unwrap()
}

#[test]
fn jacobi_1d_verifies_everywhere() {
    let p = jacobi_1d::Params {
        blocks: 6,
        block_len: 100,
        iterations: 9,
    };
    for spec in ["1x2", "2x1", "4x1"] {
        for config in [Config::Ws, Config::DsaBase, Config::Dfa] {
            let out = jacobi_1d::run(&runtime(spec, config), &p).unwrap();
            assert!(out.verified, "{config} on {spec}");
            assert_eq!(out.report.tasks, 6 * 9);
            // Halos are one-element ranges: bytes read are the block plus 1 or 2
            // elements, not the neighbours' whole blocks.
            let l = &out.report.locality;
            let read = l.read_local_bytes + l.read_remote_bytes;
            assert_eq!(read, 9 * (6 * 100 + 10) * 8, "{config} on {spec}");
        }
    }
}

#[test]
fn deferred_allocation_shrinks_the_stencil_footprint() {
    let p = jacobi_1d::Params {
        blocks: 8,
        block_len: 4096,
        iterations: 32,
    };
    let immediate = jacobi_1d::run(&runtime("2x1", Config::DsaBase), &p).unwrap();
    let deferred = jacobi_1d::run(&runtime("2x1", Config::Dfa), &p).unwrap();
    assert!(immediate.verified && deferred.verified);
    let (i, d) = (
        immediate.report.memory.peak_bytes,
        deferred.report.memory.peak_bytes,
    );
    // Immediate allocation holds a buffer per submitted version; deferred only the live
    // ones (at most two generations of blocks plus the initial ones).
    assert!(d * 2 < i, "deferred peak {d} vs immediate peak {i}");
}

#[test]
fn overhead_graph_verifies() {
    let p = overhead::Params {
        chains: 4,
        length: 200,
        rounds: 50,
        fan: 8,
    };
    for config in [Config::Ws, Config::DsaBase, Config::Dfa] {
        let out = overhead::run(&runtime("2x1", config), &p).unwrap();
        assert!(out.verified, "{config}");
        assert_eq!(out.tasks as usize, p.tasks());
    }
}
