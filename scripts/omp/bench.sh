#!/usr/bin/env bash
# Side by side: the same gcc-built (or clang-built) OpenMP binaries (BOTS with its medium
# inputs, and peers/openmp at Locus's default size) on gcc's libgomp, LLVM's libomp and
# Locus's runtime (clang's builds: LLVM's libomp and Locus's), alternately (A B C A B C ...), verifying every run; prints the median time of
# each program on each runtime, the ratios of Locus's median over the others', their
# geometric means (BOTS, peers, all), the programs more than 1.5x slower than the
# fastest other runtime, and the same as a markdown table. See
# docs/openmp-tests.md.
#
# Usage: scripts/omp/bench.sh [--compiler gcc|clang] [--runtimes gomp,llvm,locus]
#            [--reps 5] [--threads 2] [--only REGEX] [--markdown FILE] [--timeout S]
#
#   --compiler  gcc (default) or clang: which compiler builds BOTS and the peers (the
#               peers' names then end in .clang); clang's default runtimes are llvm,locus
#   --runtimes  the runtimes, in the order each repetition runs them (default
#               gomp,llvm,locus); the ratios are locus's (or, without locus, the last
#               runtime's) median over each other runtime's
#   --reps      repetitions of each program on each runtime (default 5)
#   --threads   threads of every run (default 2)
#   --only      programs whose name matches REGEX (default: the untied variant of each
#               BOTS application, `*.omp-tasks`, `*.for-omp-tasks`, `*.single-omp-tasks`,
#               and every peer); `.` for every BOTS variant
#   --markdown  also write the markdown table to FILE
#
# Times are each program's own: BOTS's `Time Program` line, the peers' `wall_s` (the
# parallel region, thread start-up included); loading the runtime and, for Locus, the
# `locus omp` process are outside them. A run that does not verify, or fails, is listed
# with its status, and its program is left out of the table and the means (no figure
# comes from an unverified run); the script then ends with status 1.
set -euo pipefail
# shellcheck source=scripts/omp/common.sh
source "$(dirname "$0")/common.sh"

runtimes=
compiler=gcc
reps=5
threads=2
only='\.(omp-tasks|for-omp-tasks|single-omp-tasks)$|^peers/'
markdown=
limit=300
while [ $# -gt 0 ]; do
    case "$1" in
        --runtimes) runtimes=${2:?}; shift ;;
        --compiler) compiler=${2:?}; shift ;;
        --reps) reps=${2:?}; shift ;;
        --threads) threads=${2:?}; shift ;;
        --only) only=${2:?}; shift ;;
        --markdown) markdown=${2:?}; shift ;;
        --timeout) limit=${2:?}; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) omp_die "unknown argument '$1' (try --help)" ;;
    esac
    shift
done
case "$compiler" in
    gcc) runtimes=${runtimes:-gomp,llvm,locus} suffix= ;;
    clang) runtimes=${runtimes:-llvm,locus} suffix=.clang ;;
    *) omp_die "--compiler: gcc or clang, not '$compiler'" ;;
