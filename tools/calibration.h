// The inputs post-training quantization calibrates on (`loom compile --calibrate`, `loom tune
// model --target accel`).
#pragma once
#ifdef LOOM_HAVE_GRAPH
#include <string>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/runtime/ndarray.h"

namespace loom::tools {

// `spec`: a number of deterministic random inputs (uniform in [-1, 1]), or a folder of .npy
// files, each one input of a single-input model (sorted by name).
std::vector<std::vector<NDArray>> calibration_set(const std::string& spec, graph::Graph g);

}  // namespace loom::tools
#endif
