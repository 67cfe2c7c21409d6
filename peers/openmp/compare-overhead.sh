#!/usr/bin/env bash
# Runs Locus's `overhead` graph and the same graph as OpenMP tasks with `depend`
# (overhead.c, gcc's libgomp), alternately, and prints the cost per task of each and
# their ratio (medians over the rounds). Both programs verify their results.
#
# Usage: peers/openmp/compare-overhead.sh [ROUNDS] [TOPOLOGY] [CONFIG]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
topology=${2:-host}
config=${3:-dsa-base}
threads=$(nproc)

if ! command -v gcc >/dev/null; then
    echo "compare-overhead: gcc is needed" >&2
    exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -fopenmp -o "$work/overhead" peers/openmp/overhead.c
cargo build --release -q -p locus-cli
locus=target/release/locus
[ -n "${CARGO_TARGET_DIR:-}" ] && locus="$CARGO_TARGET_DIR/release/locus"

# The same shape as locus-bench's `overhead` defaults: 16 chains of 2000, 1000 rounds
# of fan 16 (50 000 tasks).
locus_ns=()
omp_ns=()
for ((i = 0; i < rounds; i++)); do
    l=$("$locus" run overhead --topology "$topology" --config "$config" --json |
        python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["verified"]; print(r["wall_s"]*1e9/r["tasks"])')
    o=$(OMP_NUM_THREADS=$threads OMP_PROC_BIND=true "$work/overhead" 16 2000 1000 16 |
        python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["verified"]; print(r["ns_per_task"])')
    locus_ns+=("$l")
    omp_ns+=("$o")
done
python3 - "${locus_ns[*]}" "${omp_ns[*]}" "$topology" "$config" "$threads" <<'PY'
import statistics, sys
locus = [float(x) for x in sys.argv[1].split()]
omp = [float(x) for x in sys.argv[2].split()]
topology, config, threads = sys.argv[3:6]
lm, om = statistics.median(locus), statistics.median(omp)
print(f"overhead graph, 50000 tasks, {threads} threads, {len(locus)} alternating rounds")
print(f"  locus ({config} on {topology}): median {lm:.0f} ns/task  (runs: {', '.join(f'{x:.0f}' for x in locus)})")
print(f"  openmp-gcc (libgomp):        median {om:.0f} ns/task  (runs: {', '.join(f'{x:.0f}' for x in omp)})")
print(f"  ratio openmp/locus: {om/lm:.2f}")
PY
