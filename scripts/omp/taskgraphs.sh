#!/usr/bin/env bash
# Random task graphs with `depend` (tests/omp/taskgraphs.c, built with gcc -fopenmp, or
# clang -fopenmp with --compiler clang) run
# on an OpenMP runtime and compared with sequential execution: for each seed, GRAPHS
# graphs (in, out, inout and mutexinoutset dependences, undeferred tasks, nested tasks
# with taskwait), each run RUNS times, on 1, 2 and 4 threads and, for Locus's runtime,
# on the host topology and a virtual 4x1 one. See docs/openmp-tests.md.
#
# Usage: scripts/omp/taskgraphs.sh [--compiler gcc|clang] [--runtime gomp|llvm|locus] [--seeds 1,2,3]
#            [--graphs N] [--runs N] [--threads 1,2,4] [--topologies host,4x1] [--timeout S]
#
# On LLVM's libomp the tasks are all deferred (`taskgraphs ... deferred`): libomp 14 fails
# an assertion (kmp_taskdeps.h) on undeferred tasks with dependences spawned through
# gcc's interface, and crashes (assertion, SIGSEGV) on clang's builds of the full mix too.
#
# A mismatch prints the seed, graph and run (rerun one with
# `taskgraphs SEED GRAPHS RUNS`). Exit status: 0 when every run matched; 1 on any
# mismatch, failure or time-out; 2 on bad usage.
set -euo pipefail
# shellcheck source=scripts/omp/common.sh
source "$(dirname "$0")/common.sh"

runtime=locus
compiler=gcc
seeds=1,2,3
graphs=300
runs=2
threads=1,2,4
topologies=host,4x1
limit=30
while [ $# -gt 0 ]; do
    case "$1" in
        --runtime) runtime=${2:?}; shift ;;
        --compiler) compiler=${2:?}; shift ;;
        --seeds) seeds=${2:?}; shift ;;
        --graphs) graphs=${2:?}; shift ;;
        --runs) runs=${2:?}; shift ;;
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
mode=all
[ "$runtime" != llvm ] || mode=deferred
bin=$omp_scratch/taskgraphs
"$compiler" -fopenmp -O2 -Wall -Wextra -Werror "$omp_root/tests/omp/taskgraphs.c" -o "$bin"

fail=0
start=$SECONDS
for topology in ${topologies//,/ }; do
    for n in ${threads//,/ }; do
        for seed in ${seeds//,/ }; do
            status=0
            out=$(omp_exec "$runtime" "$n" "$topology" "$limit" "$bin" "$seed" "$graphs" "$runs" "$mode" 2>&1) || status=$?
            printf '%-6s %-6s %s threads: %s\n' "$runtime" "$topology" "$n" "$(tail -n 1 <<<"$out")"
            if [ "$status" != 0 ]; then
                fail=$((fail + 1))
                grep MISMATCH <<<"$out" | head -n 5 >&2 || true
                echo "  status $status (taskgraphs $seed $graphs $runs $mode on $runtime, $topology, $n threads)" >&2
            fi
        done
    done
done
echo "taskgraphs ($compiler) on $runtime: $fail failing runs, $((SECONDS - start)) s"
[ "$fail" = 0 ]
