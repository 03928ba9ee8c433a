// Loading a model by name or file, and the inputs post-training quantization calibrates on and is
// checked against: what `loom compile --calibrate`, `loom tune model`, `loom dse --model` and
// `loom regress` share.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/runtime/ndarray.h"

namespace loom::frontend {

// A built-in model (resnet18, resnet50, mobilenet_v2, mlp) at batch x image, or an ONNX file (a
// file of that name wins); a ModelError naming it if it is neither.
graph::Graph load_model(const std::string& model, int64_t batch, int64_t image);

// What random inputs are drawn from: normal(mean, std) or uniform(lo, hi), per element.
struct InputDistribution {
  enum class Kind { Normal, Uniform };
  Kind kind = Kind::Normal;
  double a = 0, b = 1;  // Normal: mean and standard deviation; Uniform: the bounds
  // "normal(0, 1)", "uniform(-1, 1)"; also the spellings "normal" and "uniform" (the standard ones).
  static InputDistribution parse(const std::string& text, const std::string& what);
  std::string str() const;
  void fill(NDArray& a, uint64_t seed) const;  // integer types: the draws rounded
};

// The distribution random inputs of input `k` of `g` are drawn from: `chosen` when given; else the
// one the model records (metadata "loom.input_distribution.NAME", as InputDistribution::parse
// reads it); else normal(0, 1) (what networks are trained on: normalized images, embeddings) for
// float inputs and uniform(-1, 1) rounded for integer ones. ModelError for malformed metadata.
InputDistribution input_distribution(const graph::Graph& g, size_t k,
                                     const std::optional<InputDistribution>& chosen = std::nullopt);

// Inputs for calibration and for the held-out check of a quantized model.
struct CalibrationSets {
  std::vector<std::vector<NDArray>> calibration, held_out;  // each entry a full set of graph inputs
  std::string calibration_source, held_out_source;          // what they are, for reports
};

// `spec`: a number of random inputs in [1, 10000] (drawn from input_distribution), or a folder of
// .npy files, each one input of a single-input model (sorted by name).
// `held_out`: "auto" (a random calibration: as many other draws of the same distribution; a
// folder: every fourth file, when it has at least four, the rest calibrate), "0" (none), a
// number of random inputs, or a folder of .npy files. Error naming the option and what is wrong.
CalibrationSets calibration_sets(const std::string& spec, const std::string& held_out, graph::Graph g,
                                 const std::optional<InputDistribution>& chosen = std::nullopt);
// `count` random calibration inputs (in [1, 10000]) and `held_out` other ones (0: none), drawn as
// calibration_sets draws a number of them; never read from a folder of that name.
CalibrationSets random_calibration_sets(graph::Graph g, int count, int held_out,
                                        const std::optional<InputDistribution>& chosen = std::nullopt);
// Checks `spec` and `held_out` as calibration_sets reads them, before there is a model: an Error
// naming the option (--calibrate, --holdout) for a count out of range or a path that is no folder.
void check_calibration_options(const std::string& spec, const std::string& held_out);
// The calibration set alone (no held-out inputs).
std::vector<std::vector<NDArray>> calibration_set(const std::string& spec, graph::Graph g,
                                                  const std::optional<InputDistribution>& chosen = std::nullopt);
// `g` quantized to int8 as `loom compile --quantize int8` quantizes it, calibrated on one random
// input: enough for what depends on shapes alone, such as which kernels a build compiles (`loom
// tune model`, loom.tune.model_templates).
graph::Graph quantized_for_shapes(graph::Graph g);

}  // namespace loom::frontend
