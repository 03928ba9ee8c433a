// Quantization driver: the float passes BatchNorm folding and dense layers need, then annotate -> calibrate ->
// realize (see quantize.h), and for quantize_checked the accuracy report (report.cc).
#include <chrono>
#include <cstdio>
#include <sstream>

#include "loom/accel/config.h"
#include "loom/graph/op_registry.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "observer.h"
#include "report.h"

namespace loom::graph {

void QuantizeOptions::validate() const {
  if (weight_bits != 2 && weight_bits != 4 && weight_bits != 8)
    LOOM_THROW(ConfigError, "quantize: weight_bits must be 2, 4 or 8, got ", weight_bits);
  if (activation_bits != 4 && activation_bits != 8)
    LOOM_THROW(ConfigError, "quantize: activation_bits must be 4 or 8, got ", activation_bits);
  for (const auto& [layer, bits] : layer_weight_bits)
    if (bits != 2 && bits != 4 && bits != 8)
      LOOM_THROW(ConfigError, "quantize: layer '", layer, "' is given ", bits, "-bit weights; widths are 2, 4 or 8");
  if (weight_digit_bits != 0 && weight_digit_bits != 2 && weight_digit_bits != 4 && weight_digit_bits != 8)
    LOOM_THROW(ConfigError, "quantize: weight_digit_bits must be 0, 2, 4 or 8, got ", weight_digit_bits);
  if (per_channel && weight_exponents == WeightExponents::PerChannel)
    LOOM_THROW(ConfigError,
               "quantize: per_channel (fixed-point multipliers, CPU only) and per-channel weight exponents are two "
               "ways to scale each channel; choose one");
}

int QuantizeOptions::weight_levels(int bits) const {
  if (weight_digit_bits > 0 && bits > weight_digit_bits)
    return int(accel::AccelConfig::digit_range(weight_digit_bits, bits).second);
  return (1 << (bits - 1)) - 1;
}

int QuantizeOptions::weight_bits_of(const std::string& layer) const {
  auto it = layer_weight_bits.find(layer);
  return it == layer_weight_bits.end() ? weight_bits : it->second;
}

bool QuantizeOptions::channel_exponents() const {
  if (weight_exponents == WeightExponents::Auto) return !per_channel && weight_bits < 8;
  return weight_exponents == WeightExponents::PerChannel;
}

const char* to_string(QuantizeOptions::WeightExponents e) {
  switch (e) {
    case QuantizeOptions::WeightExponents::PerTensor:
      return "tensor";
    case QuantizeOptions::WeightExponents::PerChannel:
      return "channel";
    case QuantizeOptions::WeightExponents::Auto:
      break;
  }
  return "auto";
}

QuantizeOptions::WeightExponents parse_weight_exponents(const std::string& s) {
  for (auto e : {QuantizeOptions::WeightExponents::Auto, QuantizeOptions::WeightExponents::PerTensor,
                 QuantizeOptions::WeightExponents::PerChannel})
    if (s == to_string(e)) return e;
  LOOM_THROW(ConfigError, "weight exponents '", s, "': expected auto, tensor or channel");
}

std::optional<std::vector<int>> channel_shifts(const Graph& g, const Node& n) {
  if (!n.is_op() || n.op != "requantize_channel" || n.inputs.size() != 2 || !g.node(n.inputs[1]).is_constant())
    return std::nullopt;
  const NDArray& m = g.node(n.inputs[1]).value;
  if (m.dtype() != DataType::Int(32)) return std::nullopt;
  const int64_t shift = n.attrs.get_int("shift");
  std::vector<int> shifts;
  for (int64_t c = 0; c < m.numel(); ++c) {
    int64_t v = static_cast<const int32_t*>(m.raw_data())[c];
    if (v <= 0 || (v & (v - 1))) return std::nullopt;
    shifts.push_back(int(shift - __builtin_ctzll(uint64_t(v))));
  }
  return shifts;
}

void QuantizeOptions::set_precision(const std::string& name) {
  QuantizeOptions o = *this;
  size_t a = name.find_first_of("aA");
  bool ok =
      name.size() >= 4 && (name[0] == 'W' || name[0] == 'w') && a != std::string::npos && a > 1 && a + 1 < name.size();
  try {
    if (ok) {
      size_t used = 0;
      o.weight_bits = std::stoi(name.substr(1, a - 1), &used);
      ok = used == a - 1;
      o.activation_bits = std::stoi(name.substr(a + 1), &used);
      ok = ok && used == name.size() - a - 1;
    }
  } catch (const std::exception&) {
    ok = false;
  }
  if (!ok) LOOM_THROW(ConfigError, "precision '", name, "': expected W<bits>A<bits>, e.g. W4A8");
  o.validate();
  *this = o;
}

std::string QuantizeOptions::precision() const {
  return "W" + std::to_string(weight_bits) + "A" + std::to_string(activation_bits);
}

namespace {

QuantizeResult run(Graph g, const std::vector<std::vector<NDArray>>& calibration_inputs,
                   const std::vector<std::vector<NDArray>>* held_out, const QuantizeOptions& options,
                   const AccuracyThresholds& thresholds, const std::vector<PointCalibration>* given = nullptr,
                   const QuantizedBuild& build_quantized = {}) {
  options.validate();
  infer_types(g);
  const std::vector<std::string> output_names = g.output_names();
  simplify_inference(g);
  fold_constants(g);
  dense_from_matmul(g);
  eliminate_dead_nodes(g);
  g.name_outputs(output_names);  // a rewritten output (a matmul's reshaped dense) keeps the model's name
  QuantizeResult r;
  r.annotation = annotate_quantization(g, options);
  auto t0 = std::chrono::steady_clock::now();
  std::optional<Observer> observer;
  if (given) {
    // A calibration recorded from this graph and these options: the same points, in order.
    bool same = given->size() == r.annotation.points.size();
    for (size_t p = 0; same && p < given->size(); ++p) same = (*given)[p].node == r.annotation.points[p];
    if (!same)
      LOOM_THROW(ModelError, "quantize '", g.name, "': the calibration given has ", given->size(),
                 " points that are not this graph's ", r.annotation.points.size(),
                 " (recorded from another model or other quantization options)");
    r.calibration = *given;
  } else {
    if (calibration_inputs.empty()) LOOM_THROW(ModelError, "calibration needs at least one input");
    if (!r.annotation.points.empty() || held_out) observer.emplace(g, r.annotation, options);
    if (!r.annotation.points.empty())
      r.calibration = calibrate_observed(g, r.annotation, *observer, calibration_inputs, options);
  }
  r.calibration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const Node& n = g.nodes[id];
    if (!n.is_op() || op_def(n.op).layer == WeightedLayer::None) continue;
    (r.annotation.role[id] == QuantRole::Accumulate ? r.quantized_layers : r.float_layers)++;
  }
  r.graph = realize_quantization(g, r.annotation, r.calibration, options, &r.scales);
  r.float_graph = std::move(g);
  if (held_out)
    r.report = check_quantization(r, *observer, calibration_inputs, *held_out, options, thresholds, build_quantized);
  return r;
}

}  // namespace

