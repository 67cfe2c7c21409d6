#!/usr/bin/env bash
# Locus against its peers on a many-core machine that has no compilers (docs/performance.md,
# "A 16-core machine"). Carried there as the folder bundle.sh builds:
#   locus, rayon (static); peers/gomp_* (static); peers/komp_*, tbb_*, starpu_* (run through
#   the bundled loader in lib/).
# Usage: run.sh [QUICK]. QUICK=1: small sizes, 1 repetition (a dry run on the build machine:
# THREADS=2 OUT=/tmp/o bash .dev/run.sh 1). ONLY=scaling: the scaling and NUMA runs alone.
# Writes to $OUT: host.txt (the machine), topo.json (`locus topo --json`), runs.jsonl (one
# line per run: label, threads, exit status, the whole process's wall time and the program's
# own JSON line) and log.txt. Stops starting runs after BUDGET_S seconds (default 420).
# Needs only bash and coreutils there: the results are read back on the build machine
# (scripts/manycore/table.py).
set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/devout}
mkdir -p "$OUT"
QUICK=${1:-0}
LOG=$OUT/log.txt
RUNS=$OUT/runs.jsonl
: >"$RUNS"
exec > >(tee -a "$LOG") 2>&1
LDR=lib/ld-linux-x86-64.so.2
T=${THREADS:-$(nproc)}
DEADLINE=$(($(date +%s) + ${BUDGET_S:-420}))

{
    echo "== uname"; uname -a
    echo "== nproc"; nproc
    echo "== cpuinfo"; grep -m1 'model name' /proc/cpuinfo; grep -c ^processor /proc/cpuinfo
    echo "== lscpu"; lscpu 2>/dev/null
    echo "== nodes"; ls -d /sys/devices/system/node/node* 2>/dev/null
    for n in /sys/devices/system/node/node*; do echo "$n: $(cat "$n/cpulist" 2>/dev/null)"; done
    echo "== affinity"; grep Cpus_allowed_list /proc/self/status
    echo "== meminfo"; head -3 /proc/meminfo
    echo "== caches"; for c in /sys/devices/system/cpu/cpu0/cache/index*; do
        echo "$(cat "$c/level") $(cat "$c/type") $(cat "$c/size") shared:$(cat "$c/shared_cpu_list")"; done
} >"$OUT/host.txt" 2>&1
cat "$OUT/host.txt"
./locus topo --topology host
./locus topo --topology host --json >"$OUT/topo.json"

# run LABEL THREADS CMD...: one line in runs.jsonl
run() {
    local label=$1 th=$2
    shift 2
    if [ "$(date +%s)" -ge "$DEADLINE" ]; then echo "deadline: skip $label t=$th"; return; fi
    local t0 t1 out rc line
    t0=$(date +%s%N)
    out=$(timeout 60 "$@" 2>"$OUT/err.txt")
    rc=$?
    t1=$(date +%s%N)
    line=$(printf '%s\n' "$out" | grep '^{' | tail -1)
    [ -n "$line" ] || line=null
    printf '{"label":"%s","threads":%s,"rc":%s,"proc_ns":%s,"json":%s}\n' \
        "$label" "$th" "$rc" "$((t1 - t0))" "$line" >>"$RUNS"
    printf '%s t=%s rc=%s %s\n' "$label" "$th" "$rc" "$(printf '%s' "$line" | grep -o '"wall_s": *[0-9.e-]*\|"verified": *[a-z]*' | tr '\n' ' ')"
    [ $rc -eq 0 ] || head -c 400 "$OUT/err.txt"
}
# peer NAME KERNEL THREADS ARGS...
peer() {
    local name=$1 k=$2 th=$3
    shift 3
    local env=(OMP_NUM_THREADS="$th" OMP_PROC_BIND=true TBB_NUM_THREADS="$th" STARPU_NCPU="$th"
        STARPU_NCUDA=0 STARPU_NOPENCL=0 STARPU_SILENT=1 STARPU_HOME=/tmp/sphome RAYON_NUM_THREADS="$th")
    case $name in
    gomp) [ -x "peers/gomp_$k" ] && run "$k:openmp-gcc" "$th" env "${env[@]}" "peers/gomp_$k" "$@" ;;
    rayon) case $k in jacobi_2d | seidel_2d | kmeans | bitonic | overhead)
        run "$k:rayon" "$th" env "${env[@]}" ./rayon "${k//_/-}" "$@" ;; esac ;;
    komp) [ -x "peers/komp_$k" ] && run "$k:openmp-clang" "$th" env "${env[@]}" $LDR --library-path lib "peers/komp_$k" "$@" ;;
    *) [ -x "peers/${name}_$k" ] && run "$k:$name" "$th" env "${env[@]}" $LDR --library-path lib "peers/${name}_$k" "$@" ;;
    esac
    return 0
}
# locus KERNEL THREADS CONFIG ARGS...
locus() {
    local k=$1 th=$2 c=$3
    shift 3
    run "${k//-/_}:locus-$c" "$th" ./locus run "$k" --config "$c" --threads "$th" --json "$@"
}

