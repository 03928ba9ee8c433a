// A naive interpreter of graphs: every operator written again as plain C++ loops (double
// accumulation), independent of the tensor expressions, schedules and LLVM. It is the reference
// `loom demo` and the tests check compiled built-in models against; it is slow (ResNet-18 takes a
// few seconds), so it is not an executor.
#pragma once
#include <vector>

#include "loom/graph/graph.h"

namespace loom::graph {

// Runs `g` (types inferred; any layout the passes choose) on `inputs`, returns its outputs.
std::vector<NDArray> reference_run(const Graph& g, const std::vector<NDArray>& inputs);

}  // namespace loom::graph
