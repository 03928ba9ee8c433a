// Internal to loom_graph: the steps of graph::build after the graph passes, each in its own file:
//   place_groups     (build_placement.cc) a device per fused group, and the copies between devices
//   plan_values      (build_values.cc)    one executor value per graph input, parameter and kernel
//                                         output; accelerator values get a place in the image
//   compile_kernels  (build_kernels.cc)   hands every fused group to its device's KernelBackend
//                                         (kernel_backend.h) and records the kernel calls
//   serialize        (build_serialize.cc) the parameter blob, the executor graph, and each backend's
//                                         section (kernel library, CUDA program, accelerator image)
#pragma once
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "build_accel.h"
#include "kernel_backend.h"
#include "loom/graph/build.h"
#include "loom/runtime/executor_graph.h"

namespace loom::graph {

// Which device each fused group runs on, and which values cross between devices. The host is the
// hub: a value made on a device and read elsewhere (or a model output) is copied to the host after
// its kernel; a value an accelerator or GPU kernel reads that its device did not make is copied
// there before the first such kernel of a run. Constants are there already (the accelerator image
// holds its own, the GPU a copy of the parameter blob).
struct Placement {
  std::vector<runtime::KernelDevice> device;               // per fused group
  std::map<int, runtime::KernelDevice> made_on;            // node id -> the device of the kernel making it
  std::map<int, std::set<runtime::KernelDevice>> read_on;  // node id -> devices reading it (outputs: the CPU)
  std::vector<std::vector<int>> upload, download;          // per fused group: node ids copied before / after
  std::vector<std::string> cpu_fallback;                   // "node (ops): why it is not on the GPU"

  bool made_by(int id, runtime::KernelDevice d) const;
  bool read_by(int id, runtime::KernelDevice d) const;
  bool read_off(int id, runtime::KernelDevice d) const;  // read by a kernel on another device, or an output
};
// The device of every group (the default rules, then BuildOptions::placement), checked against what
// each device's backend can run; errors name the node.
Placement place_groups(const Graph& g, const FusionPlan& fusion, const KernelBackends& backends,
                       const BuildOptions& options);

struct ValuePlan {
  runtime::ExecutorGraph exec;   // storages, values, inputs and outputs; kernels come next
  std::map<int, int> value_of;   // node id -> executor value id
  std::vector<int> param_nodes;  // constants in the parameter blob, at their ExecutorValue::param_offset
  uint64_t params_bytes = 0;
};
// `accel`: the accelerator image's build when any group runs there (values it touches get a place).
ValuePlan plan_values(const Graph& g, const FusionPlan& fusion, const MemoryPlan& memory, const Placement& placement,
                      AccelBuild* accel);

KernelBackends make_backends(const codegen::TargetInfo& target, const BuildOptions& options, AccelBuild* accel);

// Appends one KernelCall per fused group to plan.exec.kernels, compiled by its device's backend;
// returns the distinct kernels.
std::vector<KernelReport> compile_kernels(const Graph& g, const FusionPlan& fusion, const Placement& placement,
                                          ValuePlan& plan, KernelBackends& backends, const BuildOptions& options);

// The parameter blob and the executor graph, then each backend's section.
runtime::ModelFile serialize(const Graph& g, ValuePlan& plan, KernelBackends& backends);

}  // namespace loom::graph
