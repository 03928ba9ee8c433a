// loom.regress.run's compiled half: a regression manifest run as `loom regress` runs it (local
// process pool or Slurm), its workers being the `loom` executable of this build or install.
#include <pybind11/stl.h>

#include "bindings.h"
#include "loom/regress/manifest.h"
#include "loom/regress/runner.h"
#include "loom/runtime/error.h"

namespace loom::python {

namespace {

py::dict run(const std::string& manifest, const std::string& out, const std::string& executor, int jobs,
             const std::vector<std::string>& only, bool force, const std::string& loom) {
  if (executor != "local" && executor != "slurm")
    LOOM_THROW(ConfigError, "regress.run: executor '", executor, "' is not one of local, slurm");
  if (out.empty()) LOOM_THROW(ConfigError, "regress.run: out (the work folder) is required");
  regress::Manifest m = regress::load_manifest(manifest);
  regress::RunOptions o;
  o.out = out;
  o.executor = executor;
  o.jobs = jobs;
  o.only = only;
  o.force = force;
  o.quiet = true;
  o.loom = loom;
  int rc;
  {
    py::gil_scoped_release released;
    rc = regress::run_regression(m, o);
  }
  py::list specs;
  for (const regress::JobSpec& j : m.jobs) {
    py::dict d;
    d["name"] = j.name;
    d["group"] = j.group;
    d["workload"] = j.workload;
    d["config"] = j.config_name;
    d["backend"] = j.backend;
    specs.append(d);
  }
  py::dict r;
  r["exit_code"] = rc;
  r["jobs"] = specs;
  r["suite"] = m.name;
  return r;
}

}  // namespace

void register_regress(py::module_& m) {
  py::module_ r = m.def_submodule("regress", "Regression runs (loom.regress.run in python/loom/regress.py).");
  r.def(
      "run", &run, py::arg("manifest"), py::arg("out"), py::arg("executor"), py::arg("jobs"), py::arg("only"),
      py::arg("force"), py::arg("loom"),
      "run(manifest, out, executor, jobs, only, force, loom) -> {'exit_code', 'jobs', 'suite'}: see loom.regress.run.");
}

}  // namespace loom::python
