#include "build_accel.h"

#include <memory>

#include "loom/codegen/accel.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"
#include "op_schedules.h"

namespace loom::graph {

uint64_t AccelBuild::place(const Graph& g, int id) {
  auto it = offset_.find(id);
  if (it != offset_.end()) return it->second;
  const Node& n = g.node(id);
  return offset_[id] = linker_.reserve(g.type_of(id).nbytes(), n.is_constant() ? n.value.raw_data() : nullptr);
}

size_t AccelBuild::compile_group(const Graph& g, const FusedGroup& grp, const std::string& name) {
  const Node& n = g.node(grp.anchor);
  const OpDef& def = op_def(n.op);
  if (grp.nodes.size() != 1 || def.device != runtime::KernelDevice::Accel || !def.schedule_accel)
    LOOM_THROW(InternalError, "accelerator group of node '", n.name, "' is not a single accelerator operator");
  std::vector<ir::Tensor> in;
  for (int i : n.inputs) {
    std::vector<ir::Expr> shape;
    for (int64_t d : g.type_of(i).shape) shape.push_back(ir::Expr(int(d)));
    in.push_back(ir::placeholder(shape, g.type_of(i).dtype, "in" + std::to_string(in.size())));
  }
  AccelScheduleContext c{g, n, in, name, target_, conv_tiling_, nullptr, ir::Tensor()};
  def.schedule_accel(c);
  std::vector<ir::Tensor> args = in;
  args.push_back(c.result);
  ir::LoweredFunc f = schedule::lower(*c.s, args, name);
  std::vector<uint64_t> offsets;
  for (int i : n.inputs) offsets.push_back(place(g, i));
  offsets.push_back(place(g, grp.output));
  return codegen::emit_accel(f, linker_, offsets, name);
}

}  // namespace loom::graph
