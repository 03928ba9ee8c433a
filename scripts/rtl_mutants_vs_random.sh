#!/usr/bin/env bash
# Which planted RTL bugs does a random regression catch on its own? Runs scripts/mutate.sh over
# the mutations that change hw/rtl (or the patches given) with one check in place of their labels:
# a regression of constrained-random programs on the RTL against the functional simulator
# (tests/regress/random_mutants.json, or --manifest). CAUGHT: the random regression alone finds the
# bug; MISSED: only the directed tests (the patches' own labels, scripts/mutate.sh) do.
#
#   scripts/rtl_mutants_vs_random.sh [-j JOBS] [--manifest MANIFEST] [PATCH...]
#
# Uses mutate.sh's scratch tree and build (LOOM_MUTATE_DIR, LOOM_MUTATE_CMAKE_ARGS; a build with
# only the default config's RTL model, -DLOOM_RTL_CONFIGS=default -DLOOM_RTL_COVERAGE_CONFIGS=,
# rebuilds one model per patch) and rebuilds only the `loom` program; the table goes to
# SCRATCH/mutation-report.md.
set -uo pipefail
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel) || exit 2
jobs=2
manifest=tests/regress/random_mutants.json
patches=()
while [ $# -gt 0 ]; do
  case $1 in
    -j) jobs=$2; shift 2 ;;
    --manifest) manifest=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) patches+=("$1"); shift ;;
  esac
done
if [ ${#patches[@]} -eq 0 ]; then
  while IFS= read -r p; do patches+=("$p"); done < <(grep -l '^+++ b/hw/rtl/' "$repo"/tests/mutations/*.patch)
fi
# The manifest as the scratch tree has it (mutate.sh checks out the committed tree).
export LOOM_MUTATE_TARGET=${LOOM_MUTATE_TARGET:-loom}
exec "$repo/scripts/mutate.sh" -j "$jobs" --command \
  "\"\$LOOM_BUILD/bin/loom\" regress '$manifest' --out \"\$LOOM_BUILD/random-mutants\" --force -j $jobs -q" \
  "${patches[@]}"
