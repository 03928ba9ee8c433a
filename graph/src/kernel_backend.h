// Internal to loom_graph: one KernelBackend per device a fused group can run on. A backend says
// whether a group can run on its device (and why not), schedules and lowers the group with its
// hook (OpDef::schedule_cpu / schedule_cuda / schedule_accel) and lowering options, compiles its
// functions, and writes its section of the model file:
//   CPU          kernel_backend_cpu.cc    LLVM, the shared kernel library ("KLIB")
//   CUDA         kernel_backend_cuda.cc   NVRTC, the CUDA program ("CUDA")
//   accelerator  kernel_backend_accel.cc  one stream per kernel in the linked accelerator image
// build_placement.cc chooses a device per group; compile_kernels (build_kernels.cc) hands each
// group to its device's backend.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/graph/build.h"
#include "loom/runtime/executor_graph.h"
#include "loom/runtime/model_file.h"
#include "loom/schedule/lower.h"

namespace loom::graph {

class AccelBuild;

class KernelBackend {
 public:
  virtual ~KernelBackend() = default;
  virtual runtime::KernelDevice device() const = 0;
  // Why the group cannot run on this device; empty when it can.
  virtual std::string unsupported(const Graph& g, const FusedGroup& grp) const = 0;
  // Compiles the group (a backend may reuse the function of an identical group): fills call.func
  // and the device's fields of `call`, and returns the report of the kernel it calls.
  virtual KernelReport& compile(const Graph& g, const FusedGroup& grp, size_t k, runtime::KernelCall& call) = 0;
  // Writes this device's section of the model file.
  virtual void write(runtime::ModelFile& file) = 0;
  // The distinct kernels compiled, in order.
  const std::vector<KernelReport>& reports() const { return reports_; }

 protected:
  std::vector<KernelReport> reports_;
};

// A backend whose kernels are lowered functions (the CPU's, the GPU's): the group's tensor
// expressions scheduled by the backend and lowered with its options. Identical groups share one
// function, named PREFIX<n>_<ops> ("k3_conv2d_add_relu").
class LoweredKernelBackend : public KernelBackend {
 public:
  KernelReport& compile(const Graph& g, const FusedGroup& grp, size_t k, runtime::KernelCall& call) final;
  // The functions compiled, in order (for the GPU's: BuildResult::cuda_funcs, the grid interpreter's).
  const std::vector<ir::LoweredFunc>& funcs() const { return funcs_; }

 protected:
  explicit LoweredKernelBackend(char prefix) : prefix_(prefix) {}
  // Schedules the stages of a group anchored by `anchor` whose output is `out`.
  virtual void schedule_group(const Graph& g, const Node& anchor, schedule::Schedule& s,
                              const ir::Tensor& out) const = 0;
  virtual schedule::LowerOptions lower_options() const = 0;

  std::vector<ir::LoweredFunc> funcs_;

 private:
  // Lowers the group (of `g`, or of the graph at a point) into funcs_ as `name`.
  void lower_group(const Graph& g, const FusedGroup& grp, const std::string& name);

  char prefix_;
  std::map<std::string, size_t> report_of_key_;                     // group_key -> index in reports_
  std::map<size_t, std::vector<runtime::KernelVariant>> variants_;  // per report
  // The build's graph with one shape variable at a value (the others at their maxima).
  std::map<std::pair<std::string, int64_t>, Graph> at_;
};

// The backends of a build's targets: the CPU always, CUDA with BuildOptions::cuda, the
// accelerator when the accelerator partition placed a group there (`accel` is the image's build).
struct KernelBackends {
  std::unique_ptr<KernelBackend> cpu;
  std::unique_ptr<LoweredKernelBackend> cuda;
  std::unique_ptr<KernelBackend> accel;
  KernelBackend* of(runtime::KernelDevice device) const;  // null: not a target of this build
};
std::unique_ptr<KernelBackend> make_cpu_backend(const codegen::TargetInfo& target, const BuildOptions& options);
std::unique_ptr<LoweredKernelBackend> make_cuda_backend(const codegen::cuda::CudaOptions& options);
std::unique_ptr<KernelBackend> make_accel_backend(AccelBuild& image);

// Helpers the backends share (build_kernels.cc).
// A key equal for two groups that compute the same function of their inputs.
std::string group_key(const Graph& g, const FusedGroup& grp);
// The group's nodes' operators or names joined by '+' ("conv2d+add+relu").
std::string group_ops(const Graph& g, const FusedGroup& grp);
std::string group_names(const Graph& g, const FusedGroup& grp);
// A C identifier made of a node name.
std::string sanitize(const std::string& name);
// The group's tensor expressions: a placeholder per input, then its output (the function's arguments).
std::vector<ir::Tensor> group_tensors(const Graph& g, const FusedGroup& grp);

}  // namespace loom::graph
