#include "loom/dse/point.h"

#include <algorithm>
#include <future>
#include <mutex>
#include <sstream>

#include "loom/accel/action_counts.h"
#include "loom/accel/energy_model.h"
#include "loom/accel/isa.h"
#include "loom/codegen/accel.h"
#include "loom/frontend/load.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/quantize.h"
#include "loom/ops/accel_operators.h"
#include "loom/runtime/disk_cache.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/sim/perf_model.h"
#include "number.h"

namespace loom::dse {

using nlohmann::json;

const std::vector<std::string>& config_parameters() {
  static const std::vector<std::string> p = {"batch",   "block_in", "block_out", "inp_kib",
                                             "wgt_kib", "acc_kib",  "out_kib",   "uop_kib"};
  return p;
}

const std::vector<std::string>& run_parameters() {
  static const std::vector<std::string> p = {"dram_latency", "dram_bytes_per_cycle", "vthreads", "queue_depth"};
  return p;
}

json Evaluation::to_json() const {
  json j = json::object();
  if (!energy_table.is_null() && !energy_table.empty()) j["energy_table"] = energy_table;
  if (accuracy_inputs) j["accuracy_inputs"] = accuracy_inputs;
  return j;
}

Evaluation Evaluation::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) LOOM_THROW(Error, where, ": 'evaluation' must be an object");
  Evaluation e;
  for (auto& [k, v] : j.items()) {
    if (k == "energy_table") {
      accel::EnergyTable::from_json(v.dump(), where + " 'evaluation'");  // ConfigError naming the field
      e.energy_table = v;
    } else if (k == "accuracy_inputs") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 10000)
        LOOM_THROW(Error, where, ": 'evaluation' 'accuracy_inputs' must be a whole number in [1, 10000], not ",
                   v.dump());
      e.accuracy_inputs = v.get<int>();
    } else {
      LOOM_THROW(Error, where, ": 'evaluation' has no field '", k, "' (energy_table, accuracy_inputs)");
    }
  }
  return e;
}

json PointSpec::to_json() const {
  json j = {{"config", config}, {"workload", workload}, {"backend", "perf"}, {"options", options}};
  json e = evaluation.to_json();
  if (!e.empty()) j["evaluation"] = e;  // a point judged by cycles and area alone keeps its id
  return j;
}

PointSpec PointSpec::from_json(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("config") || !j["config"].is_object() || !j.contains("workload") ||
      !j["workload"].is_string() || !j.contains("options") || !j["options"].is_object())
    LOOM_THROW(Error, where, ": expected {\"config\", \"workload\", \"backend\", \"options\"}");
  if (j.value("backend", "") != "perf")
    LOOM_THROW(Error, where, ": backend '", j.value("backend", ""), "': design points run on perf");
  for (auto& [k, v] : j["options"].items()) {
    const auto& run = run_parameters();
    if (std::find(run.begin(), run.end(), k) == run.end() || !v.is_number())
      LOOM_THROW(Error, where, ": unknown or non-numeric option '", k, "'");
  }
  PointSpec s;
  s.config = j["config"];
  s.workload = j["workload"];
  s.options = j["options"];
  if (j.contains("evaluation")) s.evaluation = Evaluation::from_json(j["evaluation"], where);
  return s;
}

std::string PointSpec::id() const { return runtime::content_hash(to_json().dump()); }

json PointResult::to_json() const {
  json r = {{"status", legal ? "ok" : "illegal"}};
  if (!legal) {
    r["reason"] = reason;
    return r;
  }
  r["cycles"] = cycles;
  r["macs"] = macs;
  r["utilization"] = utilization;
  r["area"] = {{"lut", area.lut}, {"ff", area.ff}, {"dsp", area.dsp}, {"bram36", area.bram36}};
  r["precision"] = precision;
  if (!energy.empty()) {
    r["energy_pj"] = energy_pj;
    r["energy"] = energy;
    r["asic_mm2"] = asic_mm2;
  }
  if (accuracy >= 0) {
    r["accuracy"] = accuracy;
    r["top1"] = top1;
  }
  if (!kept_on_cpu.empty()) r["kept_on_cpu"] = kept_on_cpu;
  r["layers"] = json::array();
  for (const LayerResult& l : layers)
    r["layers"].push_back({{"layer", l.layer}, {"cycles", l.cycles}, {"macs", l.macs}, {"utilization", l.utilization}});
  return r;
}

