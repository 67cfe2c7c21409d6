//! Presets: models of the two machines measured in paper 1 (section 4.2, Tables 1-2) and
//! of paper 2's four-node Opteron (Broquedis et al., ForestGOMP and MaMI, Table 3) and
//! of the Tilera TilePro64 of paper 4 (section 2).
//!
//! Each preset has the machine's node and core counts, its memory per node, a hop
//! structure matching the paper's description, and the read/write latency factors the
//! paper measured for each hop class (for the TilePro64, which paper 4 does not
//! measure, factors from Tilera's documentation; see [`TILEPRO64_CLASSES`]). Distances are the read factors times 10 (rounded),
//! in the style of an ACPI SLIT, so that distance classes and cost classes coincide.

use crate::error::TopoError;
use crate::memcost::MemoryCosts;
use crate::topology::{CostMatrix, CostOrigin, Parts, Source, Topology};

const GIB: u64 = 1 << 30;

/// One class of node pairs at the same hop distance, with its measured factors.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct HopClass {
    /// The class as the paper names it (`local`, `1 hop (on-package)`, ...).
    pub name: &'static str,
    /// Read latency relative to a local read.
    pub read: f64,
    /// Write latency relative to a local write.
    pub write: f64,
    /// The distance given to node pairs of this class.
    pub distance: u32,
}

const fn class(name: &'static str, read: f64, write: f64, distance: u32) -> HopClass {
    HopClass {
        name,
        read,
        write,
        distance,
    }
}

/// Paper 1, Table 1 ("Average latency of accesses on Opteron-64"), factors R/W.
pub const OPTERON_64_CLASSES: [HopClass; 4] = [
    class("local", 1.00, 1.00, 10),
    class("1 hop (on-package)", 1.81, 1.20, 18),
    class("1 hop (off-package)", 2.16, 1.74, 22),
    class("2 hops", 4.34, 2.48, 43),
];

/// Paper 1, Table 2 ("Average latency of accesses on SGI-192"), factors R/W.
pub const SGI_UV2000_CLASSES: [HopClass; 4] = [
    class("local", 1.00, 1.00, 10),
    class("1 hop", 4.88, 4.04, 49),
    class("2 hops", 6.23, 4.95, 62),
    class("3 hops", 7.48, 5.87, 75),
];

/// Paper 2 (Broquedis et al., ForestGOMP and MaMI), Table 3 ("Memory access latency
/// (uncached) depending on the data being local or remote"), factors R/W.
pub const OPTERON_16_CLASSES: [HopClass; 3] = [
    class("local", 1.00, 1.00, 10),
    class("neighbour node", 1.18, 1.25, 12),
    class("opposite node", 1.41, 1.46, 14),
];

/// Cycles of an L2 hit in the tile's own L2 slice on the TilePro64 (Tilera, "Tile
/// Processor Architecture Overview for the TILEPro Series", UG120: 8 cycles).
pub const TILEPRO64_LOCAL_L2_CYCLES: f64 = 8.0;

/// Cycles a request and its reply spend per mesh hop on the TilePro64 (one cycle per
/// hop each way on the iMesh: Wentzlaff et al., "On-Chip Interconnection Architecture
/// of the Tile Processor", IEEE Micro 2007).
pub const TILEPRO64_CYCLES_PER_HOP: f64 = 2.0;

/// Fixed cycles of a miss served by another tile's L2 slice (its "home"), on top of
/// the home's own L2 access and the hops: an *estimate*, chosen so that a home one hop
/// away answers in 30 cycles and one 14 hops away (the farthest on the 8 x 8 mesh) in
/// 56, within the 30-60 cycles Tilera's UG120 gives for a remote L2 ("L3") hit.
pub const TILEPRO64_REMOTE_OVERHEAD_CYCLES: f64 = 20.0;

