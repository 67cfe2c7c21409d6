//! First touch of fresh pool blocks (`Sim::first_touch`): under immediate allocation a
//! never-used block is placed by the task that first writes it, a reused block keeps
//! its node.

use locus::engine::Bodies;
use locus::{Config, Report, Runtime, Topology};
use locus_sim::Sim;

/// The root (on node 0) allocates the outputs of 64 independent producers
/// (immediate allocation), which workers of both nodes run; each output is then read.
fn producers(first_touch: bool) -> Report {
    let rt = Runtime::builder()
        .topology(Topology::from_spec("2x2").unwrap())
        .config(Config::DsaBase)
        .engine(
            Sim::new()
                .seed(3)
                .bodies(Bodies::Skip)
                .first_touch(first_touch),
        )
        .build()
        .unwrap();
    let data: Vec<_> = (0..64)
        .map(|i| rt.data::<u64>(format!("d{i}"), 1 << 16))
        .collect();
    let finished = rt
        .run(|s| {
            for d in &data {
                s.spawn("produce", d.write(), |_, _| {}).unwrap();
            }
            for d in &data {
                s.spawn("consume", d.read(), |_, _| {}).unwrap();
            }
        })
        .unwrap();
    finished.report
}

#[test]
fn fresh_blocks_are_placed_by_their_first_writer() {
    let off = producers(false);
    let on = producers(true);
    // Without first touch, the producers that node 1 stole write into node 0.
    assert!(off.locality.write_remote_bytes > 0, "{:?}", off.locality);
    assert_eq!(off.memory.first_touched, 0);
    // With it, every block is fresh (nothing is freed before the end): every write
    // is local, and the blocks node 1's producers wrote moved there.
    assert_eq!(on.locality.write_remote_bytes, 0, "{:?}", on.locality);
    assert!(on.locality.write_local_bytes > 0);
    assert!(on.memory.first_touched > 0);
    assert!(on.memory.peak_bytes_per_node[1] > 0);
}
