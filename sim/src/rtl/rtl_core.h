// The accelerator's Verilated model with its DRAM model and port values, and the host's side of
// its pins (reset and AXI4-Lite register transactions) as a per-cycle state machine: what both RTL
// backends clock, "rtl" in a loop in this process and "systemc" from a clocked SystemC process.
// (Built as C++17 too: the SystemC platform includes it.)
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "dram_model.h"
#include "loom/sim/rtl_sim.h"
#include "rtl_model.h"
#include "timeline.h"

namespace loom::sim::rtl {

class RtlCore {
 public:
  // Throws DeviceError when no RTL model was built for `config`.
  RtlCore(const accel::AccelConfig& config, const RtlSimOptions& opt, uint64_t dram_base, uint64_t dram_bytes,
          const std::string& backend = "rtl");

  // One clock cycle: the host's pins for this cycle, DRAM's responses, the RTL settles, the host
  // looks at the settled outputs, then the clock edge (handshakes taken). Answers whether a run
  // ends here: the interrupt in the settled outputs, or a rule broken before the edge.
  bool cycle();

  // Host requests, carried out by cycle() over the following cycles; idle() once done.
  void request_reset();  // rst_n low for two cycles (DRAM's transactions dropped), then high for one
  void request_read(uint32_t offset);
  void request_write(uint32_t offset, uint32_t value);
  bool idle() const { return state_ == State::Idle; }
  uint32_t rdata() const { return rdata_; }  // the last transaction's: read data and response code
  uint32_t resp() const { return resp_; }

  // What makes the run's results meaningless: the RTL broke an AXI4 rule (the DRAM model's
  // checker) or one of its own SystemVerilog assertions. Empty if neither.
  bool broken() const { return !dram_.violation().empty() || model_->failed(); }
  std::string broken_rule() const;

  bool irq() const { return out_.irq; }       // in the last cycle's settled outputs
  uint64_t cycles() const { return cycle_; }  // since creation
  // A run starts (the host set START) or ended: a new group in the timeline, if one is recorded.
  void begin_run(const std::string& label) {
    if (timeline_) timeline_->begin_run(cycle_, label);
  }
  void end_run() {
    if (timeline_) timeline_->end_run(cycle_);
  }
  // Called once per finished instruction (module 0 load, 1 compute, 2 store; its index), in the
  // cycle its module moves on, before the clock edge; null: none (commit records off).
  void on_commit(std::function<void(int module, uint32_t index)> f) { on_commit_ = std::move(f); }
  std::array<uint32_t, 4> tokens() const { return model_->tokens(); }
  void read_scratchpad(accel::MemType m, size_t entry_bytes, std::vector<uint8_t>& bytes) const {
    model_->read_scratchpad(m, entry_bytes, bytes);
  }
  DramModel& dram() { return dram_; }
  // Adds the coverage build's counts to `path` (RtlCoverage::accumulate_into); Error when unwritable.
  void write_coverage(const std::string& path);

 private:
  enum class State { Idle, ResetLow1, ResetLow2, ResetHigh, ReadAddr, ReadData, WriteAddr, WriteResp };
  void drive_host();    // this cycle's host pins, from the state
  void observe_host();  // the settled outputs move the state on

  RtlSimOptions opt_;
  std::unique_ptr<Model> model_;
  DramModel dram_;
  Inputs in_;
  Outputs out_;
  uint64_t cycle_ = 0;
  std::optional<uint64_t> assertion_cycle_;  // when the model's first assertion failure was seen
  State state_ = State::Idle;
  std::unique_ptr<Timeline> timeline_;
  Probes probes_, last_probes_;
  std::function<void(int, uint32_t)> on_commit_;
  uint32_t offset_ = 0, wdata_ = 0, rdata_ = 0, resp_ = 0;
};

// How a device's cycles pass: the RtlCore clocked in a loop here ("rtl"), or by a SystemC
// platform ("systemc"). Each call returns when the core is idle again.
class CycleEngine {
 public:
  virtual ~CycleEngine() = default;
  virtual void reset() = 0;
  virtual uint32_t axil_read(uint32_t offset, uint32_t& resp) = 0;
  virtual void axil_write(uint32_t offset, uint32_t value, uint32_t& resp) = 0;
  // Clocks until the interrupt, a broken rule or `max_cycles`.
  virtual void run(uint64_t max_cycles) = 0;
};

std::unique_ptr<CycleEngine> make_loop_engine(RtlCore& core);

}  // namespace loom::sim::rtl
