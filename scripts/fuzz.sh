#!/usr/bin/env bash
# Builds Loom's libFuzzer targets (fuzz/: Loom's own libraries built with clang, ASan + UBSan, by
# the top-level option LOOM_FUZZ) and runs each for a bounded time on a working copy of its seed
# corpus (fuzz/corpus/<target>, which stays untouched).
# A crash, sanitizer report, timeout or out-of-memory leaves its input in the build folder
# (crash-<target>-*) and makes the script exit non-zero; add such inputs to fuzz/corpus and fix.
#
#   scripts/fuzz.sh                          # every target, 30 s each (campaign: corpus grows)
#   scripts/fuzz.sh --seconds 3600 image     # one target, an hour
#   scripts/fuzz.sh --runs 20000 --seed 1 onnx  # a fixed replay (CTest label fuzz_sanitized), see below
#   scripts/fuzz.sh --build-only             # just build (that label's fixture)
# Options: --seconds N, --runs N, --seed N (default: random), --build DIR (default build/fuzz),
# --build-only, --no-build.
#
# --runs N executes exactly N inputs from a fresh copy of the seed corpus, with address-space
# randomisation off (libFuzzer's comparison tables hash code addresses) and no corpus reloads
# (timed): with a fixed seed the same inputs run on every machine, however fast. A time bound
# (--seconds) reaches further on a faster machine, so the same commit can pass on one machine and
# fail on another; that makes a test flaky, so CTest uses --runs and campaigns use --seconds.
# What a campaign keeps is merged into fuzz/corpus/<target> (docs/testing.md), which the suite's
# `fuzz` label replays on the normal build under valgrind (fuzz/replay_main.cc).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds=30
runs=0
seed=0
build="$here/build/fuzz"
do_build=1
only_build=0
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --build-only) only_build=1; shift ;;
    --no-build) do_build=0; shift ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=(program insn config image model_file executor_graph onnx rpc rpc_session)
if ((do_build)); then
  # The fuzz targets link Loom's own libraries, configured from the top level with LOOM_FUZZ (a
  # folder configured from fuzz/ alone, as before, is started afresh).
  if [ -f "$build/CMakeCache.txt" ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$here" "$build/CMakeCache.txt"; then rm -rf "$build"; fi
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release -DLOOM_FUZZ=ON \
    > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
  cmake --build "$build"
fi
((only_build)) && exit 0
status=0
for t in "${targets[@]}"; do
  launch=()
  if ((runs)); then
    work="$build/replay/$t"
    rm -rf "$work"
    bound=(-runs="$runs" -reload=0)
    # Some containers forbid turning randomisation off; the replay is then only nearly fixed.
    if setarch "$(uname -m)" -R true 2>/dev/null; then launch=(setarch "$(uname -m)" -R); fi
    echo "fuzz_$t: ${runs} runs, seed $seed${launch[*]:+, fixed addresses}"
  else
    work="$build/corpus/$t"
    bound=(-max_total_time="$seconds")
    echo "fuzz_$t: ${seconds} s"
  fi
  mkdir -p "$work"
  cp -n "$here/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  if ! "${launch[@]}" "$build/bin/fuzz_$t" "$work" "${bound[@]}" -seed="$seed" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
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
