// The accuracy report of quantize_checked: the int8 model (compiled for the CPU, which the
// accelerator matches bit for bit) and the float observer run on the same inputs; per output the
// cosine, the largest error and for classifiers the top-1 agreement; per calibration point the
// share of values the chosen exponent clips.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "loom/graph/build.h"
#include "report.h"

namespace loom::graph {

namespace {

int64_t row_argmax(const NDArray& a, int64_t row, int64_t classes) {
  int64_t best = 0;
  double bv = a.get_as_double(row * classes);
  for (int64_t c = 1; c < classes; ++c) {
    double v = a.get_as_double(row * classes + c);
    if (v > bv || (std::isnan(v) && !std::isnan(bv))) bv = v, best = c;
  }
  return best;
}

bool same_values(const NDArray& a, const NDArray& b) {
  if (a.numel() != b.numel()) return false;
  for (int64_t i = 0, n = a.numel(); i < n; ++i)
    if (a.get_as_double(i) != b.get_as_double(i)) return false;
  return true;
}

std::string percent(double share) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(share < 0.001 && share > 0 ? 3 : 1) << share * 100 << "%";
  return os.str();
}

std::string number(double v, int digits = 4) {
  std::ostringstream os;
  os << std::setprecision(digits) << v;
  return os.str();
}

}  // namespace

OutputAgreementSums::OutputAgreementSums(std::string name, const TensorType& type, bool several_inputs) {
  a_.name = std::move(name);
  a_.float_constant = several_inputs;
  if (type.shape.size() == 2 && type.shape[1] >= 2 && type.dtype.is_float()) a_.classes = int(type.shape[1]);
}

void OutputAgreementSums::add(const NDArray& f, const NDArray& q) {
  if (f.numel() != q.numel())
    LOOM_THROW(Error, "output '", a_.name, "': the reference has ", f.numel(), " values, the other ", q.numel());
  for (int64_t i = 0, n = f.numel(); i < n; ++i) {
    double x = f.get_as_double(i), y = q.get_as_double(i);
    dot_ += x * y;
    ff_ += x * x;
    qq_ += y * y;
    double e = std::fabs(x - y);
    a_.max_error = std::isnan(e) || std::isnan(a_.max_error) ? NAN : std::max(a_.max_error, e);
    a_.max_float = std::max(a_.max_float, std::fabs(x));
  }
  if (a_.classes) {
    int64_t rows = f.numel() / a_.classes;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t c = row_argmax(f, r, a_.classes);
      agree_ += c == row_argmax(q, r, a_.classes);
      reference_classes_.insert(c);
    }
    a_.rows += int(rows);
  }
  if (!first_.defined())
    first_ = f;
  else if (a_.float_constant)
    a_.float_constant = same_values(first_, f);
}

OutputAgreement OutputAgreementSums::result() const {
  OutputAgreement a = a_;
  a.cosine = cosine(dot_, ff_, qq_);
  if (a.classes) {
    a.top1 = a.rows ? double(agree_) / a.rows : 1;
    a.float_classes = int(reference_classes_.size());
  }
  return a;
}

double cosine(double dot, double ff, double qq) {
  if (ff == 0 && qq == 0) return 1;  // both all zero: the same
  if (ff == 0 || qq == 0) return 0;
  return dot / std::sqrt(ff * qq);
}

QuantizeReport check_quantization(const QuantizeResult& q, Observer& observer,
                                  const std::vector<std::vector<NDArray>>& calibration,
                                  const std::vector<std::vector<NDArray>>& held_out, const QuantizeOptions& options,
                                  const AccuracyThresholds& thresholds, const QuantizedBuild& build_quantized) {
  const Graph& g = q.float_graph;
  runtime::ModelFile file = build_quantized ? build_quantized(q.graph) : cpu_model_file(q.graph, options);
  auto quantized = runtime::GraphExecutor::from_model_file(file, "quantized " + g.name);
  QuantizeReport report;
  report.thresholds = thresholds;
  for (const PointCalibration& p : q.calibration) report.saturation.push_back({p.node, g.node(p.node).name});

  auto measure = [&](const std::vector<std::vector<NDArray>>& inputs, const char* set, bool is_held_out) {
    SetAgreement s;
    s.set = set;
    s.inputs = int(inputs.size());
    std::vector<OutputAgreementSums> sums;
    for (int out : g.outputs) sums.emplace_back(g.node(out).name, g.type_of(out), inputs.size() > 1);
    std::vector<uint64_t> clipped(q.calibration.size(), 0), values(q.calibration.size(), 0);
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<NDArray> f = observer.run(g, inputs[i], i, set);
      std::vector<NDArray> out = quantized.run(inputs[i]);
      for (size_t k = 0; k < sums.size(); ++k) sums[k].add(f[size_t(observer.model_output[k])], out[k]);
      for (size_t p = 0; p < q.calibration.size(); ++p) {
        const double limit = (options.activation_levels() + 0.5) * std::ldexp(1.0, q.calibration[p].exponent);
        const float* v = f[p].data<float>();
        const int64_t n = f[p].numel();
        for (int64_t e = 0; e < n; ++e) clipped[p] += !(std::fabs(v[e]) < limit);
        values[p] += uint64_t(n);
      }
    }
    for (const OutputAgreementSums& o : sums) s.outputs.push_back(o.result());
    for (size_t p = 0; p < clipped.size(); ++p)
      (is_held_out ? report.saturation[p].held_out : report.saturation[p].calibration) =
          values[p] ? double(clipped[p]) / double(values[p]) : 0;
    return s;
  };
  report.calibration = measure(calibration, "calibration", false);
  if (!held_out.empty()) report.held_out = measure(held_out, "held-out", true);

  // Warnings, read on the judged set.
  const SetAgreement& j = report.judged();
  const std::string on = " on the " + j.set + " inputs";
  for (const OutputAgreement& o : j.outputs) {
    if (!(o.cosine >= thresholds.min_cosine))
      report.warnings.push_back("output '" + o.name + "': cosine " + number(o.cosine) + " with the float model" + on +
                                ", below " + number(thresholds.min_cosine));
    if (o.top1_meaningful() && !(o.top1 >= thresholds.min_top1))
      report.warnings.push_back("output '" + o.name + "': top-1 agreement " + number(o.top1 * 100, 3) + "% (" +
                                std::to_string(int(std::lround(o.top1 * o.rows))) + " of " + std::to_string(o.rows) +
                                ")" + on + ", below " + number(thresholds.min_top1 * 100, 3) + "%");
    if (o.classes && o.rows > 1 && o.float_classes == 1)
      report.warnings.push_back("output '" + o.name + "': the float model picks one class for all " +
                                std::to_string(o.rows) + " rows" + on +
                                ", so top-1 agreement says nothing; inputs the model tells apart would");
    if (o.float_constant)
      report.warnings.push_back("output '" + o.name + "': the float model's output is the same for every input" + on +
                                ", so agreement says little about other inputs");
  }
  int over = 0;
  const PointSaturation* worst = nullptr;
  for (const PointSaturation& p : report.saturation) {
    double v = report.held_out ? p.held_out : p.calibration;
    if (v > thresholds.max_saturation) ++over;
    if (!worst || v > (report.held_out ? worst->held_out : worst->calibration)) worst = &p;
  }
  if (over)
    report.warnings.push_back(std::to_string(over) + " of " + std::to_string(report.saturation.size()) +
                              " quantized values clip more than " + percent(thresholds.max_saturation) +
                              " of their values" + on + " (worst: '" + worst->name + "', " +
                              percent(report.held_out ? worst->held_out : worst->calibration) + ")");
  return report;
}

