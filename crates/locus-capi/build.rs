//! Gives the shared library the soname it is installed under (`liblocus.so.0`, see
//! `scripts/install-capi.sh`), so that programs linked with `-llocus` load it by that
//! name.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liblocus.so.0");
}
