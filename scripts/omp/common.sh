# Shared by the scripts of scripts/omp/ (sourced, not run): choosing the OpenMP runtime
# that runs a gcc-built program, without relinking it.
#
#   gomp   gcc's own libgomp.so.1, as the program was linked
#   llvm   LLVM's libomp (/usr/lib/llvm-14/lib/libomp.so.5, or $LOCUS_OMP_LIBOMP), loaded as
#          libgomp.so.1 through a scratch directory holding a link of that name, first on
#          LD_LIBRARY_PATH
#   locus  Locus's runtime: `$LOCUS omp --threads N [--topology T] -- PROGRAM ARGS`, with
#          $LOCUS the built locus binary (default: target/release/locus)
#
# A caller sets `omp_scratch` (a directory it owns) and calls `omp_setup RUNTIME` once,
# then `omp_exec RUNTIME THREADS TOPOLOGY TIMEOUT PROGRAM ARGS...` per run. The topology
# (`host` or a spec such as `4x1`) reaches only Locus's runtime: the other two have none.
# shellcheck shell=bash

omp_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The third-party suites: shared/suites in the checkout's parent directory.
omp_suites=${LOCUS_SUITES:-$(dirname "$omp_root")/shared/suites}
omp_libomp=${LOCUS_OMP_LIBOMP:-/usr/lib/llvm-14/lib/libomp.so.5}
LOCUS=${LOCUS:-$omp_root/target/release/locus}

omp_die() {
    printf '%s: error: %s\n' "$(basename "$0")" "$*" >&2
    exit 2
}

omp_log() { printf '== %s: %s\n' "$(basename "$0")" "$*" >&2; }

# The runtimes named by a comma-separated list, each checked.
omp_runtimes() {
    local r
    for r in ${1//,/ }; do
        case "$r" in
            gomp | llvm | locus) echo "$r" ;;
            *) omp_die "unknown runtime '$r' (gomp, llvm or locus)" ;;
        esac
    done
}

# Makes RUNTIME ready to run programs; fails (status 2) naming what is missing.
omp_setup() {
    case "$1" in
        gomp) ;;
        llvm)
            [ -e "$omp_libomp" ] || omp_die "no LLVM libomp at $omp_libomp (Debian: libomp-dev; or set LOCUS_OMP_LIBOMP)"
            mkdir -p "$omp_scratch/llvm-as-gomp"
            ln -sfn "$omp_libomp" "$omp_scratch/llvm-as-gomp/libgomp.so.1"
            ;;
        locus)
            [ -x "$LOCUS" ] || omp_die "no locus binary at $LOCUS (cargo build --release -p locus-cli, or set LOCUS)"
            "$LOCUS" omp --help >/dev/null 2>&1 ||
                omp_die "$LOCUS has no working 'omp' command ($LOCUS omp --help failed)"
            ;;
        *) omp_die "unknown runtime '$1'" ;;
    esac
}

# omp_exec RUNTIME THREADS TOPOLOGY TIMEOUT PROGRAM ARGS...: runs PROGRAM on RUNTIME with
# THREADS threads, killed after TIMEOUT seconds (status 124 or 137 then). Extra
# environment for the program goes in the caller's environment (exported or `VAR=x
# omp_exec ...`).
omp_exec() {
    local runtime=$1 threads=$2 topology=$3 limit=$4
    shift 4
    case "$runtime" in
        gomp)
            OMP_NUM_THREADS=$threads timeout -k 5 "$limit" "$@"
            ;;
        llvm)
            OMP_NUM_THREADS=$threads LD_LIBRARY_PATH="$omp_scratch/llvm-as-gomp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
                timeout -k 5 "$limit" "$@"
            ;;
        locus)
            local topo=()
            [ "$topology" = host ] || topo=(--topology "$topology")
            timeout -k 5 "$limit" "$LOCUS" omp --threads "$threads" "${topo[@]}" -- "$@"
            ;;
    esac
}

# A short content hash of the files under directory $1 (names and contents), to key a
# cache of what was built from them.
omp_tree_hash() {
    (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
        sha256sum | cut -c1-16
}

# Milliseconds since the epoch.
omp_now_ms() { date +%s%3N; }

# peers/openmp's programs with their arguments for tests (each run well under a second
# on 2 CPUs) and for scripts/omp/bench.sh (Locus's default, "small", size: the programs'
# own defaults; overhead has none, and takes Locus's default 16 2000 1000 16). `-`: no
# arguments.
omp_peer_table() {
    cat <<'TABLE'
bicgstab   -               -
bitonic    -               -
cholesky   -               -
jacobi_2d  -               -
kmeans     -               -
overhead   16,200,100,16   16,2000,1000,16
seidel_2d  -               -
sparselu   -               -
spmv       -               -
TABLE
}

# Builds every program of omp_peer_table from peers/openmp with compiler $2 (gcc by
# default, or clang) into directory $1, as `locus bench --peers` builds its openmp-gcc
# peer (crates/locus-cli/src/bench/peers/toolchain.rs). clang's builds carry the
# programs' affinity clauses (peers/openmp/sparse.h: OpenMP 5.0 and later); gcc 12's
# do not.
omp_build_peers() {
    local out=$1 cc=${2:-gcc} name
    mkdir -p "$out"
    for name in $(omp_peer_table | awk '{ print $1 }'); do
        "$cc" -O2 -Wall -ffp-contract=off -falign-loops=64 -fopenmp -o "$out/$name" \
            "$omp_root/peers/openmp/$name.c" -lm || omp_die "$cc failed on peers/openmp/$name.c"
    done
}

# The arguments of peer program $1 for column $2 (test or bench), space-separated.
omp_peer_args() {
    omp_peer_table | awk -v name="$1" -v col="$2" '
        $1 == name { a = (col == "test") ? $2 : $3; if (a != "-") { gsub(",", " ", a); print a }; found = 1 }
        END { if (!found) exit 1 }'
}

# Whether the output $1 of a peer program says it verified (its JSON line).
omp_peer_verified() { grep -q '"verified": true' <<<"$1"; }
