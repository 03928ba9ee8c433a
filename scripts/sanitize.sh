#!/usr/bin/env bash
# Builds the whole tree with AddressSanitizer + UndefinedBehaviorSanitizer (gcc; LOOM_SANITIZE)
# in its own build folder and runs the whole suite there. Any sanitizer report fails its test
# (halt_on_error; UBSan does not recover). The fuzz labels are left out: their replay runs under
# valgrind, which does not mix with ASan, and the libFuzzer targets carry their own sanitizers
# (scripts/fuzz.sh). A cold build takes a long time (docs/results.md).
#
#   scripts/sanitize.sh                  # build build-asan, run every test
#   scripts/sanitize.sh -R Fsim          # extra arguments go to ctest
# Options (before ctest's): --build DIR (default build-asan), --sanitizers LIST
# (default address,undefined), --no-build.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$here/build-asan"
sanitizers=address,undefined
do_build=1
while (($#)); do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --sanitizers) sanitizers="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    *) break ;;
  esac
done
if ((do_build)); then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_SANITIZE="$sanitizers" -DLOOM_BUILD_BENCH=OFF
  cmake --build "$build" -j"$(nproc)"
fi
# detect_leaks: Loom's own leaks fail the test; leaks inside libLLVM's static state at exit are
# suppressed (scripts/lsan.supp). new_delete_type_mismatch stays on.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$here/scripts/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
cd "$build"
ctest -j"$(nproc)" -LE fuzz --output-on-failure "$@"
