#!/usr/bin/env bash
# Every BOTS program (Barcelona OpenMP Tasks Suite, $LOCUS_SUITES/bots), built once with
# gcc (or clang), run unmodified on an OpenMP runtime (gcc's libgomp, LLVM's libomp, or
# Locus's `locus omp`) on 1, 2 and 4 threads and, for Locus, on the host topology and a
# virtual 4x1 one; every run must print `Verification = successful`. See
# docs/openmp-tests.md.
#
# Usage: scripts/omp/bots.sh [--compiler gcc|clang] [--runtime gomp|llvm|locus]
#            [--threads 1,2,4] [--topologies host,4x1] [--size small|medium] [--timeout S]
#            [--only REGEX]
#        scripts/omp/bots.sh [--compiler C] --build-only   build (or find in the cache), print bin/
#        scripts/omp/bots.sh [--compiler C] --list SIZE    print "NAME<TAB>PROGRAM ARGS" per program
#
#   --compiler    gcc (default; programs need libgomp.so.1) or clang (libomp.so.5: the
#                 runtimes are then llvm, clang's own, and locus)
#   --runtime     which runtime runs the programs (default locus; see scripts/omp/common.sh)
#   --topologies  topologies for Locus's runtime (default host,4x1); the other runtimes
#                 have no topology and run `host` only
#   --size        the input table column (default small: each run well under 2 s on 2 CPUs)
#   --timeout     seconds per run before it is killed and counted failed (default 60)
#   --only        run only the programs whose name matches REGEX (grep -E)
#
# Environment: LOCUS (the locus binary), LOCUS_OMP_CACHE (where the built suite is kept,
# keyed by the suite's content hash; default target/omp-cache), LOCUS_SUITES.
#
# BOTS programs always exit 0: a run passes only when it prints `Verification =
# successful` (and exits 0, not killed). The `*.serial` binaries are not run: built
# without -fopenmp, they never load an OpenMP runtime. knapsack is not built by the
# suite's gcc configuration, so it is not in bin/.
#
# Exit status: 0 when every run verified; 1 when any did not; 2 on bad usage or a build
# failure.
set -euo pipefail
# shellcheck source=scripts/omp/common.sh
source "$(dirname "$0")/common.sh"

runtime=locus
compiler=gcc
threads=1,2,4
topologies=host,4x1
size=small
limit=60
only=.
mode=run
while [ $# -gt 0 ]; do
    case "$1" in
        --runtime) runtime=${2:?}; shift ;;
        --compiler) compiler=${2:?}; shift ;;
        --threads) threads=${2:?}; shift ;;
        --topologies) topologies=${2:?}; shift ;;
        --size) size=${2:?}; shift ;;
        --timeout) limit=${2:?}; shift ;;
        --only) only=${2:?}; shift ;;
        --build-only) mode=build ;;
        --list) mode=list; size=${2:?}; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) omp_die "unknown argument '$1' (try --help)" ;;
    esac
    shift
done
case "$size" in small | medium) ;; *) omp_die "--size: small or medium, not '$size'" ;; esac
case "$compiler" in gcc | clang) ;; *) omp_die "--compiler: gcc or clang, not '$compiler'" ;; esac

# The inputs, per application: small (tests: each run well under 2 s on 2 CPUs with gcc's
# libgomp) and medium (scripts/omp/bench.sh: about 0.2-2 s). Paths are relative to the
# built copy of the suite. Every variant of an application (tied, untied, if_clause,
# manual, for, single) takes the same arguments; cut-offs stay at the programs' defaults.
inputs_table() {
    cat <<'EOF'
alignment  -f inputs/alignment/prot.20.aa        -f inputs/alignment/prot.100.aa
fft        -n 262144                             -n 8388608
fib        -n 20                                 -n 27
floorplan  -f inputs/floorplan/input.5           -f inputs/floorplan/input.15
health     -f inputs/health/test.input           -f inputs/health/small.input
nqueens    -n 10                                 -n 11
sort       -n 1048576                            -n 16777216
sparselu   -n 20 -m 20                           -n 50 -m 50
strassen   -n 256                                -n 1024
uts        -f inputs/uts/test.input              -f inputs/uts/tiny.input
EOF
}

# The arguments of application $1 in column $2 (small|medium).
inputs_of() {
    inputs_table | awk -v app="$1" -v size="$2" '
        $1 == app {
            # Columns are aligned: small starts at field 2; each input is one option and
            # one value, except sparselu (two options).
            n = (app == "sparselu") ? 4 : 2
            s = ""; for (i = 2; i < 2 + n; i++) s = s " " $i
            m = ""; for (i = 2 + n; i < 2 + 2 * n; i++) m = m " " $i
            print (size == "small") ? s : m
            found = 1
        }
        END { if (!found) exit 1 }'
}

