//! Compiles the tile kernels of `cholesky` (`src/cholesky_tiles.c`, which includes the
//! header the peers share, `peers/common/cholesky_tiles.h`), with the flags the peers
//! are built with.

fn main() {
    println!("cargo:rerun-if-changed=src/cholesky_tiles.c");
    println!("cargo:rerun-if-changed=../../peers/common/cholesky_tiles.h");
    cc::Build::new()
        .file("src/cholesky_tiles.c")
        .opt_level(2)
        .flag("-ffp-contract=off")
        .flag("-falign-loops=64")
        .warnings(true)
        .compile("locus_cholesky_tiles");
    println!("cargo:rustc-link-lib=m");
}
