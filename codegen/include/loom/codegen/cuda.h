// CUDA GPU backend: a function lowered for the GPU (schedule::LowerOptions::target_gpu) becomes
// CUDA C (one __global__ function per kernel of ir::split_gpu_kernels), compiled in this process by
// NVRTC to PTX and to a cubin for the requested architecture, with ptxas' register and shared
// memory use per kernel. The result, runtime::CudaProgram, is what the runtime loads (runtime/cuda.h).
//
// Compiling needs NVRTC (the CUDA toolkit), loaded when first needed; printing does not. When Loom
// is built without the toolkit, or its NVRTC library cannot be loaded, nvrtc_enabled() is false
// and compile() throws CodegenError saying so.
#pragma once
#include <string>
#include <vector>

#include "loom/ir/gpu.h"
#include "loom/ir/stmt.h"
#include "loom/runtime/cuda.h"

namespace loom::codegen::cuda {

struct CudaOptions {
  std::string arch = "sm_90";  // the cubin's architecture; PTX is kept for every other GPU
  bool fast_math = true;       // --use_fast_math: approximate division, __expf and friends, FTZ
  // On-disk cache of compiled programs keyed by source hash + architecture + options: the directory
  // LOOM_CUDA_CACHE names ("off": none), else $XDG_CACHE_HOME/loom/cuda or ~/.cache/loom/cuda.
  // use_cache = false: compile always.
  bool use_cache = true;
  std::string cache_dir;  // overrides the above when non-empty
  ir::GpuLimits limits;
  // The GPU schedules size their parallelism for (H100 SXM: 132 multiprocessors).
  int multiprocessors = 132;
};

bool nvrtc_enabled();
std::string nvrtc_version();  // "13.0", or "" without NVRTC

// The functions' kernels and launch plans, with CUDA C source (no compilation).
runtime::CudaProgram emit(const std::vector<ir::LoweredFunc>& funcs, const CudaOptions& options = {});
// NVRTC: fills ptx, cubin, compile_log and each kernel's registers; checks ptxas' registers per
// block against the limits (LoweringError naming the kernel). CodegenError with NVRTC's log when
// the source does not compile.
void compile(runtime::CudaProgram& program, const CudaOptions& options = {});
// emit + compile.
runtime::CudaProgram build(const std::vector<ir::LoweredFunc>& funcs, const CudaOptions& options = {});

// Seconds the last compile() spent in NVRTC (0 when the cache answered), for the benchmark.
double last_compile_seconds();

}  // namespace loom::codegen::cuda
