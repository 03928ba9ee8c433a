// Mixed precision: each conv2d/dense layer's weight width chosen from its sensitivity. One
// calibration serves every candidate model (activation exponents come from the float model, not
// from the weights' widths); each candidate is the quantized model compiled for the CPU, which
// the accelerator matches bit for bit, run on the calibration inputs beside the float model.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "loom/graph/build.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "observer.h"
#include "report.h"

namespace loom::graph {

namespace {

runtime::GraphExecutor compiled(const Graph& g, const QuantizeOptions& options, const std::string& what) {
  return runtime::GraphExecutor::from_model_file(cpu_model_file(g, options), what);
}

// The lowest cosine over the outputs of `model` against `want`, each output over the whole set.
double lowest_cosine(runtime::GraphExecutor& model, const std::vector<std::vector<NDArray>>& inputs,
                     const std::vector<std::vector<NDArray>>& want) {
  std::vector<double> dot, qq, ff;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<NDArray> got = model.run(inputs[i]);
    dot.resize(got.size()), qq.resize(got.size()), ff.resize(got.size());
    for (size_t o = 0; o < got.size(); ++o)
      for (int64_t k = 0; k < got[o].numel(); ++k) {
        double q = got[o].get_as_double(k), f = want[i][o].get_as_double(k);
        dot[o] += q * f, qq[o] += q * q, ff[o] += f * f;
      }
  }
  double lowest = 1;
  for (size_t o = 0; o < dot.size(); ++o) {
    const double c = cosine(dot[o], ff[o], qq[o]);
    lowest = std::min(lowest, std::isnan(c) ? 0.0 : c);  // a model that computes NaN agrees with nothing
  }
  return lowest;
}

}  // namespace

WeightBitsChoice choose_weight_bits(const Graph& g, const std::vector<std::vector<NDArray>>& calibration_inputs,
                                    const QuantizeOptions& options, int wide, double min_cosine) {
  options.validate();
  if (wide != 2 && wide != 4 && wide != 8)
    LOOM_THROW(ConfigError, "mixed precision: the wide weights must be 2, 4 or 8 bits, got ", wide);
  if (wide <= options.weight_bits)
    LOOM_THROW(ConfigError, "mixed precision: the wide weights (", wide, " bits) must be wider than weight_bits (",
               options.weight_bits, ")");
  if (!(min_cosine > 0 && min_cosine <= 1))
    LOOM_THROW(ConfigError, "mixed precision: the accuracy budget is a cosine in (0, 1], got ", min_cosine);
  if (!options.layer_weight_bits.empty())
    LOOM_THROW(ConfigError,
               "mixed precision: choose_weight_bits picks every layer's width; give a table of widths "
               "(layer_weight_bits) or a budget, not both");
  if (options.simulated) LOOM_THROW(ConfigError, "mixed precision: chooses among int8 models, not simulated ones");
  QuantizeResult base = quantize(g, calibration_inputs, options);
  std::vector<std::string> layers;
  for (size_t id = 0; id < base.float_graph.nodes.size(); ++id)
    if (base.annotation.role[id] == QuantRole::Accumulate) layers.push_back(base.float_graph.node(int(id)).name);

  WeightBitsChoice choice;
  runtime::GraphExecutor float_model = compiled(base.float_graph, options, "mixed precision: float");
  std::vector<std::vector<NDArray>> want;
  for (const auto& in : calibration_inputs) want.push_back(float_model.run(in));
  auto agreement = [&](const std::map<std::string, int>& widths) {
    QuantizeOptions o = options;
    o.layer_weight_bits = widths;
    Graph q = quantize_calibrated(g, base.calibration, o).graph;
    runtime::GraphExecutor m = compiled(q, options, "mixed precision: candidate");
    ++choice.models_compiled;
    return lowest_cosine(m, calibration_inputs, want);
  };
  auto widened = [&](size_t k) {  // the k most sensitive layers wide (sensitivity ordered)
    std::map<std::string, int> w;
    for (size_t i = 0; i < k; ++i) w[choice.sensitivity[i].layer] = wide;
    return w;
  };

  // Each layer alone at the narrow width, every other one wide.
  std::map<std::string, int> all_wide;
  for (const std::string& l : layers) all_wide[l] = wide;
  for (const std::string& l : layers) {
    std::map<std::string, int> w = all_wide;
    w.erase(l);
    choice.sensitivity.push_back({l, agreement(w)});
  }
  std::stable_sort(choice.sensitivity.begin(), choice.sensitivity.end(),
                   [](const LayerSensitivity& a, const LayerSensitivity& b) { return a.cosine < b.cosine; });
  choice.narrow_cosine = agreement({});
  // The fewest most-sensitive layers widened that meet the budget (a bisection: widening more
  // layers does not lower the agreement much); the agreement reported is the one measured there.
  size_t lo = 0, hi = layers.size();
  double hi_cosine = layers.empty() ? choice.narrow_cosine : agreement(all_wide);
  choice.wide_cosine = hi_cosine;
  choice.met = hi_cosine >= min_cosine || choice.narrow_cosine >= min_cosine;
  if (choice.narrow_cosine >= min_cosine) {
    hi = 0, hi_cosine = choice.narrow_cosine;
  } else if (choice.met) {
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      double c = agreement(widened(mid));
      if (c >= min_cosine)
        hi = mid, hi_cosine = c;
      else
        lo = mid;
    }
  }
  choice.layer_weight_bits = widened(hi);
  choice.cosine = hi_cosine;
  return choice;
}

std::string WeightBitsChoice::str() const {
  std::ostringstream os;
  os << "mixed precision: " << layer_weight_bits.size() << " of " << sensitivity.size()
     << " layers widened, cosine with the float model " << cosine
     << " on the calibration inputs (every layer narrow: " << narrow_cosine << ", every layer wide: " << wide_cosine
     << "; " << models_compiled << " candidate models)" << (met ? "" : "; the budget is not met")
     << "\n  layer sensitivity (cosine with only that layer narrow), most sensitive first:\n";
  for (const LayerSensitivity& s : sensitivity)
    os << "    " << s.layer << "  " << s.cosine << (layer_weight_bits.count(s.layer) ? "  widened" : "") << "\n";
  return os.str();
}

}  // namespace loom::graph
