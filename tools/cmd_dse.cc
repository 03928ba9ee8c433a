// `loom dse`: design-space exploration of the accelerator. Sweeps config parameters (the GEMM
// shape, scratchpad sizes, DRAM latency and bandwidth, virtual threads, queue depth) over a
// workload (ResNet-18's conv layers), each point compiled for its config and timed by the
// performance model (backend "perf" without execution), its area from the analytical model; writes
// a CSV of the points (illegal ones with the reason), a CSV of per-layer cycles and GEMM
// utilization, the points' descriptions as JSON lines (one independent, deterministic job each,
// with a stable id), and plots (gnuplot): cycles against area with the Pareto front, and the
// per-layer utilization of the Pareto points. Points run in parallel on the local cores.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "cli.h"
#include "command.h"
#include "loom/accel/area_model.h"
#include "loom/accel/isa.h"
#include "loom/codegen/accel.h"
#include "loom/ops/accel_operators.h"
#include "loom/runtime/disk_cache.h"
#include "loom/runtime/error.h"
#include "loom/runtime/suggest.h"
#include "loom/sim/perf_model.h"
#ifdef LOOM_HAVE_REGRESS
#include "loom/regress/manifest.h"
#include "loom/regress/progress.h"
#include "loom/regress/runner.h"
#endif
#ifdef LOOM_HAVE_GRAPH
#include "loom/frontend/load.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/graph_executor.h"
#endif

