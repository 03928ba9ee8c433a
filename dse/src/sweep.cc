#include "loom/dse/sweep.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <set>
#include <sstream>

#include "loom/graph/builtin_models.h"
#include "loom/ops/accel_operators.h"
#include "loom/runtime/error.h"
#include "loom/runtime/suggest.h"
#include "number.h"

namespace loom::dse {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool listed(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

}  // namespace

namespace {

// "w4a8" or "w8a8-acc16": the widths a precision value sets; Error naming the value otherwise.
struct Widths {
  int wgt = 8, inp = 8, acc = 32;
};
Widths parse_precision(const std::string& text, const std::string& v) {
  Widths w;
  int n = 0;
  std::string lower = v;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  int fields = std::sscanf(lower.c_str(), "w%da%d%n-acc%d%n", &w.wgt, &w.inp, &n, &w.acc, &n);
  if (fields < 2 || size_t(n) != lower.size() || (w.wgt != 2 && w.wgt != 4 && w.wgt != 8) ||
      (w.inp != 4 && w.inp != 8) || (w.acc != 16 && w.acc != 32))
    LOOM_THROW(Error, "--sweep '", text, "': '", v,
               "' is not a precision: wWaA[-accN] with weights W of 2, 4 or 8 bits, inputs A of 4 or 8, an "
               "accumulator N of 16 or 32 (e.g. w4a8, w8a8-acc16)");
  return w;
}

}  // namespace

Sweep parse_sweep(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    LOOM_THROW(Error, "--sweep '", text, "': expected NAME=V1,V2,...");
  Sweep s{text.substr(0, eq), {}, {}};
  if (s.name == "precision") {
    std::stringstream ss(text.substr(eq + 1));
    for (std::string v; std::getline(ss, v, ',');) {
      // Named by the widths, so that two spellings of one precision are one value.
      Widths w = parse_precision(text, v);
      v = "w" + std::to_string(w.wgt) + "a" + std::to_string(w.inp) + (w.acc != 32 ? "-acc16" : "");
      if (std::find(s.labels.begin(), s.labels.end(), v) != s.labels.end())
        LOOM_THROW(Error, "--sweep '", text, "': ", v, " is given twice");
      s.values.push_back(double(s.labels.size()));
      s.labels.push_back(v);
    }
    return s;
  }
  if (!listed(config_parameters(), s.name) && !listed(run_parameters(), s.name) && s.name != "block") {
    std::string all = "block, precision";
    for (auto& p : config_parameters()) all += ", " + p;
    for (auto& p : run_parameters()) all += ", " + p;
    LOOM_THROW(Error, "--sweep '", text, "': unknown parameter '", s.name, "' (", all, ")");
  }
  // Every parameter but the bandwidth is a whole number; all are bounded, so that no conversion
  // below truncates or overflows.
  const bool fractional = s.name == "dram_bytes_per_cycle";
  const double limit = fractional ? 4096 : s.name == "dram_latency" || s.name == "queue_depth" ? 1e6 : 1 << 20;
  std::stringstream ss(text.substr(eq + 1));
  for (std::string v; std::getline(ss, v, ',');) {
    double x = 0;
    if (!detail::parse_decimal(v, x) || !(x > 0) || x > limit || (!fractional && x != std::floor(x)))
      LOOM_THROW(Error, "--sweep '", text, "': '", v, "' is not a positive ", fractional ? "number" : "whole number",
                 " up to ", limit);
    if (std::find(s.values.begin(), s.values.end(), x) != s.values.end())
      LOOM_THROW(Error, "--sweep '", text, "': ", v, " is given twice");
    s.values.push_back(x);
  }
  return s;
}

void check_sweeps(const std::vector<Sweep>& sweeps) {
  auto is_block = [](const std::string& n) { return n == "block_in" || n == "block_out"; };
  for (size_t i = 0; i < sweeps.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      if (sweeps[i].name == sweeps[j].name) LOOM_THROW(Error, "--sweep ", sweeps[i].name, " is given twice");
      if ((sweeps[i].name == "block" && is_block(sweeps[j].name)) ||
          (sweeps[j].name == "block" && is_block(sweeps[i].name)))
        LOOM_THROW(Error, "--sweep block sets block_in and block_out: not together with --sweep ",
                   sweeps[i].name == "block" ? sweeps[j].name : sweeps[i].name);
    }
}

std::string conv_layers_workload(const std::string& layer_list) {
  // Every name must be a layer: a typo is an error, never a smaller sweep.
  std::vector<std::string> known;
  for (const ops::AccelConvLayer& l : ops::resnet18_accel_conv_layers()) known.push_back(l.name);
  std::set<std::string> chosen;
  if (layer_list != "all") {
    std::stringstream ss(layer_list);
    for (std::string name; std::getline(ss, name, ',');) {
      if (!listed(known, name))
        LOOM_THROW(Error, "--layers '", layer_list, "': ResNet-18 has no conv layer '", name, "'",
                   did_you_mean(name, known), " (its layers: c2 to c11, or all)");
      chosen.insert(name);
    }
    if (chosen.empty()) LOOM_THROW(Error, "--layers '", layer_list, "' names no layer (c2 to c11, or all)");
  }
  std::string workload = "resnet18-convs:";
  bool any = false;
  for (const std::string& l : known)
    if (layer_list == "all" || chosen.count(l)) {
      workload += std::string(any ? "," : "") + l;
      any = true;
    }
  return workload;
}

std::string model_workload(const std::string& model, int64_t image) {
  bool builtin = listed(graph::builtin_model_names(), model) && !fs::exists(model);
  // A file by its absolute path: a point's job may run in another folder, or on another machine.
  return "model:" + (builtin ? model + "@" + std::to_string(image) : fs::absolute(model).string()) + ":int8";
}

std::vector<Point> make_points(const accel::AccelConfig& base, const std::vector<Sweep>& sweeps,
                               const std::string& workload) {
  struct Combo {
    std::map<std::string, double> values;
    std::map<std::string, std::string> labels;
  };
  std::vector<Combo> combos(1);
  for (const Sweep& s : sweeps) {
    std::vector<Combo> next;
    for (const auto& c : combos)
      for (double v : s.values) {
        auto q = c;
        if (s.name == "block")
          q.values["block_in"] = q.values["block_out"] = v;
        else
          q.values[s.name] = v;
        if (!s.labels.empty()) q.labels[s.name] = s.labels[size_t(v)];
        next.push_back(q);
      }
    combos = std::move(next);
  }
  std::vector<Point> points;
  for (auto& combo : combos) {
    Point p;
    p.index = points.size();
    p.values = combo.values;
    p.labels = combo.labels;
    p.spec.config = json::parse(base.to_json());
    p.spec.config.erase("name");
    p.spec.workload = workload;
    for (auto& [k, v] : combo.values) {
      if (k == "precision") {
        // The widths, and each scratchpad as deep as the base config's (fewer bytes for narrower
        // entries) unless its size is swept too.
        Widths w = parse_precision("precision", combo.labels.at(k));
        auto set = [&](const char* field, const char* buffer, int bits, int base_bits, int64_t base_bytes) {
          p.spec.config[field] = bits;
          if (!combo.values.count(std::string(buffer) + "_kib"))
            p.spec.config[std::string(buffer) + "_buffer_bytes"] = base_bytes * bits / base_bits;
        };
        set("wgt_bits", "wgt", w.wgt, base.wgt_bits, base.wgt_buffer_bytes);
        set("inp_bits", "inp", w.inp, base.inp_bits, base.inp_buffer_bytes);
        set("out_bits", "out", w.inp, base.out_bits, base.out_buffer_bytes);
        set("acc_bits", "acc", w.acc, base.acc_bits, base.acc_buffer_bytes);
      } else if (listed(run_parameters(), k))
        p.spec.options[k] = v;
      else if (k.size() > 4 && k.substr(k.size() - 4) == "_kib")
        p.spec.config[k.substr(0, k.size() - 4) + "_buffer_bytes"] = int64_t(v * 1024);
      else
        p.spec.config[k] = int64_t(v);
    }
    p.id = p.spec.id();
    points.push_back(std::move(p));
  }
  return points;
}

const std::vector<std::string>& objective_names() {
  static const std::vector<std::string> names = {"cycles", "energy", "area", "asic_area", "accuracy"};
  return names;
}

std::vector<std::string> parse_objectives(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string o; std::getline(ss, o, ',');) {
    if (!listed(objective_names(), o))
      LOOM_THROW(Error, "--objectives '", text, "': unknown objective '", o, "'", did_you_mean(o, objective_names()),
                 " (cycles, energy, area, asic_area, accuracy)");
    if (listed(out, o)) LOOM_THROW(Error, "--objectives '", text, "': ", o, " is given twice");
    out.push_back(o);
  }
  if (out.size() < 2 || out.size() > 3)
    LOOM_THROW(Error, "--objectives '", text, "': a front is over two or three objectives, not ", out.size());
  return out;
}

