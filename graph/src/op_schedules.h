// Internal to loom_graph: the schedule hooks of OpDef (op_registry.h) and what they see. The
// build (build_kernels.cc, build_accel.cc) makes a context per fused group and calls the hook of
// the group's anchor operator; the operator families register their hooks.
//   schedule_cpu_nn.cc   conv2d (blocked, depthwise, NCHW with packed weights), dense, matmul
//   schedule_cuda.cc     conv2d (register-tiled direct convolution)
//   schedule_accel.cc    accel_conv2d, accel_dense, accel_add
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph/build.h"
#include "loom/ops/accel_target.h"
#include "loom/schedule/schedule.h"

namespace loom::graph {

struct CpuScheduleContext {
  const Graph& g;
  const Node& anchor;     // the group's anchor node
  schedule::Schedule& s;  // the group's stages
  ir::Tensor out;         // the group's output
  const codegen::TargetInfo& target;
  const BuildOptions& options;
};

struct CudaScheduleContext {
  const Graph& g;
  const Node& anchor;     // the group's anchor node
  schedule::Schedule& s;  // the group's stages
  ir::Tensor out;         // the group's output
  const codegen::cuda::CudaOptions& cuda;
};

using AccelConvTilingFn = decltype(BuildOptions::accel_conv_tiling);

struct AccelScheduleContext {
  const Graph& g;
  const Node& n;
  const std::vector<ir::Tensor>& in;  // placeholders for the node's inputs
  const std::string& name;
  const ops::AccelTarget& target;
  const AccelConvTilingFn& conv_tiling;  // BuildOptions::accel_conv_tiling (may be empty)
  // Set by the hook: the schedule and the tensor it computes.
  std::unique_ptr<schedule::Schedule> s;
  ir::Tensor result;
};

void schedule_conv2d_cpu(const CpuScheduleContext& c);
void schedule_conv2d_winograd_cpu(const CpuScheduleContext& c);
void schedule_dense_cpu(const CpuScheduleContext& c);
void schedule_matmul_cpu(const CpuScheduleContext& c);
void schedule_conv2d_cuda(const CudaScheduleContext& c);
void schedule_accel_conv2d(AccelScheduleContext& c);
void schedule_accel_dense(AccelScheduleContext& c);
void schedule_accel_add(AccelScheduleContext& c);

}  // namespace loom::graph