QuantizeResult quantize(Graph g, const std::vector<std::vector<NDArray>>& calibration_inputs,
                        const QuantizeOptions& options) {
  return run(std::move(g), calibration_inputs, nullptr, options, {});
}

QuantizeResult quantize_calibrated(Graph g, const std::vector<PointCalibration>& calibration,
                                   const QuantizeOptions& options) {
  return run(std::move(g), {}, nullptr, options, {}, &calibration);
}

QuantizeResult quantize_checked(Graph g, const std::vector<std::vector<NDArray>>& calibration_inputs,
                                const std::vector<std::vector<NDArray>>& held_out, const QuantizeOptions& options,
                                const AccuracyThresholds& thresholds, const QuantizedBuild& build_quantized) {
  return run(std::move(g), calibration_inputs, &held_out, options, thresholds, nullptr, build_quantized);
}

std::string QuantizeResult::str() const {
  std::ostringstream os;
  os << quantized_layers << " conv2d/dense layers in int8, " << float_layers << " in float; calibration "
     << calibration_seconds << " s\n";
  os << "  point   max|x|       threshold    exponent\n";
  char line[128];
  for (const auto& p : calibration) {
    std::snprintf(line, sizeof line, "  %%%-5d  %-11.4g  %-11.4g  %d\n", p.node, p.max_abs, p.threshold, p.exponent);
    os << line;
  }
  return os.str();
}

}  // namespace loom::graph