double objective_value(const PointResult& r, const std::string& o) {
  if (o == "cycles") return double(r.cycles);
  if (o == "area") return r.area_mean;
  if (o == "energy") return r.energy.empty() ? NAN : r.energy_pj;
  if (o == "asic_area") return r.energy.empty() ? NAN : r.asic_mm2;
  if (o == "accuracy") return r.accuracy < 0 ? NAN : -r.accuracy;
  LOOM_THROW(Error, "unknown objective '", o, "'");
}

std::string violation(const PointResult& r, const Constraints& c) {
  std::ostringstream why;
  if (!r.kept_on_cpu.empty())
    why << r.kept_on_cpu.size() << " int8 layer" << (r.kept_on_cpu.size() > 1 ? "s" : "")
        << " kept on the CPU, their work counted nowhere (" << r.kept_on_cpu.front() << ")";
  else if (c.fits && r.binding > 1)
    why << "does not fit the " << c.part << " (its largest resource share " << std::fixed << std::setprecision(1)
        << r.binding * 100 << "%)";
  else if (c.min_accuracy >= 0 && r.accuracy < c.min_accuracy)
    why << "accuracy " << std::setprecision(4) << r.accuracy << " below --min-accuracy " << c.min_accuracy;
  else if (c.max_energy_uj > 0 && r.energy_pj * 1e-6 > c.max_energy_uj)
    why << "energy " << std::setprecision(4) << r.energy_pj * 1e-6 << " uJ above --max-energy " << c.max_energy_uj;
  return why.str();
}

