// Quantization's accuracy report: the quantized model on the CPU beside the float model.
#pragma once
#include <vector>

#include "loom/graph/quantize.h"
#include "observer.h"

namespace loom::graph {

QuantizeReport check_quantization(const QuantizeResult& q, Observer& observer,
                                  const std::vector<std::vector<NDArray>>& calibration,
                                  const std::vector<std::vector<NDArray>>& held_out, const QuantizeOptions& options,
                                  const AccuracyThresholds& thresholds, const QuantizedBuild& build_quantized);

}  // namespace loom::graph
