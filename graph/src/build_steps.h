// Internal to loom_graph: the three steps of graph::build after the graph passes, each in its own
// file:
//   plan_values      (build_values.cc)    one executor value per graph input, parameter and kernel
//                                         output; accelerator values get a place in the image
//   compile_kernels  (build_kernels.cc)   schedules and lowers every fused group (identical CPU
//                                         groups share one function), emits accelerator streams,
//                                         and records the kernel calls
//   serialize        (build_serialize.cc) the parameter blob, the kernel library (LLVM), the
//                                         executor graph and the accelerator image in a ModelFile
#pragma once
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "build_accel.h"
#include "loom/graph/build.h"
#include "loom/runtime/executor_graph.h"

namespace loom::graph {

// Which device each fused group runs on, and which values cross between them.
struct Placement {
  std::vector<bool> on_accel;  // per fused group
  std::set<int> cpu_read, accel_read,
      accel_made;  // node ids: read by the CPU or the caller / read / made on the accelerator
  bool touches_accel(int id) const { return accel_read.count(id) || accel_made.count(id); }
};
Placement place_groups(const Graph& g, const FusionPlan& fusion);

struct ValuePlan {
  runtime::ExecutorGraph exec;   // storages, values, inputs and outputs; kernels come next
  std::map<int, int> value_of;   // node id -> executor value id
  std::vector<int> param_nodes;  // constants in the parameter blob, at their ExecutorValue::param_offset
  uint64_t params_bytes = 0;
  std::unique_ptr<AccelBuild> accel;  // set when any group runs on the accelerator
};
ValuePlan plan_values(const Graph& g, const FusionPlan& fusion, const MemoryPlan& memory, const Placement& placement,
                      const BuildOptions& options);

struct CompiledKernels {
  std::vector<ir::LoweredFunc> funcs;       // the CPU functions, for the kernel library
  std::vector<ir::LoweredFunc> cuda_funcs;  // the GPU functions, for the CUDA program
  std::vector<KernelReport> reports;        // distinct kernels
};
// Appends one KernelCall per fused group to plan.exec.kernels.
CompiledKernels compile_kernels(const Graph& g, const FusionPlan& fusion, const Placement& placement, ValuePlan& plan,
                                const codegen::TargetInfo& target, const BuildOptions& options);

runtime::ModelFile serialize(const Graph& g, ValuePlan& plan, const CompiledKernels& kernels,
                             const BuildOptions& options);

// A C identifier made of a node name.
std::string sanitize(const std::string& name);

}  // namespace loom::graph