void mark_pareto(std::vector<Point>& points, const std::vector<std::string>& objectives, const Constraints& c) {
  std::vector<std::vector<double>> v(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    Point& p = points[i];
    p.pareto = false;
    p.infeasible.clear();
    if (!p.result.legal) continue;
    p.infeasible = violation(p.result, c);
    for (const std::string& o : objectives) {
      v[i].push_back(objective_value(p.result, o));
      if (std::isnan(v[i].back()))
        LOOM_THROW(Error, "objective ", o, " has no value at point p", p.index, ": ",
                   o == "accuracy" ? "accuracy needs a model workload (--model) and --accuracy-inputs"
                                   : "energy needs an energy table (--energy-table)");
    }
  }
  auto dominates = [](const std::vector<double>& a, const std::vector<double>& b) {
    bool better = false;
    for (size_t k = 0; k < a.size(); ++k) {
      if (a[k] > b[k]) return false;
      better |= a[k] < b[k];
    }
    return better;
  };
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i].result.legal || !points[i].infeasible.empty()) continue;
    points[i].pareto = true;
    for (size_t j = 0; j < points.size() && points[i].pareto; ++j)
      if (j != i && points[j].result.legal && points[j].infeasible.empty() && dominates(v[j], v[i]))
        points[i].pareto = false;
  }
}

}  // namespace loom::dse
