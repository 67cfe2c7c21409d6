#!/usr/bin/env bash
# The OpenMP checks of CI (.ci/run), on one runtime (default: Locus's, `locus omp`), with
# the programs built by each compiler (default gcc, then clang):
#
#   1. scripts/omp/bots.sh         every BOTS program, 1/2/4 threads, host and 4x1
#   2. scripts/omp/conformance.sh  sollve_vv and LLVM tasking/worksharing tests
#   3. scripts/omp/taskgraphs.sh   random task graphs with depend vs sequential
#   4. scripts/omp/peers.sh        peers/openmp, verified (clang's with affinity clauses)
#
# (The emulated-kernel Jacobi runs in tests/numa-vm/run.sh.) Each part has its own time
# limit; the summary gives each part's time. See docs/openmp-tests.md. clang's builds do
# not run on gcc's libgomp: with --runtime gomp only gcc's run.
#
# Usage: scripts/omp/ci.sh [--runtime gomp|llvm|locus] [--compilers gcc,clang]
#
# Exit status: 0 when every part passed; 1 when any failed; 2 on bad usage.
set -euo pipefail
# shellcheck source=scripts/omp/common.sh
source "$(dirname "$0")/common.sh"

runtime=locus
compilers=gcc,clang
while [ $# -gt 0 ]; do
    case "$1" in
        --runtime) runtime=${2:?}; shift ;;
        --compilers) compilers=${2:?}; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) omp_die "unknown argument '$1' (try --help)" ;;
    esac
    shift
done
runtime=$(omp_runtimes "$runtime")


here=$(dirname "$0")
parts=()
for compiler in ${compilers//,/ }; do
    case "$compiler" in
        gcc) ;;
        clang) [ "$runtime" != gomp ] || continue ;;
        *) omp_die "--compilers: gcc and/or clang, not '$compiler'" ;;
    esac
    with="--compiler $compiler --runtime $runtime"
    parts+=(
        "bots/$compiler:600:$here/bots.sh $with"
        "conformance/$compiler:600:$here/conformance.sh $with"
        "taskgraphs/$compiler:300:$here/taskgraphs.sh $with"
        "peers/$compiler:300:$here/peers.sh $with"
    )
done
summary=()
failed=0
for part in "${parts[@]}"; do
    name=${part%%:*}
    rest=${part#*:}
    limit=${rest%%:*}
    command=${rest#*:}
    omp_log "$name on $runtime: $command (limit ${limit} s)"
    start=$SECONDS
    status=0
    # shellcheck disable=SC2086 # the command line is words
    timeout -k 10 "$limit" bash $command || status=$?
    summary+=("$(printf '%-18s %-6s %4d s  %s' "$name" "$runtime" "$((SECONDS - start))" \
        "$([ "$status" = 0 ] && echo passed || echo "FAILED (status $status)")")")
    [ "$status" = 0 ] || failed=1
done
printf '%s\n' "${summary[@]}"
exit "$failed"
