#include "loom/graph/layer_compare.h"

#include <cmath>
#include <limits>
#include <map>

#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph {

double layer_error(const NDArray& got, const NDArray& want) {
  if (got.shape() != want.shape())
    LOOM_THROW(ShapeError, "layer_error: shapes ", shape_str(got.shape()), " and ", shape_str(want.shape()), " differ");
  double scale = 0, diff = 0;
  const int64_t n = want.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double w = want.get_as_double(i), g = got.get_as_double(i);
    if (!std::isfinite(w)) {
      if (!(g == w || (std::isnan(g) && std::isnan(w)))) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (!std::isfinite(g)) return std::numeric_limits<double>::infinity();
    scale = std::max(scale, std::abs(w));
    diff = std::max(diff, std::abs(g - w));
  }
  return scale > 0 ? diff / scale : diff;
}

TappedGraph tap_every_layer(Graph g) {
  std::vector<int> ops;
  for (int id : g.topological_order())
    if (g.node(id).is_op()) ops.push_back(id);
  return tap_nodes(std::move(g), ops);
}

TappedGraph tap_nodes(Graph g, const std::vector<int>& nodes) {
  infer_types(g);
  TappedGraph t;
  t.model_outputs = g.outputs.size();
  std::map<int, size_t> at;  // node -> output index
  for (size_t k = 0; k < g.outputs.size(); ++k) at.emplace(g.outputs[k], k);
  for (int id : nodes) {
    if (id < 0 || size_t(id) >= g.nodes.size() || !g.node(id).is_op())
      LOOM_THROW(ModelError, "tap_nodes: node ", id, " is not an operator node of '", g.name, "'");
    const Node& n = g.node(id);
    auto it = at.find(id);
    if (it == at.end()) {
      it = at.emplace(id, g.outputs.size()).first;
      g.outputs.push_back(id);
    }
    t.layers.push_back(n.name);
    t.output.push_back(it->second);
  }
  t.graph = std::move(g);
  return t;
}

}  // namespace loom::graph
