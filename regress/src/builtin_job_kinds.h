// Loom's own regression job kinds (op, resnet18, program, model, command, random) and what their runs
// share: opening a job's device, comparing with a reference, the timing metrics.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/accel/config.h"
#include "loom/regress/job_kind.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/ndarray.h"

namespace loom::regress {

std::vector<std::unique_ptr<JobKind>> builtin_job_kinds();
std::unique_ptr<JobKind> make_operator_job_kind();  // op:NAME[,key=value...]
std::unique_ptr<JobKind> make_resnet18_job_kind();  // resnet18:LAYER
std::unique_ptr<JobKind> make_program_job_kind();   // program:FILE
std::unique_ptr<JobKind> make_model_job_kind();     // model:NAME|FILE[@IMAGE]
std::unique_ptr<JobKind> make_command_job_kind();   // command:SHELL
std::unique_ptr<JobKind> make_random_job_kind();    // random:SEED

// The device of `backend` for the job; errors say which role it had ("the job's", "the reference").
std::unique_ptr<AccelDevice> open_job_device(const JobSpec& job, const std::string& backend,
                                             const nlohmann::json& config, const std::string& role);
// Compares an output with the reference's: the mismatch count joins the metrics, a difference
// is a failed check named "reference WHAT".
void compare_into(JobOutcome& o, const std::string& what, const NDArray& got, const NDArray& want);
// Cycles, GEMM work and utilization of a timed run.
void time_metrics(JobOutcome& o, const accel::AccelConfig& cfg, uint64_t cycles, double macs);

}  // namespace loom::regress
