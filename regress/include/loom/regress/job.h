// Running one regression job in this process: the workload compiled for the job's config, run on
// its backend, its outputs dumped into the job's folder and checked against the expectation.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/regress/manifest.h"

namespace loom::regress {

struct Check {
  std::string name;  // "reference cpu", "max_cycles", ...
  bool ok = false;
  std::string detail;
};

// status: "pass", "fail" (a check failed) or "error" (the job could not run: the message says why).
struct JobOutcome {
  std::string status = "error", message;
  nlohmann::json metrics = nlohmann::json::object();  // cycles, instructions, utilization, mismatches, accuracy, ...
  std::vector<Check> checks;
  nlohmann::json to_json() const;
  static JobOutcome from_json(const nlohmann::json& j);  // Error naming what is missing
};

// Never throws: a failure of the workload is the outcome's. Outputs go to `workdir` (.npy). Model
// jobs share their compiled models with the run's other jobs in `artifacts` (the run's work
// folder's artifacts/; empty: compiled in this process alone).
// The file in a job's folder its RTL devices' coverage goes to (JobSpec::rtl_coverage).
inline constexpr char kRtlCoverageFile[] = "rtl_coverage.dat";

JobOutcome run_job(const JobSpec& job, const std::filesystem::path& workdir,
                   const std::filesystem::path& artifacts = {});

// Why the job cannot run here, found without running it ("" when it can): a backend (the job's or
// the reference) that cannot open a device for the job's config, such as an RTL backend for a
// config without a built RTL model.
std::string job_problem(const JobSpec& job);

}  // namespace loom::regress
