#include "loom/regress/job.h"

#include <iostream>
#include <sstream>

#include "builtin_job_kinds.h"
#include "loom/regress/compare.h"
#include "loom/regress/job_kind.h"
#include "loom/runtime/error.h"
#include "loom/sim/backends.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

std::unique_ptr<AccelDevice> open_job_device(const JobSpec& job, const std::string& backend, const json& config,
                                             const std::string& role) {
  try {
    return make_accel_device(backend, device_json(job, config, backend));
  } catch (const Error& e) {
    LOOM_THROW(Error, role, " backend ", backend, ": ", e.what());
  }
}

void compare_into(JobOutcome& o, const std::string& what, const NDArray& got, const NDArray& want) {
  ArrayDiff d = compare_arrays(got, want);
  o.metrics["mismatches"] = o.metrics.value("mismatches", int64_t(0)) + d.mismatches;
  if (!d.equal())
    o.checks.push_back(
        {"reference " + what, false, d.detail + " (" + std::to_string(d.mismatches) + " elements differ)"});
}

void time_metrics(JobOutcome& o, const accel::AccelConfig& cfg, uint64_t cycles, double macs) {
  o.metrics["macs"] = macs;
  if (!cycles) return;
  o.metrics["cycles"] = cycles;
  o.metrics["utilization"] = macs / (double(cfg.batch) * cfg.block_in * cfg.block_out * double(cycles));
}

namespace {

// The expectation's bounds on the metrics.
void check_bounds(const JobSpec& job, JobOutcome& o) {
  const Expectation& e = job.expect;
  auto number = [&](const char* key) -> std::optional<double> {
    if (o.metrics.contains(key) && o.metrics[key].is_number()) return o.metrics[key].get<double>();
    return std::nullopt;
  };
  auto untimed = "no cycle count: backend " + job.backend + " does not time the run (rtl, perf and systemc do)";
  if (e.max_cycles) {
    auto c = number("cycles");
    o.checks.push_back(
        {"max_cycles", c && *c <= double(*e.max_cycles),
         c ? std::to_string(uint64_t(*c)) + " cycles, budget " + std::to_string(*e.max_cycles) : untimed});
  }
  if (e.min_utilization) {
    auto u = number("utilization");
    std::ostringstream os;
    if (u) os << "GEMM utilization " << *u << ", floor " << *e.min_utilization;
    o.checks.push_back({"min_utilization", u && *u >= *e.min_utilization, u ? os.str() : untimed});
  }
  if (e.min_accuracy) {
    auto a = number("accuracy");
    std::ostringstream os;
    if (a)
      os << "top-1 agreement with the float model " << *a << " over " << job.inputs << " inputs, floor "
         << *e.min_accuracy;
    std::string unmeasured = o.metrics.value("accuracy_unmeasured", std::string("no accuracy measured"));
    o.checks.push_back({"min_accuracy", a && *a >= *e.min_accuracy, a ? os.str() : unmeasured});
  }
}

}  // namespace

std::string job_problem(const JobSpec& job) {
  try {
    Workload w = parse_workload(job.workload);
    return job_kind(w.kind).problem(job, w);
  } catch (const Error& e) {
    return e.what();
  }
}

json JobOutcome::to_json() const {
  json c = json::array();
  for (const Check& k : checks) c.push_back({{"name", k.name}, {"ok", k.ok}, {"detail", k.detail}});
  return {{"status", status}, {"message", message}, {"metrics", metrics}, {"checks", c}};
}

JobOutcome JobOutcome::from_json(const json& j) {
  JobOutcome o;
  try {
    o.status = j.at("status").get<std::string>();
    o.message = j.at("message").get<std::string>();
    o.metrics = j.at("metrics");
    if (!o.metrics.is_object()) LOOM_THROW(Error, "'metrics' is not an object");
    for (const json& c : j.at("checks"))
      o.checks.push_back({c.at("name").get<std::string>(), c.at("ok").get<bool>(), c.at("detail").get<std::string>()});
  } catch (const json::exception& e) {
    LOOM_THROW(Error, "job outcome ", j.dump().substr(0, 120), ": ", e.what());
  }
  return o;
}

JobOutcome run_job(const JobSpec& spec, const fs::path& dir, const fs::path& artifacts) {
  JobOutcome o;
  JobSpec job = spec;
  try {
    sim::register_backends();
    fs::create_directories(dir);
    if (job.rtl_coverage) {  // counts from this attempt only, not an earlier one that crashed
      job.coverage_file = fs::absolute(dir / kRtlCoverageFile).string();
      fs::remove(job.coverage_file);
    }
    Workload w = parse_workload(job.workload);
    std::cout << "job " << job.name << ": " << job.workload << " on " << job.backend << " (config " << job.config_name
              << ")" << std::endl;
    job_kind(w.kind).run(job, w, dir, artifacts, o);
    if (job.expect.reference != "none") {
      bool clean = true;
      for (const Check& c : o.checks) clean &= c.name.rfind("reference", 0) != 0;
      if (clean) o.checks.push_back({"reference " + job.expect.reference, true, "bit-exact"});
    }
    check_bounds(job, o);
    bool ok = true;
    for (const Check& c : o.checks) ok &= c.ok;
    o.status = ok ? "pass" : "fail";
    for (const Check& c : o.checks)
      if (!c.ok) {
        o.message = c.name + ": " + c.detail;
        break;
      }
  } catch (const std::exception& e) {
    o.status = "error";
    o.message = e.what();
  }
  std::cout << "job " << job.name << ": " << o.status << (o.message.empty() ? "" : ": " + o.message) << std::endl;
  return o;
}

}  // namespace loom::regress
