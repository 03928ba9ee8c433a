// loom.dse.sweep: an accelerator design-space sweep from Python, run as `loom dse` runs it (the
// performance and area models per point; on threads, a local process pool or Slurm), its results
// as records.
#include <pybind11/stl.h>

#include <filesystem>
#include <sstream>

#include "bindings.h"
#include "loom/dse/run.h"
#include "loom/dse/sweep.h"
#include "loom/runtime/error.h"
#include "loom/runtime/interrupt.h"

namespace loom::python {

namespace {

namespace fs = std::filesystem;

// {"block": [16, 32], "inp_kib": [32, 64]} as the sweeps `loom dse --sweep` reads.
std::vector<dse::Sweep> sweeps_of(const py::dict& d) {
  std::vector<dse::Sweep> out;
  for (auto [k, v] : d) {
    std::ostringstream text;
    text << py::str(k).cast<std::string>() << "=";
    bool first = true;
    for (auto x : v.cast<py::sequence>()) {
      if (!py::isinstance<py::int_>(x) && !py::isinstance<py::float_>(x))
        LOOM_THROW(TypeError, "dse.sweep: sweep '", py::str(k).cast<std::string>(), "' holds a ", type_name(x),
                   "; values are numbers");
      text << (first ? "" : ",") << py::str(x).cast<std::string>();
      first = false;
    }
    out.push_back(dse::parse_sweep(text.str()));
  }
  if (out.empty()) LOOM_THROW(ConfigError, "dse.sweep: no sweeps (give {parameter: [values]})");
  dse::check_sweeps(out);
  return out;
}

py::dict record(const dse::Point& p) {
  py::dict r;
  r["index"] = p.index;
  r["id"] = p.id;
  for (const auto& [name, value] : p.values) r[py::str(name)] = value;
  const dse::PointResult& res = p.result;
  r["legal"] = res.legal && !p.missing;
  r["reason"] = p.missing ? std::string("no result") : res.reason;
  r["cycles"] = res.cycles;
  r["macs"] = res.macs;
  r["utilization"] = res.utilization;
  r["lut"] = res.area.lut;
  r["ff"] = res.area.ff;
  r["dsp"] = res.area.dsp;
  r["bram36"] = res.area.bram36;
  r["area_mean"] = res.area_mean;
  r["binding"] = res.binding;
  r["pareto"] = p.pareto;
  py::list layers;
  for (const dse::LayerResult& l : res.layers) {
    py::dict d;
    d["layer"] = l.layer;
    d["cycles"] = l.cycles;
    d["macs"] = l.macs;
    d["utilization"] = l.utilization;
    layers.append(d);
  }
  r["layers"] = layers;
  return r;
}

py::list sweep(const py::dict& sweeps, const py::object& base, const std::string& layers,
               const std::optional<std::string>& model, int64_t image, int jobs, const std::optional<std::string>& out,
               const std::string& executor, const std::string& loom, const std::string& partition,
               const std::string& account, int max_running) {
  if (executor != "threads" && executor != "local" && executor != "slurm")
    LOOM_THROW(ConfigError, "dse.sweep: executor '", executor, "' is not one of threads, local, slurm");
  if (executor != "threads" && loom.empty())
    LOOM_THROW(ConfigError, "dse.sweep: executor '", executor, "' runs each point as a `loom` job; give loom=PATH");
  std::vector<dse::Sweep> s = sweeps_of(sweeps);
  accel::AccelConfig b = accel::default_config();
  if (py::isinstance<accel::AccelConfig>(base))
    b = base.cast<accel::AccelConfig>();
  else if (!base.is_none())
    b = accel::AccelConfig::load(fspath(base));
  b.validate();
  if (jobs < 1) LOOM_THROW(ConfigError, "dse.sweep: jobs must be at least 1");
  const std::string workload = model ? dse::model_workload(*model, image) : dse::conv_layers_workload(layers);
  std::vector<dse::Point> points = dse::make_points(b, s, workload);
  // The sweep's folder: the one asked for (points.csv, layers.csv, points.jsonl), or a temporary one.
  fs::path dir = out ? fs::path(*out) : fs::temp_directory_path() / ("loom-dse-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  dse::SweepRunOptions ro;
  ro.executor = executor;
  ro.jobs = model ? 1 : jobs;  // one model build at a time, as `loom dse --model`
  ro.quiet = true;
  ro.regress.loom = loom;
  ro.regress.slurm.partition = partition;
  ro.regress.slurm.account = account;
  ro.regress.slurm.max_running = max_running;
  dse::SweepRun run;
  {
    py::gil_scoped_release released;
    if (executor != "threads") dse::write_outputs(dir, points, s);  // what the points are, before they run
    run = dse::run_sweep(points, dir, ro);
    if (run.missing.empty()) dse::mark_pareto(points);
    if (out) dse::write_outputs(dir, points, s);
  }
  if (!out) fs::remove_all(dir);
  if (run.exit_code == 130) LOOM_THROW(Interrupted, "dse.sweep: interrupted; points without a result: ", run.missing);
  py::list records;
  for (const dse::Point& p : points) records.append(record(p));
  return records;
}

}  // namespace

void register_dse(py::module_& m) {
  py::module_ d = m.def_submodule("dse", "Accelerator design-space sweeps (docs/python.md).");
  d.def("sweep", &sweep, py::arg("sweeps"), py::kw_only(), py::arg("base") = py::none(), py::arg("layers") = "all",
        py::arg("model") = py::none(), py::arg("image") = 224, py::arg("jobs") = 1, py::arg("out") = py::none(),
        py::arg("executor") = "threads", py::arg("loom") = "", py::arg("partition") = "", py::arg("account") = "",
        py::arg("max_running") = 0,
        "sweep(sweeps, *, base=None, layers='all', model=None, image=224, jobs=1, out=None) -> list of dicts\n"
        "The cross product of `sweeps` ({parameter: [values]}: block, batch, inp_kib, ..., dram_latency, ...;\n"
        "`loom dse --help` lists them) over `base` (a loom.accel.Config or a config file; the default),\n"
        "each point timed by the performance model on ResNet-18's conv `layers` (or a whole `model` in\n"
        "int8) with its area estimated, on `jobs` threads. One record per point: the swept values, legal,\n"
        "reason, cycles, macs, utilization, lut, ff, dsp, bram36, area_mean, binding, pareto, layers.\n"
        "`out`: also write points.csv, layers.csv and points.jsonl there, as `loom dse --out` does.\n"
        "executor: 'threads' (this process), or 'local' / 'slurm': each point a cached dse-point job of a\n"
        "`loom regress` run in out/regress, on a process pool or as a Slurm job array (partition, account,\n"
        "max_running), run by the `loom` executable `loom`. A point whose job failed has legal False and\n"
        "reason 'no result'.");
}

}  // namespace loom::python