/// Read and write factors of the TilePro64 by mesh hops (0 to 14) between a tile and
/// the home of the line: `(overhead + L2 + hops x per-hop) / L2` for a remote home.
/// Writes use the read factors: the L2 is write-through to the home (paper 4 section
/// 2), so a write pays the trip to the home as a read does (an *estimate*: Tilera
/// publishes no separate write latency). Distances are the factors times 10, rounded.
pub const TILEPRO64_CLASSES: [HopClass; 15] = [
    class("local (own L2 slice)", 1.0, 1.0, 10),
    class("1 hop", 3.75, 3.75, 38),
    class("2 hops", 4.0, 4.0, 40),
    class("3 hops", 4.25, 4.25, 43),
    class("4 hops", 4.5, 4.5, 45),
    class("5 hops", 4.75, 4.75, 48),
    class("6 hops", 5.0, 5.0, 50),
    class("7 hops", 5.25, 5.25, 53),
    class("8 hops", 5.5, 5.5, 55),
    class("9 hops", 5.75, 5.75, 58),
    class("10 hops", 6.0, 6.0, 60),
    class("11 hops", 6.25, 6.25, 63),
    class("12 hops", 6.5, 6.5, 65),
    class("13 hops", 6.75, 6.75, 68),
    class("14 hops", 7.0, 7.0, 70),
];

/// The names [`Topology::preset`] accepts.
pub const PRESET_NAMES: [&str; 4] = ["opteron-64", "sgi-uv2000", "opteron-16", "tilepro64"];

/// Builds a preset by name.
pub(crate) fn preset(name: &str) -> Result<Topology, TopoError> {
    match name {
        "opteron-64" => Ok(opteron_64()),
        "sgi-uv2000" => Ok(sgi_uv2000()),
        "opteron-16" => Ok(opteron_16()),
        "tilepro64" => Ok(tilepro64()),
        _ => Err(TopoError::UnknownPreset {
            name: name.to_string(),
            known: PRESET_NAMES.join(", "),
        }),
    }
}

/// Opteron-64 (paper 1, section 4.2): four AMD Opteron 6282 SE packages of 2 dies, each
/// die one NUMA node of 8 cores sharing an L3 cache and a memory controller; 64 GiB in 8
/// equal nodes.
///
/// Hop structure: "for each NUMA node, 4 neighbors are at a distance of 1 hop and 3
/// neighbors are at 2 hops". Node `2p + k` is die `k` of package `p`. Its 1-hop
/// neighbours are the other die of its package (on-package) and die `k` of the three
/// other packages (off-package); die `1 - k` of the other packages is 2 hops away (via
/// either link). Factors: Table 1.
fn opteron_64() -> Topology {
    let hop = |i: usize, j: usize| -> usize {
        let (pi, ki, pj, kj) = (i / 2, i % 2, j / 2, j % 2);
        match (i == j, pi == pj, ki == kj) {
            (true, _, _) => 0,
            (false, true, _) => 1,
            (false, false, true) => 2,
            (false, false, false) => 3,
        }
    };
    from_classes(
        "opteron-64",
        8,
        8,
        8 * GIB,
        &OPTERON_64_CLASSES,
        hop,
        CostOrigin::Measured,
    )
}

/// SGI UV2000 "SGI-192" (paper 1, section 4.2): 12 blades of two 8-core Intel Xeon
/// E5-4640, each CPU one NUMA node with an L3 shared by its 8 cores; 756 GiB over 24
/// nodes.
///
/// Hop structure: a memory controller is local (same CPU), 1 hop (other CPU of the
/// same blade), 2 hops (a blade directly connected to this one) or 3 hops (a blade
/// reached indirectly). The paper does not list which blades are directly connected;
/// the model puts the 12 blades in two chassis of 6 blades each, fully connected inside
/// a chassis and indirect between chassis. Node `n` is on blade `n / 2`, chassis
/// `n / 12`. Factors: Table 2.
fn sgi_uv2000() -> Topology {
    let hop = |i: usize, j: usize| -> usize {
        match (i == j, i / 2 == j / 2, i / 12 == j / 12) {
            (true, _, _) => 0,
            (false, true, _) => 1,
            (false, false, true) => 2,
            (false, false, false) => 3,
        }
    };
    from_classes(
        "sgi-uv2000",
        24,
        8,
        756 * GIB / 24,
        &SGI_UV2000_CLASSES,
        hop,
        CostOrigin::Measured,
    )
}

