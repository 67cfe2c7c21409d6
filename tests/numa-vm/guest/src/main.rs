//! Placement checks that run inside a kernel with several NUMA nodes.

fn main() {}
