// Built instead of codegen/cuda/compile_nvrtc.cc when the CUDA toolkit was not found: CUDA C is
// still printed (emit), compiling says what is missing.
#include "loom/codegen/cuda.h"

namespace loom::codegen::cuda {

bool nvrtc_enabled() { return false; }
std::string nvrtc_version() { return ""; }
double last_compile_seconds() { return 0; }

void compile(runtime::CudaProgram&, const CudaOptions&) {
  LOOM_THROW(CodegenError,
             "this Loom was built without the CUDA toolkit (NVRTC): install it (e.g. cuda-toolkit-13-0) and "
             "reconfigure with -DLOOM_WITH_CUDA=ON");
}

}  // namespace loom::codegen::cuda
