// The "perf" backend: the functional simulator's results, the performance model's timing.
#include <chrono>
#include <cstring>
#include <fstream>

#include "backend_config.h"
#include "loom/runtime/error.h"
#include "loom/sim/perf_model.h"

namespace loom::sim {

using namespace loom::accel;

PerfParams PerfParams::from_json(const std::string& json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    LOOM_THROW(ConfigError, "perf backend: options are not valid JSON: ", e.what());
  }
  if (!j.is_object()) LOOM_THROW(ConfigError, "perf backend: options must be a JSON object");
  PerfParams p;
  auto count = [&](const std::string& key, uint32_t& field, uint32_t lo) {
    const auto& v = j[key];
    if (!v.is_number_unsigned() || v.get<uint64_t>() < lo || v.get<uint64_t>() > 1'000'000)
      LOOM_THROW(ConfigError, "perf backend: \"", key, "\" must be an integer in [", lo, ", 1000000], got ", v.dump());
    field = v.get<uint32_t>();
  };
  for (auto& [key, value] : j.items()) {
    if (key == "dram_bytes_per_cycle") {
      if (!value.is_number() || value.get<double>() <= 0 || value.get<double>() > 4096)
        LOOM_THROW(ConfigError, "perf backend: \"dram_bytes_per_cycle\" must be a number in (0, 4096], got ",
                   value.dump());
      p.dram_bytes_per_cycle = value.get<double>();
    } else if (key == "dram_latency") {
      count(key, p.dram_latency, 0);
    } else if (key == "dma_setup") {
      count(key, p.dma_setup, 0);
    } else if (key == "burst_issue_gap") {
      count(key, p.burst_issue_gap, 1);
    } else if (key == "bursts_in_flight") {
      count(key, p.bursts_in_flight, 1);
    } else if (key == "read_overhead") {
      count(key, p.read_overhead, 0);
    } else if (key == "dma_tail") {
      count(key, p.dma_tail, 0);
    } else if (key == "pipeline_overhead") {
      count(key, p.pipeline_overhead, 0);
    } else if (key == "fetch_buffer") {
      count(key, p.fetch_buffer, 1);
    } else if (key == "queue_depth") {
      count(key, p.queue_depth, 1);
    } else if (key == "dispatch_delay") {
      count(key, p.dispatch_delay, 0);
    } else if (key == "start_overhead") {
      count(key, p.start_overhead, 0);
    } else if (key == "end_overhead") {
      count(key, p.end_overhead, 0);
    } else if (key == "functional") {
      if (!value.is_boolean())
        LOOM_THROW(ConfigError, "perf backend: \"functional\" must be true or false, got ", value.dump());
      p.functional = value.get<bool>();
    } else if (key == "trace") {
      if (!value.is_string() || value.get<std::string>().empty())
        LOOM_THROW(ConfigError, "perf backend: \"trace\" must be a file path, got ", value.dump());
      p.trace_path = value.get<std::string>();
    } else {
      LOOM_THROW(ConfigError, "perf backend: unknown option \"", key,
                 "\" (dram_latency, dram_bytes_per_cycle, dma_setup, burst_issue_gap, bursts_in_flight, "
                 "read_overhead, dma_tail, pipeline_overhead, fetch_buffer, queue_depth, dispatch_delay, "
                 "start_overhead, end_overhead, functional, trace)");
    }
  }
  return p;
}

PerfSim::PerfSim(AccelConfig config, PerfParams params, uint64_t dram_bytes)
    : FunctionalSim(std::move(config), dram_bytes), params_(params) {
  check_params(params_);
}

void PerfSim::write_reg(uint32_t offset, uint32_t value) {
  if (offset != reg::kControl || !(value & reg::kStart)) return FunctionalSim::write_reg(offset, value);
  estimate_ = {};
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
  // Without execution fsim counts nothing; the multiply-accumulates follow from the GEMM core's
  // steps (each a full block).
  if (!params_.functional && (offset & ~4u) == counter_reg(AccelCounter::GemmMacs))
    return word(estimate_.gemm_cycles * uint64_t(config().batch) * config().block_in * config().block_out);
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
