#include "loom/regress/job_kind.h"

#include "loom/runtime/backend_options.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "builtin_job_kinds.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/sim/backends.h"

namespace loom::regress {

using nlohmann::json;

std::vector<std::unique_ptr<JobKind>> builtin_job_kinds() {
  std::vector<std::unique_ptr<JobKind>> kinds;
  kinds.push_back(make_operator_job_kind());
  kinds.push_back(make_resnet18_job_kind());
  kinds.push_back(make_program_job_kind());
  kinds.push_back(make_model_job_kind());
  kinds.push_back(make_command_job_kind());
  kinds.push_back(make_random_job_kind());
  return kinds;
}

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<JobKind>> kinds;
};

// Loom's own kinds first, whatever order the libraries that add theirs load in.
Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    for (auto& k : builtin_job_kinds()) reg->kinds.emplace(k->name(), std::move(k));
    return reg;
  }();
  return *r;
}

}  // namespace

Workload JobKind::parse(const std::string& rest, const std::string&) const {
  Workload w;
  w.kind = name();
  w.target = rest;
  return w;
}

ResolvedWorkload JobKind::resolve(const Workload&, const std::string& text, const FileResolver&) const {
  ResolvedWorkload r;
  r.text = text;
  r.default_reference = "cpu";
  return r;
}

void JobKind::check_params(const json& params) const {
  if (!params.empty())
    LOOM_THROW(Error, "'params': workloads of kind ", name(), " take none (got ", params.dump(), ")");
}

std::string JobKind::problem(const JobSpec& job, const Workload&) const {
  sim::register_backends();
  check_accel_backend(job.backend, device_json(job, job.config, job.backend));
  const std::string& ref = job.expect.reference;
  if (ref != "cpu" && ref != "none") {
    try {
      check_accel_backend(ref, device_json(job, job.config, ref));
    } catch (const Error& e) {
      return std::string("reference: ") + e.what();
    }
  }
  return "";
}

void register_job_kind(std::unique_ptr<JobKind> kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string name = kind->name();
  if (!r.kinds.emplace(name, std::move(kind)).second)
    LOOM_THROW(Error, "a regression job kind named '", name, "' is registered twice");
}

const JobKind* find_job_kind(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.kinds.find(name);
  return it == r.kinds.end() ? nullptr : it->second.get();
}

const JobKind& job_kind(const std::string& name) {
  if (const JobKind* k = find_job_kind(name)) return *k;
  LOOM_THROW(Error, unknown_job_kind(name));
}

std::string unknown_job_kind(const std::string& name) {
  std::string all;
  for (const std::string& k : job_kind_names()) all += (all.empty() ? "" : ", ") + k;
  return "unknown kind '" + name + "' (" + all + ")";
}

std::vector<std::string> job_kind_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (auto& [k, v] : r.kinds) names.push_back(k);
  return names;
}

bool declares_coverage(const std::string& backend) {
  for (const BackendOption& o : accel_backend_options(backend))
    if (o.key == "coverage") return true;
  return false;
}

std::string device_json(const JobSpec& job, const json& config, const std::string& backend) {
  json j = config;
  std::string section = backend.rfind("board-", 0) == 0 ? backend.substr(6) : backend;
  if (job.device.contains(section)) j[section] = job.device[section];
  // Before the job runs (its checks), a stand-in file name: the option is only read, not opened.
  if (job.rtl_coverage && declares_coverage(backend))
    j[section]["coverage"] = job.coverage_file.empty() ? "rtl_coverage.dat" : job.coverage_file;
  return j.dump();
}

}  // namespace loom::regress
