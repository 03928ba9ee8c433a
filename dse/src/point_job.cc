// The dse-point regression job kind: "dse-point:WORKLOAD" with the point's config as the job's
// config, its DRAM and queue parameters as the perf backend's options and the rest (vthreads, the
// evaluation: energy table and accuracy inputs) as the job's params. Its outcome's metrics are the point's result
// (PointResult::to_json): an illegal point passes with status "illegal", as a sweep reports it.
#include <algorithm>
#include <iostream>

#include "loom/accel/config.h"
#include "loom/dse/run.h"
#include "loom/graph/builtin_models.h"
#include "loom/regress/job_kind.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/sim/backends.h"

namespace loom::dse {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kKind = "dse-point";
// Run parameters that are the perf backend's options (the rest are the job's params).
const std::vector<std::string> kPerfOptions = {"dram_latency", "dram_bytes_per_cycle", "queue_depth"};

bool perf_option(const std::string& k) {
  return std::find(kPerfOptions.begin(), kPerfOptions.end(), k) != kPerfOptions.end();
}

class PointJobKind : public regress::JobKind {
 public:
  std::string name() const override { return kKind; }
  std::string syntax() const override { return "dse-point:resnet18-convs:LAYERS|model:NAME[@IMAGE]:int8"; }
  regress::ResolvedWorkload resolve(const regress::Workload& w, const std::string& text,
                                    const regress::FileResolver& file) const override {
    Workload::check(w.target);
    regress::ResolvedWorkload r;
    r.text = text;
    r.default_reference = "none";
    r.cpu_reference = false;
    r.no_reference = "the performance model times it; nothing computes its outputs";
    // A model file (not a built-in): by its absolute path, so that a worker anywhere finds it, and
    // its contents join the cache key.
    const std::string model = "model:", int8 = ":int8";
    if (w.target.rfind(model, 0) == 0) {
      const std::string name = w.target.substr(model.size(), w.target.size() - model.size() - int8.size());
      const auto builtin = graph::builtin_model_names();
      if (std::find(builtin.begin(), builtin.end(), name.substr(0, name.rfind('@'))) == builtin.end())
        r.text = std::string(kKind) + ":" + model + file(name) + int8;
    }
    return r;
  }
  void check_params(const json& params) const override {
    for (auto& [k, v] : params.items()) {
      if (k == "evaluation") {
        Evaluation::from_json(v, "'params'");
        continue;
      }
      if (k != "vthreads" || !v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 64)
        LOOM_THROW(Error, "'params': ", kKind, " takes {\"vthreads\": 1 to 64, \"evaluation\": {...}}, not '", k,
                   "': ", v.dump());
    }
  }
  void run(const regress::JobSpec& job, const regress::Workload&, const fs::path&, const fs::path&,
           regress::JobOutcome& o) const override {
    PointSpec spec = point_spec(job);
    PointResult r = run_point(spec, Workload::from(spec.workload, spec.evaluation.accuracy_inputs));
    std::cout << "design point " << spec.id() << ": " << (r.legal ? "legal" : "illegal: " + r.reason) << "\n";
    o.metrics = r.to_json();
    o.metrics["id"] = spec.id();
  }
  // Whether the point's config is legal is its result, not a problem: only the perf options are
  // checked (against the default config).
  std::string problem(const regress::JobSpec& job, const regress::Workload&) const override {
    try {
      sim::register_backends();
      check_accel_backend("perf", regress::device_json(job, json::parse(accel::default_config().to_json()), "perf"));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

LOOM_REGISTER_JOB_KIND(PointJobKind);

}  // namespace

regress::JobSpec point_job(const Point& p) {
  regress::JobSpec j;
  j.group = "dse";
  j.workload = std::string(kKind) + ":" + p.spec.workload;
  j.config_name = "point";
  j.config = p.spec.config;
  j.backend = "perf";
  j.expect.reference = "none";
  j.timeout_s = 3600;
  json perf = json::object();
  for (auto& [k, v] : p.spec.options.items()) {
    if (perf_option(k))
      perf[k] = v;
    else
      j.params[k] = int64_t(v.get<double>());
  }
  perf["functional"] = false;
  j.device = {{"perf", perf}};
  if (json e = p.spec.evaluation.to_json(); !e.empty()) j.params["evaluation"] = e;
  const std::string model = "model:", int8 = ":int8";
  const std::string& w = p.spec.workload;
  if (w.rfind(model + "/", 0) == 0) j.files = {w.substr(model.size(), w.size() - model.size() - int8.size())};
  // Named by the point's id alone: a sweep extended by more values reuses every point it already
  // computed, wherever the point now stands.
  j.name = "dse/p-" + p.id;
  return j;
}

PointSpec point_spec(const regress::JobSpec& job) {
  const std::string prefix = std::string(kKind) + ":";
  if (job.workload.rfind(prefix, 0) != 0) LOOM_THROW(Error, "job ", job.name, " is no ", kKind, " job");
  PointSpec s;
  s.config = job.config;
  s.workload = job.workload.substr(prefix.size());
  if (job.device.contains("perf"))
    for (auto& [k, v] : job.device["perf"].items())
      if (perf_option(k)) s.options[k] = v;
  for (auto& [k, v] : job.params.items()) {
    if (k == "evaluation")
      s.evaluation = Evaluation::from_json(v, "job " + job.name);
    else
      s.options[k] = v.get<double>();
  }
  return s;
}

}  // namespace loom::dse
