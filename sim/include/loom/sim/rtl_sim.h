// Cycle-accurate simulation of the accelerator RTL (hw/rtl, Verilated), as an AccelDevice
// backend ("rtl"). The Verilator model of `loom_accel` is driven through its real ports: the
// host's register accesses are AXI4-Lite transactions, and device memory is a DRAM model on the
// AXI4 master port with a configurable latency and bandwidth. The RTL is elaborated per config,
// so only configs whose model was built (LOOM_RTL_CONFIGS at configure time) can be simulated.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/runtime/accel_device.h"
#include "loom/sim/commit_log.h"

namespace loom::sim {

namespace rtl {
class RtlCore;
class CycleEngine;
}  // namespace rtl

struct RtlSimOptions {
  uint32_t dram_latency =
      32;  // cycles from a read request to its first beat, and from a write burst's last beat to its response
  double dram_bytes_per_cycle = 16;  // sustained bandwidth, reads and writes together
  // Fraction of cycles in which DRAM holds ARREADY, AWREADY and WREADY low (each channel on its
  // own, pseudo-random and reproducible): back-pressure that exercises the RTL's AXI handshakes.
  double dram_stall_rate = 0;
  uint64_t cycle_limit = 4'000'000'000;          // a run without FINISH after this many cycles fails
  std::string fst_path;                          // waveform file (FST); empty: no waveform
  uint64_t fst_begin = 0, fst_end = UINT64_MAX;  // cycle window dumped (counted from the device's creation)
  // Timeline (Chrome / Perfetto JSON trace) of the modules, instructions and DMA bursts; empty: none.
  std::string trace_path;
  uint64_t trace_begin = 0, trace_end = UINT64_MAX;  // cycle window recorded
  uint64_t trace_max_events = 2'000'000;             // the file's bound (reaching it is noted in it)
  // Code coverage (the coverage build of the config's model, LOOM_RTL_COVERAGE_CONFIGS): when the
  // device closes, its line, branch, toggle and cover-property counts are added to this file's
  // (Verilator's format, sim/rtl_coverage.h); empty: the plain model, no coverage.
  std::string coverage_path;

  // Parses {"dram_latency": 32, "dram_bytes_per_cycle": 16, "dram_stall_rate": 0.3, "cycle_limit": N,
  // "fst": "path", "fst_begin": 0, "fst_end": 1000, "trace": "path", "trace_begin": 0, "trace_end": N,
  // "trace_max_events": N, "coverage": "path"}; unknown keys are a ConfigError naming them.
  static RtlSimOptions from_json(const std::string& json_text);
};

class RtlSim : public AccelDevice, public CommitLogSource {
 public:
  RtlSim(accel::AccelConfig config, RtlSimOptions options = {}, uint64_t dram_bytes = uint64_t{256} << 20);
  // The same device with its cycles passing elsewhere (the SystemC platform, backend "systemc").
  using EngineFactory = std::function<std::unique_ptr<rtl::CycleEngine>(rtl::RtlCore&)>;
  RtlSim(std::string name, accel::AccelConfig config, RtlSimOptions options, uint64_t dram_bytes,
         const EngineFactory& make_engine);
  ~RtlSim() override;
  std::string name() const override { return name_; }

  uint64_t alloc(uint64_t bytes, uint64_t alignment = 64) override;
  void alloc_at(uint64_t addr, uint64_t bytes) override;
  void free(uint64_t addr) override;
  void write(uint64_t addr, const void* src, uint64_t bytes) override;
  void read(uint64_t addr, void* dst, uint64_t bytes) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  uint32_t read_reg(uint32_t offset) override;
  std::string error_message() const override;
  void label_next_run(const std::string& label) override;
  void record_commits(bool on) override;
  std::vector<CommitRecord> take_commits() override;

  const accel::AccelConfig& config() const;
  uint64_t simulated_cycles() const;  // since creation (all runs and register accesses)
  double simulation_seconds() const;  // host time spent simulating runs (not the host's own work)
  static constexpr uint64_t kDramBase = 0x10000000;
  // Names of the configs whose RTL model is built into this binary.
  static std::vector<std::string> available_configs();

 private:
  struct Impl;
  std::string name_;
  std::unique_ptr<Impl> impl_;
};

// Registers the "rtl" backend with make_accel_device. Its config JSON may carry an "rtl" object
// with RtlSimOptions; the rest is the accelerator config.
void register_rtl_sim();

}  // namespace loom::sim