/// Tilera TilePro64 (paper 4 section 2): 64 tiles in an 8 x 8 mesh, each a core with
/// a 64 KB slice of the shared L2 that is the home of the memory lines hashed to it.
/// Each tile is one node of one core: its "local memory" is what it homes, and an
/// access to a line homed on another tile costs more with the mesh hops (Manhattan
/// distance) between them ([`TILEPRO64_CLASSES`]). Tile `t` is at row `t / 8`, column
/// `t % 8`.
///
/// Memory: the chip's four DDR2 controllers address 16 GiB (Tilera's TILEPro64 product
/// brief), homed a 64th per tile: 256 MiB per node. Paper 4 runs 50 threads; the
/// simulator takes them as tiles 0-49 (`--threads 50`).
fn tilepro64() -> Topology {
    let hop = |i: usize, j: usize| -> usize { (i / 8).abs_diff(j / 8) + (i % 8).abs_diff(j % 8) };
    from_classes(
        "tilepro64",
        64,
        1,
        16 * GIB / 64,
        &TILEPRO64_CLASSES,
        hop,
        CostOrigin::Documented,
    )
}

/// Opteron-16 (paper 2, section 4.1 and Figure 1): four quad-core AMD Opteron
/// packages, each one NUMA node of 4 cores and 8 GiB, linked in a square: every node
/// has two neighbours one link away and one opposite node two links away. Node `i`'s
/// neighbours are `i ± 1 (mod 4)`, its opposite node `i ^ 2`. Factors: Table 3;
/// absolute costs: Table 3's local latencies (83 ns read, 142 ns write) and MaMI's
/// migration model, 120 us + 11 us per page ([`MemoryCosts::OPTERON_16`]).
fn opteron_16() -> Topology {
    let hop = |i: usize, j: usize| -> usize {
        match (i == j, i ^ j == 2) {
            (true, _) => 0,
            (false, false) => 1,
            (false, true) => 2,
        }
    };
    from_classes(
        "opteron-16",
        4,
        4,
        8 * GIB,
        &OPTERON_16_CLASSES,
        hop,
        CostOrigin::Measured,
    )
    .with_memory_costs(MemoryCosts::OPTERON_16)
}

