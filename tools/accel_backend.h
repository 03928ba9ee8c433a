// The accelerator backend a `loom` command runs on: --backend fsim|rtl|systemc|..., and the
// simulators' options as flags made from the options each backend declares
// (runtime/backend_options.h): --dram-latency for "dram_latency", --banks for "banks", ... A flag
// is accepted with a backend that declares its key; its value is checked against that declaration.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "cli.h"
#include "loom/accel/config.h"
#include "loom/accel/hw_params.h"
#include "loom/runtime/accel_device.h"
#include "loom/sim/commit_log.h"

namespace loom::tools {

struct BackendOptions {
  std::string backend = "fsim";
  CLI::Option* o_backend = nullptr;
  // Per declared key (in every registered backend): its flag, and its text when given.
  std::map<std::string, CLI::Option*> flags;
  std::map<std::string, std::string> values;
  bool given(const std::string& key) const;
};

// --config FILE: the accelerator config (JSON), and loading it (empty: the built-in default).
CLI::Option* add_config_option(CLI::App& app, std::string& path);
accel::AccelConfig load_config(const std::string& path);
// --gemm-multipliers auto|plain|dsp|lut and its older spelling --plain-gemm, into `rtl.gemm`.
void add_gemm_multipliers_option(CLI::App& app, accel::RtlOptions& rtl);

// Adds --backend and the simulators' options to `app`, parsed into `opt`.
void add_backend_options(CLI::App& app, BackendOptions& opt);

// Whether --backend or any simulator option was given on the command line.
bool any_backend_option(const BackendOptions& opt);

// The device of the chosen backend for `config`, opened with the options given.
std::unique_ptr<AccelDevice> open_accel_backend(const BackendOptions& opt, const accel::AccelConfig& config);
// --compare: the report of two backends' records: the first divergence with both records (returns 1), or that
// every instruction's effect is the same (0; 1 if only one backend stopped with an error).
CLI::Option* add_compare_option(CLI::App& app, std::vector<std::string>& backends, const std::string& help);
int report_divergence(const std::string& what, const std::vector<std::string>& backends,
                      const std::vector<sim::CommitRecord> (&records)[2], const std::string (&errors)[2]);

// The config JSON the backend is opened with: `config` plus the simulator options given.
std::string backend_config_json(const BackendOptions& opt, const accel::AccelConfig& config);

}  // namespace loom::tools
