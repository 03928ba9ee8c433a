// The GPU's KernelBackend: a group scheduled by its anchor's OpDef::schedule_cuda (else
// ops::schedule_cuda_generic), lowered for the GPU (LowerOptions::target_gpu) and compiled by
// NVRTC into the model's CUDA program. Groups holding an operator without a GPU kernel
// (OpDef::cuda) or int8 data stay off the GPU.
#include "kernel_backend.h"
#include "loom/ops/cuda_schedules.h"
#include "loom/schedule/lower.h"
#include "op_schedules.h"

namespace loom::graph {

namespace {

class CudaBackend final : public LoweredKernelBackend {
 public:
  explicit CudaBackend(const codegen::cuda::CudaOptions& options) : LoweredKernelBackend('g'), options_(options) {}
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

  void write(runtime::ModelFile& file) override {
    if (!funcs_.empty()) file.cuda_program = codegen::cuda::build(funcs_, options_).serialize();
  }

 private:
  void schedule_group(const Graph& g, const Node& anchor, schedule::Schedule& s, const ir::Tensor& out) const override {
    const OpDef& def = op_def(anchor.op);
    if (def.schedule_cuda)
      def.schedule_cuda(CudaScheduleContext{g, anchor, s, out, options_});
    else
      ops::schedule_cuda_generic(s, 256);
  }
  schedule::LowerOptions lower_options() const override {
    schedule::LowerOptions lo;
    lo.target_gpu = true;
    return lo;
  }

  codegen::cuda::CudaOptions options_;
};

}  // namespace

std::unique_ptr<LoweredKernelBackend> make_cuda_backend(const codegen::cuda::CudaOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

}  // namespace loom::graph