fn from_classes(
    name: &str,
    nodes: usize,
    cores: usize,
    memory_per_node: u64,
    classes: &[HopClass],
    hop: impl Fn(usize, usize) -> usize,
    origin: CostOrigin,
) -> Topology {
    let matrix = |f: &dyn Fn(&HopClass) -> f64| -> Vec<Vec<f64>> {
        (0..nodes)
            .map(|i| (0..nodes).map(|j| f(&classes[hop(i, j)])).collect())
            .collect()
    };
    let parts = Parts {
        name: name.to_string(),
        source: Source::Preset,
        node_cpus: (0..nodes)
            .map(|i| (i * cores..(i + 1) * cores).collect())
            .collect(),
        pinned: false,
        memory: vec![memory_per_node; nodes],
        os_nodes: None,
        cache_groups: None,
        distances: (0..nodes)
            .map(|i| (0..nodes).map(|j| classes[hop(i, j)].distance).collect())
            .collect(),
        costs: Some(CostMatrix {
            read: matrix(&|c| c.read),
            write: matrix(&|c| c.write),
            origin,
        }),
    };
    // The presets are constants; a failure here is a bug caught by the tests below.
    Topology::build(parts).expect("preset topologies are valid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::NodeId;

    #[test]
    fn opteron_64_counts_and_factors() {
        let t = preset("opteron-64").unwrap();
        assert_eq!(t.num_nodes(), 8);
        assert_eq!(t.num_cpus(), 64);
        assert!(t.nodes().iter().all(|n| n.cpus.len() == 8));
        assert_eq!(t.total_memory_bytes(), 64 * GIB);
        assert_eq!(t.cache_groups().len(), 8);
        let n = |i| NodeId(i);
        assert_eq!(t.read_cost(n(0), n(0)), 1.00);
        assert_eq!(t.write_cost(n(0), n(0)), 1.00);
        // Node 0 = package 0 die 0: node 1 on-package, 2/4/6 off-package 1 hop, 3/5/7 2 hops.
        assert_eq!(
            (t.read_cost(n(0), n(1)), t.write_cost(n(0), n(1))),
            (1.81, 1.20)
        );
        assert_eq!(
            (t.read_cost(n(0), n(2)), t.write_cost(n(0), n(2))),
            (2.16, 1.74)
        );
        assert_eq!(
            (t.read_cost(n(0), n(3)), t.write_cost(n(0), n(3))),
            (4.34, 2.48)
        );
        assert_eq!(t.distance(n(0), n(1)), 18);
        assert_eq!(t.distance(n(0), n(2)), 22);
        assert_eq!(t.distance(n(0), n(3)), 43);
    }

    #[test]
    fn opteron_64_hops_match_the_paper() {
        // "For each NUMA node, 4 neighbors are at a distance of 1 hop and 3 neighbors
        // are at 2 hops."
        let t = preset("opteron-64").unwrap();
        for i in 0..8 {
            let classes = t.nodes_by_distance(NodeId(i));
            let sizes: Vec<usize> = classes.iter().map(Vec::len).collect();
            assert_eq!(sizes, [1, 3, 3], "node {i}");
            assert_eq!(classes[0], [NodeId(i ^ 1)], "on-package sibling of {i}");
        }
    }

    #[test]
    fn sgi_uv2000_counts_and_factors() {
        let t = preset("sgi-uv2000").unwrap();
        assert_eq!(t.num_nodes(), 24);
        assert_eq!(t.num_cpus(), 192);
        assert_eq!(t.total_memory_bytes(), 756 * GIB);
        let n = |i| NodeId(i);
        assert_eq!(
            (t.read_cost(n(0), n(1)), t.write_cost(n(0), n(1))),
            (4.88, 4.04)
        );
        assert_eq!(
            (t.read_cost(n(0), n(2)), t.write_cost(n(0), n(2))),
            (6.23, 4.95)
        );
        assert_eq!(
            (t.read_cost(n(0), n(23)), t.write_cost(n(0), n(23))),
            (7.48, 5.87)
        );
        for i in 0..24 {
            let sizes: Vec<usize> = t
                .nodes_by_distance(NodeId(i))
                .iter()
                .map(Vec::len)
                .collect();
            assert_eq!(sizes, [1, 10, 12], "node {i}");
        }
    }

    #[test]
    fn factor_tables_are_the_papers() {
        let r: Vec<f64> = OPTERON_64_CLASSES.iter().map(|c| c.read).collect();
        let w: Vec<f64> = OPTERON_64_CLASSES.iter().map(|c| c.write).collect();
        assert_eq!(r, [1.00, 1.81, 2.16, 4.34]);
        assert_eq!(w, [1.00, 1.20, 1.74, 2.48]);
        let r: Vec<f64> = SGI_UV2000_CLASSES.iter().map(|c| c.read).collect();
        let w: Vec<f64> = SGI_UV2000_CLASSES.iter().map(|c| c.write).collect();
        assert_eq!(r, [1.00, 4.88, 6.23, 7.48]);
        assert_eq!(w, [1.00, 4.04, 4.95, 5.87]);
        let d: Vec<u32> = SGI_UV2000_CLASSES.iter().map(|c| c.distance).collect();
        assert_eq!(d, [10, 49, 62, 75]);
    }

    #[test]
    fn opteron_16_counts_factors_and_costs() {
        let t = preset("opteron-16").unwrap();
        assert_eq!((t.num_nodes(), t.num_cpus()), (4, 16));
        assert!(t.nodes().iter().all(|n| n.cpus.len() == 4));
        assert_eq!(t.total_memory_bytes(), 32 * GIB);
        let n = |i| NodeId(i);
        // Node 0: neighbours 1 and 3, opposite node 2.
        for j in [1, 3] {
            assert_eq!(
                (t.read_cost(n(0), n(j)), t.write_cost(n(0), n(j))),
                (1.18, 1.25)
            );
            assert_eq!(t.distance(n(0), n(j)), 12);
        }
        assert_eq!(
            (t.read_cost(n(0), n(2)), t.write_cost(n(0), n(2))),
            (1.41, 1.46)
        );
        assert_eq!(t.distance(n(0), n(2)), 14);
        let costs = t.memory_costs();
        assert_eq!((costs.local_read_ns, costs.local_write_ns), (83.0, 142.0));
        assert_eq!(
            (costs.migration.fixed_ns, costs.migration.per_page_ns),
            (120_000.0, 11_000.0)
        );
        // Table 3's absolute latencies, one cache line each.
        let line = |r: u32, d: u32| {
            (
                t.read_cost_ns(64, n(d), n(r)),
                t.write_cost_ns(64, n(d), n(r)),
            )
        };
        let (r, w) = line(1, 2);
        assert!((r - 98.0).abs() < 0.1 && (w - 177.5).abs() < 0.1, "{r} {w}");
        let (r, w) = line(3, 1);
        assert!(
            (r - 117.0).abs() < 0.1 && (w - 207.3).abs() < 0.1,
            "{r} {w}"
        );
        assert_eq!(t.migration_cost_ns(3 * 4096), 153_000.0);
    }

    #[test]
    fn opteron_16_is_a_square() {
        // Two neighbours and one opposite node for every node.
        let t = preset("opteron-16").unwrap();
        for i in 0..4u32 {
            let classes = t.nodes_by_distance(NodeId(i));
            let sizes: Vec<usize> = classes.iter().map(Vec::len).collect();
            assert_eq!(sizes, [2, 1], "node {i}");
            assert_eq!(classes[1], [NodeId(i ^ 2)], "opposite of {i}");
            let mut neighbours = vec![NodeId((i + 1) % 4), NodeId((i + 3) % 4)];
            neighbours.sort_unstable();
            assert_eq!(classes[0], neighbours, "neighbours of {i}");
        }
        let r: Vec<f64> = OPTERON_16_CLASSES.iter().map(|c| c.read).collect();
        let w: Vec<f64> = OPTERON_16_CLASSES.iter().map(|c| c.write).collect();
        assert_eq!((r, w), (vec![1.00, 1.18, 1.41], vec![1.00, 1.25, 1.46]));
        // Other presets keep the assumed costs.
        let other = preset("opteron-64").unwrap();
        assert_eq!(*other.memory_costs(), MemoryCosts::ASSUMED);
    }

    #[test]
    fn tilepro64_costs_grow_with_mesh_hops() {
        let t = preset("tilepro64").unwrap();
        assert_eq!((t.num_nodes(), t.num_cpus()), (64, 64));
        assert!(t.nodes().iter().all(|n| n.cpus.len() == 1));
        assert_eq!(t.total_memory_bytes(), 16 * GIB);
        let n = |i| NodeId(i);
        // Tile 9 is at (1, 1): tiles 1, 8, 10, 17 are one hop away, tile 63 at (7, 7)
        // twelve hops.
        for j in [1, 8, 10, 17] {
            assert_eq!(t.read_cost(n(9), n(j)), 3.75, "{j}");
        }
        assert_eq!(t.read_cost(n(9), n(63)), 6.5);
        assert_eq!(t.read_cost(n(0), n(63)), 7.0);
        assert_eq!(t.write_cost(n(0), n(63)), 7.0);
        assert_eq!(t.read_cost(n(5), n(5)), 1.0);
        assert_eq!(t.costs().origin, CostOrigin::Documented);
        // Corner tile: neighbours by hops 1, 2, ..., 14 number 2, 3, ..., 8, 7, ..., 1.
        let sizes: Vec<usize> = t.nodes_by_distance(n(0)).iter().map(Vec::len).collect();
        assert_eq!(sizes, [2, 3, 4, 5, 6, 7, 8, 7, 6, 5, 4, 3, 2, 1]);
        // The factors follow the documented cycles.
        for (h, c) in TILEPRO64_CLASSES.iter().enumerate().skip(1) {
            let cycles = TILEPRO64_REMOTE_OVERHEAD_CYCLES
                + TILEPRO64_LOCAL_L2_CYCLES
                + h as f64 * TILEPRO64_CYCLES_PER_HOP;
            assert_eq!(c.read, cycles / TILEPRO64_LOCAL_L2_CYCLES, "{h} hops");
            assert!((30.0..=60.0).contains(&cycles));
            assert_eq!(c.distance, (c.read * 10.0).round() as u32);
        }
    }

    #[test]
    fn unknown_preset_names_the_known_ones() {
        let err = preset("cray-1").unwrap_err().to_string();
        assert!(
            err.contains("cray-1") && err.contains("opteron-64"),
            "{err}"
        );
    }
}
