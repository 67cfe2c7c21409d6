#!/usr/bin/env bash
# Installs Locus's C API under PREFIX: the shared and static libraries (liblocus.so,
# liblocus.a, without their debug information), the headers (locus.h, locus.hpp), and
# locus.pc and locus-static.pc for pkg-config. It builds the library first, so it needs
# cargo (the Rust toolchain, https://rustup.rs) besides strip (binutils). Then
#
#   export PKG_CONFIG_PATH=PREFIX/lib/pkgconfig
#   cc prog.c $(pkg-config --cflags --libs locus)          # liblocus.so
#   cc prog.c $(pkg-config --cflags --libs locus-static)   # liblocus.a
#
# builds a program, and CMake finds it with pkg_check_modules(LOCUS REQUIRED locus).
#
# Usage: scripts/install-capi.sh PREFIX
# LOCUS_PROFILE=dev builds the unoptimised library (faster to build; default release).
# LOCUS_ALLOCATOR=system makes the library's own allocations with the system allocator
# instead of mimalloc (slower with many small tasks, but seen by LeakSanitizer).
# LOCUS_KEEP_DEBUG=1 installs the libraries with their debug information (line tables
# in a release build), for debuggers and symbolised backtraces.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 PREFIX" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
profile=${LOCUS_PROFILE:-release}
case "$profile" in
    release) dir=release ;;
    dev) dir=debug ;;
    *) echo "LOCUS_PROFILE must be release or dev, not '$profile'" >&2; exit 2 ;;
esac

features=()
case "${LOCUS_ALLOCATOR:-mimalloc}" in
    mimalloc) ;;
    system) features=(--no-default-features) ;;
    *) echo "LOCUS_ALLOCATOR must be mimalloc or system, not '$LOCUS_ALLOCATOR'" >&2; exit 2 ;;
esac

crate="$root/crates/locus-capi"
if ! command -v cargo >/dev/null; then
    echo "$0: cargo is needed to build the library (the Rust toolchain: https://rustup.rs)" >&2
    exit 2
fi
cargo build --manifest-path "$root/Cargo.toml" -p locus-capi --profile "$profile" --lib "${features[@]}"

target=${CARGO_TARGET_DIR:-$root/target}/$dir
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
major=${version%%.*}

install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 "$target/liblocus_capi.so" "$prefix/lib/liblocus.so.$version"
ln -sf "liblocus.so.$version" "$prefix/lib/liblocus.so.$major"
ln -sf "liblocus.so.$major" "$prefix/lib/liblocus.so"
install -m 0644 "$target/liblocus_capi.a" "$prefix/lib/liblocus.a"
if [ "${LOCUS_KEEP_DEBUG:-0}" != 1 ]; then
    # The build keeps line tables (the workspace's release profile) for Rust's own
    # backtraces; an installed library does without: about 14 MB and 47 MB with them.
    strip --strip-debug "$prefix/lib/liblocus.so.$version" "$prefix/lib/liblocus.a"
fi
install -m 0644 "$crate/include/locus.h" "$crate/include/locus.hpp" "$prefix/include/"
for pc in locus locus-static; do
    sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$crate/$pc.pc.in" \
        >"$prefix/lib/pkgconfig/$pc.pc"
done
echo "installed Locus $version (C API) under $prefix"
