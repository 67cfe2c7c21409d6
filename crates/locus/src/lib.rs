//! Locus: a NUMA-aware task-parallel dataflow runtime.
