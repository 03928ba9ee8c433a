// The float model compiled once with every calibration point as an output (then the model's own
// outputs): calibration reads the points, the accuracy report both.
#pragma once
#include <optional>
#include <vector>

#include "loom/graph/quantize.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {

struct Observer {
  Observer(const Graph& g, const QuantizeAnnotation& annotation, const QuantizeOptions& options);
  // The outputs for one set of graph inputs: the points (annotation order), then the rest.
  // ModelError naming the set and input when the count of tensors is wrong.
  std::vector<NDArray> run(const Graph& g, const std::vector<NDArray>& in, size_t index, const char* set);

  size_t points = 0;              // the first outputs
  std::vector<int> model_output;  // output k of the model is output model_output[k] of the observer
  std::optional<runtime::GraphExecutor> executor;
};

// A graph (the float model, or a quantized one) compiled for the CPU with the quantizer's LLVM
// options, as calibration, the accuracy report and the mixed-precision chooser run them.
runtime::ModelFile cpu_model_file(const Graph& g, const QuantizeOptions& options);

std::vector<PointCalibration> calibrate_observed(const Graph& g, const QuantizeAnnotation& annotation,
                                                 Observer& observer, const std::vector<std::vector<NDArray>>& inputs,
                                                 const QuantizeOptions& options);

}  // namespace loom::graph
