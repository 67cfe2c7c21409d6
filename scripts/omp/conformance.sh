#!/usr/bin/env bash
# OpenMP conformance tests nobody on the project wrote, compiled by gcc (or clang) and run
# on an OpenMP runtime: sollve_vv's host tasking and worksharing tests and LLVM libomp's
# own `tasking/` and `worksharing/` tests (from $LOCUS_SUITES). Every test first runs on
# the compiler's own runtime (gcc's libgomp; clang's: LLVM's libomp): those that pass
# there are the expected set. On the runtime under test each expected test must pass too,
# except those scripts/omp/refused.txt lists for that runtime (`locus` for gcc builds,
# `locus-clang` for clang builds), which must fail printing the construct it names (a
# refusal, not a crash). See docs/openmp-tests.md.
#
# Usage: scripts/omp/conformance.sh [--compiler gcc|clang] [--runtime gomp|llvm|locus]
#            [--timeout S] [--only REGEX]
#        scripts/omp/conformance.sh [--compiler C] --list      the tests, one id per line
#
#   --compiler gcc (default) or clang; with clang the LLVM tests include the `kmp_*`
#              white-box ones (which call __kmpc_* directly), and the reference runtime
#              is LLVM's libomp
#   --runtime  the runtime under test (default locus); the reference one runs the
#              expected set only
#   --timeout  seconds per run before it is killed and counted failed (default 30)
#   --only     only the tests whose id matches REGEX (grep -E)
#
# Environment: LOCUS (the locus binary), LOCUS_OMP_CACHE (compiled tests are kept there,
# keyed by the content of the suites and of this script; default target/omp-cache),
# LOCUS_SUITES.
#
# LLVM's tests run as their `RUN:` lines say (the compile step with the compiler, then
# the program with the environment and arguments given), with `omp_testsuite.h`'s
# REPETITIONS lowered from 10 to 2 and SLEEPTIME from 1 s to 0.1 s (a copy of the header
# in the scratch directory, first on the include path), so the sleeping tests take
# seconds instead of minutes. Tests marked `UNSUPPORTED` or `XFAIL` for the compiler are left
# out. Threads: OMP_NUM_THREADS when a RUN line sets it, else 4. sollve_vv tests are
# compiled `gcc -fopenmp -O2 -I ompvv` and pass with status 0; those that use target,
# teams or devices are left out (host-only runtime).
#
# Exit status: 0 when every expected test passed and every refused one was refused; 1
# on any unexpected result; 2 on bad usage.
set -euo pipefail
# shellcheck source=scripts/omp/common.sh
source "$(dirname "$0")/common.sh"

runtime=locus
compiler=gcc
limit=30
only=.
mode=run
while [ $# -gt 0 ]; do
    case "$1" in
        --runtime) runtime=${2:?}; shift ;;
        --compiler) compiler=${2:?}; shift ;;
        --timeout) limit=${2:?}; shift ;;
        --only) only=${2:?}; shift ;;
        --list) mode=list ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) omp_die "unknown argument '$1' (try --help)" ;;
    esac
    shift
done
runtime=$(omp_runtimes "$runtime")
case "$compiler" in
    gcc) reference=gomp cxx=g++ rt_key=$runtime ;;
    clang) reference=llvm cxx=clang++ rt_key=$runtime-clang ;;
    *) omp_die "--compiler: gcc or clang, not '$compiler'" ;;
esac
[ "$compiler" != clang ] || [ "$runtime" != gomp ] || omp_die "clang-built tests do not run on gcc's libgomp"

sollve=$omp_suites/sollve_vv
llvm=$omp_suites/llvm-openmp-runtime-test/runtime/test
[ -d "$sollve/tests" ] || omp_die "no sollve_vv tree at $sollve (set LOCUS_SUITES)"
[ -d "$llvm/tasking" ] || omp_die "no LLVM runtime tests at $llvm (set LOCUS_SUITES)"
refused_file=$omp_root/scripts/omp/refused.txt

