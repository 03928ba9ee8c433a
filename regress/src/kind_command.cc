// command:SHELL: a shell command run in the job's folder with the job's config and backend in the
// environment; passes on exit code 0; metrics.json in the folder, if written, adds metrics.
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "builtin_job_kinds.h"
#include "loom/regress/process.h"
#include "loom/runtime/error.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class CommandJobKind : public JobKind {
 public:
  std::string name() const override { return "command"; }
  std::string syntax() const override { return "command:SHELL"; }
  ResolvedWorkload resolve(const Workload&, const std::string& text, const FileResolver&) const override {
    ResolvedWorkload r;
    r.text = text;
    r.default_reference = "none";
    r.cpu_reference = false;
    r.no_reference = "it checks itself (exit code, metrics.json)";
    return r;
  }
  void run(const JobSpec& job, const Workload& w, const fs::path& dir, const fs::path&, JobOutcome& o) const override {
    std::ofstream(dir / "config.json") << (job.config.is_null() ? json::object() : job.config).dump(1) << "\n";
    setenv("LOOM_JOB_DIR", dir.c_str(), 1);
    setenv("LOOM_JOB_NAME", job.name.c_str(), 1);
    setenv("LOOM_JOB_BACKEND", job.backend.c_str(), 1);
    setenv("LOOM_JOB_CONFIG", (dir / "config.json").c_str(), 1);
    setenv("LOOM", self_executable().c_str(), 1);
    fs::remove(dir / "metrics.json");
    // In the job's process group, under the job's time limit (the worker's: a hang is a timeout); its
    // output goes to the job's log as it comes.
    std::cout << std::flush;
    ChildStatus s = run_command({"/bin/sh", "-c", "cd \"$LOOM_JOB_DIR\" && " + w.target}, nullptr, 1e9, false);
    if (s.kind != ChildStatus::Exited || s.code != 0) {
      o.checks.push_back(
          {"command", false,
           (s.kind == ChildStatus::Signaled ? "the command was " : "the command ended with ") + s.describe()});
      return;  // what it left in metrics.json may be half written
    }
    if (!fs::exists(dir / "metrics.json")) return;
    std::ifstream f(dir / "metrics.json");
    json m;
    try {
      m = json::parse(f);
    } catch (const std::exception& e) {
      LOOM_THROW(Error, "metrics.json written by the command is not JSON: ", e.what());
    }
    if (!m.is_object()) LOOM_THROW(Error, "metrics.json written by the command must be an object");
    for (auto& [k, v] : m.items()) o.metrics[k] = v;
  }
  std::string problem(const JobSpec&, const Workload&) const override { return ""; }  // it opens what it opens
};

}  // namespace

std::unique_ptr<JobKind> make_command_job_kind() { return std::make_unique<CommandJobKind>(); }

}  // namespace loom::regress
