#!/usr/bin/env bash
# Refreshes tests/ctest_costs.txt, the test durations a fresh build directory starts from, so that
# `ctest -j` starts the long tests first even on its first run (CTest orders a parallel run by the
# costs in BUILD/Testing/Temporary/CTestCostData.txt, which tests/CMakeLists.txt seeds from this
# file when the build directory has none yet).
#
#   scripts/update_test_costs.sh [BUILD]    # BUILD default: build
#
# Takes the average durations CTest recorded in BUILD for the tests that exist now; run it after a
# full suite run from a fresh clone, so that tests that build
# something (loom_install_consumer) carry their cold cost.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
data="$build/Testing/Temporary/CTestCostData.txt"
[ -f "$data" ] || { echo "update_test_costs.sh: no $data (run ctest in $build first)" >&2; exit 1; }
ctest --test-dir "$build" -N | sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p' | sort > "$build/test_names.txt"
# Cost lines are "NAME RUNS AVERAGE_SECONDS" up to a "---" line (failed tests follow it).
awk 'NR == FNR { known[$1] = 1; next } /^---/ { exit } ($1 in known) && !seen[$1]++ { printf "%s 1 %.3f\n", $1, $3 }' \
  "$build/test_names.txt" "$data" | sort -k3,3 -rn > "$here/tests/ctest_costs.txt"
echo "tests/ctest_costs.txt: $(wc -l < "$here/tests/ctest_costs.txt") of $(wc -l < "$build/test_names.txt") tests"
