#!/usr/bin/env bash
# Packs zoo_bench, the loom CLI and loom-run with the shared libraries they load into one tarball,
# to time Loom against ONNX Runtime (and profile its kernels: loom compile, loom-run --profile) on
# another x86-64 Linux host that has none of Loom's build dependencies (issue #28 asks for every
# kind of host: Zen 3, Zen 5, Intel).
#
# usage: scripts/bundle_zoo_bench.sh [--host-cuda] [BUILD_DIR] OUT.tar.xz
#   --host-cuda: leave NVRTC (over 100 MB, loaded but never called by these programs) to the other
#   host, which has the CUDA toolkit (a GPU machine); the wrapper looks in /usr/local/cuda.
# On the other host:
#   tar -xJf OUT.tar.xz -C DIR
#   python3 DIR/zoo_bench_bundle/export_zoo_models.py MODELS      # needs torch + torchvision there
#   DIR/zoo_bench_bundle/zoo_bench --ort-python python3 --models MODELS/resnet18.onnx,...
# The host's own C library, C++ runtime, dynamic loader and C compiler are used (Loom links each
# compiled model with `cc`, or $LOOM_CC): they must be at least as new as this build machine's.
# Only the bundled programs see the bundled libraries (the loader's --library-path, not
# LD_LIBRARY_PATH), so the python3 that runs ONNX Runtime keeps its own.
set -euo pipefail
skip='libc|libm|libpthread|librt|libdl|libstdc\+\+|libgcc_s'
if [[ ${1:-} == --host-cuda ]]; then skip="$skip|libnvrtc"; shift; fi
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ $# -eq 1 ]]; then build=$root/build out=$1; elif [[ $# -eq 2 ]]; then build=$1 out=$2; else
  echo "usage: $0 [--host-cuda] [BUILD_DIR] OUT.tar.xz (BUILD_DIR: the source tree's build/)" >&2
  exit 2
fi
exes=("$build/bin/zoo_bench" "$build/bin/loom" "$build/bin/loom-run")
for exe in "${exes[@]}"; do
  [[ -x $exe ]] || { echo "$0: $exe not built (cmake --build $build)" >&2; exit 2; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
dir="$stage/zoo_bench_bundle"
mkdir -p "$dir/lib" "$dir/bench"
# Every library ldd resolves, except the C and C++ runtimes the other host brings (bundling older
# ones would shadow what its compiler and Python were built against).
for exe in "${exes[@]}"; do
  missing=$(ldd "$exe" | grep 'not found' || true)
  [[ -z $missing ]] || { echo "$0: $exe: unresolved libraries: $missing" >&2; exit 1; }
  ldd "$exe" | awk '/=> \// {print $3}' | grep -Ev "/($skip)\.so" |
    while read -r lib; do cp -L "$lib" "$dir/lib/" || exit 1; done
done
cp "$root/bench/ort_latency.js" "$root/bench/ort_latency.py" "$root/bench/pytorch_latency.py" "$dir/bench/"
cp "$root/scripts/export_zoo_models.py" "$dir/"
cat >"$dir/lib/run_bundled" <<'EOF'
#!/usr/bin/env bash
# Runs the bundled program $0 names: the host's loader, the bundled libraries and ONNX Runtime runners.
# (Started through the loader, a program's /proc/self/exe is the loader: `loom regress`, which
# starts itself again, does not run from the bundle.)
here=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
# The program: the bundle's link to this script that $0 leads to (through a user's own links too).
self=$0
while [[ -L $self ]]; do
  target=$(readlink "$self")
  [[ $target == /* ]] || target=$(dirname "$self")/$target
  [[ $(basename "$target") == run_bundled ]] && break
  self=$target
done
export LOOM_BENCH_DIR="$here/bench"
if [[ -z ${LOOM_CC:-} ]] && ! command -v cc >/dev/null; then export LOOM_CC=gcc; fi
loader=$(ls /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 2>/dev/null | head -1)
[[ -n $loader ]] || { echo "$0: no x86-64 dynamic loader (ld-linux-x86-64.so.2) on this host" >&2; exit 2; }
libs="$here/lib"
nvrtc=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/lib 2>/dev/null | head -1 || true)
exec "$loader" --library-path "$libs${nvrtc:+:$nvrtc}" "$libs/$(basename "$self").bin" "$@"
EOF
chmod +x "$dir/lib/run_bundled"
for exe in "${exes[@]}"; do
  name=$(basename "$exe")
  cp "$exe" "$dir/lib/$name.bin"
  ln -s lib/run_bundled "$dir/$name"
done
tar -C "$stage" -cf - zoo_bench_bundle | xz -T0 -6 >"$out"
echo "$out: $(du -h "$out" | cut -f1) ($(ls "$dir/lib" | wc -l) files)"
