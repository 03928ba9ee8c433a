// The CPU's KernelBackend: a group scheduled by its anchor's OpDef::schedule_cpu (else the generic
// CPU schedule), lowered with the parallel-work options, and compiled by the LLVM backend into the
// model's kernel library.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernel_backend.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/schedule/lower.h"
#include "op_schedules.h"

namespace loom::graph {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class CpuBackend final : public LoweredKernelBackend {
 public:
  CpuBackend(const codegen::TargetInfo& target, const BuildOptions& options)
      : LoweredKernelBackend('k'), target_(target), options_(options) {}
  runtime::KernelDevice device() const override { return runtime::KernelDevice::CPU; }
  std::string unsupported(const Graph& g, const FusedGroup& grp) const override {
    const OpDef& def = op_def(g.node(grp.anchor).op);
    return def.device == runtime::KernelDevice::CPU ? "" : "operator '" + def.name + "' runs on the accelerator only";
  }

  // The kernel library's bytes: exported by the LLVM backend to a temporary shared object. A GPU
  // model without CPU kernels has none (and needs no LLVM to build).
  void write(runtime::ModelFile& file) override {
    if (funcs_.empty() && options_.cuda) return;
    auto lib = std::filesystem::temp_directory_path() / ("loom_build_" + std::to_string(::getpid()) + "_" +
                                                         std::to_string(reinterpret_cast<uintptr_t>(this)) + ".so");
    try {
      codegen::export_library(funcs_, lib.string(), options_.llvm);
    } catch (...) {
      std::filesystem::remove(lib);
      throw;
    }
    file.library = read_file(lib.string());
    std::filesystem::remove(lib);
  }

 private:
  void schedule_group(const Graph& g, const Node& anchor, schedule::Schedule& s, const ir::Tensor& out) const override {
    const OpDef& def = op_def(anchor.op);
    if (def.schedule_cpu)
      def.schedule_cpu(CpuScheduleContext{g, anchor, s, out, target_, options_});
    else
      ops::schedule_generic_cpu(s, out, target_.float32_lanes());
  }
  schedule::LowerOptions lower_options() const override {
    schedule::LowerOptions lo;
    lo.min_parallel_work = options_.min_parallel_work;
    lo.parallel_work_hints = options_.parallel_work_hints;
    lo.vector_bits = target_.vector_bits;
    return lo;
  }

  codegen::TargetInfo target_;
  const BuildOptions& options_;
};

}  // namespace

std::unique_ptr<KernelBackend> make_cpu_backend(const codegen::TargetInfo& target, const BuildOptions& options) {
  return std::make_unique<CpuBackend>(target, options);
}

}  // namespace loom::graph