# sollve_vv's host tasking and worksharing directories.
sollve_dirs=(
    4.5/task 4.5/taskloop 4.5/parallel_sections
    5.0/task 5.0/taskgroup 5.0/taskloop 5.0/taskloop_simd 5.0/taskwait 5.0/depobj
    5.0/master_taskloop 5.0/master_taskloop_simd 5.0/parallel_master_taskloop
    5.0/parallel_master_taskloop_simd 5.0/parallel_master 5.0/parallel_for
    5.1/depend 5.1/taskwait 5.1/taskloop 5.1/masked
)

# Every test: "ID<TAB>SOURCE", ID being suite/relative path without extension.
collect() {
    local d f
    for d in "${sollve_dirs[@]}"; do
        for f in "$sollve/tests/$d"/*.c "$sollve/tests/$d"/*.cpp; do
            [ -f "$f" ] || continue
            # Host-only: no offload, teams or device queries.
            grep -qE 'omp (target|declare target|teams)|omp_get_num_devices|omp_is_initial_device' "$f" && continue
            printf 'sollve/%s\t%s\n' "$(basename "${f%.*}" | sed "s|^|$d/|")" "$f"
        done
    done
    for f in "$llvm"/tasking/*.c "$llvm"/tasking/*.cpp "$llvm"/worksharing/*/*.c; do
        # The white-box tests call clang's ABI: gcc builds without them.
        [ "$compiler" = clang ] || [[ "$(basename "$f")" != kmp_* ]] || continue
        # Tests of libomp's own machinery, with no counterpart in another runtime:
        # omp_fill_taskqueue checks libomp's task throttling (KMP_ENABLE_TASK_THROTTLING=1
        # must throttle).
        [ "$compiler" = gcc ] || [[ "$f" != */tasking/omp_fill_taskqueue.c ]] || continue
        [ -f "$f" ] || continue
        grep -qE "^// (UNSUPPORTED|XFAIL):.*\\b$compiler\\b([^-]|\$)" "$f" && continue
        printf 'llvm/%s\t%s\n' "${f#"$llvm"/}" "$f" | sed 's/\.c\(pp\)\{0,1\}\t/\t/'
    done
}

if [ "$mode" = list ]; then
    collect | cut -f1
    exit 0
fi

cache=${LOCUS_OMP_CACHE:-$omp_root/target/omp-cache}
key=$( (
    omp_tree_hash "$sollve/tests"
    omp_tree_hash "$sollve/ompvv"
    omp_tree_hash "$llvm"
    sha256sum "$0"
) | sha256sum | cut -c1-16)
# gcc's builds keep their name of before clang builds existed.
work=$cache/conformance-$key
[ "$compiler" = gcc ] || work=$cache/conformance-$compiler-$key
mkdir -p "$work/bin" "$work/inc" "$work/cmd" "$work/log"
sed -e 's/^#define REPETITIONS 10 .*/#define REPETITIONS 2/' \
    -e 's/^#define SLEEPTIME 1$/#define SLEEPTIME 0.1/' "$llvm/omp_testsuite.h" >"$work/inc/omp_testsuite.h"
grep -q '^#define REPETITIONS 2$' "$work/inc/omp_testsuite.h" && grep -q '^#define SLEEPTIME 0.1$' "$work/inc/omp_testsuite.h" ||
    omp_die "omp_testsuite.h no longer defines REPETITIONS 10 and SLEEPTIME 1: update conformance.sh"

runon=$omp_root/scripts/omp/run-on.sh
export LOCUS LOCUS_OMP_SCRATCH
LOCUS_OMP_SCRATCH=$(mktemp -d)
trap 'rm -rf "$LOCUS_OMP_SCRATCH"' EXIT
omp_scratch=$LOCUS_OMP_SCRATCH

