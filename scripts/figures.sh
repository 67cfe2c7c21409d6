#!/usr/bin/env bash
# Regenerates the example pictures of docs/figures/ with `locus bench` at quick sizes:
# the simulator on paper 1's Opteron-64 (8 nodes; deterministic, so the pictures only
# change when Locus does), and the threads engine on four virtual nodes over this host
# (wall times: they vary from machine to machine and run to run, hence the error bars).
# Also writes an example trace of each engine. Takes a few minutes in release mode.
#
#   scripts/figures.sh            # into docs/figures/
#   scripts/figures.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/figures}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -p locus-cli
locus=target/release/locus
kernels=jacobi-2d,seidel-2d,kmeans,bitonic,blur-roberts
configs=dsa-base,dfa,dsa-opt,shm-base

"$locus" bench --engine sim --kernels "$kernels" --configs "$configs" --out "$work/sim"
"$locus" bench --engine threads --topology 4x1 --repeat 5 --kernels "$kernels" \
    --configs "$configs" --out "$work/threads-4x1"
"$locus" compare "$work/threads-4x1" "$work/sim" --out "$work/compare"

mkdir -p "$out"
for picture in speedup locality traffic timeline; do
    cp "$work/sim/$picture.png" "$out/sim-opteron-64-$picture.png"
    cp "$work/threads-4x1/$picture.png" "$out/threads-4x1-$picture.png"
done
cp "$work/compare/compare.png" "$out/compare-threads-4x1-vs-sim.png"
cp "$work/sim/report.html" "$out/report-sim-opteron-64.html"
"$locus" sim jacobi-2d --topology 4x2 --config dsa-opt --param size=tiny \
    --trace "$out/trace-sim-jacobi-2d.json.gz" > /dev/null
"$locus" run jacobi-2d --topology 2x1 --config dsa-opt --param size=tiny \
    --trace "$out/trace-threads-jacobi-2d.json.gz" > /dev/null
ls -la "$out"
