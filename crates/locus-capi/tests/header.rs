//! The committed `include/locus.h` is what cbindgen generates from the sources now:
//! a change to the C API that is not regenerated fails here. `LOCUS_BLESS=1` rewrites
//! the header instead.

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen parses the crate")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    let path = dir.join("include/locus.h");
    if std::env::var_os("LOCUS_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/locus.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/locus.h is stale: run `LOCUS_BLESS=1 cargo test -p locus-capi --test header` \
         and commit the result"
    );
}