namespace loom::tools {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// xc7z020 (Pynq-Z1): the area axis is the binding resource's share of it.
constexpr double kPartLut = 53200, kPartFf = 106400, kPartDsp = 220, kPartBram36 = 140;

// What a sweep may vary: config fields (scratchpads in KiB) and the run's options.
const std::vector<std::string> kConfigParams = {"batch",   "block_in", "block_out", "inp_kib",
                                                "wgt_kib", "acc_kib",  "out_kib",   "uop_kib"};
const std::vector<std::string> kRunParams = {"dram_latency", "dram_bytes_per_cycle", "vthreads", "queue_depth"};

struct Sweep {
  std::string name;
  std::vector<double> values;
};

struct LayerResult {
  std::string layer;
  uint64_t cycles = 0;
  double macs = 0, utilization = 0;
};

struct Point {
  size_t index = 0;
  json description;                      // config, workload, backend, options: what the job is
  std::string id;                        // a hash of the description
  std::map<std::string, double> values;  // the swept parameters' values
  bool ok = false, missing = false;      // missing: its job left no result (crashed, timed out, not run)
  std::string reason;                    // why an illegal point is illegal
  uint64_t cycles = 0;
  double macs = 0, utilization = 0;  // GEMM utilization: macs / (cycles x the core's products)
  accel::AreaEstimate area;
  double area_mean = 0;  // the mean of the four resources' shares of an xc7z020 (the area axis)
  double binding = 0;    // the largest share: above 1 the point does not fit the part
  bool pareto = false;
  std::vector<LayerResult> layers;
};

// The content hash of the canonical dump (keys sorted), as `loom regress` hashes.
std::string stable_id(const json& description) { return runtime::content_hash(description.dump()); }

Sweep parse_sweep(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    LOOM_THROW(Error, "--sweep '", text, "': expected NAME=V1,V2,...");
  Sweep s{text.substr(0, eq), {}};
  bool known = std::find(kConfigParams.begin(), kConfigParams.end(), s.name) != kConfigParams.end() ||
               std::find(kRunParams.begin(), kRunParams.end(), s.name) != kRunParams.end() || s.name == "block";
  if (!known) {
    std::string all = "block";
    for (auto& p : kConfigParams) all += ", " + p;
    for (auto& p : kRunParams) all += ", " + p;
    LOOM_THROW(Error, "--sweep '", text, "': unknown parameter '", s.name, "' (", all, ")");
  }
  // Every parameter but the bandwidth is a whole number; all are bounded, so that no conversion
  // below truncates or overflows.
  const bool fractional = s.name == "dram_bytes_per_cycle";
  const double limit = fractional ? 4096 : s.name == "dram_latency" || s.name == "queue_depth" ? 1e6 : 1 << 20;
  std::stringstream ss(text.substr(eq + 1));
  for (std::string v; std::getline(ss, v, ',');) {
    double x = 0;
    if (!detail::parse_number(v, x) || !(x > 0) || x > limit || (!fractional && x != std::floor(x)))
      LOOM_THROW(Error, "--sweep '", text, "': '", v, "' is not a positive ", fractional ? "number" : "whole number",
                 " up to ", limit);
    if (std::find(s.values.begin(), s.values.end(), x) != s.values.end())
      LOOM_THROW(Error, "--sweep '", text, "': ", v, " is given twice");
    s.values.push_back(x);
  }
  return s;
}

// The cross product of the sweeps, in order (the last sweep varies fastest).
std::vector<std::map<std::string, double>> cross_product(const std::vector<Sweep>& sweeps) {
  std::vector<std::map<std::string, double>> points(1);
  for (const Sweep& s : sweeps) {
    std::vector<std::map<std::string, double>> next;
    for (const auto& p : points)
      for (double v : s.values) {
        auto q = p;
        if (s.name == "block")
          q["block_in"] = q["block_out"] = v;
        else
          q[s.name] = v;
        next.push_back(q);
      }
    points = std::move(next);
  }
  return points;
}

// What each point runs: ResNet-18's conv layers, or a whole model (int8, compiled per config with
// its int8 layers on the accelerator) and one input.
struct Workload {
  std::vector<ops::AccelConvLayer> layers;
#ifdef LOOM_HAVE_GRAPH
  std::optional<graph::Graph> model;  // quantized
  NDArray input;
#endif
};

#ifdef LOOM_HAVE_GRAPH
// A whole model at one point: compiled for the point's config, run once by the graph executor with
// the accelerator kernels on the timing-only perf backend; each accelerator kernel is a row.
void run_model(Point& p, const accel::AccelConfig& cfg, const sim::PerfParams& params, const Workload& w) {
  graph::BuildOptions bo;
  bo.accel = cfg;
  graph::BuildResult r = graph::build(*w.model, bo);
  json dev = json::parse(cfg.to_json());
  dev["perf"] = {{"functional", false},
                 {"dram_latency", params.dram_latency},
                 {"dram_bytes_per_cycle", params.dram_bytes_per_cycle},
                 {"queue_depth", params.queue_depth}};
  runtime::ExecutorOptions eo;
  eo.accel_backend = "perf";
  eo.accel_config_json = dev.dump();
  auto ex = runtime::GraphExecutor::from_model_file(r.file, "dse", eo);
  ex.run({w.input});
  const double peak = double(cfg.batch) * cfg.block_in * cfg.block_out;
  for (size_t k = 0; k < ex.kernels().size(); ++k) {
    if (ex.kernels()[k].device != runtime::KernelDevice::Accel) continue;
    const auto& s = ex.accel_stats()[k];
    double macs = double(s.gemm_macs);
    p.layers.push_back({ex.kernels()[k].node, s.cycles, macs, s.cycles ? macs / (peak * double(s.cycles)) : 0});
    p.cycles += s.cycles;
    p.macs += macs;
  }
}
#endif

std::vector<std::string> graph_model_names() {
#ifdef LOOM_HAVE_GRAPH
  return graph::builtin_model_names();
#else
  return {};
#endif
}

// The workload a job description names: "resnet18-convs:c2,c10" (ResNet-18's conv layers) or
// "model:NAME[@IMAGE]:int8" (a built-in model at that image size, or an .onnx file, int8).
Workload workload_from(const std::string& desc) {
  Workload w;
  const std::string convs = "resnet18-convs:", model = "model:", int8 = ":int8";
  if (desc.rfind(convs, 0) == 0) {
    std::stringstream ss(desc.substr(convs.size()));
    for (std::string name; std::getline(ss, name, ',');) {
      const auto& table = ops::resnet18_accel_conv_layers();
      auto it = std::find_if(table.begin(), table.end(), [&](const auto& l) { return name == l.name; });
      if (it == table.end()) LOOM_THROW(Error, "workload '", desc, "': ResNet-18 has no conv layer '", name, "'");
      w.layers.push_back(*it);
    }
    if (w.layers.empty()) LOOM_THROW(Error, "workload '", desc, "' names no layer");
    return w;
  }
  if (desc.rfind(model, 0) == 0 && desc.size() > model.size() + int8.size() &&
      desc.compare(desc.size() - int8.size(), int8.size(), int8) == 0) {
#ifdef LOOM_HAVE_GRAPH
    std::string name = desc.substr(model.size(), desc.size() - model.size() - int8.size());
    int64_t image = 224;
    auto names = graph::builtin_model_names();
    size_t at = name.rfind('@');
    if (at != std::string::npos && std::find(names.begin(), names.end(), name.substr(0, at)) != names.end()) {
      if (!detail::parse_number(name.substr(at + 1), image) || image < 32 || image > 1024)
        LOOM_THROW(Error, "workload '", desc, "': the image size must be a whole number in [32, 1024]");
      name = name.substr(0, at);
    }
    graph::Graph g = frontend::load_model(name, 1, image);
    auto calibration = frontend::calibration_set("1", g);
    w.input = calibration[0][0];
    w.model = graph::quantize(std::move(g), calibration, {}).graph;
    return w;
#else
    LOOM_THROW(Error, "this loom was built without the model compiler (needs LLVM and libonnx-dev)");
#endif
  }
  LOOM_THROW(Error, "workload '", desc, "': expected resnet18-convs:LAYERS or model:NAME[@IMAGE]:int8");
}

// A legal point's utilization and area shares, from its cycles, GEMM work and area estimate.
void summarize(Point& p) {
  const json& c = p.description.at("config");
  const double peak = c.at("batch").get<double>() * c.at("block_in").get<double>() * c.at("block_out").get<double>();
  p.utilization = p.macs / (peak * double(p.cycles));
  const double shares[] = {p.area.lut / kPartLut, p.area.ff / kPartFf, p.area.dsp / kPartDsp,
                           p.area.bram36 / kPartBram36};
  p.binding = *std::max_element(std::begin(shares), std::end(shares));
  p.area_mean = (shares[0] + shares[1] + shares[2] + shares[3]) / 4;
}

// Runs one point as its description says (the config, the run options): every layer (or the
// model) compiled and timed. The sweep and --run-job both come here with nothing else to go on.
void run_point(Point& p, const Workload& w) {
  try {
    json cj = p.description.at("config");
    cj["name"] = "dse-" + p.id.substr(0, 8);
    accel::AccelConfig cfg = accel::AccelConfig::from_json(cj.dump());
    accel::IsaLayout layout(cfg);  // the ISA's fields must hold the config's scratchpad indices
    (void)layout;
    const json& options = p.description.at("options");
    sim::PerfParams params;
    params.functional = false;
    params.dram_latency = uint32_t(options.value("dram_latency", double(params.dram_latency)));
    params.dram_bytes_per_cycle = options.value("dram_bytes_per_cycle", params.dram_bytes_per_cycle);
    params.queue_depth = uint32_t(options.value("queue_depth", double(params.queue_depth)));
    int vthreads = int(options.value("vthreads", 2.0));
    const ops::AccelTarget target = ops::accel_target(cfg);
    const double peak = double(cfg.batch) * cfg.block_in * cfg.block_out;
#ifdef LOOM_HAVE_GRAPH
    if (w.model) run_model(p, cfg, params, w);
#endif
    for (const ops::AccelConvLayer& l : w.layers) {
      ops::AccelOperator a;
      try {
        a = ops::make_accel_conv_layer(l, target, vthreads);
      } catch (const Error& e) {
        LOOM_THROW(Error, l.name, ": ", e.what());
      }
      codegen::AccelModule m = codegen::build_accel(a.func, cfg);
      sim::PerfSim dev(cfg, params);
      std::vector<NDArray> args = a.random_args(1);
      uint64_t cycles = m.run(dev, args).cycles;
      p.layers.push_back({l.name, cycles, a.macs, a.macs / (peak * double(cycles))});
      p.cycles += cycles * uint64_t(l.repeats);
      p.macs += a.macs * l.repeats;
    }
    if (p.cycles == 0) LOOM_THROW(Error, "the workload runs nothing on the accelerator");
    p.area = accel::estimate_area(cfg);
    p.ok = true;
    summarize(p);
  } catch (const std::exception& e) {  // any failure is the point's, never the sweep's
    p.ok = false;
    p.reason = e.what();
    p.layers.clear();
    p.cycles = 0;
    p.macs = 0;
  }
}

// Pareto-optimal in cycles and area: no other point has at most its cycles and its area (the
// mean share of the part's resources), and less of one of them.
void mark_pareto(std::vector<Point>& points) {
  for (Point& p : points) {
    if (!p.ok) continue;
    p.pareto = true;
    for (const Point& q : points)
      if (q.ok && &q != &p && q.cycles <= p.cycles && q.area_mean <= p.area_mean &&
          (q.cycles < p.cycles || q.area_mean < p.area_mean))
        p.pareto = false;
  }
}

std::string csv_field(std::string s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return out + "\"";
}

void write_outputs(const fs::path& dir, const std::vector<Point>& points, const std::vector<Sweep>& sweeps) {
  // points.jsonl whole or not at all (written aside, then renamed): jobs of an earlier run of the
  // sweep may be reading it.
  std::ofstream csv(dir / "points.csv"), layers(dir / "layers.csv"), jobs(dir / "points.jsonl.tmp");
  csv << "point,id,status";
  for (const Sweep& s : sweeps) csv << "," << s.name;
  csv << ",cycles,macs,utilization,lut,ff,dsp,bram36,area_xc7z020,binding_share,fits_xc7z020,pareto,reason\n";
  layers << "point,id,layer,cycles,macs,utilization\n";
  for (const Point& p : points) {
    csv << p.index << "," << p.id << "," << (p.ok ? "ok" : p.missing ? "no_result" : "illegal");
    for (const Sweep& s : sweeps) csv << "," << (s.name == "block" ? p.values.at("block_in") : p.values.at(s.name));
    if (p.ok)
      csv << "," << p.cycles << "," << std::setprecision(12) << p.macs << "," << std::setprecision(4) << p.utilization
          << "," << std::setprecision(6) << p.area.lut << "," << p.area.ff << "," << p.area.dsp << "," << p.area.bram36
          << "," << std::setprecision(4) << p.area_mean << "," << p.binding << "," << int(p.binding <= 1) << ","
          << int(p.pareto) << ",\n";
    else
      csv << ",,,,,,,,,,,," << csv_field(p.reason) << "\n";
    for (const LayerResult& l : p.layers)
      layers << p.index << "," << p.id << "," << csv_field(l.layer) << "," << l.cycles << "," << std::setprecision(12)
             << l.macs << "," << std::setprecision(4) << l.utilization << "\n";
    jobs << json{{"id", p.id}, {"job", p.description}}.dump() << "\n";
  }
  jobs.close();
  if (!csv || !layers || !jobs) LOOM_THROW(Error, "cannot write the results into '", dir.string(), "'");
  fs::rename(dir / "points.jsonl.tmp", dir / "points.jsonl");
}

// Gnuplot: cycles against area with the Pareto front; per-layer utilization of the Pareto points.
// Returns what happened (the plots are optional: no gnuplot, no plots).
std::string plot(const fs::path& dir, const std::vector<Point>& points, const std::string& what) {
  std::ofstream all(dir / "plot_points.dat"), front(dir / "plot_pareto.dat"), util(dir / "plot_utilization.dat");
  std::vector<const Point*> pareto;
  for (const Point& p : points) {
    if (!p.ok) continue;
    all << p.area_mean * 100 << " " << double(p.cycles) / 1e6 << "\n";
    if (p.pareto) pareto.push_back(&p);
  }
  std::sort(pareto.begin(), pareto.end(), [](auto* a, auto* b) { return a->area_mean < b->area_mean; });
  for (const Point* p : pareto)
    front << p->area_mean * 100 << " " << double(p->cycles) / 1e6 << " " << p->index << "\n";
  // Many layers (a whole model's kernels): numbered on the axis, their names in layers.csv.
  const bool numbered = !pareto.empty() && pareto.front()->layers.size() > 16;
  if (!pareto.empty()) {
    util << "layer";
    for (const Point* p : pareto) util << " p" << p->index;
    util << "\n";
    for (size_t l = 0; l < pareto.front()->layers.size(); ++l) {
      std::string name = numbered ? std::to_string(l + 1) : pareto.front()->layers[l].layer;
      std::replace(name.begin(), name.end(), ' ', '_');
      util << name;
      for (const Point* p : pareto)
        if (l < p->layers.size())
          util << " " << p->layers[l].utilization * 100;
        else
          util << " NaN";  // a model compiled to fewer accelerator kernels for that config
      util << "\n";
    }
  }
  all.close(), front.close(), util.close();
  std::ofstream gp(dir / "plot.gp");
  gp << "set terminal svg size 900,600 dynamic background rgb 'white'\n"
     << "set datafile separator whitespace\nset grid\nset key top right\n"
     << "set output 'pareto.svg'\nset title 'Accelerator design space: " << what << "'\n"
     << "set xlabel 'area: mean share of an xc7z020 (LUT, FF, DSP, BRAM36; analytical model), %'\n"
     << "set ylabel 'cycles (millions, performance model)'\n"
     << "plot 'plot_points.dat' using 1:2 with points pt 7 ps 0.6 lc rgb '#8080a0' title 'design points', \\\n"
     << "     'plot_pareto.dat' using 1:2 with steps lw 2 lc rgb '#c03030' title 'Pareto front', \\\n"
     << "     'plot_pareto.dat' using 1:2 with points pt 7 ps 1 lc rgb '#c03030' notitle, \\\n"
     << "     'plot_pareto.dat' using 1:2:(sprintf('p%d', $3)) with labels offset 1,1 notitle\n";
  if (!pareto.empty())
    gp << "set output 'utilization.svg'\nset title 'GEMM utilization per layer, Pareto points: " << what << "'\n"
       << (numbered ? "set xlabel 'accelerator kernel, in order (names: layers.csv)'\nset xtics 5\n"
                    : "set xlabel 'layer'\n")
       << "set ylabel 'GEMM utilization (%)'\nset yrange [0:105]\nset key outside right\n"
       << "plot for [i=2:" << pareto.size() + 1 << "] 'plot_utilization.dat' using "
       << (numbered ? "1:i" : "0:i:xtic(1)") << " with linespoints title columnheader(i)\n";
  gp.close();
  std::string cmd = "cd '" + dir.string() + "' && timeout 60 gnuplot plot.gp > plot.log 2>&1";
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0)
    return "no plots: gnuplot is not installed (Debian: apt-get install gnuplot-nox; scripts/bootstrap.sh does)";
  if (std::system(cmd.c_str()) != 0) return "no plots: gnuplot failed (see " + (dir / "plot.log").string() + ")";
  return "plots: " + (dir / "pareto.svg").string() + (pareto.empty() ? "" : ", " + (dir / "utilization.svg").string());
}