# Compiles test $1 from $2 into $work/bin (once per cache key) and writes the command that
# runs it to $work/cmd/ID.sh, with RUNTIME standing for the runtime. Fails when gcc does
# not build it.
prepare() {
    local id=$1 src=$2 name bin cmd
    name=${id//\//__}
    bin=$work/bin/$name
    cmd=$work/cmd/$name.sh
    [ -f "$cmd" ] && return 0
    [ -f "$work/bin/$name.nobuild" ] && return 1
    [ -f "$work/bin/$name.offload" ] && return 3
    local compiler=$compiler std=()
    [[ "$src" == *.cpp ]] && compiler=$cxx && std=(-std=c++11)
    case "$id" in
        sollve/*)
            if ! "$compiler" -fopenmp -O2 "${std[@]}" -I "$sollve/ompvv" "$src" -o "$bin" -lm >"$work/log/$name.build" 2>&1; then
                touch "$work/bin/$name.nobuild"
                return 1
            fi
            printf '"$RUNON" "$RUNTIME" env host "$LIMIT" %q\n' "$bin" >"$cmd.tmp"
            ;;
        llvm/*)
            if ! "$compiler" -fopenmp "${std[@]}" -I "$work/inc" -I "$llvm" "$src" -o "$bin" -lm >"$work/log/$name.build" 2>&1; then
                touch "$work/bin/$name.nobuild"
                return 1
            fi
            # The RUN lines, continuation lines joined, the compile steps dropped (done
            # above), each run through run-on.sh; all must succeed, in order.
            local run
            run="\"\$RUNON\" \"\$RUNTIME\" env host \"\$LIMIT\" $(printf %q "$bin")"
            sed -n 's|^// RUN: *||p' "$src" | sed -e ':a' -e '/\\$/{N;s/\\\n//;ba}' |
                sed -e 's/%libomp-\(cxx-\)\{0,1\}compile-and-run/%libomp-run/g' \
                    -e 's/%libomp-\(cxx-\)\{0,1\}compile *&& *//g' \
                    -e 's/^%libomp-\(cxx-\)\{0,1\}compile *$/true/' \
                    -e "s|%libomp-run|$run|g" |
                awk 'NR > 1 { printf " && " } { printf "%s", $0 } END { print "" }' >"$cmd.tmp"
            if grep -q '%' "$cmd.tmp"; then
                echo "unknown substitution in a RUN line: $(cat "$cmd.tmp")" >"$work/log/$name.build"
                touch "$work/bin/$name.nobuild"
                return 1
            fi
            ;;
    esac
    # A test that reaches an offload entry point (through ompvv.h's device checks) is
    # not host-only.
    if nm -u "$bin" | grep -qE 'GOMP_(target|teams)|__kmpc_(fork_teams|push_num_teams)|__tgt_'; then
        touch "$work/bin/$name.offload"
        return 3
    fi
    mv "$cmd.tmp" "$cmd"
}

# Runs test $1 on runtime $2; its output goes to $work/log/ID.RUNTIME. Status: the test's.
run_test() {
    local name=${1//\//__}
    RUNON=$runon RUNTIME=$2 LIMIT=$limit LOCUS_OMP_READY=1 \
        bash -c "$(cat "$work/cmd/$name.sh")" >"$work/log/$name.$2" 2>&1
}

# The refusal of test $1 by $runtime in refused.txt: "PATTERN<TAB>WHY", or nothing.
refusal() {
    awk -v rt="$rt_key" -v id="$1" '
        /^#/ || NF == 0 { next }
        $1 == rt && $2 == id { why = $4; for (i = 5; i <= NF; i++) why = why " " $i; print $3 "\t" why; exit }
    ' "$refused_file"
}

omp_setup "$reference"
omp_setup "$runtime"
start=$SECONDS
# Every test refused.txt names exists: a renamed or removed test cannot leave a stale line.
stale=$(awk -v rt="$rt_key" '!/^#/ && NF && $1 == rt { print $2 }' "$refused_file" | sort -u | comm -23 - <(collect | cut -f1 | sort -u))
[ -z "$stale" ] || omp_die "refused.txt names tests that are not collected: $(echo $stale)"
tests=$(collect | grep -E "^[^	]*($only)" || true)
[ -n "$tests" ] || omp_die "no test matches --only '$only'"
n_total=0 n_offload=0 n_nobuild=0 n_gomp_fail=0 n_pass=0 n_fail=0 n_refused=0
unexpected=()
printf '%-62s %-8s %s\n' test "$reference" "$runtime"
while IFS=$'\t' read -r id src; do
    n_total=$((n_total + 1))
    name=${id//\//__}
    status=0
    prepare "$id" "$src" || status=$?
    if [ "$status" = 3 ]; then
        n_offload=$((n_offload + 1))
        printf '%-62s %-8s %s\n' "$id" "-" "left out: calls $(nm -u "$work/bin/$name" | grep -oE 'GOMP_(target|teams)[a-z_]*|__kmpc_(fork_teams|push_num_teams)[a-z_0-9]*|__tgt_[a-z_0-9]*' | head -n 1) (offload)"
        continue
    elif [ "$status" != 0 ]; then
        n_nobuild=$((n_nobuild + 1))
        printf '%-62s %-8s %s\n' "$id" "-" "not built by $compiler: $(grep -m1 -E 'error' "$work/log/$name.build" | sed 's|^[^ ]*/||' | cut -c1-70)"
        continue
    fi
    if ! run_test "$id" "$reference"; then
        n_gomp_fail=$((n_gomp_fail + 1))
        printf '%-62s %-8s %s\n' "$id" fail "(not expected: fails on the compiler's own runtime, $reference)"
        continue
    fi
    [ "$runtime" != "$reference" ] || { n_pass=$((n_pass + 1)); printf '%-62s %-8s\n' "$id" pass; continue; }
    refused=$(refusal "$id")
    t0=$(omp_now_ms)
    status=0
    run_test "$id" "$runtime" || status=$?
    ms=$(($(omp_now_ms) - t0))
    log=$work/log/$name.$runtime
    if [ -z "$refused" ]; then
        if [ "$status" = 0 ]; then
            n_pass=$((n_pass + 1))
            result="pass (${ms} ms)"
        else
            n_fail=$((n_fail + 1))
            result="FAIL: status $status (${ms} ms): $(tail -n 1 "$log" | sed "s|/[^ :]*/||g" | cut -c1-100)"
            unexpected+=("$id: failed with status $status; log $log")
        fi
    else
        pattern=${refused%%	*}
        if [ "$status" != 0 ] && [ "$status" != 124 ] && [ "$status" != 137 ] && grep -Eiq -- "$pattern" "$log"; then
            n_refused=$((n_refused + 1))
            result="refused: ${refused#*	}"
        elif [ "$status" = 0 ]; then
            n_fail=$((n_fail + 1))
            result="FAIL: listed as refused but passed (remove it from refused.txt)"
            unexpected+=("$id: passed though refused.txt lists it")
        else
            n_fail=$((n_fail + 1))
            result="FAIL: status $status without a line matching '$pattern': $(tail -n 1 "$log" | sed "s|/[^ :]*/||g" | cut -c1-80)"
            unexpected+=("$id: failed (status $status) without naming '$pattern'; log $log")
        fi
    fi
    printf '%-62s %-8s %s\n' "$id" pass "$result"
done <<<"$tests"

expected=$((n_total - n_offload - n_nobuild - n_gomp_fail))
echo "conformance ($compiler) on $runtime: $n_total tests, $n_offload left out (offload), $n_nobuild not built by $compiler, $n_gomp_fail failing on $reference, $expected expected: $n_pass passed, $n_refused refused, $n_fail unexpected; $((SECONDS - start)) s"
if ((${#unexpected[@]})); then
    printf 'unexpected: %s\n' "${unexpected[@]}" >&2
    exit 1
fi
