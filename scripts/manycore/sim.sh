#!/usr/bin/env bash
# The simulator's prediction for run.sh's Locus runs, on a model of the measured machine
# (default `1x16`: one node of 16 CPUs, as `locus topo` saw the 16-core machine), at the
# same sizes. Writes lines in run.sh's format (label, threads, the JSON report) to stdout:
#   scripts/manycore/sim.sh [TOPOLOGY] > sim.jsonl
#   scripts/manycore/table.py runs.jsonl --sim sim.jsonl
set -euo pipefail
cd "$(dirname "$0")/../.."
TOPO=${1:-1x16}
LOCUS=${LOCUS:-target/release/locus}
declare -A P=(
    [overhead]="--param chains=16 --param length=2000 --param rounds=1000 --param fan=16"
    [jacobi-2d]="--param rows=4096 --param cols=4096 --param block_rows=256 --param block_cols=256 --param iterations=20"
    [seidel-2d]="--param rows=4096 --param cols=4096 --param block_rows=256 --param block_cols=256 --param iterations=20"
    [kmeans]="--param points=1310720 --param dims=10 --param clusters=11 --param block_points=16384 --param iterations=10"
    [bitonic]="--param len=4194304 --param block_len=32768"
    [cholesky]="--param n=2048 --param tile=128"
    [sparselu]="--param blocks=40 --param block_len=64"
    [spmv]="--param mesh=1024 --param partitions=64 --param products=50"
    [bicgstab]="--param mesh=512 --param partitions=64 --param tolerance_digits=8 --param max_iterations=2000"
)
sim() { # kernel threads config
    local line
    # shellcheck disable=SC2086
    line=$("$LOCUS" sim "$1" --topology "$TOPO" --threads "$2" --config "$3" --json ${P[$1]} 2>/dev/null)
    printf '{"label":"%s:locus-%s","threads":%s,"rc":0,"json":%s}\n' "${1//-/_}" "$3" "$2" "$line"
}
for k in overhead jacobi-2d seidel-2d kmeans bitonic cholesky sparselu spmv bicgstab; do
    for c in dsa-opt shm-base; do sim "$k" 16 "$c"; done
done
for t in 1 2 4 8; do
    for k in overhead jacobi-2d; do sim "$k" "$t" dsa-opt; done
done
