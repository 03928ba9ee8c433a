#include "build_steps.h"

#include "loom/graph/op_registry.h"

namespace loom::graph {

ValuePlan plan_values(const Graph& g, const FusionPlan& fusion, const MemoryPlan& memory, const Placement& placement,
                      AccelBuild* accel) {
  using runtime::KernelDevice;
  ValuePlan plan;
  runtime::ExecutorGraph& exec = plan.exec;
  exec.model = g.name;
  exec.shape_vars = g.shape_vars;
  exec.storages = memory.storage_bytes;
  exec.planned_bytes = memory.planned_bytes();
  exec.unplanned_bytes = memory.unplanned_bytes;
  auto add_value = [&](int id, runtime::ValueKind kind) -> runtime::ExecutorValue& {
    const TensorType& t = g.type_of(id);
    runtime::ExecutorValue v;
    v.name = g.node(id).name;
    v.shape = t.shape;
    v.dims = t.dims;
    v.dtype = t.dtype;
    v.kind = kind;
    if (placement.made_by(id, KernelDevice::Accel) || placement.read_by(id, KernelDevice::Accel)) {
      v.accel_offset = static_cast<int64_t>(accel->place(g, id));
      v.accel_bits = accel->narrow_bits(g, id);
    }
    plan.value_of[id] = static_cast<int>(exec.values.size());
    exec.values.push_back(std::move(v));
    return exec.values.back();
  };
  // A quantized model's float inputs must be finite: int8 layers have no NaN.
  bool quantized = false;
  for (const Node& n : g.nodes) quantized |= n.is_op() && (n.op == "quantize" || n.op == "fake_quantize");
  for (int id : g.inputs) {
    runtime::ExecutorValue& v = add_value(id, runtime::ValueKind::Input);
    v.finite_only = quantized && g.type_of(id).dtype.is_float();
    v.storage = exec.storages.size();
    exec.storages.push_back(runtime::aligned_bytes(g.type_of(id).nbytes()));
  }
  for (const auto& [id, devices] : placement.read_on) {
    if (!g.node(id).is_constant()) continue;
    if (!placement.read_off(id,
                            KernelDevice::Accel)) {  // only accelerator kernels read it: it lives in the image alone
      add_value(id, runtime::ValueKind::AccelParam);
      continue;
    }
    plan.param_nodes.push_back(id);
    add_value(id, runtime::ValueKind::Param).param_offset = plan.params_bytes;
    plan.params_bytes += runtime::aligned_bytes(g.type_of(id).nbytes());
  }
  for (auto& grp : fusion.groups) {
    runtime::ExecutorValue& v = add_value(grp.output, runtime::ValueKind::Temp);
    v.storage = static_cast<uint64_t>(memory.storage_of[grp.output]);
    v.storage_offset = memory.offset_of[grp.output];
    v.in_place_region = memory.region_of[size_t(grp.output)] >= 0;
  }
  for (int id : g.inputs) exec.inputs.push_back(plan.value_of.at(id));
  for (int id : g.outputs) exec.outputs.push_back(plan.value_of.at(id));
  return plan;
}

}  // namespace loom::graph
