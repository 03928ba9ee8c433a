// The accelerator backend a `loom` command runs on: --backend fsim|rtl|systemc|..., and for the
// RTL simulations (rtl, systemc) their options (--dram-latency N, --dram-bytes-per-cycle B,
// --cycle-limit N, --fst FILE [--fst-begin C] [--fst-end C], --trace FILE [--trace-begin C]
// [--trace-end C]: a Perfetto timeline), for the SystemC platform its memory
// model (--memory fixed|banked, --banks N, --row-hit-latency N, --row-miss-latency N), and for
// the functional simulator its step limit (--step-limit N).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cli.h"
#include "loom/accel/config.h"
#include "loom/runtime/accel_device.h"
#include "loom/sim/commit_log.h"

namespace loom::tools {

struct BackendOptions {
  std::string backend = "fsim";
  uint32_t dram_latency = 0;
  double dram_bytes_per_cycle = 0;
  uint64_t cycle_limit = 0, fst_begin = 0, fst_end = 0, step_limit = 0;
  std::string fst, trace;
  uint64_t trace_begin = 0, trace_end = 0;
  std::string memory;
  uint32_t banks = 0, row_hit_latency = 0, row_miss_latency = 0;
  // The options given on the command line (null until add_backend_options).
  CLI::Option *o_backend = nullptr, *o_dram_latency = nullptr, *o_dram_bytes_per_cycle = nullptr,
              *o_cycle_limit = nullptr, *o_fst = nullptr, *o_fst_begin = nullptr, *o_fst_end = nullptr,
              *o_step_limit = nullptr, *o_memory = nullptr, *o_banks = nullptr, *o_row_hit_latency = nullptr,
              *o_row_miss_latency = nullptr, *o_trace = nullptr, *o_trace_begin = nullptr, *o_trace_end = nullptr;
};

// --config FILE: the accelerator config (JSON), and loading it (empty: the built-in default).
CLI::Option* add_config_option(CLI::App& app, std::string& path);
accel::AccelConfig load_config(const std::string& path);

// Adds --backend and the simulators' options to `app`, parsed into `opt`.
void add_backend_options(CLI::App& app, BackendOptions& opt);

// Whether --backend or any simulator option was given on the command line.
bool any_backend_option(const BackendOptions& opt);

// The device of the chosen backend for `config`. The RTL options need --backend rtl.
std::unique_ptr<AccelDevice> open_accel_backend(const BackendOptions& opt, const accel::AccelConfig& config);
// --compare: the report of two backends' records: the first divergence with both records (returns 1), or that
// every instruction's effect is the same (0; 1 if only one backend stopped with an error).
CLI::Option* add_compare_option(CLI::App& app, std::vector<std::string>& backends, const std::string& help);
// Runs `run` on `device` with commit records on: its records, and its DeviceError's text if it
// stopped with one. ConfigError naming `backend` if the device keeps no records.
void run_recorded(AccelDevice* device, const std::string& backend, const std::function<void()>& run,
                  std::vector<sim::CommitRecord>& records, std::string& error);
int report_divergence(const std::string& what, const std::vector<std::string>& backends,
                      const std::vector<sim::CommitRecord> (&records)[2], const std::string (&errors)[2]);

// The config JSON the backend is opened with: `config` plus the simulator options given.
std::string backend_config_json(const BackendOptions& opt, const accel::AccelConfig& config);

}  // namespace loom::tools
