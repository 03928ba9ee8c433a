#include "loom/codegen/cuda.h"

namespace loom::codegen::cuda {

runtime::CudaProgram build(const std::vector<ir::LoweredFunc>& funcs, const CudaOptions& options) {
  runtime::CudaProgram p = emit(funcs, options);
  compile(p, options);
  return p;
}

}  // namespace loom::codegen::cuda