PointResult PointResult::from_json(const json& j) {
  PointResult p;
  try {
    p.legal = j.at("status") == "ok";
    if (!p.legal) {
      p.reason = j.at("reason");
      return p;
    }
    p.cycles = j.at("cycles");
    p.macs = j.at("macs");
    p.utilization = j.at("utilization");
    const json& area = j.at("area");
    p.area = {area.at("lut"), area.at("ff"), area.at("dsp"), area.at("bram36")};
    p.precision = j.value("precision", "");
    if (j.contains("energy_pj")) {
      p.energy_pj = j.at("energy_pj");
      p.energy = j.at("energy").get<std::map<std::string, double>>();
      p.asic_mm2 = j.at("asic_mm2");
    }
    if (j.contains("accuracy")) {
      p.accuracy = j.at("accuracy");
      p.top1 = j.at("top1");
    }
    if (j.contains("kept_on_cpu")) p.kept_on_cpu = j.at("kept_on_cpu").get<std::vector<std::string>>();
    for (const json& l : j.at("layers"))
      p.layers.push_back({l.at("layer"), l.at("cycles"), l.at("macs"), l.at("utilization")});
  } catch (const json::exception& e) {
    LOOM_THROW(Error, "design point result ", j.dump().substr(0, 120), ": ", e.what());
  }
  return p;
}

void summarize(PointResult& p, const json& c, const accel::FpgaPart& part) {
  const double peak = c.at("batch").get<double>() * c.at("block_in").get<double>() * c.at("block_out").get<double>();
  p.utilization = p.macs / (peak * double(p.cycles));
  const double shares[] = {p.area.lut / double(part.luts), p.area.ff / double(part.ffs), p.area.dsp / double(part.dsps),
                           p.area.bram36 / double(part.bram36)};
  p.binding = *std::max_element(std::begin(shares), std::end(shares));
  p.area_mean = (shares[0] + shares[1] + shares[2] + shares[3]) / 4;
}

// ---- workloads ----

struct Workload::Impl {
  std::vector<ops::AccelConvLayer> layers;
  std::optional<graph::Graph> model;  // float
  frontend::CalibrationSets inputs;
  int accuracy_inputs = 0;
  // The model quantized as a config's widths ask (follow_targets), once per distinct quantization.
  struct Quantized {
    graph::Graph graph;
    double accuracy = -1, top1 = -1;
  };
  // One quantization per key, made by the first point that needs it while the others wait for
  // its result (a failure too) without holding the map's lock.
  std::mutex mutex;
  std::map<std::string, std::shared_future<std::shared_ptr<const Quantized>>> quantized;

  std::shared_ptr<const Quantized> quantize(const graph::QuantizeOptions& q) {
    const std::string key =
        q.precision() + "/" + std::to_string(q.weight_digit_bits) + "/" + graph::to_string(q.weight_exponents);
    std::promise<std::shared_ptr<const Quantized>> made;
    std::shared_future<std::shared_ptr<const Quantized>> result;
    bool mine = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = quantized.find(key);
      if (it == quantized.end()) {
        it = quantized.emplace(key, made.get_future().share()).first;
        mine = true;
      }
      result = it->second;
    }
    if (mine) {
      try {
        made.set_value(make(q));
      } catch (...) {
        made.set_exception(std::current_exception());
      }
    }
    return result.get();
  }

  std::shared_ptr<const Quantized> make(const graph::QuantizeOptions& q) const {
    auto out = std::make_shared<Quantized>();
    if (accuracy_inputs) {
      graph::QuantizeResult r = graph::quantize_checked(*model, inputs.calibration, inputs.held_out, q);
      out->graph = std::move(r.graph);
      const graph::SetAgreement& set = r.report->judged();
      out->accuracy = 1;
      for (const graph::OutputAgreement& o : set.outputs) {
        out->accuracy = std::min(out->accuracy, o.cosine);
        if (out->top1 < 0 && o.top1_meaningful()) out->top1 = o.top1;
      }
    } else {
      out->graph = graph::quantize(*model, inputs.calibration, q).graph;
    }
    return out;
  }
};