// A point's result as --run-job prints it: {"id", "status", "cycles", "macs", "utilization", "area",
// "layers"} ("illegal" with the reason).
json point_result(const Point& p) {
  json r = {{"id", p.id}, {"status", p.ok ? "ok" : "illegal"}};
  if (p.ok) {
    r["cycles"] = p.cycles;
    r["macs"] = p.macs;
    r["utilization"] = p.utilization;
    r["area"] = {{"lut", p.area.lut}, {"ff", p.area.ff}, {"dsp", p.area.dsp}, {"bram36", p.area.bram36}};
    for (const LayerResult& l : p.layers)
      r["layers"].push_back(
          {{"layer", l.layer}, {"cycles", l.cycles}, {"macs", l.macs}, {"utilization", l.utilization}});
  } else {
    r["reason"] = p.reason;
  }
  return r;
}

// The point back from what point_result wrote (a cluster job's metrics.json).
void read_point_result(Point& p, const json& r) {
  p.ok = r.at("status") == "ok";
  if (!p.ok) {
    p.reason = r.at("reason");
    return;
  }
  p.cycles = r.at("cycles");
  p.macs = r.at("macs");
  const json& area = r.at("area");
  p.area = {area.at("lut"), area.at("ff"), area.at("dsp"), area.at("bram36")};
  for (const json& l : r.at("layers"))
    p.layers.push_back({l.at("layer"), l.at("cycles"), l.at("macs"), l.at("utilization")});
  summarize(p);
}