cache=${LOCUS_OMP_CACHE:-$omp_root/target/omp-cache}
suite=$omp_suites/bots
[ -d "$suite/omp-tasks" ] || omp_die "no BOTS tree at $suite (set LOCUS_SUITES)"

# Builds the suite in a copy under $cache, once per content of the suite's tree; sets
# `bots` to the built copy.
build() {
    local key
    key=$(omp_tree_hash "$suite")
    # gcc's build keeps its name of before clang builds existed (caches stay valid).
    if [ "$compiler" = gcc ]; then bots=$cache/bots-$key; else bots=$cache/bots-$compiler-$key; fi
    if [ -f "$bots/.built" ]; then
        omp_log "BOTS built in $bots (cached)"
        return
    fi
    mkdir -p "$cache"
    rm -rf "$bots" "$bots.tmp"
    cp -r "$suite" "$bots.tmp"
    local start=$SECONDS
    local log=$cache/bots-$compiler-build.log
    omp_log "building BOTS with $compiler in $bots (./configure --compiler $compiler; make, not -j: the generated tied-*.c files race)"
    # make -k: a program the compiler cannot build is left out of bin/ (and so of the
    # runs); the log says which.
    if ! (cd "$bots.tmp" && ./configure --compiler "$compiler" && make -k) >"$log" 2>&1 &&
        [ -z "$(find "$bots.tmp/bin" -type f -name "*.$compiler.*" ! -name '*.serial' 2>/dev/null)" ]; then
        tail -n 30 "$log" >&2
        omp_die "building BOTS failed (log: $log)"
    fi
    mv "$bots.tmp" "$bots"
    touch "$bots/.built"
    omp_log "BOTS built in $((SECONDS - start)) s: $(find "$bots/bin" -type f | wc -l) binaries"
}

# Every OpenMP program of bin/, by name (e.g. fib.gcc.omp-tasks-tied).
# (clang: less those of scripts/omp/bots-clang-skip.txt, which fail on clang's own runtime).
programs() {
    local skip=/dev/null
    [ "$compiler" = clang ] && skip=$(dirname "$0")/bots-clang-skip.txt
    find "$bots/bin" -type f -name "*.$compiler.*" ! -name '*.serial' -printf '%f\n' | LC_ALL=C sort |
        grep -vxF -f <(grep -v '^#' "$skip" | awk 'NF { print $1 }') || true
}

build
case "$mode" in
    build) echo "$bots/bin"; exit 0 ;;
    list)
        programs | while read -r name; do
            args=$(inputs_of "${name%%.*}" "$size") || omp_die "no inputs for ${name%%.*} in the table"
            # shellcheck disable=SC2086 # the arguments are words
            printf '%s\t%s' "$name" "$bots/bin/$name"
            for a in $args; do
                case "$a" in inputs/*) a=$bots/$a ;; esac
                printf ' %s' "$a"
            done
            printf ' -c\n'
        done
        exit 0
        ;;
esac

runtime=$(omp_runtimes "$runtime")
omp_scratch=$(mktemp -d)
trap 'rm -rf "$omp_scratch"' EXIT
omp_setup "$runtime"
[ "$runtime" = locus ] || topologies=host

pass=0
fail=0
failed=()
start=$SECONDS
printf '%-36s %-7s %-6s %4s %8s  %s\n' program runtime topo thr ms result
while IFS=$'\t' read -r name command; do
    [[ "$name" =~ $only ]] || continue
    for topology in ${topologies//,/ }; do
        for n in ${threads//,/ }; do
            t0=$(omp_now_ms)
            status=0
            # shellcheck disable=SC2086 # the command line is words
            out=$(cd "$bots" && omp_exec "$runtime" "$n" "$topology" "$limit" $command 2>&1) || status=$?
            ms=$(($(omp_now_ms) - t0))
            if [ "$status" = 0 ] && grep -Eq '^Verification += successful$' <<<"$out"; then
                result=ok
                pass=$((pass + 1))
            else
                case "$status" in
                    0) result="FAIL: $(grep -E '^Verification' <<<"$out" || echo 'no Verification line')" ;;
                    124 | 137) result="FAIL: killed after ${limit} s" ;;
                    *) result="FAIL: status $status: $(tail -n 1 <<<"$out")" ;;
                esac
                fail=$((fail + 1))
                failed+=("$name $runtime $topology $n")
            fi
            printf '%-36s %-7s %-6s %4s %8s  %s\n' "$name" "$runtime" "$topology" "$n" "$ms" "$result"
        done
    done
done < <("$0" --compiler "$compiler" --list "$size")

echo "bots ($compiler) on $runtime: $pass passed, $fail failed, $((SECONDS - start)) s"
if [ "$pass" = 0 ] && [ "$fail" = 0 ]; then
    echo "no program ran (--only '$only' matched none)" >&2
    exit 1
fi
if [ "$fail" -gt 0 ]; then
    printf 'failed: %s\n' "${failed[@]}" >&2
    exit 1
fi
