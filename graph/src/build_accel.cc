#include "build_accel.h"

#include <memory>

#include "accel_ops.h"
#include "loom/codegen/accel.h"
#include "loom/ops/accel_schedules.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"

namespace loom::graph {

uint64_t AccelBuild::place(const Graph& g, int id) {
  auto it = offset_.find(id);
  if (it != offset_.end()) return it->second;
  const Node& n = g.node(id);
  return offset_[id] = linker_.reserve(g.type_of(id).nbytes(), n.is_constant() ? n.value.raw_data() : nullptr);
}

size_t AccelBuild::compile_group(const Graph& g, const FusedGroup& grp, const std::string& name) {
  const Node& n = g.node(grp.anchor);
  if (grp.nodes.size() != 1 || !is_accel_op(n.op))
    LOOM_THROW(InternalError, "accelerator group of node '", n.name, "' is not a single accelerator operator");
  std::vector<ir::Tensor> in;
  for (int i : n.inputs) {
    std::vector<ir::Expr> shape;
    for (int64_t d : g.type_of(i).shape) shape.push_back(ir::Expr(int(d)));
    in.push_back(ir::placeholder(shape, g.type_of(i).dtype, "in" + std::to_string(in.size())));
  }
  const Shape& out = n.type.shape;
  const ops::Blocking& blocking = target_.blocking;
  const ops::AccelLimits& limits = target_.limits;
  ir::Tensor result;
  std::unique_ptr<schedule::Schedule> s;
  if (n.op == "accel_conv2d") {
    ops::QuantizedStages q = accel_conv2d_stages(n, in, name);
    s = std::make_unique<schedule::Schedule>(std::vector<ir::Tensor>{q.out});
    const Shape& w = g.type_of(n.inputs[1]).shape;
    ops::ConvShape shape{
        int(out[2]), int(out[3]), int(out[1]), int(w[1]), int(w[2]), int(w[3]), int(n.attrs.get_int("stride")), true};
    std::optional<ops::AccelConvTiling> tiling = conv_tiling_ ? conv_tiling_(shape) : std::nullopt;
    if (tiling) {
      try {
        ops::check_conv_tiling(shape, *tiling, limits);
      } catch (const ScheduleError& e) {
        LOOM_THROW(ScheduleError, "the tiling given for this conv2d (e.g. by a tuning log) is not usable: ", e.what());
      }
    }
    ops::schedule_conv2d_int8_accel(*s, q, blocking, tiling ? *tiling : ops::choose_conv_tiling(shape, 2, limits));
    result = q.out;
  } else if (n.op == "accel_dense") {
    ops::QuantizedStages q = accel_dense_stages(n, in, name);
    s = std::make_unique<schedule::Schedule>(std::vector<ir::Tensor>{q.out});
    const Shape& x = g.type_of(n.inputs[0]).shape;
    ops::schedule_dense_int8_accel(*s, q, blocking,
                                   ops::choose_dense_tiling(int(x[0]), int(x[1]), int(out[1]), 2, limits));
    result = q.out;
  } else {
    ops::AddWidenStages a = accel_add_stages(n, in, name);
    s = std::make_unique<schedule::Schedule>(std::vector<ir::Tensor>{a.q.out});
    ops::schedule_add_int8_accel(*s, a, blocking,
                                 ops::choose_add_tiling(int(out[2]), int(out[3]), int(out[1]), 2, limits));
    result = a.q.out;
  }
  std::vector<ir::Tensor> args = in;
  args.push_back(result);
  ir::LoweredFunc f = schedule::lower(*s, args, name);
  std::vector<uint64_t> offsets;
  for (int i : n.inputs) offsets.push_back(place(g, i));
  offsets.push_back(place(g, grp.output));
  return codegen::emit_accel(f, linker_, offsets, name);
}

}  // namespace loom::graph