esac
[ "$compiler" != clang ] || [[ ",$runtimes," != *,gomp,* ]] || omp_die "clang-built programs do not run on gcc's libgomp"
omp_runtimes "$runtimes" >/dev/null # stops on an unknown name
mapfile -t rts < <(omp_runtimes "$runtimes")
((${#rts[@]} >= 2)) || omp_die "--runtimes: at least two runtimes to compare"
subject=${rts[-1]}
for r in "${rts[@]}"; do [ "$r" != locus ] || subject=locus; done

omp_scratch=$(mktemp -d)
trap 'rm -rf "$omp_scratch"' EXIT
for r in "${rts[@]}"; do omp_setup "$r"; done

# The programs: "NAME<TAB>DIR<TAB>COMMAND" (DIR: where to run it).
bots_bin=$("$omp_root/scripts/omp/bots.sh" --compiler "$compiler" --build-only)
bots_dir=$(dirname "$bots_bin")
omp_build_peers "$omp_scratch/peers" "$compiler"
programs=$omp_scratch/programs
{
    "$omp_root/scripts/omp/bots.sh" --compiler "$compiler" --list medium | awk -F'\t' -v d="$bots_dir" '{ print "bots/" $1 "\t" d "\t" $2 }'
    for name in $(omp_peer_table | awk '{ print $1 }'); do
        printf 'peers/%s%s\t%s\t%s %s\n' "$name" "$suffix" "$omp_scratch" "$omp_scratch/peers/$name" "$(omp_peer_args "$name" bench)"
    done
} | awk -F'\t' -v re="$only" '$1 ~ re' >"$programs"
count=$(wc -l <"$programs")
[ "$count" -gt 0 ] || omp_die "no program matches --only '$only'"
omp_log "$count programs x ${#rts[@]} runtimes x $reps repetitions, $threads threads, alternating ${rts[*]}"

# One run: prints the program's own time in seconds; fails when it did not verify.
measure() {
    local runtime=$1 name=$2 dir=$3 command=$4 out status=0
    # shellcheck disable=SC2086 # the command line is words
    out=$(cd "$dir" && omp_exec "$runtime" "$threads" host "$limit" $command 2>&1) || status=$?
    case "$name" in
        bots/*)
            if [ "$status" != 0 ] || ! grep -Eq '^Verification += successful$' <<<"$out"; then
                echo "$name on $runtime: status $status, $(grep -E '^Verification' <<<"$out" || echo 'no Verification line')" >&2
                return 1
            fi
            sed -nE 's/^Time Program += ([0-9.e+-]+) seconds$/\1/p' <<<"$out"
            ;;
        peers/*)
            if [ "$status" != 0 ] || ! omp_peer_verified "$out"; then
                echo "$name on $runtime: status $status, not verified: $(tail -n 1 <<<"$out" | cut -c1-120)" >&2
                return 1
            fi
            grep -oE '"wall_s": [0-9.e+-]+' <<<"$out" | head -n 1 | awk '{ print $2 }'
            ;;
    esac
}

results=$omp_scratch/results # NAME RUNTIME SECONDS
failures=$omp_scratch/failures # NAME: what failed
: >"$results"
: >"$failures"
start=$SECONDS
for ((rep = 1; rep <= reps; rep++)); do
    while IFS=$'\t' read -r name dir command; do
        for r in "${rts[@]}"; do
            if ! s=$(measure "$r" "$name" "$dir" "$command" 2>"$omp_scratch/why"); then
                echo "$name: repetition $rep on $r: $(cat "$omp_scratch/why")" | tee -a "$failures" >&2
                continue
            fi
            if [ -z "$s" ]; then
                echo "$name: repetition $rep on $r printed no time" | tee -a "$failures" >&2
                continue
            fi
            printf '%s %s %s\n' "$name" "$r" "$s" >>"$results"
        done
    done <"$programs"
    omp_log "repetition $rep of $reps done, $((SECONDS - start)) s"
done

# Medians, ratios and geometric means; a plain table on stdout, markdown to $markdown.
others=()
for r in "${rts[@]}"; do [ "$r" = "$subject" ] || others+=("$r"); done
# Programs with a failed run are left out.
kept=$omp_scratch/kept
awk -v failed="$(cut -d: -f1 "$failures" | sort -u)" \
    'BEGIN { n = split(failed, f, "\n"); for (i = 1; i <= n; i++) bad[f[i]] = 1 } !($1 in bad)' \
    "$results" >"$kept"
report=$(sort -k1,1 -k2,2 -k3,3g "$kept" | awk -v rts="${rts[*]}" -v subject="$subject" \
    -v others="${others[*]}" -v reps="$reps" -v threads="$threads" '
    { key = $1 SUBSEP $2; v[key, ++n[key]] = $3; if (!($1 in seen)) { seen[$1] = 1; sorted[++m] = $1 } }
    function median(key,   c) {
        c = n[key]
        return (c % 2) ? v[key, (c + 1) / 2] : (v[key, c / 2] + v[key, c / 2 + 1]) / 2
    }
    END {
        nr = split(rts, R, " "); no = split(others, O, " ")
        head = "| program |"; rule = "|---|"
        for (i = 1; i <= nr; i++) { head = head " " R[i] " (s) |"; rule = rule "---:|" }
        for (i = 1; i <= no; i++) { head = head " " subject "/" O[i] " |"; rule = rule "---:|" }
        print "Median of " reps " alternating runs, " threads " threads; the programs own times."
        print ""
        print head; print rule
        for (k = 1; k <= m; k++) {
            p = sorted[k]; line = "| " p " |"
            for (i = 1; i <= nr; i++) { med[p, R[i]] = median(p SUBSEP R[i]); line = line sprintf(" %.4f |", med[p, R[i]]) }
            group = (p ~ /^bots\//) ? "bots" : "peers"
            for (i = 1; i <= no; i++) {
                ratio = med[p, subject] / med[p, O[i]]
                line = line sprintf(" %.2f |", ratio)
                lg[group, O[i]] += log(ratio); lg["all", O[i]] += log(ratio)
            }
            cnt[group]++; cnt["all"]++
            print line
            # More than 1.5x slower than the fastest other runtime: listed below.
            best = 0
            for (i = 1; i <= no; i++) if (!best || med[p, O[i]] < best) best = med[p, O[i]]
            if (best > 0 && med[p, subject] > 1.5 * best) slow = slow sprintf("\n- %s: %.2fx the fastest other runtime", p, med[p, subject] / best)
        }
        if (slow != "") print "\nMore than 1.5x slower than the faster of the others:" slow
        print ""
        print "| geometric mean | programs |" (no >= 1 ? " " subject "/" O[1] " |" : "") (no >= 2 ? " " subject "/" O[2] " |" : "")
        print "|---|---:|" (no >= 1 ? "---:|" : "") (no >= 2 ? "---:|" : "")
        split("bots peers all", G, " ")
        for (g = 1; g <= 3; g++) {
            if (!cnt[G[g]]) continue
            line = "| " G[g] " | " cnt[G[g]] " |"
            for (i = 1; i <= no; i++) line = line sprintf(" %.3f |", exp(lg[G[g], O[i]] / cnt[G[g]]))
            print line
        }
    }')
if [ -s "$failures" ]; then
    report+=$'\n\nLeft out, a run failed or did not verify:\n'$(sed 's/^/- /' "$failures")
fi
echo "$report"
[ -z "$markdown" ] || echo "$report" >"$markdown"
omp_log "done in $((SECONDS - start)) s"
[ ! -s "$failures" ] || exit 1
