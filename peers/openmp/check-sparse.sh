#!/usr/bin/env bash
# Builds paper 3's OpenMP peers (spmv.c, bicgstab.c, and jacobi_2d.c's KASTORS variants)
# with gcc (libgomp) and clang (libomp), and ../starpu/spmv.c when pkg-config knows
# StarPU, warnings as errors, and runs each at Locus's tiny size under every affinity
# mode; every run must verify. With `--compare`, also runs
# Locus's kernels at the same small sizes on the host, alternately with the peers, and
# prints each wall time (one run each: a quick look, not a benchmark).
#
# Usage: peers/openmp/check-sparse.sh [--compare]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
compilers=()
command -v gcc >/dev/null && compilers+=(gcc)
command -v clang >/dev/null && compilers+=(clang)
if [ ${#compilers[@]} -eq 0 ]; then
    echo "check-sparse: gcc or clang is needed" >&2
    exit 2
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} OMP_PROC_BIND=true
for cc in "${compilers[@]}"; do
    for prog in spmv bicgstab jacobi_2d; do
        "$cc" -O2 -Wall -Werror -ffp-contract=off -fopenmp -o "$work/$prog-$cc" "peers/openmp/$prog.c" -lm
    done
    for mode in none init strict non-strict; do
        "$work/spmv-$cc" 8 4 3 "$mode"
        "$work/bicgstab-$cc" 8 4 8 2000 "$mode"
        "$work/jacobi_2d-$cc" 16 16 4 8 3 "$mode"
    done
done
starpu=""
for module in starpu-1.4 starpu-1.3; do
    if pkg-config --exists "$module" 2>/dev/null; then starpu=$module; break; fi
done
if [ -n "$starpu" ]; then
    # shellcheck disable=SC2046
    gcc -O2 -Wall -Werror -ffp-contract=off $(pkg-config --cflags "$starpu") -o "$work/spmv-starpu" \
        peers/starpu/spmv.c $(pkg-config --libs "$starpu") -lm
    export STARPU_NCPU=$OMP_NUM_THREADS STARPU_NCUDA=0 STARPU_NOPENCL=0 STARPU_SILENT=1 STARPU_HOME=$work
    for mode in none init strict non-strict; do
        "$work/spmv-starpu" 8 4 3 "$mode"
    done
else
    echo "check-sparse: StarPU not found by pkg-config (Debian: libstarpu-dev); its spmv skipped" >&2
fi
if [ "${1:-}" = --compare ]; then
    cargo build --release -q -p locus-cli
    for mode in init strict; do
        for cc in "${compilers[@]}"; do
            "$work/spmv-$cc" 256 16 50 "$mode"
            "$work/bicgstab-$cc" 128 16 8 2000 "$mode"
        done
        [ -n "$starpu" ] && "$work/spmv-starpu" 256 16 50 "$mode"
        target/release/locus run spmv --affinity "$mode" --json | grep -o '"wall_s":[0-9.e-]*' | sed "s/^/locus spmv $mode /"
        target/release/locus run bicgstab --affinity "$mode" --json | grep -o '"wall_s":[0-9.e-]*' | sed "s/^/locus bicgstab $mode /"
    done
fi
echo "check-sparse: every peer verified"
