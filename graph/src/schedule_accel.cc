// Accelerator schedules of the accelerator partition's operators (OpDef::schedule_accel): each
// node is one accelerator kernel, tiled by the public choosers of loom/ops/accel_schedules.h (or,
// for a conv2d, by a tiling the build options give, e.g. from a tuning log).
#include "accel_ops.h"
#include "loom/runtime/error.h"
#include "op_schedules.h"

namespace loom::graph {

void schedule_accel_conv2d(AccelScheduleContext& c) {
  ops::QuantizedStages q = accel_conv2d_stages(c.n, c.in, c.name);
  c.s = std::make_unique<schedule::Schedule>(std::vector<ir::Tensor>{q.out});
  // accel_conv2d always adds its (folded) bias
  ops::ConvShape shape = ops::conv_shape_of(q, int(c.n.attrs.get_int("stride")), true);
  std::optional<ops::AccelConvTiling> tiling = c.conv_tiling ? c.conv_tiling(shape) : std::nullopt;
  if (tiling) {
    try {
      ops::check_conv_tiling(shape, *tiling, c.target.limits);
    } catch (const ScheduleError& e) {
      LOOM_THROW(ScheduleError, "the tiling given for this conv2d (e.g. by a tuning log) is not usable: ", e.what());
    }
  }
  ops::schedule_conv2d_int8_accel(*c.s, q, c.target.blocking,
                                  tiling ? *tiling : ops::choose_conv_tiling(shape, 2, c.target.limits));
  c.result = q.out;
}

void schedule_accel_dense(AccelScheduleContext& c) {
  ops::QuantizedStages q = accel_dense_stages(c.n, c.in, c.name);
  c.s = std::make_unique<schedule::Schedule>(std::vector<ir::Tensor>{q.out});
  const Shape& x = c.g.type_of(c.n.inputs[0]).shape;
  ops::schedule_dense_int8_accel(*c.s, q, c.target.blocking,
                                 ops::choose_dense_tiling({.batch_blocks = int(x[0]),
                                                           .ic_blocks = int(x[1]),
                                                           .oc_blocks = int(c.n.type.shape[1]),
                                                           .channel_shifts = c.n.inputs.size() > 3},
                                                          2, c.target.limits));
  c.result = q.out;
}

void schedule_accel_add(AccelScheduleContext& c) {
  ops::AddWidenStages a = accel_add_stages(c.n, c.in, c.name);
  c.s = std::make_unique<schedule::Schedule>(std::vector<ir::Tensor>{a.q.out});
  const Shape& out = c.n.type.shape;
  ops::schedule_add_int8_accel(
      *c.s, a, c.target.blocking,
      ops::choose_add_tiling({.out_h = int(out[2]), .out_w = int(out[3]), .channel_blocks = int(out[1])}, 2,
                             c.target.limits));
  c.result = a.q.out;
}

}  // namespace loom::graph
