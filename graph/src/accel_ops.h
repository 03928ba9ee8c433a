// Internal to loom_graph: the accelerator partition's operators (op_registry_accel.cc).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "loom/graph/op_registry.h"
#include "loom/ops/quantized.h"

namespace loom::graph {

// The stages of an accel_conv2d node, for scheduling it onto the accelerator.
ops::QuantizedStages accel_conv2d_stages(const Node& n, const std::vector<ir::Tensor>& in, const std::string& name);
ops::QuantizedStages accel_dense_stages(const Node& n, const std::vector<ir::Tensor>& in, const std::string& name);
ops::AddWidenStages accel_add_stages(const Node& n, const std::vector<ir::Tensor>& in, const std::string& name);

}  // namespace loom::graph
