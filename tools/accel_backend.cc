#include "accel_backend.h"

#include <algorithm>
#include <iostream>

#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"

namespace loom::tools {

namespace {

bool given(const CLI::Option* o) { return o && o->count() > 0; }

bool memory_options(const BackendOptions& opt) {
  return given(opt.o_memory) || given(opt.o_banks) || given(opt.o_row_hit_latency) || given(opt.o_row_miss_latency);
}

// The RTL options need --backend rtl or systemc, the memory model systemc, and a waveform window
// must not be empty.
void check(const BackendOptions& opt) {
  bool rtl_options = given(opt.o_dram_latency) || given(opt.o_dram_bytes_per_cycle) || given(opt.o_cycle_limit) ||
                     given(opt.o_fst) || given(opt.o_trace);
  if ((rtl_options || memory_options(opt) || given(opt.o_step_limit)) && rpc::is_url(opt.backend))
    throw CLI::ValidationError(
        "the simulator options apply where the device is: give them to `loom rpc-server`, not to an rpc:// backend");
  // The performance model ("perf") takes the memory system and a timeline too.
  bool perf_options = given(opt.o_dram_latency) || given(opt.o_dram_bytes_per_cycle) || given(opt.o_trace);
  bool rtl_only = given(opt.o_cycle_limit) || given(opt.o_fst) || given(opt.o_trace_begin) || given(opt.o_trace_end);
  if (opt.backend == "perf" && perf_options && !rtl_only) rtl_options = false;
  if (rtl_options && opt.backend != "rtl" && opt.backend != "systemc")
    throw CLI::ValidationError(
        "--dram-latency, --dram-bytes-per-cycle, --cycle-limit, --fst and --trace need --backend rtl or systemc "
        "(--dram-latency, --dram-bytes-per-cycle and --trace also perf)");
  if (memory_options(opt) && opt.backend != "systemc")
    throw CLI::ValidationError("--memory, --banks, --row-hit-latency and --row-miss-latency need --backend systemc");
  if (given(opt.o_step_limit) && opt.backend != "fsim") throw CLI::ValidationError("--step-limit needs --backend fsim");
  if (given(opt.o_trace_begin) && given(opt.o_trace_end) && opt.trace_end <= opt.trace_begin)
    throw CLI::ValidationError("--trace-end (" + std::to_string(opt.trace_end) + ") must be after --trace-begin (" +
                               std::to_string(opt.trace_begin) + ")");
  if (given(opt.o_fst_begin) && given(opt.o_fst_end) && opt.fst_end <= opt.fst_begin)
    throw CLI::ValidationError("--fst-end (" + std::to_string(opt.fst_end) + ") must be after --fst-begin (" +
                               std::to_string(opt.fst_begin) + ")");
}

}  // namespace

void add_backend_options(CLI::App& app, BackendOptions& opt) {
  std::string backends;
  for (auto& b : accel_backends()) backends += (backends.empty() ? "" : "|") + b;
  auto known = accel_backends();
  opt.o_backend =
      app.add_option("--backend", opt.backend,
                     "accelerator backend (" + backends + ", or rpc://HOST:PORT/BACKEND for a remote device)")
          ->check(CLI::Validator(
              [known](std::string& b) -> std::string {
                if (std::find(known.begin(), known.end(), b) != known.end()) return "";
                if (!rpc::is_url(b))
                  return b + " is not a backend (" + CLI::detail::join(known, ", ") + ", rpc://HOST:PORT/BACKEND)";
                try {
                  rpc::parse_url(b);
                } catch (const Error& e) {
                  return e.what();
                }
                return "";
              },
              "BACKEND"))
          ->capture_default_str()
          ->group("Backend");
  opt.o_dram_latency =
      number_option(app, "--dram-latency", opt.dram_latency, "rtl: DRAM latency in cycles (default 32)", 0, 1'000'000)
          ->group("Backend");
  opt.o_dram_bytes_per_cycle = app.add_option("--dram-bytes-per-cycle", opt.dram_bytes_per_cycle,
                                              "rtl: DRAM bandwidth in bytes per cycle (default 16)")
                                   ->transform(positive_up_to(4096))
                                   ->group("Backend");
  opt.o_cycle_limit =
      number_option(app, "--cycle-limit", opt.cycle_limit,
                    "rtl: fail a run without FINISH after this many cycles (default 4e9)", 1, uint64_t(1e15))
          ->group("Backend");
  opt.o_step_limit = number_option(app, "--step-limit", opt.step_limit,
                                   "fsim: fail a run after this many micro-op steps (default 1e9)", 1, uint64_t(1e15))
                         ->group("Backend");
  opt.o_fst = app.add_option("--fst", opt.fst, "rtl: write a waveform (FST) of the run to this file")
                  ->check(output_file())
                  ->group("Backend");
  opt.o_fst_begin =
      number_option(app, "--fst-begin", opt.fst_begin, "rtl: first cycle of the waveform (default 0)", 0, UINT64_MAX)
          ->needs(opt.o_fst)
          ->group("Backend");
  opt.o_fst_end = number_option(app, "--fst-end", opt.fst_end,
                                "rtl: the waveform stops before this cycle (default: the end)", 1, UINT64_MAX)
                      ->needs(opt.o_fst)
                      ->group("Backend");
  opt.o_trace = app.add_option("--trace", opt.trace,
                               "rtl, systemc: write a timeline of the modules, instructions and DMA bursts (Chrome / "
                               "Perfetto JSON) to this file")
                    ->check(output_file())
                    ->group("Backend");
  opt.o_trace_begin = number_option(app, "--trace-begin", opt.trace_begin,
                                    "rtl, systemc: first cycle of the timeline (default 0)", 0, UINT64_MAX)
                          ->needs(opt.o_trace)
                          ->group("Backend");
  opt.o_trace_end =
      number_option(app, "--trace-end", opt.trace_end,
                    "rtl, systemc: the timeline stops before this cycle (default: the end)", 1, UINT64_MAX)
          ->needs(opt.o_trace)
          ->group("Backend");
  opt.o_memory = app.add_option("--memory", opt.memory,
                                "systemc: the memory model behind the accelerator (fixed: every burst --dram-latency "
                                "cycles; banked: a DRAM with open rows per bank)")
                     ->check(CLI::IsMember({"fixed", "banked"}))
                     ->group("Backend");
  opt.o_banks =
      number_option(app, "--banks", opt.banks, "systemc banked memory: banks (default 8)", 1, 1024)->group("Backend");
  opt.o_row_hit_latency =
      number_option(app, "--row-hit-latency", opt.row_hit_latency,
                    "systemc banked memory: cycles of a burst to an open row (default 20)", 1, 100000)
          ->group("Backend");
  opt.o_row_miss_latency =
      number_option(app, "--row-miss-latency", opt.row_miss_latency,
                    "systemc banked memory: cycles of a burst that opens its row (default 44)", 1, 100000)
          ->group("Backend");
  app.parse_complete_callback([&opt] { check(opt); });
}

CLI::Option* add_config_option(CLI::App& app, std::string& path) {
  return app.add_option("--config", path, "accelerator config (JSON; default: the built-in default config)")
      ->check(CLI::ExistingFile);
}

accel::AccelConfig load_config(const std::string& path) {
  return path.empty() ? accel::default_config() : accel::AccelConfig::load(path);
}

bool any_backend_option(const BackendOptions& opt) {
  for (const CLI::Option* o : {opt.o_backend, opt.o_dram_latency, opt.o_dram_bytes_per_cycle, opt.o_cycle_limit,
                               opt.o_fst, opt.o_step_limit, opt.o_trace})
    if (given(o)) return true;
  return memory_options(opt);
}

CLI::Option* add_compare_option(CLI::App& app, std::vector<std::string>& backends, const std::string& help) {
  return app.add_option("--compare", backends, help)->delimiter(',')->expected(2);
}

void run_recorded(AccelDevice* device, const std::string& backend, const std::function<void()>& run,
                  std::vector<sim::CommitRecord>& records, std::string& error) {
  auto* log = dynamic_cast<sim::CommitLogSource*>(device);
  if (!log)
    LOOM_THROW(ConfigError, "--compare: backend '", backend,
               "' does not record per-instruction commits (fsim, rtl and systemc do)");
  log->record_commits(true);
  try {
    run();
  } catch (const DeviceError& e) {
    error = e.what();
  }
  records = log->take_commits();
}

int report_divergence(const std::string& what, const std::vector<std::string>& backends,
                      const std::vector<sim::CommitRecord> (&records)[2], const std::string (&errors)[2]) {
  std::cout << "compared " << what << " on " << backends[0] << " (" << records[0].size() << " instruction records) and "
            << backends[1] << " (" << records[1].size() << ")\n";
  for (int s = 0; s < 2; ++s)
    if (!errors[s].empty()) std::cout << "  " << backends[size_t(s)] << " stopped: " << errors[s] << "\n";
  auto d = sim::first_divergence(records[0], records[1]);
  if (!d) {
    if (errors[0].empty() != errors[1].empty()) {
      std::cout << "the records agree, but only one backend stopped with an error\n";
      return 1;
    }
    std::cout << "no divergence: every instruction's effect is the same\n";
    return 0;
  }
  std::cout << "first divergence at instruction " << d->index << " of run " << d->run << ":\n";
  for (int s = 0; s < 2; ++s) {
    const auto& r = s == 0 ? d->a : d->b;
    std::cout << "  " << backends[size_t(s)] << ": "
              << (r ? r->describe() : "no record (the instruction did not finish: the run stopped before it)") << "\n";
  }
  return 1;
}

std::unique_ptr<AccelDevice> open_accel_backend(const BackendOptions& opt, const accel::AccelConfig& config) {
  return make_accel_device(opt.backend, backend_config_json(opt, config));
}

std::string backend_config_json(const BackendOptions& opt, const accel::AccelConfig& config) {
  nlohmann::json j = nlohmann::json::parse(config.to_json());
  nlohmann::json rtl = nlohmann::json::object();
  check(opt);
  if (given(opt.o_dram_latency)) rtl["dram_latency"] = opt.dram_latency;
  if (given(opt.o_dram_bytes_per_cycle)) rtl["dram_bytes_per_cycle"] = opt.dram_bytes_per_cycle;
  if (given(opt.o_cycle_limit)) rtl["cycle_limit"] = opt.cycle_limit;
  if (given(opt.o_fst)) rtl["fst"] = opt.fst;
  if (given(opt.o_fst_begin)) rtl["fst_begin"] = opt.fst_begin;
  if (given(opt.o_fst_end)) rtl["fst_end"] = opt.fst_end;
  if (given(opt.o_trace)) rtl["trace"] = opt.trace;
  if (given(opt.o_trace_begin)) rtl["trace_begin"] = opt.trace_begin;
  if (given(opt.o_trace_end)) rtl["trace_end"] = opt.trace_end;
  if (given(opt.o_memory)) rtl["memory"] = opt.memory;
  if (given(opt.o_banks)) rtl["banks"] = opt.banks;
  if (given(opt.o_row_hit_latency)) rtl["row_hit_latency"] = opt.row_hit_latency;
  if (given(opt.o_row_miss_latency)) rtl["row_miss_latency"] = opt.row_miss_latency;
  if (!rtl.empty()) j[opt.backend == "systemc" ? "systemc" : opt.backend == "perf" ? "perf" : "rtl"] = rtl;
  if (given(opt.o_step_limit)) j["fsim"]["step_limit"] = opt.step_limit;
  return j.dump();
}

}  // namespace loom::tools
