#!/usr/bin/env bash
# Builds Loom's libFuzzer targets (fuzz/, clang with ASan + UBSan) and runs each for a bounded
# time on a working copy of its seed corpus (fuzz/corpus/<target>, which stays untouched).
# A crash, sanitizer report, timeout or out-of-memory leaves its input in the build folder
# (crash-<target>-*) and makes the script exit non-zero; add such inputs to fuzz/corpus and fix.
#
#   scripts/fuzz.sh                          # every target, 30 s each
#   scripts/fuzz.sh --seconds 3600 image     # one target, an hour
#   scripts/fuzz.sh --build-only             # just build (CTest's fixture)
# Options: --seconds N, --seed N (default: random; CTest uses 1, so a CI run replays the same
# inputs), --build DIR (default build/fuzz), --build-only, --no-build.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds=30
seed=0
build="$here/build/fuzz"
do_build=1
only_build=0
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --build-only) only_build=1; shift ;;
    --no-build) do_build=0; shift ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=(program insn config image model_file executor_graph onnx)
if ((do_build)); then
  cmake -S "$here/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release > "$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
  cmake --build "$build"
fi
((only_build)) && exit 0
status=0
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  mkdir -p "$work"
  cp -n "$here/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  echo "fuzz_$t: ${seconds} s"
  if ! "$build/fuzz_$t" "$work" -max_total_time="$seconds" -seed="$seed" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$build/crash-$t-" > "$build/$t.log" 2>&1; then
    tail -40 "$build/$t.log"
    echo "fuzz_$t: FAILED (input saved as $build/crash-$t-*)"
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$build/$t.log" | tail -2
    echo "fuzz_$t: no crash"
  fi
done
exit $status
