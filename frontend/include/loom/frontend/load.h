// Loading a model by name or file, and the inputs post-training quantization calibrates on: what
// `loom compile --calibrate`, `loom tune model`, `loom dse --model` and `loom regress` share.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/runtime/ndarray.h"

namespace loom::frontend {

// A built-in model (resnet18, resnet50, mobilenet_v2, mlp) at batch x image, or an ONNX file (a
// file of that name wins); an Error naming it if it is neither.
graph::Graph load_model(const std::string& model, int64_t batch, int64_t image);

// `spec`: a number of deterministic random inputs (uniform in [-1, 1]), or a folder of .npy
// files, each one input of a single-input model (sorted by name).
std::vector<std::vector<NDArray>> calibration_set(const std::string& spec, graph::Graph g);

}  // namespace loom::frontend
