//! NUMA placement primitives and per-node memory pools for Locus.
