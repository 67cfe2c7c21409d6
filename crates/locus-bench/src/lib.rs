//! Benchmark workloads for Locus. Every workload has a sequential reference and every
//! run verifies its result against it.
//!
//! - [`random_dag`]: seeded random task graphs over versioned data of random sizes.
//! - [`overhead`]: many tiny dependent tasks in chains and fan-in/fan-out rounds.

pub mod overhead;
pub mod random_dag;
