#!/usr/bin/env bash
# Builds what run.sh needs into DEST (default .dev in the project's root), for a machine
# with no compilers (docs/performance.md, "A 16-core machine"): a static `locus`, a
# static rayon peer, gcc's OpenMP peers linked statically, and clang / oneTBB / StarPU
# peers with every shared library they load plus the loader (run there as
# lib/ld-linux-x86-64.so.2 --library-path lib PROGRAM).
# Run from the project's root; keep DEST out of git (.git/info/exclude). About 31 MB.
set -euo pipefail
DEST=${1:-.dev}
mkdir -p "$DEST/peers" "$DEST/lib"
export RUSTFLAGS="-C target-feature=+crt-static"
T=${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release
cargo build --release --target x86_64-unknown-linux-gnu -p locus-cli -p locus-peer-rayon
strip -o "$DEST/locus" "$T/locus"
strip -o "$DEST/rayon" "$T/locus-peer-rayon"
F="-O2 -Wall -ffp-contract=off -falign-loops=64"
for k in jacobi_2d seidel_2d kmeans bitonic overhead sparselu cholesky spmv bicgstab; do
  gcc $F -fopenmp -static -o "$DEST/peers/gomp_$k" "peers/openmp/$k.c" -lm 2>/dev/null
  clang $F -fopenmp -o "$DEST/peers/komp_$k" "peers/openmp/$k.c" -lm
done
for k in jacobi_2d seidel_2d kmeans bitonic overhead cholesky spmv; do
  [ -f "peers/tbb/$k.cpp" ] && g++ $F -std=c++17 -o "$DEST/peers/tbb_$k" "peers/tbb/$k.cpp" -ltbb -lm
  gcc $F $(pkg-config --cflags starpu-1.3) -o "$DEST/peers/starpu_$k" "peers/starpu/$k.c" \
      $(pkg-config --libs starpu-1.3) -lm
done
for f in "$DEST"/peers/komp_* "$DEST"/peers/tbb_* "$DEST"/peers/starpu_*; do
  ldd "$f" | awk '/=>/ {print $3} /ld-linux/ {print $1}'
done | sort -u | while read -r l; do cp -L "$l" "$DEST/lib/"; done
cp "$(dirname "$0")/run.sh" "$DEST/run.sh"
du -sh "$DEST"
