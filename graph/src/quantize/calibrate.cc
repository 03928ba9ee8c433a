// Quantization, pass 2: run the float model on a calibration set and choose an exponent for
// every calibration point (max, percentile or KL-divergence thresholds, rounded up to a power of
// two step).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "loom/graph/build.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "observer.h"

namespace loom::graph {

namespace {

constexpr int kLevels = 128;  // magnitudes 0..127 of a symmetric int8

// KL(P || Q) of two unnormalized distributions over the same bins (Q > 0 where P > 0 by
// construction; bins where P is 0 contribute nothing).
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  double sp = 0, sq = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    sp += p[i];
    sq += q[i];
  }
  if (sp == 0 || sq == 0) return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    if (q[i] == 0) return std::numeric_limits<double>::infinity();
    kl += p[i] / sp * std::log((p[i] / sp) / (q[i] / sq));
  }
  return kl;
}

// TensorRT's entropy calibration: for each candidate clipping bin i, the reference P is the
// histogram's first i bins with the clipped tail added to the last; Q quantizes those bins into
// 128 levels (spreading each level over its non-empty bins). The threshold minimizes KL(P || Q).
double kl_threshold(const std::vector<double>& h, double bin_width) {
  size_t n = h.size();
  if (n <= kLevels) return n * bin_width;
  double best = std::numeric_limits<double>::infinity();
  size_t best_i = n;
  for (size_t i = kLevels; i <= n; ++i) {
    std::vector<double> p(h.begin(), h.begin() + i);
    for (size_t k = i; k < n; ++k) p[i - 1] += h[k];
    std::vector<double> q(i, 0.0);
    for (int level = 0; level < kLevels; ++level) {
      size_t b0 = level * i / kLevels, b1 = (level + 1) * i / kLevels;
      double sum = 0;
      int nonzero = 0;
      for (size_t b = b0; b < b1; ++b) {
        sum += h[b];
        nonzero += h[b] != 0;
      }
      for (size_t b = b0; b < b1; ++b)
        if (h[b] != 0) q[b] = sum / nonzero;
    }
    double kl = kl_divergence(p, q);
    if (kl < best) {
      best = kl;
      best_i = i;
    }
  }
  return best_i * bin_width;
}

}  // namespace

int exponent_for(double threshold, int levels) {
  if (!(threshold > 0) || !std::isfinite(threshold)) return -7;  // an all-zero (or broken) value: any step will do
  int e = static_cast<int>(std::ceil(std::log2(threshold / levels)));
  while (levels * std::ldexp(1.0, e) < threshold) ++e;  // log2 rounding
  return std::clamp(e, -64, 64);
}

double choose_threshold(const std::vector<double>& histogram, double max_abs, const QuantizeOptions& options) {
  if (options.mode == CalibrationMode::Max || histogram.empty() || max_abs <= 0) return max_abs;
  double width = max_abs / static_cast<double>(histogram.size());
  if (options.mode == CalibrationMode::KL) return std::min(max_abs, kl_threshold(histogram, width));
  double total = 0;
  for (double c : histogram) total += c;
  double want = total * std::clamp(options.percentile, 0.0, 100.0) / 100.0, seen = 0;
  for (size_t b = 0; b < histogram.size(); ++b) {
    seen += histogram[b];
    if (seen >= want) return std::min(max_abs, (b + 1) * width);
  }
  return max_abs;
}

// The float model with every calibration point as an output, then the model's own outputs that
// are not points: what calibration and the accuracy report run.
Observer::Observer(const Graph& g, const QuantizeAnnotation& annotation, const QuantizeOptions& options)
    : points(annotation.points.size()) {
  Graph c = g;
  c.outputs = annotation.points;
  for (int o : g.outputs) {
    auto at = std::find(c.outputs.begin(), c.outputs.end(), o);
    model_output.push_back(int(at - c.outputs.begin()));
    if (at == c.outputs.end()) c.outputs.push_back(o);
  }
  executor.emplace(runtime::GraphExecutor::from_model_file(cpu_model_file(c, options), "calibration of " + g.name));
}

runtime::ModelFile cpu_model_file(const Graph& g, const QuantizeOptions& options) {
  BuildOptions bo;
  bo.llvm = options.llvm;
  return build(g, bo).file;
}

