// Layer-by-layer comparison of a model's compiled variants against a reference: every operator's
// value made an output, and the error measure `loom compare` and loom.compare (Python) report.
#pragma once
#include <string>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/runtime/ndarray.h"

namespace loom::graph {

// The error of one layer's value: the largest |got - want| over the reference's finite elements,
// divided by the largest |want| there (the difference itself where that is 0); infinity where
// `got` has a NaN or infinity the reference has not at that element (a divergence, never "within
// tolerance"). ShapeError when the shapes differ.
double layer_error(const NDArray& got, const NDArray& want);

// A graph with the value of every operator node (a layer) as an output too, after the model's own.
struct TappedGraph {
  Graph graph;
  std::vector<std::string> layers;  // the tapped nodes' names, in topological order
  std::vector<size_t> output;       // per layer: which output of `graph` holds its value
  size_t model_outputs = 0;         // the model's own outputs come first
};
// `g` is typed (infer_types) first. Layers whose value is already a model output reuse it.
TappedGraph tap_every_layer(Graph g);
// The same for the nodes `nodes` alone, in the order given (each an operator node: ModelError
// otherwise).
TappedGraph tap_nodes(Graph g, const std::vector<int>& nodes);

}  // namespace loom::graph