if [ "$QUICK" = 1 ]; then
    REPS=1
    J="512 512 64 128 4" K="40960 10 11 2048 4" B="262144 4096" O="16 200 100 16" C="512 64"
    S="12 32" M="128 16 10" G="64 16 8 2000"
else
    REPS=${REPS:-3}
    J="4096 4096 256 256 20" K="1310720 10 11 16384 10" B="4194304 32768" O="16 2000 1000 16"
    C="2048 128" S="40 64" M="1024 64 50" G="512 64 8 2000"
fi
declare -A ARGS=([jacobi_2d]="$J" [seidel_2d]="$J" [kmeans]="$K" [bitonic]="$B" [overhead]="$O"
    [cholesky]="$C" [sparselu]="$S" [spmv]="$M" [bicgstab]="$G")
# Locus's --param options for a kernel's peer arguments.
lp() {
    local k=$1
    # shellcheck disable=SC2086
    set -- ${ARGS[$k]}
    case $k in
    jacobi_2d | seidel_2d) echo "--param rows=$1 --param cols=$2 --param block_rows=$3 --param block_cols=$4 --param iterations=$5" ;;
    kmeans) echo "--param points=$1 --param dims=$2 --param clusters=$3 --param block_points=$4 --param iterations=$5" ;;
    bitonic) echo "--param len=$1 --param block_len=$2" ;;
    overhead) echo "--param chains=$1 --param length=$2 --param rounds=$3 --param fan=$4" ;;
    cholesky) echo "--param n=$1 --param tile=$2" ;;
    sparselu) echo "--param blocks=$1 --param block_len=$2" ;;
    spmv) echo "--param mesh=$1 --param partitions=$2 --param products=$3" ;;
    bicgstab) echo "--param mesh=$1 --param partitions=$2 --param tolerance_digits=$3 --param max_iterations=$4" ;;
    esac
}
KERNELS="overhead jacobi_2d seidel_2d kmeans bitonic cholesky sparselu spmv bicgstab"
# One repetition of every kernel: Locus under both configurations, then each peer.
side() {
    for k in $KERNELS; do
        for c in dsa-opt shm-base; do
            # shellcheck disable=SC2046
            locus "${k//_/-}" "$T" "$c" $(lp "$k")
        done
        for p in gomp komp tbb starpu rayon; do
            # shellcheck disable=SC2086
            peer "$p" "$k" "$T" ${ARGS[$k]}
        done
    done
}
scaling() {
    for th in 1 2 4 8 16; do
        [ "$th" -gt "$T" ] && continue
        for k in overhead jacobi_2d; do
            # shellcheck disable=SC2046
            locus "${k//_/-}" "$th" dsa-opt $(lp "$k")
            # shellcheck disable=SC2086
            for p in gomp komp tbb; do peer "$p" "$k" "$th" ${ARGS[$k]}; done
        done
    done
}
# jacobi-2d on virtual 4x4 nodes over the real CPUs (and on the host's own nodes when it
# has several): the configurations the README compares.
numa() {
    local v=$((T / 4 > 0 ? T / 4 : 1))
    for c in dsa-base dfa dsa-opt shm-base; do
        # shellcheck disable=SC2046
        run "jacobi_2d:vnuma4x$v-$c" "$T" ./locus run jacobi-2d --topology "4x$v" --config "$c" --json $(lp jacobi_2d)
        if [ "$(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)" -gt 1 ]; then
            # shellcheck disable=SC2046
            run "jacobi_2d:host-$c" "$T" ./locus run jacobi-2d --topology host --config "$c" --json $(lp jacobi_2d)
        fi
    done
}

# ONLY=scaling: one repetition of the scaling runs and the NUMA configurations alone.
if [ "${ONLY:-}" = scaling ]; then
    echo "== scaling"
    scaling
    echo "== NUMA configurations"
    numa
    echo "== done $(date)"
    exit 0
fi
echo "== side by side at $T threads, repetition 1"
side
echo "== scaling, repetition 1"
scaling
echo "== NUMA configurations"
numa
for rep in $(seq 2 "$REPS"); do
    echo "== side by side, repetition $rep"
    side
    echo "== scaling, repetition $rep"
    scaling
done
echo "== done $(date)"