std::vector<NDArray> Observer::run(const Graph& g, const std::vector<NDArray>& in, size_t index, const char* set) {
  if (in.size() != g.inputs.size())
    LOOM_THROW(ModelError, set, " input ", index, " has ", in.size(), " tensors, the model takes ", g.inputs.size());
  return executor->run(in);
}

std::vector<PointCalibration> calibrate_observed(const Graph& g, const QuantizeAnnotation& annotation,
                                                 Observer& observer, const std::vector<std::vector<NDArray>>& inputs,
                                                 const QuantizeOptions& options) {
  if (inputs.empty()) LOOM_THROW(ModelError, "calibration needs at least one input");
  std::vector<PointCalibration> result;
  for (int p : annotation.points) result.push_back({p});
  if (result.empty()) return result;
  for (size_t s = 0; s < inputs.size(); ++s)
    if (inputs[s].size() != g.inputs.size())
      LOOM_THROW(ModelError, "calibration input ", s, " has ", inputs[s].size(), " tensors, the model takes ",
                 g.inputs.size());

  // First reading: the largest magnitude per point. The observed values stay in memory up to
  // options.calibration_memory_bytes, so the histogram reading runs only the inputs beyond it.
  const bool histograms = options.mode != CalibrationMode::Max;
  std::vector<std::vector<NDArray>> kept;
  int64_t kept_bytes = 0;
  for (size_t s = 0; s < inputs.size(); ++s) {
    std::vector<NDArray> outs = observer.run(g, inputs[s], s, "calibration");
    for (size_t k = 0; k < observer.points; ++k) {
      const float* v = outs[k].data<float>();
      double m = result[k].max_abs;
      for (int64_t i = 0, n = outs[k].numel(); i < n; ++i) m = std::max(m, double(std::fabs(v[i])));
      result[k].max_abs = m;
    }
    if (!histograms || kept.size() < s) continue;
    int64_t bytes = 0;
    for (size_t k = 0; k < observer.points; ++k) bytes += outs[k].nbytes();
    if (kept_bytes + bytes > options.calibration_memory_bytes) continue;
    kept_bytes += bytes;
    outs.resize(observer.points);
    kept.push_back(std::move(outs));
  }
  if (histograms) {
    int bins = std::max(options.histogram_bins, kLevels);
    for (auto& r : result) r.histogram.assign(size_t(bins), 0.0);
    for (size_t s = 0; s < inputs.size(); ++s) {
      std::vector<NDArray> outs = s < kept.size() ? std::move(kept[s]) : observer.run(g, inputs[s], s, "calibration");
      for (size_t k = 0; k < observer.points; ++k) {
        double m = result[k].max_abs;
        if (m <= 0) continue;
        const float* v = outs[k].data<float>();
        std::vector<double>& h = result[k].histogram;
        for (int64_t i = 0, n = outs[k].numel(); i < n; ++i) {
          int b = static_cast<int>(std::fabs(v[i]) / m * bins);
          ++h[size_t(std::min(b, bins - 1))];
        }
      }
    }
  }
  return choose_exponents(std::move(result), options);
}

std::vector<PointCalibration> choose_exponents(std::vector<PointCalibration> calibration,
                                               const QuantizeOptions& options) {
  for (PointCalibration& r : calibration) {
    if (options.mode != CalibrationMode::Max && r.histogram.empty())
      LOOM_THROW(ModelError, "calibration point %", r.node, " kept no histogram: ", to_string(options.mode),
                 " thresholds need a percentile or KL calibration (max calibration keeps only the largest |x|)");
    r.threshold = options.mode == CalibrationMode::Max ? r.max_abs : choose_threshold(r.histogram, r.max_abs, options);
    r.exponent = exponent_for(r.threshold, options.activation_levels());
  }
  return calibration;
}

std::vector<PointCalibration> calibrate(const Graph& g, const QuantizeAnnotation& annotation,
                                        const std::vector<std::vector<NDArray>>& inputs,
                                        const QuantizeOptions& options) {
  if (inputs.empty()) LOOM_THROW(ModelError, "calibration needs at least one input");
  if (annotation.points.empty()) return {};
  Observer observer(g, annotation, options);
  return calibrate_observed(g, annotation, observer, inputs, options);
}

}  // namespace loom::graph
