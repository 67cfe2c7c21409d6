#!/usr/bin/env bash
# Simulates every kernel of paper 1 (Drebes et al., "Scalable task parallelism for NUMA:
# a uniform abstraction for coordinated scheduling and memory management") under every
# configuration of its Figures 7-10, at the paper's sizes, on both modelled machines,
# and prints the table of crates/locus-sim/README.md ("Validation") with the paper's
# figures beside the simulated ones (scripts/sim-validation.py).
#
# Usage: scripts/sim-validation.sh [--out DIR] [--control seq|parallel] [--iterations N]
#                                  [--machines "opteron-64 sgi-uv2000"]
#                                  [--kernels "jacobi-1d ..."] [--configs "dsa-base ..."]
#        scripts/sim-validation.sh --engines [--out DIR]
#
# The first form runs `locus sim K --topology T --config C --preset paper --json` for
# each (machine, kernel, config), one at a time (each takes a few seconds of host time),
# writes the reports to DIR/paper.jsonl (default DIR: target/sim-validation) and prints
# the table. `--iterations N` runs the stencils for N iterations instead of the paper's
# 60 (under the parallel control program, immediate allocation holds every iteration's
# buffers at once: 60 do not fit in the Opteron-64's 64 GiB). `--engines` compares the two engines on `2x1` instead: the same kernels and
# configurations at their small sizes, real runs (median of 3 by time) against
# simulated ones, into DIR/engines.jsonl.
#
# The release binary is built first (`cargo build --release -p locus-cli`).

set -euo pipefail
shopt -s extglob

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/target/sim-validation
control=seq
iterations=
machines="opteron-64 sgi-uv2000"
kernels="jacobi-1d jacobi-2d jacobi-3d seidel-1d seidel-2d seidel-3d kmeans blur-roberts bitonic"
configs="dsa-base push-in push-out push-weighted dfa dsa-opt shm-base"
engines=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --control) control=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --machines) machines=$2; shift 2 ;;
    --kernels) kernels=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --engines) engines=1; shift ;;
    *) echo "sim-validation: unknown argument $1" >&2; exit 2 ;;
  esac
done

cargo build --release -q -p locus-cli --manifest-path "$root/Cargo.toml"
locus=${CARGO_TARGET_DIR:-$root/target}/release/locus
mkdir -p "$out"

if [[ $engines == 1 ]]; then
  file=$out/engines.jsonl
  : >"$file"
  for k in jacobi-1d jacobi-2d seidel-2d kmeans bitonic; do
    for c in dsa-base dfa dsa-opt shm-base; do
      for r in 1 2 3; do
        "$locus" run "$k" --topology 2x1 --config "$c" --control "$control" --json 2>/dev/null >>"$file"
      done
      "$locus" sim "$k" --topology 2x1 --config "$c" --control "$control" --json 2>/dev/null >>"$file"
    done
  done
  python3 "$root/scripts/sim-validation.py" engines "$file"
  exit 0
fi

file=$out/paper.jsonl
: >"$file"
for m in $machines; do
  for k in $kernels; do
    extra=()
    if [[ -n $iterations && $k == @(jacobi|seidel)-* ]]; then
      extra=(--iterations "$iterations")
    fi
    for c in $configs; do
      # A run that fails (out of memory) prints no report; the table shows "-".
      "$locus" sim "$k" --topology "$m" --config "$c" --control "$control" --preset paper \
        "${extra[@]}" --json 2>/dev/null >>"$file" || true
    done
  done
done
python3 "$root/scripts/sim-validation.py" paper "$file"
