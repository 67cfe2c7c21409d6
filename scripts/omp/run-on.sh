#!/usr/bin/env bash
# Runs one gcc-built OpenMP program on a chosen runtime (see scripts/omp/common.sh):
#
#   scripts/omp/run-on.sh RUNTIME THREADS TOPOLOGY TIMEOUT PROGRAM ARGS...
#
# RUNTIME is gomp, llvm or locus; THREADS a count, or `env` for $OMP_NUM_THREADS (4 when
# unset); TOPOLOGY `host` or a spec such as 4x1 (Locus's runtime only); TIMEOUT seconds
# before the program is killed (status 124 or 137). Exits with the program's status.
# Environment: LOCUS, LOCUS_OMP_SCRATCH (where the llvm runtime's link lives; default
# $LOCUS_OMP_CACHE/runtimes), LOCUS_OMP_READY=1 (skip checking that the runtime works:
# the caller already did, once).
set -euo pipefail
# shellcheck source=scripts/omp/common.sh
source "$(dirname "$0")/common.sh"
[ $# -ge 5 ] || omp_die "usage: run-on.sh RUNTIME THREADS TOPOLOGY TIMEOUT PROGRAM ARGS..."
runtime=$(omp_runtimes "$1")
threads=$2
[ "$threads" != env ] || threads=${OMP_NUM_THREADS:-4}
omp_scratch=${LOCUS_OMP_SCRATCH:-${LOCUS_OMP_CACHE:-$omp_root/target/omp-cache}/runtimes}
if [ "${LOCUS_OMP_READY:-0}" != 1 ] || { [ "$runtime" = llvm ] && [ ! -e "$omp_scratch/llvm-as-gomp/libgomp.so.1" ]; }; then
    omp_setup "$runtime"
fi
shift
shift
omp_exec "$runtime" "$threads" "$@"
