// The GPU's KernelBackend: a group scheduled by its anchor's OpDef::schedule_cuda (else
// ops::schedule_cuda_generic), lowered for the GPU (LowerOptions::target_gpu) and compiled by
// NVRTC into the model's CUDA program. Identical groups share one function. Groups holding an
// operator without a GPU kernel (OpDef::cuda) or int8 data stay off the GPU.
#include "kernel_backend.h"
#include "loom/ops/cuda_schedules.h"
#include "loom/schedule/lower.h"
#include "op_schedules.h"

namespace loom::graph {

namespace {

class CudaBackend final : public KernelBackend {
 public:
  explicit CudaBackend(const codegen::cuda::CudaOptions& options) : options_(options) {}
  runtime::KernelDevice device() const override { return runtime::KernelDevice::Cuda; }

  std::string unsupported(const Graph& g, const FusedGroup& grp) const override {
    for (int id : grp.nodes) {
      const Node& n = g.node(id);
      if (!op_def(n.op).cuda) return "operator '" + n.op + "' has no GPU kernel";
      if (g.type_of(id).dtype == DataType::Int(8)) return "int8 data has no GPU kernels";
      for (int in : n.inputs)
        if (g.type_of(in).dtype == DataType::Int(8)) return "int8 data has no GPU kernels";
    }
    return "";
  }

  KernelReport& compile(const Graph& g, const FusedGroup& grp, size_t, runtime::KernelCall& call) override {
    auto [it, is_new] = report_of_key_.emplace(group_key(g, grp), reports_.size());
    if (is_new) {
      std::string ops = group_ops(g, grp);
      std::string name = std::string("g").append(std::to_string(funcs_.size())) + "_" + sanitize(ops);
      funcs_.push_back(lower(g, grp, name));
      reports_.push_back({name, ops, 0, runtime::KernelDevice::Cuda});
    }
    call.func = reports_[it->second].func;
    return reports_[it->second];
  }

  void write(runtime::ModelFile& file) override {
    if (!funcs_.empty()) file.cuda_program = codegen::cuda::build(funcs_, options_).serialize();
  }

  const std::vector<ir::LoweredFunc>& funcs() const { return funcs_; }

 private:
  ir::LoweredFunc lower(const Graph& g, const FusedGroup& grp, const std::string& name) const {
    std::vector<ir::Tensor> args = group_tensors(g, grp);
    ir::Tensor out = args.back();
    schedule::Schedule s({out});
    const Node& anchor = g.node(grp.anchor);
    const OpDef& def = op_def(anchor.op);
    if (def.schedule_cuda)
      def.schedule_cuda(CudaScheduleContext{g, anchor, s, out, options_});
    else
      ops::schedule_cuda_generic(s, 256);
    schedule::LowerOptions lo;
    lo.target_gpu = true;
    return schedule::lower(s, args, name, lo);
  }

  codegen::cuda::CudaOptions options_;
  std::vector<ir::LoweredFunc> funcs_;
  std::map<std::string, size_t> report_of_key_;
};

}  // namespace

std::unique_ptr<KernelBackend> make_cuda_backend(const codegen::cuda::CudaOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

const std::vector<ir::LoweredFunc>& cuda_functions(const KernelBackend& cuda) {
  return static_cast<const CudaBackend&>(cuda).funcs();
}

}  // namespace loom::graph
