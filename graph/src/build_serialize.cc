#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "build_steps.h"

namespace loom::graph {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The kernel library's bytes: exported by the LLVM backend to a temporary shared object.
std::string kernel_library(const std::vector<ir::LoweredFunc>& funcs, const codegen::LLVMOptions& llvm,
                           const void* unique) {
  auto lib = std::filesystem::temp_directory_path() / ("loom_build_" + std::to_string(::getpid()) + "_" +
                                                       std::to_string(reinterpret_cast<uintptr_t>(unique)) + ".so");
  try {
    codegen::export_library(funcs, lib.string(), llvm);
  } catch (...) {
    std::filesystem::remove(lib);
    throw;
  }
  std::string bytes = read_file(lib.string());
  std::filesystem::remove(lib);
  return bytes;
}

}  // namespace

runtime::ModelFile serialize(const Graph& g, ValuePlan& plan, const CompiledKernels& kernels,
                             const BuildOptions& options) {
  runtime::ModelFile file;
  file.graph_json = plan.exec.to_json();
  file.params = runtime::aligned_buffer(plan.params_bytes);
  file.params_bytes = plan.params_bytes;
  for (int id : plan.param_nodes) {
    const NDArray& v = g.node(id).value;
    std::memcpy(file.params.get() + plan.exec.values[size_t(plan.value_of.at(id))].param_offset, v.raw_data(),
                v.nbytes());
  }
  // A GPU model has no CPU kernels: no library, and no LLVM needed to build it.
  if (!options.cuda || !kernels.funcs.empty()) file.library = kernel_library(kernels.funcs, options.llvm, &file);
  if (!kernels.cuda_funcs.empty()) {
    runtime::CudaProgram p = codegen::cuda::build(kernels.cuda_funcs, *options.cuda);
    file.cuda_program = p.serialize();
  }
  if (plan.accel) file.accel_image = plan.accel->finish().serialize();
  return file;
}

}  // namespace loom::graph
