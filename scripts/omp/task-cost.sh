#!/usr/bin/env bash
# Instructions per explicit task under callgrind (valgrind), one thread, on gcc's libgomp and
# on Locus's runtime, same binary and input, task bodies included; each runtime's start-up
# (a gcc-built program with one empty parallel region) subtracted. BOTS_DIR is a built BOTS
# tree (scripts/omp/bots.sh's cache); each argument is a program and its input, run there.
# Usage: scripts/omp/task-cost.sh BOTS_DIR LOCUS 'prog args' ...
set -u
dir=$1 locus=$2; shift 2
ir() { grep -o 'refs: *[0-9,]*' "$1" | tr -dc 0-9; }
cg() { # runtime out prog args...
    local rt=$1 out=$2; shift 2
    if [ "$rt" = gomp ]; then OMP_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" >/dev/null 2>"$out"
    else "$locus" omp --threads 1 --report "$out.json" -- valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" >/dev/null 2>"$out"; fi
}
printf 'int main(void) { int x = 0;\n#pragma omp parallel\nx = 1;\nreturn x - 1; }\n' >/tmp/cg-empty.c
gcc -fopenmp -O2 /tmp/cg-empty.c -o /tmp/cg-empty || exit 2
cg gomp /tmp/cg-e-g /tmp/cg-empty; cg locus /tmp/cg-e-l /tmp/cg-empty
eg=$(ir /tmp/cg-e-g); el=$(ir /tmp/cg-e-l)
echo "| program (input) | tasks | libgomp instr/task | Locus instr/task |"
echo "|---|---:|---:|---:|"
cd "$dir"
for p in "$@"; do
    # shellcheck disable=SC2086
    cg gomp /tmp/cg-g $p; cg locus /tmp/cg-l $p
    t=$(python3 -c "import json; o=json.load(open('/tmp/cg-l.json'))['openmp']; print(o['explicit_tasks'])")
    g=$(ir /tmp/cg-g); l=$(ir /tmp/cg-l)
    python3 -c "t=$t; print('| $p | %d | %.0f | %.0f |' % (t, ($g-$eg)/t, ($l-$el)/t))"
done
