#!/usr/bin/env bash
# Mutation testing: does the test suite catch realistic bugs?
#
#   scripts/mutate.sh [-j JOBS] [-d SCRATCH] [--min-score PERCENT] [--no-baseline] [--command CMD] [PATCH...]
#
# Each patch (default: tests/mutations/*.patch) plants one bug. Its header names it and the CTest
# labels that should catch it:
#   # mutation: simplify-floordiv-dividend-sign
#   # layer: simplifier
#   # labels: unit codegen            (ctest -L, required)
#   # tests: REGEX                    (optional: ctest -R, to run only part of the labels)
#   # what: one line on the bug
#   diff --git a/ir/src/simplify.cc b/ir/src/simplify.cc
#   ...
# The script keeps a scratch clone of this repository at the current commit (SCRATCH, default
# $LOOM_MUTATE_DIR or /tmp/loom-mutate; committed changes only) with its own build, and for
# every patch: applies it, rebuilds incrementally, runs the patch's labels, records CAUGHT (a
# test failed or timed out) or MISSED (every test passed), and reverts. A patch that does not
# apply or does not build is INVALID. The first run builds everything once (the longest part;
# less with a warm ccache); later runs only rebuild what the patches touch.
# Prints one line per patch, the score caught / (caught + missed), and the wall time, and writes
# the same as a Markdown table to SCRATCH/mutation-report.md. With --command, CMD (run by bash in
# the scratch tree, $LOOM_BUILD naming its build) replaces every patch's labels: a patch is CAUGHT
# when CMD fails, so one check (a random regression, scripts/rtl_mutants_vs_random.sh) is measured
# alone against the planted bugs. Exits 1 if a patch is invalid, if
# the unmutated baseline fails, or if the score is below --min-score.
#
# Environment: LOOM_MUTATE_DIR (scratch folder), LOOM_MUTATE_TIMEOUT (seconds of tests per patch
# before it counts as caught by a hang, default 900), LOOM_MUTATE_CMAKE_ARGS (extra configure
# arguments), LOOM_MUTATE_EXCLUDE (ctest -E regex, default: the yosys FPGA-fit test, whose record
# any RTL patch makes stale), LOOM_MUTATE_TARGET (the build target rebuilt per patch, default all;
# --command runs that need only the `loom` program save relinking every test).
set -uo pipefail

repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel) || exit 2
scratch=${LOOM_MUTATE_DIR:-/tmp/loom-mutate}
jobs=1
min_score=0
baseline=1
command=""
patches=()
while [ $# -gt 0 ]; do
  case $1 in
    -j) jobs=$2; shift 2 ;;
    -j*) jobs=${1#-j}; shift ;;
    -d) scratch=$2; shift 2 ;;
    --min-score) min_score=$2; shift 2 ;;
    --no-baseline) baseline=0; shift ;;
    --command) command=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "mutate.sh: unknown option $1" >&2; exit 2 ;;
    *) patches+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"); shift ;;
  esac
