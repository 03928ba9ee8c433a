// Performance model of the accelerator: cycle estimates for an instruction stream without
// simulating the RTL. An event-driven model of what the RTL's timing depends on — instruction
// fetch into a small buffer and in-order dispatch to the three module queues, each module's
// sequencer (one instruction at a time, dependency tokens between neighbours), the DMA engines'
// AXI bursts (command check, at most 256 beats and never across 4 KiB, a few in flight per
// engine), one shared DRAM data bus (latency, bytes per cycle, requests served in order), the
// GEMM pipeline (one micro-op iteration a cycle plus fill and drain) and the ALU's issue
// interval — with the RTL's constants calibrated against its Verilator simulation
// (docs/perf_model.md). Timing only: `estimate_cycles` never touches data. The "perf" device
// backend (PerfSim) runs the functional simulator for exact results and this model for CYCLES
// and the busy/stall counters, so one driver gets both.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/accel/isa.h"
#include "loom/runtime/accel_device.h"
#include "loom/sim/functional_sim.h"

namespace loom::sim {

struct PerfParams {
  // The memory system (as the rtl backend's RtlSimOptions).
  uint32_t dram_latency = 32;        // cycles from a read request to its first beat; last write beat to response
  double dram_bytes_per_cycle = 16;  // shared by reads and writes
  // The RTL's own constants (calibrated; docs/perf_model.md says how).
  uint32_t dma_setup = 7;           // instruction start to its first burst request (command check)
  uint32_t burst_issue_gap = 8;     // between two burst requests of one DMA engine
  uint32_t bursts_in_flight = 4;    // per DMA engine
  uint32_t read_overhead = 0;       // request to first beat beyond the DRAM latency (arbiter, spill registers)
  uint32_t dma_tail = 5;            // last read beat (write response) to the instruction's end
  uint32_t pipeline_overhead = 12;  // a GEMM or ALU instruction's fill and drain
  uint32_t fetch_buffer = 16;       // instructions fetched ahead of dispatch
  uint32_t queue_depth = 33;        // a module's queue and its head register
  uint32_t dispatch_delay = 0;      // an instruction's last beat to its module's queue (decode stages)
  uint32_t start_overhead = 0;      // START to the first fetch request
  uint32_t end_overhead = 0;        // FINISH's end to DONE
  // The perf backend: false times each stream without executing it (no results, and fsim's
  // instruction and DMA counters stay 0): design-space sweeps that need cycles only.
  bool functional = true;
  // The perf backend's timeline of every run (Chrome / Perfetto JSON: one slice per instruction on
  // its module's track, as the rtl backend's --trace); empty: none.
  std::string trace_path;

  // Parses {"dram_latency": 32, "dram_bytes_per_cycle": 16, "functional": false, "trace": "path", ...}
  // (any of the fields above);
  // unknown keys and out-of-range values are a ConfigError naming them.
  static PerfParams from_json(const std::string& json_text);
};

struct PerfEstimate {
  uint64_t cycles = 0;
  // Per module (load, compute, store): cycles executing an instruction, and cycles waiting for a
  // dependency token with an instruction at the head of its queue; the GEMM core's MAC steps.
  std::array<uint64_t, 3> busy{}, stall{};
  uint64_t gemm_cycles = 0;
  uint64_t dram_busy_cycles = 0;  // cycles the DRAM data bus moved a beat
};

// ConfigError naming a parameter out of its range (a bandwidth that is not in (0, 4096], a queue,
// buffer or burst count of 0).
void check_params(const PerfParams& params);

// When an instruction executed: from its first cycle to its end (the RTL timeline's "busy" slice).
struct InsnTiming {
  uint64_t start = 0, end = 0;
};

// Estimates a decoded, well-formed stream (ending in FINISH; the functional simulator checks
// streams). A stream whose tokens deadlock is a DeviceError naming the waiting instructions.
// `timings`, if given, receives each instruction's execution window (indexed as the stream).
PerfEstimate estimate_cycles(const std::vector<accel::Instruction>& stream, const accel::AccelConfig& config,
                             const PerfParams& params = {}, std::vector<InsnTiming>* timings = nullptr);

// The functional simulator with the performance model's CYCLES and timing counters: backend "perf".
// Without `functional` its functional counters are the stream's counts (accel::count_actions).
class PerfSim : public FunctionalSim {
 public:
  explicit PerfSim(accel::AccelConfig config, PerfParams params = {}, uint64_t dram_bytes = uint64_t{256} << 20);
  std::string name() const override { return "perf"; }
  void write_reg(uint32_t offset, uint32_t value) override;
  uint32_t read_reg(uint32_t offset) override;
  std::string error_message() const override { return params_.functional ? FunctionalSim::error_message() : error_; }
  const PerfParams& params() const { return params_; }
  const PerfEstimate& last_estimate() const { return estimate_; }
  const std::vector<accel::Instruction>& last_stream() const { return stream_; }  // the last run's, decoded
  double model_seconds() const { return model_seconds_; }  // host time in the timing model, all runs

 private:
  void write_trace(const std::vector<accel::Instruction>& stream, const std::vector<InsnTiming>& timings);
  void time_stream(uint32_t& index);  // reads, checks and times the launched stream
  void time_only();                   // START without `functional`
  PerfParams params_;
  PerfEstimate estimate_;
  std::vector<uint64_t> actions_;  // without `functional`: the last stream's counts
  std::vector<accel::Instruction> stream_;
  uint32_t status_ = 0, error_index_ = 0;  // without `functional`: STATUS and ERROR_INDEX of the last run
  std::string error_;
  uint32_t runs_ = 0;
  std::vector<std::string> trace_events_;  // serialized, every run so far
  double model_seconds_ = 0;
};

// Registers the "perf" backend; its config JSON may carry a "perf" object of PerfParams.
void register_perf_sim();

}  // namespace loom::sim