#ifdef LOOM_HAVE_REGRESS
// The sweep as a regression manifest, one job per point (`loom dse --run-job` on its line of
// points.jsonl, writing its result as the job's metrics), run by `loom regress`'s machinery on the
// local cores or a Slurm cluster, with its cache: a point already computed by this Loom is not run again.
int run_as_manifest(const fs::path& dir, std::vector<Point>& points, regress::RunOptions o, std::string& missing) {
  json workloads = json::array();
  const std::string jobs_file = fs::absolute(dir / "points.jsonl").string();
  for (const Point& p : points)
    // Named and found by the point's id alone: a sweep extended by more values reuses every point
    // it already computed, wherever the point now stands.
    workloads.push_back(
        {{"name", "p-" + p.id},
         {"workload", "command:\"$LOOM\" dse --run-job '" + jobs_file + "' --id " + p.id + " > metrics.json"}});
  json group = {{"name", "dse"}, {"workloads", workloads}, {"backends", {"perf"}}, {"timeout_s", 3600}};
  // A model file's contents belong to every point's cache key.
  const std::string w = points.empty() ? "" : points[0].description.value("workload", "");
  if (w.rfind("model:/", 0) == 0) group["files"] = {w.substr(6, w.size() - 6 - std::string(":int8").size())};
  json manifest = {{"name", "dse"}, {"jobs", {group}}};
  std::ofstream(dir / "sweep.json") << manifest.dump(1) << "\n";
  o.out = fs::absolute(dir / "regress");
  regress::Manifest m = regress::parse_manifest(manifest.dump(), (dir / "sweep.json").string(), dir.string());
  int rc = regress::run_regression(m, o);
  // A point's result is its job's metrics.json, from a pass of this build under this description.
  for (size_t i = 0; i < points.size(); ++i) {
    fs::path jd = o.out / "jobs" / m.jobs[i].name;
    try {
      std::ifstream rf(jd / "result.json");
      json result = json::parse(rf);
      if (result.at("status") != "pass" || result.at("key") != regress::cache_key(m.jobs[i]))
        throw std::runtime_error("no pass");
      std::ifstream mf(jd / "metrics.json");
      read_point_result(points[i], json::parse(mf));
    } catch (const std::exception&) {
      points[i] = Point{points[i].index, points[i].description, points[i].id, points[i].values};
      points[i].reason = "no result: see " + (jd / "log.txt").string();
      points[i].missing = true;
      missing += (missing.empty() ? "" : ", ") + m.jobs[i].name;
    }
  }
  return rc;
}
#endif