done
if [ ${#patches[@]} -eq 0 ]; then
  for p in "$repo"/tests/mutations/*.patch; do patches+=("$p"); done
fi
[ -e "${patches[0]}" ] || { echo "mutate.sh: no patches" >&2; exit 2; }
test_timeout=${LOOM_MUTATE_TIMEOUT:-900}
exclude=${LOOM_MUTATE_EXCLUDE:-^loom_hw_(synth_|report_default_fits)}
build=$scratch/build
log_dir=$scratch/logs
export CCACHE_BASEDIR=$scratch  # cache hits across runs of the scratch tree

header() {  # header FIELD PATCH: the value of "# FIELD: value"
  sed -n "s/^# $1: *//p" "$2" | head -n 1
}
now() { date +%s; }

# ---- the scratch clone at this commit ----
commit=$(git -C "$repo" rev-parse HEAD)
if [ ! -d "$scratch/.git" ]; then
  echo "mutate.sh: cloning $repo into $scratch"
  git clone -q --no-checkout "$repo" "$scratch" || exit 2
fi
git -C "$scratch" fetch -q "$repo" "$commit" || exit 2
git -C "$scratch" checkout -q -f --detach "$commit" || exit 2
clean() { git -C "$scratch" clean -q -fd -e /logs/ -e /mutation-report.md; }  # leaves build/ (ignored) and the results
clean
mkdir -p "$log_dir"
# Configured once; again when LOOM_MUTATE_CMAKE_ARGS is given (a cached value such as
# LOOM_RTL_CONFIGS keeps its old value otherwise).
if [ ! -f "$build/CMakeCache.txt" ] || [ -n "${LOOM_MUTATE_CMAKE_ARGS:-}" ]; then
  # shellcheck disable=SC2086
  cmake -S "$scratch" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${LOOM_MUTATE_CMAKE_ARGS:-} >"$log_dir/configure.log" 2>&1 ||
    { echo "mutate.sh: configure failed, see $log_dir/configure.log" >&2; exit 2; }
fi
# The baselines the tests compare against (ONNX Runtime, installed by scripts/bootstrap.sh into the
# repository's build): the scratch build reads the same ones, so a test does not skip there.
if [ -d "$repo/build/ort/node_modules" ] && [ ! -e "$build/ort" ]; then ln -s "$repo/build/ort" "$build/ort"; fi
start=$(now)
echo "mutate.sh: building the unmutated tree at ${commit:0:12} (jobs: $jobs)"
cmake --build "$build" -j "$jobs" --target "${LOOM_MUTATE_TARGET:-all}" >"$log_dir/build-baseline.log" 2>&1 ||
  { echo "mutate.sh: the unmutated tree does not build, see $log_dir/build-baseline.log" >&2; exit 2; }

run_tests() {  # run_tests LABELS TESTS LOG: ctest for the labels; returns ctest's status (124: timeout)
  if [ -n "$command" ]; then
    (cd "$scratch" && LOOM_BUILD="$build" timeout -k 10 "$test_timeout" bash -c "$command") >"$3" 2>&1
    return
  fi
  local label_re tests_args=()
  label_re="^($(echo "$1" | tr ' ' '|'))\$"
  [ -n "$2" ] && tests_args=(-R "$2")
  timeout -k 10 "$test_timeout" ctest --test-dir "$build" -L "$label_re" "${tests_args[@]}" -E "$exclude" -j "$jobs" >"$3" 2>&1
}

if [ "$baseline" = 1 ]; then
  all_labels=$(for p in "${patches[@]}"; do header labels "$p"; done | tr ' ' '\n' | sort -u | tr '\n' ' ')
  echo "mutate.sh: baseline: labels ${all_labels% } must pass unmutated"
  if ! run_tests "${all_labels% }" "" "$log_dir/baseline.log"; then
    echo "mutate.sh: the unmutated tree fails its tests, see $log_dir/baseline.log" >&2
    exit 1
  fi
fi

caught=0 missed=0 invalid=0
report=$scratch/mutation-report.md
{
  echo "| # | mutation | layer | labels | result | s | first failing tests |"
  echo "|---|---|---|---|---|---|---|"
} >"$report"
printf '%-3s %-40s %-22s %-8s %5s  %s\n' "#" "mutation" "labels" "result" "s" "first failing tests"
k=0
for p in "${patches[@]}"; do
  k=$((k + 1))
  name=$(header mutation "$p")
  [ -n "$name" ] || name=$(basename "$p" .patch)
  labels=$(header labels "$p")
  tests=$(header tests "$p")
  layer=$(header layer "$p")
  t0=$(now)
  log=$log_dir/$(basename "$p" .patch)
  failing=""
  [ -n "$command" ] && labels="(--command)" tests=""
  if [ -z "$labels" ]; then
    result=INVALID failing="no '# labels:' line"
  elif ! git -C "$scratch" apply "$p" 2>"$log.apply.log"; then
    result=INVALID failing="does not apply"
  else
    if ! cmake --build "$build" -j "$jobs" --target "${LOOM_MUTATE_TARGET:-all}" >"$log.build.log" 2>&1; then
      result=INVALID failing="does not build"
    else
      run_tests "$labels" "$tests" "$log.test.log"
      rc=$?
      if [ $rc -eq 0 ]; then
        result=MISSED
      elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        result=CAUGHT failing="(tests timed out after ${test_timeout} s)"
      else
        result=CAUGHT
        failing=$(sed -n '/The following tests FAILED:/,$p' "$log.test.log" | sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\).*/\1/p' |
                  head -n 3 | tr '\n' ' ')
        [ -n "$command" ] && failing=$(grep -m 1 -E "FAILED|fail:|error:|crash:" "$log.test.log" | cut -c 1-160)
        [ -n "$failing" ] || failing="(ctest status $rc)"
      fi
    fi
    git -C "$scratch" checkout -q -- . && clean
  fi
  secs=$(( $(now) - t0 ))
  case $result in
    CAUGHT) caught=$((caught + 1)) ;;
    MISSED) missed=$((missed + 1)) ;;
    *) invalid=$((invalid + 1)) ;;
  esac
  printf '%-3s %-40s %-22s %-8s %5s  %s\n' "$k" "$name" "$labels" "$result" "$secs" "$failing"
  echo "| $k | $name | $layer | $labels | $result | $secs | $failing |" >>"$report"
done

# Leave the scratch build matching its (unmutated) sources for the next run's baseline.
cmake --build "$build" -j "$jobs" --target "${LOOM_MUTATE_TARGET:-all}" >"$log_dir/build-restore.log" 2>&1

total=$((caught + missed))
score=0
[ $total -gt 0 ] && score=$((1000 * caught / total))
wall=$(( $(now) - start ))
summary="score: $caught of $total mutants caught ($((score / 10)).$((score % 10))%), $missed missed, $invalid invalid; wall time $((wall / 60)) min $((wall % 60)) s (jobs: $jobs, commit ${commit:0:12})"
echo "$summary"
{ echo; echo "$summary"; } >>"$report"
echo "report: $report; logs: $log_dir"
[ $invalid -eq 0 ] || exit 1
awk -v s="$score" -v m="$min_score" 'BEGIN { exit (s / 10 < m) ? 1 : 0 }' || { echo "mutate.sh: score below $min_score%" >&2; exit 1; }
exit 0