Workload::Workload() : impl_(std::make_unique<Impl>()) {}
Workload::~Workload() = default;
Workload::Workload(Workload&&) noexcept = default;
Workload& Workload::operator=(Workload&&) noexcept = default;

namespace {

// The parts of a workload text: conv layers, or a model (a built-in's name and image size, or a
// file) in int8.
struct WorkloadText {
  std::vector<ops::AccelConvLayer> layers;
  std::string model;
  int64_t image = 224;
};

WorkloadText parse_workload_text(const std::string& desc) {
  WorkloadText t;
  const std::string convs = "resnet18-convs:", model = "model:", int8 = ":int8";
  if (desc.rfind(convs, 0) == 0) {
    std::stringstream ss(desc.substr(convs.size()));
    for (std::string name; std::getline(ss, name, ',');) {
      const auto& table = ops::resnet18_accel_conv_layers();
      auto it = std::find_if(table.begin(), table.end(), [&](const auto& l) { return name == l.name; });
      if (it == table.end()) LOOM_THROW(Error, "workload '", desc, "': ResNet-18 has no conv layer '", name, "'");
      t.layers.push_back(*it);
    }
    if (t.layers.empty()) LOOM_THROW(Error, "workload '", desc, "' names no layer");
    return t;
  }
  if (desc.rfind(model, 0) == 0 && desc.size() > model.size() + int8.size() &&
      desc.compare(desc.size() - int8.size(), int8.size(), int8) == 0) {
    t.model = desc.substr(model.size(), desc.size() - model.size() - int8.size());
    auto names = graph::builtin_model_names();
    size_t at = t.model.rfind('@');
    if (at != std::string::npos && std::find(names.begin(), names.end(), t.model.substr(0, at)) != names.end()) {
      double image = 0;
      if (!detail::parse_decimal(t.model.substr(at + 1), image) || image != double(int64_t(image)) || image < 32 ||
          image > 1024)
        LOOM_THROW(Error, "workload '", desc, "': the image size must be a whole number in [32, 1024]");
      t.image = int64_t(image);
      t.model = t.model.substr(0, at);
    }
    return t;
  }
  LOOM_THROW(Error, "workload '", desc, "': expected resnet18-convs:LAYERS or model:NAME[@IMAGE]:int8");
}

}  // namespace

void Workload::check(const std::string& text) { parse_workload_text(text); }

Workload Workload::from(const std::string& desc, int accuracy_inputs) {
  WorkloadText t = parse_workload_text(desc);
  Workload w;
  w.impl_->layers = t.layers;
  if (!t.model.empty()) {
    graph::Graph g = frontend::load_model(t.model, 1, t.image);
    // Timing alone needs one input; accuracy as many calibration inputs as held-out ones.
    w.impl_->inputs = frontend::random_calibration_sets(g, std::max(1, accuracy_inputs), accuracy_inputs);
    w.impl_->accuracy_inputs = accuracy_inputs;
    w.impl_->model = std::move(g);
  }
  return w;
}

namespace {

// A whole model at one point: compiled for the point's config, run once by the graph executor with
// the accelerator kernels on the timing-only perf backend; each accelerator kernel is a row.
void run_model(PointResult& p, accel::EnergyCounts& counts, const accel::AccelConfig& cfg,
               const sim::PerfParams& params, Workload::Impl& w) {
  graph::BuildOptions bo;
  bo.accel = cfg;
  graph::QuantizeOptions q;
  graph::follow_targets(q, bo);  // the config's widths
  auto quantized = w.quantize(q);
  p.accuracy = quantized->accuracy;
  p.top1 = quantized->top1;
  graph::BuildResult r = graph::build(quantized->graph, bo);
  p.kept_on_cpu = r.accel_report.kept;
  json dev = json::parse(cfg.to_json());
  dev["perf"] = {{"functional", false},
                 {"dram_latency", params.dram_latency},
                 {"dram_bytes_per_cycle", params.dram_bytes_per_cycle},
                 {"queue_depth", params.queue_depth}};
  runtime::ExecutorOptions eo;
  eo.accel_backend = "perf";
  eo.accel_config_json = dev.dump();
  auto ex = runtime::GraphExecutor::from_model_file(r.file, "dse", eo);
  ex.run(w.inputs.calibration[0]);
  const double peak = double(cfg.batch) * cfg.block_in * cfg.block_out;
  for (size_t k = 0; k < ex.kernels().size(); ++k) {
    if (ex.kernels()[k].device != runtime::KernelDevice::Accel) continue;
    const auto& s = ex.accel_stats()[k];
    double macs = double(s.gemm_macs);
    p.layers.push_back({ex.kernels()[k].node, s.cycles, macs, s.cycles ? macs / (peak * double(s.cycles)) : 0});
    counts.add(s.counters, s.cycles);
    p.cycles += s.cycles;
    p.macs += macs;
  }
}

}  // namespace

