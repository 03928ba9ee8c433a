// How the graph-level builders (resize.h, recurrent.h) add to a graph, so that the ONNX importer
// (naming nodes after the ONNX node, folding small constants) and loom.Graph from Python (checking
// and typing each node) build the same nodes.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/runtime/ndarray.h"

namespace loom::frontend {

struct NodeBuilder {
  // A constant with a name suffix; returns its node.
  std::function<int(NDArray value, const std::string& suffix)> constant;
  // An operator node over existing nodes, typed, with a name suffix; returns its node.
  std::function<int(const std::string& op, const std::vector<int>& inputs, graph::Attrs attrs,
                    const std::string& suffix)>
      op;
  // A node's type.
  std::function<graph::TensorType(int node)> type;
};

}  // namespace loom::frontend
