// A regression manifest (JSON, or YAML: a .yaml/.yml file): groups of jobs, each group a cross product of workloads x
// accelerator configs x backends with one expected outcome. Expanded into JobSpecs, each an independent, deterministic
// unit named group/workload/config/backend.
//
//   {"name": "nightly", "timeout_s": 600, "retries": 1,
//    "configs": {"vta": "default", "b32": "configs/b32.json", "small": {"inp_buffer_bytes": 16384}},
//    "jobs": [{"name": "convs", "workloads": ["resnet18:c2", "op:conv2d,channels=32"],
//              "configs": ["vta", "b32"], "backends": ["fsim", "rtl"],
//              "expect": {"reference": "cpu", "max_cycles": 2000000, "min_utilization": 0.2}}]}
//
// Workloads: op:dense|conv2d|add[,key=value...] (a built-in accelerator operator), resnet18:LAYER
// (a ResNet-18 conv layer), program:FILE (an accelerator program), model:NAME|FILE.onnx[@IMAGE]
// (quantized to int8, compiled per config), model:FILE.loom (a compiled model, its own config),
// command:SHELL (a shell command run in the job's folder), random:SEED (a constrained-random
// program cross-checked against the reference backend's commit records), and kinds other libraries register
// (job_kind.h; dse-point:WORKLOAD). Paths are relative to the manifest. A group's "files" lists
// more files its jobs read (their contents join the cache key); its "params" are parameters of its
// workloads' kind.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::regress {

struct Expectation {
  std::string reference = "cpu";  // "cpu" (the workload's own reference), "none", or a backend to match
  std::optional<uint64_t> max_cycles;
  std::optional<double> min_utilization;  // GEMM utilization in [0, 1]
  std::optional<double> min_accuracy;     // models: top-1 agreement with the float model, in [0, 1]
};

struct JobSpec {
  std::string name;  // group/workload/config/backend: unique in the manifest, a folder name
  std::string group, workload, config_name, backend;
  nlohmann::json config;  // the accelerator config (JSON object); null for workloads that carry theirs
  nlohmann::json device;  // backend options merged into the config JSON ({"rtl": {"dram_latency": 40}})
  Expectation expect;
  double timeout_s = 600;
  int retries = 1;                 // resubmissions of a job that crashed, timed out or was lost
  uint64_t seed = 1;               // of the random inputs
  int inputs = 1;                  // models: how many inputs run (accuracy is over these)
  std::string inputs_from;         // models: a folder of .npy inputs (absolute); empty: random draws
  std::vector<std::string> files;  // absolute paths the job reads: their contents are part of its cache key
  nlohmann::json params = nlohmann::json::object();  // the workload kind's parameters (job_kind.h)
  // `loom regress --coverage`: the job's RTL devices run the coverage build of the model and add
  // their counts to the job's rtl_coverage.dat (only backends that declare the "coverage" option).
  bool rtl_coverage = false;
  // Where, in the worker (set by run_job; not part of the description).
  std::string coverage_file;

  // Everything that determines the job's result, canonical (keys sorted): what the cache hashes.
  nlohmann::json to_json() const;
  static JobSpec from_json(const nlohmann::json& j);  // Error naming the field
};

struct Manifest {
  std::string name, path;
  // "coverage_waivers": toggle waivers the coverage report applies (sim/rtl_waivers.h), as an
  // absolute path; "" for none. Checked when the manifest loads.
  std::string coverage_waivers;
  std::vector<JobSpec> jobs;
};

// Error naming the manifest and the line (JSON syntax), or the group and field (meaning): unknown
// keys, backends, configs or workloads, files that do not exist, duplicate job names.
Manifest load_manifest(const std::string& path);
Manifest parse_manifest(const std::string& text, const std::string& origin, const std::string& base_dir);

// The parts of a workload string: its kind ("op", "resnet18", "program", "model", "command", or a
// registered one) and the rest, as the kind parses it.
struct Workload {
  std::string kind, target;
  std::vector<std::pair<std::string, std::string>> params;  // op: key=value pairs
  int64_t image = 0;                                        // model@IMAGE (0: the default)
};
Workload parse_workload(const std::string& text);  // Error naming the workload

}  // namespace loom::regress
