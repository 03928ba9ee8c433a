#include "loom/dse/sweep.h"

#include <algorithm>
#include <cmath>
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

Sweep parse_sweep(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    LOOM_THROW(Error, "--sweep '", text, "': expected NAME=V1,V2,...");
  Sweep s{text.substr(0, eq), {}};
  if (!listed(config_parameters(), s.name) && !listed(run_parameters(), s.name) && s.name != "block") {
    std::string all = "block";
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
  std::vector<std::map<std::string, double>> combos(1);
  for (const Sweep& s : sweeps) {
    std::vector<std::map<std::string, double>> next;
    for (const auto& c : combos)
      for (double v : s.values) {
        auto q = c;
        if (s.name == "block")
          q["block_in"] = q["block_out"] = v;
        else
          q[s.name] = v;
        next.push_back(q);
      }
    combos = std::move(next);
  }
  std::vector<Point> points;
  for (auto& values : combos) {
    Point p;
    p.index = points.size();
    p.values = values;
    p.spec.config = json::parse(base.to_json());
    p.spec.config.erase("name");
    p.spec.workload = workload;
    for (auto& [k, v] : values) {
      if (listed(run_parameters(), k))
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

void mark_pareto(std::vector<Point>& points) {
  for (Point& p : points) {
    p.pareto = false;
    if (!p.result.legal) continue;
    p.pareto = true;
    for (const Point& q : points)
      if (q.result.legal && &q != &p && q.result.cycles <= p.result.cycles &&
          q.result.area_mean <= p.result.area_mean &&
          (q.result.cycles < p.result.cycles || q.result.area_mean < p.result.area_mean))
        p.pareto = false;
  }
}

}  // namespace loom::dse
