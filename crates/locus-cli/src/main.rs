//! The `locus` command line.

fn main() {}
