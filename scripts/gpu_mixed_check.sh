#!/bin/bash
# The GPU check of mixed-device models, in two halves (docs/cuda.md):
#   scripts/gpu_mixed_check.sh prepare DIR   on the build machine: compiles ResNet-18 (64x64, int8)
#                                            for the CPU, CPU + CUDA, CPU + accelerator and all three,
#                                            and the expected outputs on the CPU and fsim
#   scripts/gpu_mixed_check.sh run DIR       on the GPU machine, from the tree: builds loom-run
#                                            (-DLOOM_RUNTIME_ONLY=ON -DLOOM_RUNTIME_SIMULATORS=ON) and
#                                            runs every GPU model against those outputs
# Exit status 0 when every model matched.
set -euo pipefail
mode=${1:?usage: gpu_mixed_check.sh prepare|run DIR}
dir=${2:?usage: gpu_mixed_check.sh prepare|run DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
case $mode in
prepare)
  loom=${LOOM:-$root/build/bin/loom}
  mkdir -p "$dir" && cd "$dir"
  /usr/bin/python3 -c "import numpy as np; np.random.seed(0); np.save('x.npy', np.random.uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32))"
  q=(--image 64 --quantize int8 --calibrate 2 -q)
  "$loom" compile resnet18 "${q[@]}" -o cpu.loom
  "$loom" compile resnet18 "${q[@]}" --target cuda -o mixed.loom
  "$loom" compile resnet18 "${q[@]}" --target accel -o accel.loom
  "$loom" compile resnet18 "${q[@]}" --target cuda,accel -o three.loom
  "$loom" run cpu.loom -i x.npy -o cpu_out.npy > /dev/null
  "$loom" run accel.loom --backend fsim -i x.npy -o accel_out.npy > /dev/null
  echo "prepared $dir"
  ;;
run)
  build=${BUILD:-/tmp/loom-runtime}
  cmake -S "$root" -B "$build" -G Ninja -DLOOM_RUNTIME_ONLY=ON -DLOOM_RUNTIME_SIMULATORS=ON -DCMAKE_BUILD_TYPE=Release > "$build.cmake.log"
  cmake --build "$build" --target loom-run > "$build.build.log"
  run=$build/bin/loom-run
  cd "$dir"
  status=0
  check() {
    echo "== loom-run $*"
    if ! "$run" "$@"; then status=1; fi
  }
  check mixed.loom --input x.npy --expect cpu_out.npy --rtol 0.05 --repeat 20
  check mixed.loom --input x.npy --expect cpu_out.npy --rtol 0.05 --repeat 5 --no-cuda-graph --profile
  check three.loom --backend fsim --input x.npy --expect accel_out.npy --rtol 0.05 --repeat 2
  exit $status
  ;;
*)
  echo "gpu_mixed_check.sh: unknown mode '$mode' (prepare, run)" >&2
  exit 2
  ;;
esac
