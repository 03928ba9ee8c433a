// The CPU's KernelBackend: a group scheduled by its anchor's OpDef::schedule_cpu (else the generic
// CPU schedule), lowered with the parallel-work options, and compiled by the LLVM backend into the
// model's kernel library. Identical groups share one function.
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

class CpuBackend final : public KernelBackend {
 public:
  CpuBackend(const codegen::TargetInfo& target, const BuildOptions& options) : target_(target), options_(options) {}
  runtime::KernelDevice device() const override { return runtime::KernelDevice::CPU; }
  std::string unsupported(const Graph& g, const FusedGroup& grp) const override {
    const OpDef& def = op_def(g.node(grp.anchor).op);
    return def.device == runtime::KernelDevice::CPU ? "" : "operator '" + def.name + "' runs on the accelerator only";
  }

  KernelReport& compile(const Graph& g, const FusedGroup& grp, size_t, runtime::KernelCall& call) override {
    auto [it, is_new] = report_of_key_.emplace(group_key(g, grp), reports_.size());
    if (is_new) {
      std::string ops = group_ops(g, grp);
      std::string name = std::string("k").append(std::to_string(funcs_.size())) + "_" + sanitize(ops);
      funcs_.push_back(lower(g, grp, name));
      reports_.push_back({name, ops, 0, runtime::KernelDevice::CPU});
    }
    call.func = reports_[it->second].func;
    return reports_[it->second];
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
  ir::LoweredFunc lower(const Graph& g, const FusedGroup& grp, const std::string& name) const {
    std::vector<ir::Tensor> args = group_tensors(g, grp);
    ir::Tensor out = args.back();
    schedule::Schedule s({out});
    const Node& anchor = g.node(grp.anchor);
    const OpDef& def = op_def(anchor.op);
    if (def.schedule_cpu)
      def.schedule_cpu(CpuScheduleContext{g, anchor, s, out, target_, options_});
    else
      ops::schedule_generic_cpu(s, out, target_.float32_lanes());
    schedule::LowerOptions lo;
    lo.min_parallel_work = options_.min_parallel_work;
    lo.parallel_work_hints = options_.parallel_work_hints;
    return schedule::lower(s, args, name, lo);
  }

  codegen::TargetInfo target_;
  const BuildOptions& options_;
  std::vector<ir::LoweredFunc> funcs_;
  std::map<std::string, size_t> report_of_key_;
};

}  // namespace

std::unique_ptr<KernelBackend> make_cpu_backend(const codegen::TargetInfo& target, const BuildOptions& options) {
  return std::make_unique<CpuBackend>(target, options);
}

}  // namespace loom::graph
