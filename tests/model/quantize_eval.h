// Helpers for quantization tests: deterministic random inputs, compiling a graph for the host,
// and how closely a quantized model's outputs follow the float model's.
#pragma once
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/runtime/graph_executor.h"

namespace loom::test {

inline std::vector<std::vector<NDArray>> random_inputs(const graph::Graph& g, int n, uint64_t seed) {
  std::vector<std::vector<NDArray>> sets;
  for (int i = 0; i < n; ++i) {
    std::vector<NDArray> one;
    for (int in : g.inputs) one.push_back(random_float32(g.node(in).type.shape, seed + 1000 * i + in));
    sets.push_back(one);
  }
  return sets;
}

inline runtime::GraphExecutor compile(const graph::Graph& g) {
  return runtime::GraphExecutor::from_model_file(graph::build(g).file, g.name);
}

inline double cosine(const NDArray& a, const NDArray& b) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get_as_double(i), y = b.get_as_double(i);
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return ab / std::sqrt(aa * bb);
}

inline int64_t argmax(const NDArray& a, int64_t row, int64_t len) {
  int64_t best = 0;
  for (int64_t k = 1; k < len; ++k)
    if (a.get_as_double(row * len + k) > a.get_as_double(row * len + best)) best = k;
  return best;
}

struct Agreement {
  double cosine_min = 1, cosine_mean = 0;
  int top1_agree = 0, inputs = 0;
  std::string str() const {
    char s[160];
    std::snprintf(s, sizeof s, "cosine mean %.5f min %.5f, top-1 agreement %d/%d", cosine_mean, cosine_min, top1_agree,
                  inputs);
    return s;
  }
};

// The float model's first output for every input: computed once, compared with each quantized
// variant (int8_agreement below).
inline std::vector<NDArray> first_outputs(const graph::Graph& g, const std::vector<std::vector<NDArray>>& inputs) {
  auto ex = compile(g);
  std::vector<NDArray> out;
  for (const auto& in : inputs) out.push_back(ex.run(in)[0]);
  return out;
}

// Runs the quantized model (compiled for the host) on every input; its first output's rows of
// `classes` are compared with the float model's (cosine of the whole output, argmax per row).
inline Agreement int8_agreement(const std::vector<NDArray>& float_outputs, const graph::Graph& q,
                                const std::vector<std::vector<NDArray>>& inputs, int64_t classes) {
  auto b = compile(q);
  Agreement r;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i];
    NDArray x = float_outputs[i], y = b.run(in)[0];
    double c = cosine(x, y);
    r.cosine_min = std::min(r.cosine_min, c);
    r.cosine_mean += c / inputs.size();
    for (int64_t row = 0; row < x.numel() / classes; ++row) {
      r.top1_agree += argmax(x, row, classes) == argmax(y, row, classes);
      ++r.inputs;
    }
  }
  return r;
}
inline Agreement int8_agreement(const graph::Graph& fp, const graph::Graph& q,
                                const std::vector<std::vector<NDArray>>& inputs, int64_t classes) {
  return int8_agreement(first_outputs(fp, inputs), q, inputs, classes);
}

}  // namespace loom::test
