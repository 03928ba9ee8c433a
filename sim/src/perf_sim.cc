// The "perf" backend: the functional simulator's results, the performance model's timing.
#include <chrono>
#include <cstring>
#include <fstream>

#include "backend_config.h"
#include "loom/accel/action_counts.h"
#include "loom/runtime/error.h"
#include "loom/sim/perf_model.h"

namespace loom::sim {

using namespace loom::accel;

namespace {

// The defaults are PerfParams' calibrated constants.
BackendOptionSchema perf_option_schema() {
  using O = BackendOption;
  const PerfParams d;
  auto cycles = [](const char* key, double min, const char* help, uint32_t fallback) {
    return O::count(key, min, 1'000'000, help, std::to_string(fallback));
  };
  return {
      cycles("dram_latency", 0, "DRAM latency in cycles", d.dram_latency),
      O::number("dram_bytes_per_cycle", 0, 4096, O::Ends::OpenBelow,
                "DRAM bandwidth in bytes per cycle, reads and writes together", "16"),
      cycles("dma_setup", 0, "cycles from a DMA instruction's start to its first burst request", d.dma_setup),
      cycles("burst_issue_gap", 1, "cycles between two burst requests of one DMA engine", d.burst_issue_gap),
      cycles("bursts_in_flight", 1, "bursts in flight per DMA engine", d.bursts_in_flight),
      cycles("read_overhead", 0, "cycles from a read request to its first beat beyond the DRAM latency",
             d.read_overhead),
      cycles("dma_tail", 0, "cycles from the last read beat (write response) to the instruction's end", d.dma_tail),
      cycles("pipeline_overhead", 0, "cycles of a GEMM or ALU instruction's fill and drain", d.pipeline_overhead),
      cycles("fetch_buffer", 1, "instructions fetched ahead of dispatch", d.fetch_buffer),
      cycles("queue_depth", 1, "instructions a module's queue holds", d.queue_depth),
      cycles("dispatch_delay", 0, "cycles from an instruction's last beat to its module's queue", d.dispatch_delay),
      cycles("start_overhead", 0, "cycles from START to the first fetch request", d.start_overhead),
      cycles("end_overhead", 0, "cycles from FINISH's end to DONE", d.end_overhead),
      O::boolean("functional", "execute each stream as fsim does (false: cycles only, no results)", "true"),
      O::output_file("trace", "write a timeline of every run (Chrome / Perfetto JSON) to this file"),
  };
}

}  // namespace

PerfParams PerfParams::from_json(const std::string& json_text) {
  BackendOptionValues v = read_backend_options("perf", json_text);
  PerfParams p;
  auto count = [&](const char* key, uint32_t& field) { field = uint32_t(v.count(key, field)); };
  count("dram_latency", p.dram_latency);
  p.dram_bytes_per_cycle = v.number("dram_bytes_per_cycle", p.dram_bytes_per_cycle);
  count("dma_setup", p.dma_setup);
  count("burst_issue_gap", p.burst_issue_gap);
  count("bursts_in_flight", p.bursts_in_flight);
  count("read_overhead", p.read_overhead);
  count("dma_tail", p.dma_tail);
  count("pipeline_overhead", p.pipeline_overhead);
  count("fetch_buffer", p.fetch_buffer);
  count("queue_depth", p.queue_depth);
  count("dispatch_delay", p.dispatch_delay);
  count("start_overhead", p.start_overhead);
  count("end_overhead", p.end_overhead);
  p.functional = v.flag("functional", p.functional);
  p.trace_path = v.text("trace", p.trace_path);
  return p;
}

PerfSim::PerfSim(AccelConfig config, PerfParams params, uint64_t dram_bytes)
    : FunctionalSim(std::move(config), dram_bytes), params_(params) {
  check_params(params_);
}

void PerfSim::write_reg(uint32_t offset, uint32_t value) {
  if (offset != reg::kControl || !(value & reg::kStart)) return FunctionalSim::write_reg(offset, value);
  estimate_ = {};
  actions_.clear();
  if (!params_.functional) return time_only();
  FunctionalSim::write_reg(offset, value);
  if (!(FunctionalSim::read_reg(reg::kStatus) & reg::kDone)) return;  // a fault: fsim's message, no timing
  uint32_t k = 0;
  time_stream(k);  // fsim has checked the stream already
}

// One process per run; tracks 2, 3, 4 are the load, compute and store modules (as the rtl
// backend's timeline numbers them). The first run truncates the file, later runs rewrite it whole.
void PerfSim::write_trace(const std::vector<Instruction>& stream, const std::vector<InsnTiming>& timings) {
  auto add = [&](const nlohmann::json& e) { trace_events_.push_back(e.dump()); };
  add({{"name", "process_name"}, {"ph", "M"}, {"pid", runs_}, {"args", {{"name", "run " + std::to_string(runs_)}}}});
  for (int m = 0; m < 3; ++m)
    add({{"name", "thread_name"},
         {"ph", "M"},
         {"pid", runs_},
         {"tid", m + 2},
         {"args", {{"name", to_string(Module(m))}}}});
  for (size_t k = 0; k < stream.size(); ++k)
    add({{"name", "#" + std::to_string(k) + " busy"},
         {"ph", "X"},
         {"pid", runs_},
         {"tid", int(stream[k].module()) + 2},
         {"ts", timings[k].start},
         {"dur", timings[k].end - timings[k].start},
         {"args", {{"instruction", k}, {"text", disassemble(stream[k])}}}});
  std::ofstream f(params_.trace_path);
  f << "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"time axis\": \"1 us = 1 accelerator cycle (performance "
       "model)\"},\n\"traceEvents\": [\n";
  for (size_t k = 0; k < trace_events_.size(); ++k) f << (k ? ",\n" : "") << trace_events_[k];
  f << "\n]}\n";
  if (!f) LOOM_THROW(DeviceError, "perf backend: cannot write the timeline '", params_.trace_path, "'");
}

// The stream fetched, decoded and checked as fsim would (one instruction at a time, so a bogus
// INSN_COUNT fails at its first bad fetch; `k` is then the instruction at fault), then timed.
void PerfSim::time_stream(uint32_t& k) {
  uint64_t addr = uint64_t(FunctionalSim::read_reg(reg::kInsnAddrHi)) << 32 | FunctionalSim::read_reg(reg::kInsnAddrLo);
  uint32_t count = FunctionalSim::read_reg(reg::kInsnCount);
  auto t0 = std::chrono::steady_clock::now();
  IsaLayout layout(config());
  stream_.clear();
  bool finish = false;
  for (k = 0; k < count; ++k) {
    InsnWord w;
    try {
      read(addr + 16ull * k, w.data(), sizeof w);
    } catch (const DeviceError&) {
      LOOM_THROW(DeviceError, "instruction ", k, ": fetch address is outside allocated device memory");
    }
    stream_.push_back(decode(w, layout, k));
    check_instruction(stream_.back(), config(), k);
    finish |= stream_.back().opcode == Opcode::Finish;
  }
  if (!finish) LOOM_THROW(DeviceError, "instruction ", count, ": the stream has no FINISH instruction");
  std::vector<InsnTiming> timings;
  estimate_ = estimate_cycles(stream_, config(), params_, params_.trace_path.empty() ? nullptr : &timings);
  if (!params_.functional) actions_ = count_actions(stream_, config());
  model_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++runs_;
  if (!params_.trace_path.empty()) write_trace(stream_, timings);
}

// Without `functional`: the stream timed, nothing executed; a fault sets STATUS and ERROR_INDEX.
void PerfSim::time_only() {
  status_ = 0;
  error_.clear();
  error_index_ = 0;
  uint32_t k = 0;
  try {
    time_stream(k);
    status_ = reg::kDone;
  } catch (const std::exception& e) {
    error_ = e.what();
    error_index_ = k;
    status_ = reg::kError;
  }
}

uint32_t PerfSim::read_reg(uint32_t offset) {
  auto word = [&](uint64_t v) { return uint32_t(offset % 8 == 0 ? v : v >> 32); };
  if (!params_.functional && offset == reg::kStatus) return status_;
  if (!params_.functional && offset == reg::kErrorIndex) return error_index_;
  // Without execution fsim counts nothing: the stream's counts instead.
  if (!params_.functional && offset >= reg::kCounterBase && offset < counter_reg(kFirstTimingCounter))
    return word(actions_.empty() ? 0 : actions_[(offset - reg::kCounterBase) / 8]);
  if (offset == reg::kCyclesLo || offset == reg::kCyclesHi) return word(estimate_.cycles);
  if (offset >= counter_reg(kFirstTimingCounter) && offset < kAccelRegsEnd && offset % 4 == 0) {
    auto c = AccelCounter((offset - reg::kCounterBase) / 8);
    const PerfEstimate& e = estimate_;
    uint64_t v = c == AccelCounter::LoadBusyCycles       ? e.busy[0]
                 : c == AccelCounter::LoadStallCycles    ? e.stall[0]
                 : c == AccelCounter::ComputeBusyCycles  ? e.busy[1]
                 : c == AccelCounter::ComputeStallCycles ? e.stall[1]
                 : c == AccelCounter::StoreBusyCycles    ? e.busy[2]
                 : c == AccelCounter::StoreStallCycles   ? e.stall[2]
                                                         : e.gemm_cycles;
    return word(v);
  }
  return FunctionalSim::read_reg(offset);
}

void register_perf_sim() {
  register_accel_backend_options("perf", perf_option_schema());
  register_accel_backend("perf", [](const std::string& json) {
    BackendConfig b = parse_backend_config(json, "perf");
    return std::make_unique<PerfSim>(b.config, PerfParams::from_json(b.options.dump()));
  });
  // Before any job runs: the options as the factory reads them.
  register_accel_backend_check("perf", [](const std::string& json) {
    check_params(PerfParams::from_json(parse_backend_config(json, "perf").options.dump()));
  });
}

namespace {
const bool registered = (register_perf_sim(), true);
}

}  // namespace loom::sim
