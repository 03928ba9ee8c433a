// loom.dse.sweep: an accelerator design-space sweep from Python, run as `loom dse` runs it (the
// performance, area and energy models and a model's accuracy per point; on threads, a local
// process pool or Slurm), its results as records.
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

// {"block": [16, 32], "precision": ["w8a8", "w4a8"]} as the sweeps `loom dse --sweep` reads.
std::vector<dse::Sweep> sweeps_of(const py::dict& d) {
  std::vector<dse::Sweep> out;
  for (auto [k, v] : d) {
    std::ostringstream text;
    const std::string name = py::str(k).cast<std::string>();
    text << name << "=";
    bool first = true;
    for (auto x : v.cast<py::sequence>()) {
      if (name == "precision" ? !py::isinstance<py::str>(x)
                              : !py::isinstance<py::int_>(x) && !py::isinstance<py::float_>(x))
        LOOM_THROW(TypeError, "dse.sweep: sweep '", name, "' holds a ", type_name(x),
                   name == "precision" ? "; its values are names such as 'w4a8'" : "; values are numbers");
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
  for (const auto& [name, value] : p.values) {
    if (p.labels.count(name))
      r[py::str(name)] = p.labels.at(name);
    else
      r[py::str(name)] = value;
  }
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
  r["operand_widths"] = res.precision;
  r["energy_uj"] = res.energy.empty() ? py::object(py::none()) : py::object(py::float_(res.energy_pj * 1e-6));
  py::dict parts;
  for (const auto& [category, pj] : res.energy) parts[py::str(category)] = pj * 1e-6;
  r["energy"] = parts;  // microjoules by category
  r["asic_mm2"] = res.energy.empty() ? py::object(py::none()) : py::object(py::float_(res.asic_mm2));
  r["accuracy"] = res.accuracy < 0 ? py::object(py::none()) : py::object(py::float_(res.accuracy));
  r["top1"] = res.top1 < 0 ? py::object(py::none()) : py::object(py::float_(res.top1));
  r["feasible"] = res.legal && !p.missing && p.infeasible.empty();
  r["infeasible"] = p.infeasible;
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
               const std::string& account, int max_running, const std::string& energy_table,
               const std::optional<int>& accuracy_inputs, const std::vector<std::string>& objectives,
               const std::string& part, const std::optional<std::string>& fits,
               const std::optional<double>& min_accuracy, const std::optional<double>& max_energy) {
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
  std::string objective_list;
  for (const std::string& o : objectives) objective_list += (objective_list.empty() ? "" : ",") + o;
  if (max_energy && !(*max_energy > 0)) LOOM_THROW(ConfigError, "dse.sweep: max_energy must be positive");
  if (min_accuracy && !(*min_accuracy >= 0 && *min_accuracy <= 1))
    LOOM_THROW(ConfigError, "dse.sweep: min_accuracy must be in [0, 1]");
  if (fits && part != "xc7z020" && part != *fits)
    LOOM_THROW(ConfigError, "dse.sweep: fits='", *fits, "' sets the part; part='", part, "' does not go with it");
  const dse::Judging judging =
      dse::make_judging(energy_table, accuracy_inputs.value_or(-1), model.has_value(), objective_list, part,
                        fits.value_or(""), min_accuracy.value_or(-1), max_energy.value_or(0));
  std::vector<dse::Point> points = dse::make_points(b, s, workload);
  dse::set_evaluation(points, judging.evaluation);
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
    const std::string& p = judging.constraints.part;
    if (executor != "threads") dse::write_outputs(dir, points, s, p);  // what the points are, before they run
    run = dse::run_sweep(points, dir, ro);
    dse::judge(points, judging, run.missing.empty());
    if (out) dse::write_outputs(dir, points, s, p);
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
        py::arg("max_running") = 0, py::arg("energy_table") = "asic-45nm", py::arg("accuracy_inputs") = py::none(),
        py::arg("objectives") = std::vector<std::string>{"cycles", "area"}, py::arg("part") = "xc7z020",
        py::arg("fits") = py::none(), py::arg("min_accuracy") = py::none(), py::arg("max_energy") = py::none(),
        "sweep(sweeps, *, base=None, layers='all', model=None, image=224, jobs=1, out=None, ...) -> list of dicts\n"
        "The cross product of `sweeps` ({parameter: [values]}: block, batch, inp_kib, ..., dram_latency, ...,\n"
        "precision: ['w8a8', 'w4a8', ...]; `loom dse --help` lists them) over `base` (a loom.accel.Config or a\n"
        "config file; the default), each point timed by the performance model on ResNet-18's conv `layers`\n"
        "(or a whole `model`, quantized at each point's precision) with its area and its energy per inference\n"
        "by `energy_table` (docs/energy.md), and a model's accuracy measured on `accuracy_inputs` inputs\n"
        "(default 16), on `jobs` threads. The front is over `objectives` (two or three of cycles, energy,\n"
        "area, asic_area, accuracy) within the constraints `fits` (a part's name; `part`: the part area\n"
        "shares are of), `min_accuracy`, `max_energy` (uJ). One record per point: the swept values, legal,\n"
        "reason, cycles, macs, utilization, lut, ff, dsp, bram36, area_mean, binding, operand_widths,\n"
        "energy_uj, energy (uJ by category), asic_mm2, accuracy, top1, feasible, infeasible (why not),\n"
        "pareto, layers.\n"
        "`out`: also write points.csv, layers.csv and points.jsonl there, as `loom dse --out` does.\n"
        "executor: 'threads' (this process), or 'local' / 'slurm': each point a cached dse-point job of a\n"
        "`loom regress` run in out/regress, on a process pool or as a Slurm job array (partition, account,\n"
        "max_running), run by the `loom` executable `loom`. A point whose job failed has legal False and\n"
        "reason 'no result'.");
}

}  // namespace loom::python
