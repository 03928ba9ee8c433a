#include "rtl_core.h"

#include <unistd.h>

#include <filesystem>

#include "loom/runtime/error.h"
#include "loom/sim/rtl_coverage.h"

namespace loom::sim::rtl {

namespace {
// What the RTL may have in flight on its AXI4 master port, which the DRAM model checks: the
// fetch unit (ARID 0) requests at most its 16-instruction buffer (bursts of at least one
// instruction, loom_fetch BUFFER_INSNS); each read DMA (ARIDs 1..4: inp, wgt, uop, acc) and the
// write DMA keep at most MAX_OUTSTANDING = 4 bursts in flight (loom_dma_rd, loom_dma_wr).
AxiLimits rtl_axi_limits() { return AxiLimits{{16, 4, 4, 4, 4}, 4}; }

std::unique_ptr<Model> model_for(const accel::AccelConfig& config, bool coverage, const std::string& backend) {
  auto model = make_model(config, coverage);
  if (!model && coverage) require_coverage_model(config, backend);
  if (!model) require_model(config, backend);
  return model;
}
}  // namespace

RtlCore::RtlCore(const accel::AccelConfig& config, const RtlSimOptions& opt, uint64_t dram_base, uint64_t dram_bytes,
                 const std::string& backend)
    : opt_(opt),
      model_(model_for(config, !opt.coverage_path.empty(), backend)),
      dram_(dram_base, dram_bytes, config.dram_bus_bytes(), opt.dram_latency, opt.dram_bytes_per_cycle,
            rtl_axi_limits(), opt.dram_stall_rate) {
  if (!opt_.fst_path.empty()) model_->open_trace(opt_.fst_path);
  if (!opt_.trace_path.empty()) {
    TimelineOptions t;
    t.path = opt_.trace_path;
    t.begin = opt_.trace_begin;
    t.end = opt_.trace_end;
    t.max_events = opt_.trace_max_events;
    timeline_ = std::make_unique<Timeline>(t);
  }
}

bool RtlCore::cycle() {
  drive_host();
  dram_.drive(in_);
  model_->eval_low(in_, out_);
  observe_host();
  const bool run_ends = out_.irq || broken();
  if (timeline_ || on_commit_) model_->probe(probes_);
  if (timeline_) timeline_->sample(cycle_, probes_, in_, out_);
  if (on_commit_) {
    for (int m = 0; m < 3; ++m) {
      const ModuleProbe &was = last_probes_[size_t(m)], &now = probes_[size_t(m)];
      if (was.busy && (!now.busy || now.index != was.index)) on_commit_(m, was.index);
    }
    last_probes_ = probes_;
  }
  if (!opt_.fst_path.empty() && cycle_ >= opt_.fst_begin && cycle_ < opt_.fst_end) model_->dump(2 * cycle_);
  dram_.update(in_, out_);
  model_->posedge();
  if (model_->failed() && !assertion_cycle_) assertion_cycle_ = cycle_;
  ++cycle_;
  if (state_ == State::ResetHigh && !in_.rst_n) {  // the second low cycle is over
    dram_.clear();
    model_->clear_failure();
    assertion_cycle_.reset();
  }
  return run_ends;
}

void RtlCore::request_reset() { state_ = State::ResetLow1; }
void RtlCore::request_read(uint32_t offset) {
  offset_ = offset;
  state_ = State::ReadAddr;
}
void RtlCore::request_write(uint32_t offset, uint32_t value) {
  offset_ = offset;
  wdata_ = value;
  state_ = State::WriteAddr;
}

void RtlCore::drive_host() {
  switch (state_) {
    case State::ResetLow1:
    case State::ResetLow2:
      in_ = Inputs{};  // rst_n low, every host and DRAM input cleared
      break;
    case State::ResetHigh:
      in_.rst_n = true;
      break;
    case State::ReadAddr:
      in_.arvalid = true;
      in_.araddr = offset_;
      break;
    case State::ReadData:
      in_.arvalid = false;
      in_.rready = true;
      break;
    case State::WriteAddr:
      in_.awvalid = in_.wvalid = true;
      in_.awaddr = offset_;
      in_.wdata = wdata_;
      break;
    case State::WriteResp:
      in_.awvalid = in_.wvalid = false;
      in_.bready = true;
      break;
    case State::Idle:
      break;
  }
}

void RtlCore::observe_host() {
  switch (state_) {
    case State::ResetLow1:
      state_ = State::ResetLow2;
      break;
    case State::ResetLow2:
      state_ = State::ResetHigh;
      break;
    case State::ResetHigh:
      state_ = State::Idle;
      break;
    case State::ReadAddr:
      if (out_.arready) state_ = State::ReadData;
      break;
    case State::ReadData:
      if (out_.rvalid) {
        rdata_ = out_.rdata;
        resp_ = out_.rresp;
        in_.rready = false;  // from the next cycle
        state_ = State::Idle;
      }
      break;
    case State::WriteAddr:
      if (out_.awready && out_.wready) state_ = State::WriteResp;
      break;
    case State::WriteResp:
      if (out_.bvalid) {
        resp_ = out_.bresp;
        in_.bready = false;
        state_ = State::Idle;
      }
      break;
    case State::Idle:
      break;
  }
}

std::string RtlCore::broken_rule() const {
  if (!dram_.violation().empty()) return dram_.violation();
  if (model_->failed())
    return "SystemVerilog assertion failed at cycle " + std::to_string(assertion_cycle_.value_or(cycle_)) + ": " +
           model_->failure();
  return "";
}

namespace {
class LoopEngine final : public CycleEngine {
 public:
  explicit LoopEngine(RtlCore& core) : core_(core) {}
  void reset() override {
    core_.request_reset();
    finish();
  }
  uint32_t axil_read(uint32_t offset, uint32_t& resp) override {
    core_.request_read(offset);
    finish();
    resp = core_.resp();
    return core_.rdata();
  }
  void axil_write(uint32_t offset, uint32_t value, uint32_t& resp) override {
    core_.request_write(offset, value);
    finish();
    resp = core_.resp();
  }
  void run(uint64_t max_cycles) override {
    for (uint64_t k = 0; k < max_cycles;)
      if (core_.cycle() || ++k >= max_cycles) return;
  }

 private:
  void finish() {
    while (!core_.idle()) core_.cycle();
  }
  RtlCore& core_;
};
}  // namespace

std::unique_ptr<CycleEngine> make_loop_engine(RtlCore& core) { return std::make_unique<LoopEngine>(core); }

// Verilator writes its file (stopping the process if it cannot): a private one in the temporary
// directory, then merged into `path` here, where a failure is an Error.
void RtlCore::write_coverage(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("loom-rtl-coverage-" + std::to_string(getpid()) + "-" +
                                                    std::to_string(reinterpret_cast<uintptr_t>(this)) + ".dat");
  model_->write_coverage(tmp.string());
  RtlCoverage c = RtlCoverage::load(tmp.string());
  std::error_code ec;
  fs::remove(tmp, ec);
  c.accumulate_into(path);
}

}  // namespace loom::sim::rtl