// One job of a points.jsonl: {"id", "job": {"config", "workload", "backend", "options"}}, run as the
// sweep ran it; prints {"id", "status", "cycles", ...} (status "illegal" with the reason).
int run_job(const std::string& file, int line, const std::string& id) {
  std::ifstream f(file);
  std::string text;
  if (!id.empty()) {  // the line whose id is `id` (where the point stands in the sweep does not matter)
    line = 0;
    for (int k = 1; line == 0 && std::getline(f, text); ++k)
      if (text.find("\"id\":\"" + id + "\"") != std::string::npos) line = k;
    if (line == 0) LOOM_THROW(Error, "--run-job '", file, "' has no point of id ", id);
  } else {
    for (int k = 0; k < line; ++k)
      if (!std::getline(f, text)) LOOM_THROW(Error, "--run-job '", file, "' has no line ", line);
  }
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    LOOM_THROW(Error, "--run-job '", file, "' line ", line, ": not JSON: ", e.what());
  }
  if (!j.is_object() || !j.contains("job") || !j["job"].is_object() || !j["job"].contains("config") ||
      !j["job"].contains("workload") || !j["job"]["workload"].is_string() || !j["job"].contains("options") ||
      !j["job"]["options"].is_object())
    LOOM_THROW(Error, "--run-job '", file, "' line ", line,
               ": expected {\"id\", \"job\": {\"config\", \"workload\", \"backend\", \"options\"}}");
  if (j["job"].value("backend", "") != "perf")
    LOOM_THROW(Error, "--run-job '", file, "' line ", line, ": backend '", j["job"].value("backend", ""),
               "': loom dse runs jobs on perf");
  Point p;
  p.description = j["job"];
  p.id = stable_id(p.description);
  if (j.contains("id") && j["id"] != p.id)
    LOOM_THROW(Error, "--run-job '", file, "' line ", line, ": id ", j["id"].dump(), " is not the description's (",
               p.id, "): the job was edited");
  for (auto& [k, v] : p.description["options"].items())
    if (std::find(kRunParams.begin(), kRunParams.end(), k) == kRunParams.end() || !v.is_number())
      LOOM_THROW(Error, "--run-job '", file, "' line ", line, ": unknown or non-numeric option '", k, "'");
  run_point(p, workload_from(p.description["workload"].get<std::string>()));
  std::cout << point_result(p).dump() << "\n";
  return 0;
}

