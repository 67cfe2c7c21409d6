#!/usr/bin/env bash
# Instructions per explicit task under callgrind (valgrind), one thread, on gcc's libgomp and
# on Locus's runtime, same binary and input, task bodies included; each runtime's start-up
# (a gcc-built program with one empty parallel region) subtracted. BOTS_DIR is a built BOTS
# tree (scripts/omp/bots.sh's cache); each argument is a program and its input, run there.
# Usage: scripts/omp/task-cost.sh BOTS_DIR LOCUS 'prog args' ...
set -u
# shellcheck source=scripts/omp/common.sh
source "$(dirname "$0")/common.sh"
dir=$1
LOCUS=$(realpath "$2") # the programs run in BOTS_DIR
shift 2
omp_scratch=$(mktemp -d)
trap 'rm -rf "$omp_scratch"' EXIT
ir() { grep -o 'refs: *[0-9,]*' "$1" | tr -dc 0-9; }
# cg RUNTIME OUT PROGRAM ARGS...: callgrind's summary in OUT (and Locus's report in OUT.json).
cg() {
    local rt=$1 out=$2
    shift 2
    LOCUS_OMP_REPORT=$out.json omp_exec "$rt" 1 host 600 \
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" >/dev/null 2>"$out"
}
printf 'int main(void) { int x = 0;\n#pragma omp parallel\nx = 1;\nreturn x - 1; }\n' >"$omp_scratch/empty.c"
gcc -fopenmp -O2 "$omp_scratch/empty.c" -o "$omp_scratch/empty" || exit 2
cg gomp "$omp_scratch/e-g" "$omp_scratch/empty"
cg locus "$omp_scratch/e-l" "$omp_scratch/empty"
eg=$(ir "$omp_scratch/e-g") el=$(ir "$omp_scratch/e-l")
echo "| program (input) | tasks | libgomp instr/task | Locus instr/task |"
echo "|---|---:|---:|---:|"
cd "$dir" || exit 2
for p in "$@"; do
    # shellcheck disable=SC2086 # a program and its arguments
    cg gomp "$omp_scratch/g" $p
    # shellcheck disable=SC2086
    cg locus "$omp_scratch/l" $p
    t=$(python3 -c "import json; print(json.load(open('$omp_scratch/l.json'))['openmp']['explicit_tasks'])")
    g=$(ir "$omp_scratch/g") l=$(ir "$omp_scratch/l")
    python3 -c "t=$t; print('| $p | %d | %.0f | %.0f |' % (t, ($g-$eg)/t, ($l-$el)/t))"
done
