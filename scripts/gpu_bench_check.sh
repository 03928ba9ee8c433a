#!/bin/bash
# The GPU figures of docs/cuda.md in one prepared run, in two halves:
#   scripts/gpu_bench_check.sh prepare DIR   on the build machine: a -DLOOM_ENABLE_LLVM=OFF build of
#                                            test_cuda, test_cuda_models and cuda_bench (the GPU
#                                            machine has no LLVM), copied with their libraries into
#                                            DIR, and the torchvision ResNet-18 (ONNX) compiled for
#                                            CUDA with this tree's loom
#   scripts/gpu_bench_check.sh run DIR       on the GPU machine: the CUDA tests, then cuda_bench's
#                                            fp32 GEMM, fp16 tensor-core GEMM and models (the
#                                            compiled ResNet-18 timed in the same process as the
#                                            built-in one, GPU clocks read before and after); the
#                                            log goes to $OUT (the device tool's folder) or DIR
# DIR should lie in the repository, ignored by git (.git/info/exclude), to travel with the tree.
# Exit status 0 when every test passed and every result matched its reference.
set -euo pipefail
mode=${1:?usage: gpu_bench_check.sh prepare|run DIR}
dir=${2:?usage: gpu_bench_check.sh prepare|run DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
case $mode in
prepare)
  build=${BUILD:-$root/build-gpu}
  loom=${LOOM:-$root/build/bin/loom}
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DLOOM_ENABLE_LLVM=OFF -DCMAKE_BUILD_TYPE=Release > "$build/prepare_cmake.log"
  cmake --build "$build" --target test_cuda test_cuda_models cuda_bench > "$build/prepare_build.log"
  mkdir -p "$dir/bin" "$dir/lib"
  cp "$build/bin/test_cuda" "$build/bin/test_cuda_models" "$build/bin/cuda_bench" "$dir/bin/"
  cp -L "$build"/lib/*.so "$dir/lib/"
  # The tree and DIR travel together, at most 64 MiB: no symbols, the model compressed.
  strip --strip-unneeded "$dir"/bin/* "$dir"/lib/*.so
  onnx=$dir/resnet18.onnx
  if [ ! -f "$onnx" ]; then
    /usr/bin/python3 -c "
import torch, torchvision
m = torchvision.models.resnet18().eval()
torch.onnx.export(m, torch.randn(1, 3, 224, 224), '$onnx', opset_version=13, input_names=['x'])"
  fi
  "$loom" compile "$onnx" --target cuda -o "$dir/resnet18_onnx_cuda.loom" -q
  rm -f "$onnx" "$dir/resnet18_onnx_cuda.loom.gz"
  gzip -9 "$dir/resnet18_onnx_cuda.loom"
  du -sh "$dir"
  echo "prepared $dir"
  ;;
run)
  out=${OUT:-$dir}
  export LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  log=$out/gpu_bench_check.log
  status=0
  step() {
    local limit=$1
    shift
    echo "== $*" | tee -a "$log"
    if ! timeout "$limit" "$@" 2>&1 | tee -a "$log"; then status=1; fi
  }
  : > "$log"
  model=/tmp/resnet18_onnx_cuda.loom
  gunzip -c "$dir/resnet18_onnx_cuda.loom.gz" > "$model"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1 | tee -a "$log" || true
  step 180 "$dir/bin/test_cuda"
  step 180 "$dir/bin/test_cuda_models"
  step 120 "$dir/bin/cuda_bench" --only gemm
  step 120 "$dir/bin/cuda_bench" --only gemm_f16
  step 300 "$dir/bin/cuda_bench" --only models --pytorch "$root/bench/pytorch_gpu_latency.py" \
    --model "$model"
  exit $status
  ;;
*)
  echo "gpu_bench_check.sh: unknown mode '$mode' (prepare, run)" >&2
  exit 2
  ;;
esac