double QuantizeReport::accuracy() const {
  double a = 1;
  for (const OutputAgreement& o : judged().outputs) {
    a = std::isnan(o.cosine) ? NAN : std::min(a, o.cosine);
    if (o.top1_meaningful()) a = std::isnan(a) ? a : std::min(a, o.top1);
  }
  return a;
}

std::string QuantizeReport::str() const {
  std::ostringstream os;
  os << "  agreement with the float model (int8 on the CPU, as the accelerator computes it):\n";
  for (const SetAgreement* s : {&calibration, held_out ? &*held_out : nullptr}) {
    if (!s) continue;
    os << "    " << s->set << " (" << (s->source.empty() ? std::to_string(s->inputs) + " inputs" : s->source) << "):\n";
    for (const OutputAgreement& o : s->outputs) {
      os << "      output '" << o.name << "': cosine " << std::fixed << std::setprecision(4) << o.cosine;
      os.unsetf(std::ios::fixed);
      if (o.classes)
        os << ", top-1 " << int(std::lround(o.top1 * o.rows)) << "/" << o.rows
           << (o.top1_meaningful() ? "" : " (the float model picks one class)");
      os << ", max |error| " << number(o.max_error) << " (largest |float| " << number(o.max_float) << ")\n";
    }
  }
  std::vector<const PointSaturation*> order;
  for (const PointSaturation& p : saturation) order.push_back(&p);
  auto share = [&](const PointSaturation* p) { return held_out ? p->held_out : p->calibration; };
  std::stable_sort(order.begin(), order.end(), [&](auto* a, auto* b) { return share(a) > share(b); });
  os << "  saturation (share of values beyond the quantized range, " << judged().set << " inputs): ";
  if (order.empty() || share(order[0]) == 0) {
    os << "none clipped\n";
  } else {
    for (size_t i = 0; i < order.size() && i < 3 && share(order[i]) > 0; ++i)
      os << (i ? ", " : "") << "'" << order[i]->name << "' " << percent(share(order[i]));
    os << "\n";
  }
  return os.str();
}

std::string QuantizeReport::to_json() const {
  using nlohmann::json;
  auto set_json = [](const SetAgreement& s) {
    json outs = json::array();
    for (const OutputAgreement& o : s.outputs) {
      json j = {{"name", o.name},
                {"cosine", std::isnan(o.cosine) ? json(nullptr) : json(o.cosine)},
                {"max_error", std::isnan(o.max_error) ? json(nullptr) : json(o.max_error)},
                {"max_float", o.max_float},
                {"float_constant", o.float_constant}};
      if (o.classes) {
        j["classes"] = o.classes;
        j["rows"] = o.rows;
        j["top1"] = o.top1;
        j["float_classes"] = o.float_classes;
        j["top1_meaningful"] = o.top1_meaningful();
      }
      outs.push_back(j);
    }
    return json{{"set", s.set}, {"source", s.source}, {"inputs", s.inputs}, {"outputs", outs}};
  };
  json sat = json::array();
  for (const PointSaturation& p : saturation) {
    json j = {{"node", p.name}, {"calibration", p.calibration}};
    if (held_out) j["held_out"] = p.held_out;
    sat.push_back(j);
  }
  double a = accuracy();
  json j = {{"calibration", set_json(calibration)},
            {"saturation", sat},
            {"accuracy", std::isnan(a) ? json(nullptr) : json(a)},
            {"thresholds",
             {{"min_cosine", thresholds.min_cosine},
              {"min_top1", thresholds.min_top1},
              {"max_saturation", thresholds.max_saturation}}},
            {"warnings", warnings}};
  j["held_out"] = held_out ? set_json(*held_out) : json(nullptr);
  return j.dump();
}

}  // namespace loom::graph
