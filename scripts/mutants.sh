#!/usr/bin/env bash
# Disables each scheduling mechanism of Locus in turn, in a scratch copy of the
# repository, and checks that the policy tests notice (see scripts/README.md).
#
# Usage: scripts/mutants.sh [--list] [MUTANT...]
#
# For each mutant: copy the pristine file, replace one anchored line of code, build,
# run the policy tests of both engines, and report "caught" (tests of every engine
# failed), "PARTLY" (only some engine's tests failed) or "MISSED" (all passed). Exits 1
# if a mutant is missed or partly caught, 2 if a patch no longer applies, a mutant does
# not compile, cargo did not rebuild it, or the unmodified copy fails its tests.
#
# Environment: MUTANTS_TARGET_DIR, the cargo target directory of the scratch copies
# (default: target/mutants, kept between runs so that dependencies are built once; it
# must not be the repository's own target directory: cargo's artifact names do not
# depend on where the workspace is, so the copy's mutated builds would replace the
# repository's); KEEP=1 keeps the scratch directory and its logs.

set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${MUTANTS_TARGET_DIR:-$root/target/mutants}
if [[ $(realpath -m "$CARGO_TARGET_DIR") == $(realpath -m "$root/target") ]]; then
  echo "mutants: MUTANTS_TARGET_DIR must not be the repository's own target directory" >&2
  exit 2
fi
export CARGO_TERM_COLOR=never

names=() files=() anchors=() replacements=() descriptions=()
# mutant NAME FILE ANCHOR REPLACEMENT DESCRIPTION: ANCHOR (a piece of one line of code)
# must occur exactly once in FILE.
mutant() {
  names+=("$1") files+=("$2") anchors+=("$3") replacements+=("$4") descriptions+=("$5")
}

mutant push-keep-local crates/locus/src/sched/place.rs \
  'PushDecision::ToNode(n) => Placement::Node(n),' \
  'PushDecision::ToNode(_) => Placement::Local(KeepReason::LocalIsCheapest),' \
  '(a) work-pushing: a task the heuristic sends away stays with its activator'
mutant steal-random crates/locus/src/config.rs \
  '            _ => StealKind::Hierarchical,' \
  '            _ => StealKind::Random,' \
  '(b) hierarchical stealing: every configuration steals at random, as ws'
mutant home-keep-local crates/locus/src/runtime.rs \
  'None if config == Config::Home => ReadyPolicy::home(self.home_regions),' \
  'None if config == Config::Home => ReadyPolicy::keep_local(),' \
  '(c) home-based scheduling: tasks stay with their activator'
mutant hints-ignored crates/locus/src/sched/place.rs \
  'if let Some((domain, strict)) = task.affinity {' \
  'if let Some((domain, strict)) = task.affinity.filter(|_| false) {' \
  '(d) affinity hints, strict or not, are ignored'
mutant loose-hints-ignored crates/locus/src/sched/place.rs \
  'if let Some((domain, strict)) = task.affinity {' \
  'if let Some((domain, strict)) = task.affinity.filter(|&(_, strict)| strict) {' \
  "(d') non-strict affinity hints are ignored, strict ones still honoured"
mutant deferred-immediate crates/locus/src/config.rs \
  'Config::Dfa | Config::DsaOpt => AllocMode::Deferred,' \
  'Config::Dfa | Config::DsaOpt => AllocMode::Immediate,' \
  "(e) deferred allocation: outputs are allocated at submission, on the submitter's node"
mutant steal-order-reversed crates/locus/src/sched/steal.rs \
  'self.classes.iter().enumerate().flat_map(move |(c, class)| {' \
  'self.classes.iter().enumerate().rev().flat_map(move |(c, class)| {' \
  "(f) steal order: farthest nodes first, the thief's own node last"
mutant bf-keep-local crates/locus/src/runtime.rs \
  'None if config == Config::Bf => ReadyPolicy::breadth_first(),' \
  'None if config == Config::Bf => ReadyPolicy::keep_local(),' \
  '(g) breadth-first scheduling: tasks stay on their activator instead of the global queue'

# The test suites run against every mutant: a label and the arguments of `cargo test`.
suite_labels=(threads sim)
suite_args=("-p locus --test policies" "-p locus-sim --test policies")

if [[ ${1:-} == --list ]]; then
  for i in "${!names[@]}"; do printf '%-22s %s\n' "${names[$i]}" "${descriptions[$i]}"; done
  exit 0
fi