int dse_cmd(const std::vector<std::string>& args) {
  CLI::App app{
      "Design-space exploration of the accelerator: sweep config parameters over ResNet-18's conv layers, "
      "timed by the performance model, with an analytical area model; CSV, Pareto front and plots",
      "loom dse"};
  std::vector<std::string> sweep_texts;
  std::string out, base_path, layer_list = "all";
  int jobs = 0;
  bool quiet = false;
  app.add_option("--sweep", sweep_texts,
                 "NAME=V1,V2,...: block (block_in and block_out together), batch, block_in, block_out, inp_kib, "
                 "wgt_kib, acc_kib, out_kib, uop_kib, dram_latency, dram_bytes_per_cycle, vthreads, queue_depth "
                 "(repeat for a cross product)");
  app.add_option("--out", out, "folder for points.csv, layers.csv, points.jsonl and the plots");
  std::string job_file;
  int job_line = 1;
  app.add_option("--run-job", job_file,
                 "run one point described in a JSON-lines file (a sweep's points.jsonl; what a cluster runner does "
                 "with each line) and print its result as JSON")
      ->check(CLI::ExistingFile);
  number_option(app, "--line", job_line, "--run-job: the line of the file (1 = the first)", 1, 100000000);
  std::string job_id;
  app.add_option("--id", job_id, "--run-job: the point of this id (instead of --line)")->excludes("--line");
  app.add_option("--base", base_path, "the config the sweeps start from (default: the built-in default)")
      ->check(CLI::ExistingFile);
  app.add_option("--layers", layer_list, "ResNet-18 conv layers: all, or a list such as c2,c5,c11")
      ->capture_default_str();
  std::string model;
  int64_t image = 224;
  app.add_option("--model", model,
                 "instead of the layers, a whole model (a built-in such as resnet18, or an .onnx file), quantized to "
                 "int8 and compiled per config with its int8 layers on the accelerator (one point at a time)");
  number_option(app, "--image", image, "--model: image size of a built-in model", 32, 1024)->capture_default_str();
  number_option(app, "--jobs", jobs, "points run at once (default: the cores)", 1, 256);
  app.add_flag("-q,--quiet", quiet, "no progress bar");
  std::string executor = "threads";
#ifdef LOOM_HAVE_REGRESS
  regress::RunOptions ro;
  app.add_option("--executor", executor,
                 "threads: the points on threads of this process; local or slurm: the sweep as a `loom regress` "
                 "manifest (one job per point, cached), on a local process pool or as a Slurm job array")
      ->check(CLI::IsMember({"threads", "local", "slurm"}))
      ->capture_default_str();
  app.add_option("--partition", ro.slurm.partition, "--executor slurm: sbatch --partition");
  app.add_option("--account", ro.slurm.account, "--executor slurm: sbatch --account");
  number_option(app, "--max-running", ro.slurm.max_running, "--executor slurm: points running at once", 1, 100000);
#else
  app.add_option("--executor", executor, "threads: the points on threads of this process")
      ->check(CLI::IsMember({"threads"}));
#endif
  if (int rc = parse(app, args); rc >= 0) return rc;

  if (!job_file.empty()) return run_job(job_file, job_line, job_id);
  if (sweep_texts.empty() || out.empty()) LOOM_THROW(Error, "loom dse needs --sweep and --out (or --run-job FILE)");
  std::vector<Sweep> sweeps;
  for (const std::string& t : sweep_texts) sweeps.push_back(parse_sweep(t));
  for (size_t i = 0; i < sweeps.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      if (sweeps[i].name == sweeps[j].name) LOOM_THROW(Error, "--sweep ", sweeps[i].name, " is given twice");
      auto is_block = [](const std::string& n) { return n == "block_in" || n == "block_out"; };
      if ((sweeps[i].name == "block" && is_block(sweeps[j].name)) ||
          (sweeps[j].name == "block" && is_block(sweeps[i].name)))
        LOOM_THROW(Error, "--sweep block sets block_in and block_out: not together with --sweep ",
                   sweeps[i].name == "block" ? sweeps[j].name : sweeps[i].name);
    }
  accel::AccelConfig base = base_path.empty() ? accel::default_config() : accel::AccelConfig::load(base_path);
  std::string workload;
  if (!model.empty()) {
    auto names = graph_model_names();
    bool builtin = std::find(names.begin(), names.end(), model) != names.end() && !fs::exists(model);
    // A file by its absolute path: a point's job may run in another folder, or on another machine.
    workload = "model:" + (builtin ? model + "@" + std::to_string(image) : fs::absolute(model).string()) + ":int8";
    jobs = 1;  // one model build at a time
  } else {
    // Every name must be a layer: a typo is an error, never a smaller sweep.
    std::vector<std::string> known;
    for (const ops::AccelConvLayer& l : ops::resnet18_accel_conv_layers()) known.push_back(l.name);
    std::set<std::string> chosen;
    if (layer_list != "all") {
      std::stringstream ss(layer_list);
      for (std::string name; std::getline(ss, name, ',');) {
        if (std::find(known.begin(), known.end(), name) == known.end())
          LOOM_THROW(Error, "--layers '", layer_list, "': ResNet-18 has no conv layer '", name, "'",
                     did_you_mean(name, known), " (its layers: c2 to c11, or all)");
        chosen.insert(name);
      }
      if (chosen.empty()) LOOM_THROW(Error, "--layers '", layer_list, "' names no layer (c2 to c11, or all)");
    }
    workload = "resnet18-convs:";
    bool any = false;
    for (const std::string& l : known)
      if (layer_list == "all" || chosen.count(l)) {
        workload += std::string(any ? "," : "") + l;
        any = true;
      }
  }
  // (the jobs of --executor local|slurm build it themselves: a model is not quantized here for nothing)
  std::optional<Workload> work;
  if (executor == "threads") work = workload_from(workload);

  std::vector<Point> points;
  for (auto& values : cross_product(sweeps)) {
    Point p;
    p.index = points.size();
    p.values = values;
    json options = json::object(), config = json::parse(base.to_json());
    config.erase("name");
    for (auto& [k, v] : values) {
      bool run_param = std::find(kRunParams.begin(), kRunParams.end(), k) != kRunParams.end();
      if (run_param)
        options[k] = v;
      else if (k.size() > 4 && k.substr(k.size() - 4) == "_kib")
        config[k.substr(0, k.size() - 4) + "_buffer_bytes"] = int64_t(v * 1024);
      else
        config[k] = int64_t(v);
    }
    p.description = {{"config", config}, {"workload", workload}, {"backend", "perf"}, {"options", options}};
    p.id = stable_id(p.description);
    points.push_back(std::move(p));
  }
  fs::create_directories(out);
  if (!jobs) jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  std::cout << "loom dse: " << points.size() << " points of " << workload << ", " << jobs << " at once\n";
  auto t0 = std::chrono::steady_clock::now();
#ifdef LOOM_HAVE_REGRESS
  if (executor != "threads") {
    write_outputs(out, points, sweeps);  // points.jsonl: what each job reads
    ro.executor = executor;
    ro.jobs = jobs;
    ro.quiet = quiet;
    std::string missing;
    int rc = run_as_manifest(out, points, ro, missing);
    if (rc > 1) {  // interrupted, or the cluster could not run it: no front drawn from part of the points
      write_outputs(out, points, sweeps);
      std::cout << "the sweep did not finish (see " << fs::path(out) / "regress/report.md"
                << "); points without a result: " << missing << "\n";
      return rc;
    }
    if (!missing.empty()) {  // some points' jobs failed: the results so far, and exit code 1
      write_outputs(out, points, sweeps);
      std::cout << "points without a result (see " << fs::path(out) / "regress/report.md"
                << "): " << missing << "\n";
      return 1;
    }
  } else
#endif
  {
    std::atomic<size_t> next{0}, done{0};
    std::mutex print;
    auto worker = [&] {
      for (size_t i; (i = next++) < points.size();) {
        run_point(points[i], *work);
        size_t d = ++done;
#ifdef LOOM_HAVE_REGRESS
        std::lock_guard<std::mutex> lock(print);
        regress::draw_progress(quiet, d, points.size(), 0, 0);
#else
        (void)d;
#endif
      }
    };
    std::vector<std::thread> pool;
    for (int k = 0; k < std::min<int>(jobs, int(points.size())); ++k) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
#ifdef LOOM_HAVE_REGRESS
    regress::end_progress(quiet);
#endif
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  mark_pareto(points);
  write_outputs(out, points, sweeps);
  size_t ok = 0;
  for (const Point& p : points) ok += p.ok;
  std::cout << std::fixed << std::setprecision(1) << ok << " legal, " << points.size() - ok << " illegal points in "
            << seconds << " s; results in " << fs::path(out) / "points.csv"
            << "\nPareto front (cycles vs area):\n";
  for (const Point& p : points)
    if (p.pareto) {
      std::cout << "  p" << p.index << " " << p.id << ":";
      for (auto& [k, v] : p.values)
        std::cout << " " << k << "=" << std::defaultfloat << std::setprecision(6) << v << std::fixed;
      std::cout << std::setprecision(3) << "  " << double(p.cycles) / 1e6 << " M cycles, area " << std::setprecision(1)
                << p.area_mean * 100 << "% of an xc7z020 (LUT " << std::setprecision(0) << p.area.lut << ", DSP "
                << p.area.dsp << ", BRAM36 " << p.area.bram36 << (p.binding <= 1 ? "; fits" : "; does not fit")
                << ")\n";
    }
  for (const Point& p : points)
    if (!p.ok) std::cout << "  illegal p" << p.index << ": " << p.reason << "\n";
  std::string what = model.empty() ? "ResNet-18 conv layers (" + workload.substr(workload.find(':') + 1) + ")"
                                   : fs::path(model).stem().string() + " (int8, whole model)";
  std::replace(what.begin(), what.end(), '\'', ' ');  // a gnuplot string in single quotes
  std::cout << plot(out, points, what) << "\n";
  return 0;
}

}  // namespace

LOOM_REGISTER_COMMAND("dse",
                      "design-space exploration: sweep accelerator configs over ResNet-18's layers (performance and "
                      "area models), CSV and Pareto plots",
                      dse_cmd);

}  // namespace loom::tools