PointResult run_point(const PointSpec& spec, const Workload& w) {
  PointResult p;
  try {
    json cj = spec.config;
    cj["name"] = "dse-" + spec.id().substr(0, 8);
    accel::AccelConfig cfg = accel::AccelConfig::from_json(cj.dump());
    accel::IsaLayout layout(cfg);  // the ISA's fields must hold the config's scratchpad indices
    (void)layout;
    sim::PerfParams params;
    params.functional = false;
    params.dram_latency = uint32_t(spec.options.value("dram_latency", double(params.dram_latency)));
    params.dram_bytes_per_cycle = spec.options.value("dram_bytes_per_cycle", params.dram_bytes_per_cycle);
    params.queue_depth = uint32_t(spec.options.value("queue_depth", double(params.queue_depth)));
    int vthreads = int(spec.options.value("vthreads", 2.0));
    const double peak = double(cfg.batch) * cfg.block_in * cfg.block_out;
    accel::EnergyCounts counts;
    if (w.impl_->model) run_model(p, counts, cfg, params, *w.impl_);
    // A model's build decides per layer what runs at 16-bit accumulators; the operators of the
    // layer workload need 32 (a ConfigError saying so).
    const std::optional<ops::AccelTarget> target =
        w.impl_->layers.empty() ? std::nullopt : std::optional<ops::AccelTarget>(ops::accel_target(cfg));
    for (const ops::AccelConvLayer& l : w.impl_->layers) {
      ops::AccelOperator a;
      try {
        a = ops::make_accel_conv_layer(l, *target, vthreads);
      } catch (const Error& e) {
        LOOM_THROW(Error, l.name, ": ", e.what());
      }
      codegen::AccelModule m = codegen::build_accel(a.func, cfg);
      sim::PerfSim dev(cfg, params);
      std::vector<NDArray> args = a.random_args(1);
      uint64_t cycles = m.run(dev, args).cycles;
      std::vector<uint64_t> run = dev.run_counters();
      for (int k = 0; k < l.repeats; ++k) counts.add({run.begin() + 1, run.end()}, cycles);
      p.layers.push_back({l.name, cycles, a.macs, a.macs / (peak * double(cycles))});
      p.cycles += cycles * uint64_t(l.repeats);
      p.macs += a.macs * l.repeats;
    }
    if (p.cycles == 0) LOOM_THROW(Error, "the workload runs nothing on the accelerator");
    p.area = accel::estimate_area(cfg);
    p.precision = "W" + std::to_string(cfg.wgt_bits) + "A" + std::to_string(cfg.inp_bits) +
                  (cfg.acc_bits != 32 ? "-acc" + std::to_string(cfg.acc_bits) : "");
    if (!spec.evaluation.energy_table.empty()) {
      accel::EnergyTable table = accel::EnergyTable::from_json(spec.evaluation.energy_table.dump(), "of the sweep");
      accel::EnergyReport e = accel::estimate_energy(counts, cfg, table);
      p.energy_pj = e.total_pj();
      p.energy = e.by_category();
      p.asic_mm2 = accel::estimate_asic_area_mm2(cfg, table.add_um2.empty() ? accel::energy_table("asic-45nm") : table);
    }
    p.legal = true;
    summarize(p, spec.config);
  } catch (const std::exception& e) {  // any failure is the point's, never the sweep's
    p = PointResult{};
    p.reason = e.what();
  }
  return p;
}

}  // namespace loom::dse
