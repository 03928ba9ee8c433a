// Quantization's accuracy report: the quantized model on the CPU beside the float model.
#pragma once
#include <vector>

#include "loom/graph/quantize.h"
#include "observer.h"

namespace loom::graph {

// The cosine of two vectors from their sums (dot = f.q, ff = f.f, qq = q.q): 1 when both are all
// zero, 0 when only one is.
double cosine(double dot, double ff, double qq);

QuantizeReport check_quantization(const QuantizeResult& q, Observer& observer,
                                  const std::vector<std::vector<NDArray>>& calibration,
                                  const std::vector<std::vector<NDArray>>& held_out, const QuantizeOptions& options,
                                  const AccuracyThresholds& thresholds, const QuantizedBuild& build_quantized);

}  // namespace loom::graph
