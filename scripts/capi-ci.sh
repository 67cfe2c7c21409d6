#!/usr/bin/env bash
# The whole check of Locus's C and C++ API, as a user on a fresh machine would meet it:
#
#  1. the Rust side: the committed include/locus.h is what cbindgen generates, and the
#     crate's own tests;
#  2. scripts/install-capi.sh into a scratch prefix;
#  3. the C examples and the C test suite built with `cc $(pkg-config --cflags --libs
#     locus)`, the C++ ones with `c++`, an example and a C89 program
#     (tests/c/c89.c, `-std=c89 -pedantic -Werror`, also with clang) against the static
#     library as the README says (`pkg-config --libs locus-static`), and run; the
#     installed libraries carry no debug information;
#  4. the same built by CMake through pkg_check_modules, run by ctest;
#  5. the C and C++ test suites and the examples under clang's AddressSanitizer and
#     LeakSanitizer (C++20, so locus.hpp's views are std::span), run by ctest, against a
#     second install whose library allocates with malloc (so LeakSanitizer sees it).
#
# Needs: cargo, gcc, g++, clang with its sanitizer runtimes, cmake, pkg-config (Debian:
# build-essential clang libclang-rt-dev cmake pkg-config). Usage: scripts/capi-ci.sh [SCRATCH_DIR]  (default: a fresh temporary
# directory, removed at the end). LOCUS_PROFILE=dev installs the unoptimised library.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
crate="$root/crates/locus-capi"
if [ $# -ge 1 ]; then
    scratch=$1
    mkdir -p "$scratch"
else
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
fi
scratch=$(cd "$scratch" && pwd)
prefix="$scratch/prefix"
step() { echo "== capi-ci: $*" >&2; }

step "cargo test -p locus-capi (header up to date, handle tables)"
cargo test --manifest-path "$root/Cargo.toml" -p locus-capi

step "install into $prefix"
"$root/scripts/install-capi.sh" "$prefix"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkg-config --exists locus
echo "pkg-config: $(pkg-config --modversion locus): $(pkg-config --cflags --libs locus)" >&2

step "cc / c++ with pkg-config"
bin="$scratch/bin"
mkdir -p "$bin"
flags="-O2 -Wall -Wextra -Werror -ffp-contract=off"
# shellcheck disable=SC2046 # pkg-config's output is meant to be split into words
{
    cc $flags -o "$bin/jacobi_2d" "$crate/examples/c/jacobi_2d.c" $(pkg-config --cflags --libs locus)
    cc $flags -o "$bin/cholesky" "$crate/examples/c/cholesky.c" $(pkg-config --cflags --libs locus) -lm
    cc $flags -o "$bin/capi_tests" "$crate/tests/c/capi_tests.c" $(pkg-config --cflags --libs locus) -lpthread
    c++ $flags -std=c++17 -o "$bin/fib" "$crate/examples/cpp/fib.cpp" $(pkg-config --cflags --libs locus)
    c++ $flags -std=c++17 -o "$bin/reduction" "$crate/examples/cpp/reduction.cpp" $(pkg-config --cflags --libs locus)
    c++ $flags -std=c++17 -o "$bin/hpp_tests" "$crate/tests/cpp/hpp_tests.cpp" $(pkg-config --cflags --libs locus)
    # The static library, with the system libraries it needs, as the README says.
    cc $flags -o "$bin/jacobi_2d_static" "$crate/examples/c/jacobi_2d.c" \
        $(pkg-config --cflags --libs locus-static)
    # locus.h in ISO C90, against either library.
    c89="-std=c89 -pedantic -Wall -Wextra -Werror"
    cc $c89 -o "$bin/c89" "$crate/tests/c/c89.c" $(pkg-config --cflags --libs locus)
    cc $c89 -o "$bin/c89_static" "$crate/tests/c/c89.c" $(pkg-config --cflags --libs locus-static)
    clang -std=c89 -Wall -Wextra -Werror -o "$bin/c89_clang" "$crate/tests/c/c89.c" \
        $(pkg-config --cflags --libs locus)
}
for prog in jacobi_2d_static c89_static; do
    if readelf -d "$bin/$prog" | grep 'liblocus' >/dev/null; then
        echo "capi-ci: $prog is linked to liblocus.so, not liblocus.a" >&2
        exit 1
    fi
done
for lib in "$prefix/lib/liblocus.so" "$prefix/lib/liblocus.a"; do
    if readelf -S -W "$lib" | grep '\.debug_' >/dev/null; then
        echo "capi-ci: $lib carries debug information" >&2
        exit 1
    fi
    echo "capi-ci: $(du -h -L "$lib" | cut -f1) $lib" >&2
done
for prog in jacobi_2d jacobi_2d_static cholesky fib reduction c89 c89_static c89_clang; do
    "$bin/$prog"
done
"$bin/capi_tests"
"$bin/hpp_tests"

step "CMake (pkg_check_modules) and ctest"
cmake -S "$crate" -B "$scratch/cmake" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/cmake" -j 2
ctest --test-dir "$scratch/cmake" --output-on-failure

step "AddressSanitizer + LeakSanitizer (clang), ctest, on a library using the system allocator"
# With mimalloc (the default) the library's own allocations are invisible to
# LeakSanitizer; this build makes them with malloc, so that they are checked too.
LOCUS_ALLOCATOR=system "$root/scripts/install-capi.sh" "$scratch/prefix-system"
export PKG_CONFIG_PATH="$scratch/prefix-system/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
CC=clang CXX=clang++ cmake -S "$crate" -B "$scratch/asan" -DLOCUS_SANITIZE=ON \
    -DCMAKE_CXX_STANDARD=20 >/dev/null
cmake --build "$scratch/asan" -j 2
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 ctest --test-dir "$scratch/asan" --output-on-failure

step "all C/C++ checks passed"
