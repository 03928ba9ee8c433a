// Built-in models (like TVM's relay.testing): ResNet-18/50, MobileNetV2 and a small MLP built with
// the graph API, with deterministic random weights (He-uniform convolutions, BatchNorms with
// non-trivial statistics), so the main job and the benchmarks need no model file.
#pragma once
#include <string>
#include <vector>

#include "loom/graph/graph.h"

namespace loom::graph {

std::vector<std::string> builtin_model_names();  // resnet18, resnet50, mobilenet_v2, mlp
// Input: float32[batch, 3, image, image] (mlp: [batch, 256]). ModelError for an unknown name.
Graph builtin_model(const std::string& name, int64_t batch = 1, int64_t image = 224);

}  // namespace loom::graph
