// Quantization driver: the float passes BatchNorm folding and dense layers need, then annotate -> calibrate ->
// realize (see quantize.h).
#include <chrono>
#include <cstdio>
#include <sstream>

#include "loom/graph/op_registry.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"

namespace loom::graph {

QuantizeResult quantize(Graph g, const std::vector<std::vector<NDArray>>& calibration_inputs,
                        const QuantizeOptions& options) {
  infer_types(g);
  simplify_inference(g);
  fold_constants(g);
  dense_from_matmul(g);
  eliminate_dead_nodes(g);
  QuantizeResult r;
  r.annotation = annotate_quantization(g, options);
  auto t0 = std::chrono::steady_clock::now();
  r.calibration = calibrate(g, r.annotation, calibration_inputs, options);
  r.calibration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node& n = g.nodes[id];
    if (!n.is_op() || op_def(n.op).layer == WeightedLayer::None) continue;
    (r.annotation.role[id] == QuantRole::Accumulate ? r.quantized_layers : r.float_layers)++;
  }
  r.graph = realize_quantization(g, r.annotation, r.calibration, options);
  return r;
}

std::string QuantizeResult::str() const {
  std::ostringstream os;
  os << quantized_layers << " conv2d/dense layers in int8, " << float_layers << " in float; calibration "
     << calibration_seconds << " s\n";
  os << "  point   max|x|       threshold    exponent\n";
  char line[128];
  for (const auto& p : calibration) {
    std::snprintf(line, sizeof line, "  %%%-5d  %-11.4g  %-11.4g  %d\n", p.node, p.max_abs, p.threshold, p.exponent);
    os << line;
  }
  return os.str();
}

}  // namespace loom::graph