selected=("$@")
wanted() {
  [[ ${#selected[@]} -eq 0 ]] && return 0
  local s
  for s in "${selected[@]}"; do [[ $s == "$1" ]] && return 0; done
  return 1
}
for s in "${selected[@]}"; do
  found=0
  for n in "${names[@]}"; do [[ $n == "$s" ]] && found=1; done
  [[ $found == 1 ]] || { echo "unknown mutant \`$s\` (see --list)" >&2; exit 2; }
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/locus-mutants.XXXXXX")
tree=$scratch/tree
logs=$scratch/logs
mkdir -p "$tree" "$logs"
cleanup() {
  if [[ ${KEEP:-0} == 1 ]]; then
    echo "kept $scratch"
  else
    rm -rf "$scratch"
  fi
}
trap cleanup EXIT

# The working tree as it is (uncommitted changes included), without build outputs.
# Files get the time of the copy (-m), newer than any artifact of an earlier run, so
# that cargo rebuilds the copy's crates instead of trusting the last mutant's build.
tar -C "$root" --exclude=./target --exclude='./target-*' --exclude=./.git -cf - . |
  tar -C "$tree" -xmf -

# Replaces the one occurrence of $old in $file (a path in the copy) by $new; fails
# loudly when the anchor is missing or ambiguous, so that a mutant cannot pass by not
# being applied.
mutate() {
  local file=$1 old=$2 new=$3
  local path=$tree/$file
  [[ -f $path ]] || { echo "mutants: $file does not exist" >&2; return 2; }
  local count
  count=$(grep -cF -- "$old" "$path" || true)
  if [[ $count != 1 ]]; then
    echo "mutants: the anchor of this mutant is found $count times in $file (expected once):" >&2
    echo "    $old" >&2
    echo "  the code changed: update the mutant in scripts/mutants.sh" >&2
    return 2
  fi
  local content
  content=$(<"$path")
  printf '%s\n' "${content/"$old"/"$new"}" >"$path"
  if grep -qF -- "$old" "$path" && ! grep -qF -- "$new" "$path"; then
    echo "mutants: replacing the anchor in $file had no effect" >&2
    return 2
  fi
  if cmp -s "$path" "$root/$file"; then
    echo "mutants: $file is unchanged after the mutation" >&2
    return 2
  fi
}

restore() {
  cp "$root/$1" "$tree/$1"
}

build() { # build LOG: compiles every suite's tests.
  local args=() a i
  for i in "${!suite_args[@]}"; do
    read -ra a <<<"${suite_args[$i]}"
    args+=("${a[@]}")
  done
  (cd "$tree" && cargo test --no-run "${args[@]}") >"$1" 2>&1
}

run_suite() { # run_suite INDEX LOG: 0 if every test of suite INDEX passed.
  local a
  read -ra a <<<"${suite_args[$1]}"
  (cd "$tree" && cargo test "${a[@]}") >"$2" 2>&1
}

# Every anchor first, so that a stale mutant stops the run before anything is built.
for m in "${!names[@]}"; do
  wanted "${names[$m]}" || continue
  count=$(grep -cF -- "${anchors[$m]}" "$tree/${files[$m]}" 2>/dev/null || true)
  if [[ $count != 1 ]]; then
    echo "mutants: the anchor of \`${names[$m]}\` is found ${count:-0} times in ${files[$m]} (expected once):" >&2
    echo "    ${anchors[$m]}" >&2
    echo "  the code changed: update the mutant in scripts/mutants.sh" >&2
    exit 2
  fi
done

start=$SECONDS
echo "scratch copy: $tree"
echo "target dir:   $CARGO_TARGET_DIR"

# 0. The unmodified copy must build and pass, or every mutant would look caught.
if ! build "$logs/baseline-build.log"; then
  tail -n 30 "$logs/baseline-build.log" >&2
  echo "mutants: the unmodified copy does not build" >&2
  exit 2
fi
for i in "${!suite_labels[@]}"; do
  label=${suite_labels[$i]}
  if ! run_suite "$i" "$logs/baseline-$label.log"; then
    grep -E "panicked|FAILED|failed" "$logs/baseline-$label.log" | head -n 20 >&2
    echo "mutants: the $label tests fail on the unmodified copy; fix them first" >&2
    exit 2
  fi
done
echo "baseline: every suite passes ($((SECONDS - start)) s)"
echo

missed=0
broken=0
results=()
for m in "${!names[@]}"; do
  name=${names[$m]}
  wanted "$name" || continue
  file=${files[$m]}
  old=${anchors[$m]}
  new=${replacements[$m]}
  what=${descriptions[$m]}
  t0=$SECONDS
  echo "== $name: $what"
  mutate "$file" "$old" "$new" || exit 2
  if ! build "$logs/$name-build.log"; then
    tail -n 30 "$logs/$name-build.log" >&2
    echo "   BROKEN: the mutant does not compile"
    results+=("$(printf '%-22s %-28s %s' "$name" "-" "BROKEN")")
    broken=1
    restore "$file"
    continue
  fi
  # The mutated crate must have been rebuilt, or the tests would run the old code.
  crate=${file#crates/}
  crate=${crate%%/*}
  if ! grep -q "Compiling $crate v.*($tree/" "$logs/$name-build.log"; then
    echo "mutants: cargo did not rebuild $crate for $name; see $logs/$name-build.log" >&2
    KEEP=1
    exit 2
  fi
  detail=""
  failed=0
  for i in "${!suite_labels[@]}"; do
    label=${suite_labels[$i]}
    log=$logs/$name-$label.log
    if run_suite "$i" "$log"; then
      detail+="$label:pass "
    else
      failed=$((failed + 1))
      detail+="$label:FAIL "
      # The first failing tests, for the record.
      grep -oE "^    [a-z_0-9]+$" "$log" | head -n 3 | sed "s/^ */   $label fails: /" || true
    fi
  done
  restore "$file"
  if [[ $failed -eq ${#suite_labels[@]} ]]; then
    verdict=caught
  elif [[ $failed -gt 0 ]]; then
    # Noticed, but not on every engine: the other engine's tests have a gap.
    verdict=PARTLY
    missed=1
  else
    verdict=MISSED
    missed=1
  fi
  echo "   $verdict ($detail) in $((SECONDS - t0)) s"
  results+=("$(printf '%-22s %-28s %s' "$name" "$detail" "$verdict")")
done

echo
printf '%-22s %-28s %s\n' mutant "tests (FAIL = noticed)" verdict
printf '%s\n' "${results[@]}"
echo "total: $((SECONDS - start)) s"
if [[ $broken == 1 ]]; then
  exit 2
fi
exit "$missed"
