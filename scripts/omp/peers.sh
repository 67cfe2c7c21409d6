#!/usr/bin/env bash
# Every program of peers/openmp (Locus's kernels as OpenMP tasks with depend), built by
# gcc (or clang) as `locus bench --peers` builds them, run on an OpenMP runtime on 1, 2
# and 4 threads and, for Locus's runtime, on the host topology and a virtual 4x1 one;
# every run must exit 0 and print `"verified": true`. Built by clang, spmv, bicgstab and
# jacobi_2d carry `affinity` clauses (spmv and bicgstab by default, jacobi_2d in its
# run named jacobi_2d+affinity, mode non-strict). See docs/openmp-tests.md.
#
# Usage: scripts/omp/peers.sh [--compiler gcc|clang] [--runtime gomp|llvm|locus]
#            [--threads 1,2,4] [--topologies host,4x1] [--timeout S]
#
# Exit status: 0 when every run verified; 1 otherwise; 2 on bad usage.
set -euo pipefail
# shellcheck source=scripts/omp/common.sh
source "$(dirname "$0")/common.sh"

runtime=locus
compiler=gcc
threads=1,2,4
topologies=host,4x1
limit=60
while [ $# -gt 0 ]; do
    case "$1" in
        --runtime) runtime=${2:?}; shift ;;
        --compiler) compiler=${2:?}; shift ;;
        --threads) threads=${2:?}; shift ;;
        --topologies) topologies=${2:?}; shift ;;
        --timeout) limit=${2:?}; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) omp_die "unknown argument '$1' (try --help)" ;;
    esac
    shift
done
runtime=$(omp_runtimes "$runtime")
omp_scratch=$(mktemp -d)
trap 'rm -rf "$omp_scratch"' EXIT
omp_setup "$runtime"
[ "$runtime" = locus ] || topologies=host
case "$compiler" in gcc | clang) ;; *) omp_die "--compiler: gcc or clang, not '$compiler'" ;; esac
[ "$compiler" != clang ] || [ "$runtime" != gomp ] || omp_die "clang-built programs do not run on gcc's libgomp"
omp_build_peers "$omp_scratch/peers" "$compiler"

# The runs: each program with its test arguments; clang builds add Jacobi's affinity mode.
runs() {
    local name
    for name in $(omp_peer_table | awk '{ print $1 }'); do
        printf '%s %s %s\n' "$name" "$name" "$(omp_peer_args "$name" test)"
    done
    [ "$compiler" != clang ] || echo "jacobi_2d+affinity jacobi_2d 512 512 64 128 20 non-strict"
}

pass=0
fail=0
start=$SECONDS
while read -r name program rest; do
    read -r -a args <<<"$rest"
    for topology in ${topologies//,/ }; do
        for n in ${threads//,/ }; do
            status=0
            out=$(omp_exec "$runtime" "$n" "$topology" "$limit" "$omp_scratch/peers/$program" "${args[@]}" 2>&1) || status=$?
            if [ "$status" = 0 ] && omp_peer_verified "$out"; then
                pass=$((pass + 1))
                result=ok
            else
                fail=$((fail + 1))
                result="FAIL: status $status: $(tail -n 1 <<<"$out" | cut -c1-100)"
            fi
            printf '%-18s %-6s %-6s %s threads: %s\n' "$name" "$runtime" "$topology" "$n" "$result"
        done
    done
done < <(runs)
echo "peers ($compiler) on $runtime: $pass passed, $fail failed, $((SECONDS - start)) s"
[ "$fail" = 0 ]
