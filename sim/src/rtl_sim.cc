#include "loom/sim/rtl_sim.h"

#include "backend_config.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "commit_record.h"
#include "loom/accel/isa.h"
#include "loom/runtime/error.h"
#include "rtl/rtl_core.h"

namespace loom::sim {

using namespace loom::accel;

// ---------------------------------------------------------------- model registry

namespace rtl {
namespace {

std::string key(AccelConfig c) {
  c.name.clear();  // a config is identified by its sizes, not its name
  return c.to_json();
}
struct Entry {
  std::string name;
  ModelFactory factory = nullptr;
  ModelFactory coverage_factory = nullptr;  // its coverage build, if there is one
};
std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}

}  // namespace

bool register_model(const std::string& config_json, ModelFactory factory, bool coverage) {
  AccelConfig c = AccelConfig::from_json(config_json, "<built-in RTL model>");
  Entry& e = registry()[key(c)];
  e.name = c.name;
  (coverage ? e.coverage_factory : e.factory) = factory;
  return true;
}

std::unique_ptr<Model> make_model(const AccelConfig& config, bool coverage) {
  auto it = registry().find(key(config));
  if (it == registry().end()) return nullptr;
  ModelFactory f = coverage ? it->second.coverage_factory : it->second.factory;
  return f ? f() : nullptr;
}

std::vector<std::string> model_config_names() {
  std::vector<std::string> names;
  for (auto& [k, e] : registry()) names.push_back(e.name);
  return names;
}

std::string differences_from_model_named(const AccelConfig& config) {
  for (auto& [k, e] : registry()) {
    if (e.name != config.name) continue;
    nlohmann::json built = nlohmann::json::parse(k), given = nlohmann::json::parse(key(config));
    std::string diff;
    for (auto& [field, value] : given.items())
      if (!built.contains(field) || built[field] != value)
        diff += (diff.empty() ? "" : ", ") + field + " " + value.dump() +
                " (built: " + (built.contains(field) ? built[field].dump() : "none") + ")";
    return diff;
  }
  return "";
}

void require_model(const AccelConfig& config, const std::string& backend) {
  if (registry().count(key(config))) return;
  std::string names;
  for (auto& n : model_config_names()) names += (names.empty() ? "" : ", ") + n;
  std::string diff = differences_from_model_named(config);
  if (!diff.empty())
    LOOM_THROW(DeviceError, backend, ": accelerator config '", config.name,
               "' differs from the RTL model built under that name: ", diff,
               "; add the changed JSON file to LOOM_RTL_CONFIGS when configuring");
  LOOM_THROW(DeviceError, backend, ": no RTL model was built for accelerator config '", config.name,
             "' (built: ", names, "); add its JSON file to LOOM_RTL_CONFIGS when configuring");
}

void require_coverage_model(const AccelConfig& config, const std::string& backend) {
  require_model(config, backend);
  if (registry()[key(config)].coverage_factory) return;
  std::string names;
  for (auto& [k, e] : registry())
    if (e.coverage_factory) names += (names.empty() ? "" : ", ") + e.name;
  LOOM_THROW(DeviceError, backend, ": coverage needs the RTL model of accelerator config '", config.name,
             "' built with coverage counters (built: ", names.empty() ? "none" : names,
             "); add it to LOOM_RTL_COVERAGE_CONFIGS when configuring");
}

}  // namespace rtl

// ---------------------------------------------------------------- options

BackendOptionSchema rtl_option_schema() {
  using O = BackendOption;
  const double kCycles = 1e15;
  return {
      O::count("dram_latency", 0, 1'000'000,
               "DRAM latency in cycles (to a read's first beat, and from a write's last beat to its response)", "32"),
      O::number("dram_bytes_per_cycle", 0, 4096, O::Ends::OpenBelow,
                "DRAM bandwidth in bytes per cycle, reads and writes together", "16"),
      O::number("dram_stall_rate", 0, 1, O::Ends::OpenAbove,
                "fraction of cycles DRAM holds its READY signals low (back-pressure on the AXI handshakes)", "0"),
      O::count("cycle_limit", 1, kCycles, "fail a run without FINISH after this many cycles", "4e9"),
      O::output_file("fst", "write a waveform (FST) of the run to this file"),
      O::count("fst_begin", 0, kCycles, "first cycle of the waveform", "0").needing("fst"),
      O::count("fst_end", 1, kCycles, "the waveform stops before this cycle", "the end").needing("fst"),
      O::output_file("trace",
                     "write a timeline of the modules, instructions and DMA bursts (Chrome / Perfetto JSON) to this "
                     "file"),
      O::count("trace_begin", 0, kCycles, "first cycle of the timeline", "0").needing("trace"),
      O::count("trace_end", 1, kCycles, "the timeline stops before this cycle", "the end").needing("trace"),
      O::count("trace_max_events", 1, 1e9, "events the timeline file may hold (reaching it is noted in the file)",
               "2000000")
          .needing("trace"),
      O::output_file("coverage",
                     "simulate the RTL's coverage build and add its line, branch, toggle and cover-property counts to "
                     "this file (Verilator's format) when the device closes"),
  };
}

RtlSimOptions rtl_options_from(const std::string& backend, const BackendOptionValues& v) {
  RtlSimOptions o;
  o.dram_latency = uint32_t(v.count("dram_latency", o.dram_latency));
  o.dram_bytes_per_cycle = v.number("dram_bytes_per_cycle", o.dram_bytes_per_cycle);
  o.dram_stall_rate = v.number("dram_stall_rate", o.dram_stall_rate);
  o.cycle_limit = v.count("cycle_limit", o.cycle_limit);
  o.fst_path = v.text("fst", "");
  o.fst_begin = v.count("fst_begin", o.fst_begin);
  o.fst_end = v.count("fst_end", o.fst_end);
  o.trace_path = v.text("trace", "");
  o.trace_begin = v.count("trace_begin", o.trace_begin);
  o.trace_end = v.count("trace_end", o.trace_end);
  o.trace_max_events = v.count("trace_max_events", o.trace_max_events);
  o.coverage_path = v.text("coverage", "");
  if (o.fst_end <= o.fst_begin)
    LOOM_THROW(ConfigError, backend, " backend: fst_end (", o.fst_end, ") must be after fst_begin (", o.fst_begin, ")");
  if (o.trace_end <= o.trace_begin)
    LOOM_THROW(ConfigError, backend, " backend: trace_end (", o.trace_end, ") must be after trace_begin (",
               o.trace_begin, ")");
  return o;
}

RtlSimOptions RtlSimOptions::from_json(const std::string& text) {
  return rtl_options_from("rtl", read_backend_options("rtl", text));
}

// ---------------------------------------------------------------- the device

struct RtlSim::Impl {
  AccelConfig config;
  RtlSimOptions opt;
  rtl::RtlCore core;
  std::unique_ptr<rtl::CycleEngine> engine;
  rtl::DramModel& dram;
  bool running = false;  // a START was accepted and the run has not ended
  uint64_t run_start = 0;
  // Registers of the last finished run, captured when it ended (the accelerator is reset after a
  // fault so that no transaction stays in flight).
  std::map<uint32_t, uint32_t> snapshot;
  std::string error;
  std::string next_label;  // the next run's name in the timeline
  std::vector<CommitRecord> commits;

  // The record of instruction `index` of the running stream, taken when its module finished it.
  void commit(uint32_t index) {
    const std::optional<InsnWord> w = insn_word(run_insn_addr, index);
    if (!w) return;
    Instruction insn;
    try {
      insn = decode(*w, IsaLayout(config), index);
    } catch (const IsaError&) {
      return;  // the decoder faults on it; the run's error says so
    }
    auto scratchpad = [&](MemType m) {
      std::vector<uint8_t>& bytes = scratchpad_copy[size_t(m)];  // reused: records come every instruction
      core.read_scratchpad(m, scratchpad_entry_bytes(config, m), bytes);
      return ScratchpadView{bytes.data(), bytes.size()};
    };
    auto dram_at = [&](uint64_t addr, uint64_t bytes) -> const uint8_t* {
      return dram.allocator().contains(addr, bytes) ? dram.host_ptr(addr) : nullptr;
    };
    if (auto r = make_commit_record(insn, index, config, scratchpad, dram_at)) {
      r->run = runs;
      r->label = run_label;
      r->tokens = core.tokens();
      commits.push_back(std::move(*r));
    }
  }
  std::vector<uint8_t> scratchpad_copy[5];  // by MemType
  uint64_t run_insn_addr = 0;               // as the host wrote INSN_ADDR (the stream commit records decode)
  uint32_t runs = 0;                        // STARTs so far
  std::string run_label;

  Impl(const std::string& name, AccelConfig c, RtlSimOptions o, uint64_t dram_bytes, const EngineFactory& make_engine)
      : config(std::move(c)),
        opt(std::move(o)),
        core(config, opt, kDramBase, dram_bytes, name),
        engine(make_engine(core)),
        dram(core.dram()) {
    config.validate();
    reset();
  }

  // Word `index` of the stream at `stream`, if it lies in device memory.
  std::optional<InsnWord> insn_word(uint64_t stream, uint32_t index) {
    if (stream > UINT64_MAX - 16ull * (index + 1ull) || !dram.allocator().contains(stream + 16ull * index, 16))
      return std::nullopt;
    InsnWord w;
    std::memcpy(w.data(), dram.host_ptr(stream + 16ull * index), 16);
    return w;
  }

  void reset() { engine->reset(); }
  bool broken() const { return core.broken(); }
  std::string broken_rule() const { return core.broken_rule(); }
  uint64_t cycle() const { return core.cycles(); }
  uint32_t axil_read(uint32_t offset, uint32_t& resp) { return engine->axil_read(offset, resp); }
  void axil_write(uint32_t offset, uint32_t value, uint32_t& resp) { engine->axil_write(offset, value, resp); }

  uint32_t reg_read(uint32_t offset) {
    uint32_t resp;
    uint32_t v = axil_read(offset, resp);
    if (resp != 0)
      LOOM_THROW(DeviceError, "rtl: no register at offset 0x", std::hex, offset, " (the read answered SLVERR)");
    return v;
  }

  // Runs until the accelerator raises its interrupt, breaks an AXI4 rule or `max_cycles` pass.
  void advance(uint64_t max_cycles) {
    if (max_cycles == 0) return;
    auto t0 = std::chrono::steady_clock::now();
    engine->run(max_cycles);
    sim_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double sim_seconds = 0;

  // The run ended (interrupt, cycle limit or a broken AXI4 rule): capture its registers and
  // explain a failure.
  void end_run(bool cycle_limit_hit) {
    running = false;
    core.end_run();
    snapshot.clear();
    for (uint32_t off = reg::kStatus; off < kWaitRegsEnd; off += 4) snapshot[off] = reg_read(off);
    if (broken()) {  // the run's results mean nothing
      error = broken_rule() + " (the run started at cycle " + std::to_string(run_start) + ")";
      snapshot[reg::kStatus] = reg::kError;
      reset();
      return;
    }
    uint32_t status = snapshot[reg::kStatus];
    // The arguments (below STATUS, not in the snapshot: the host may write them for the next run).
    const uint32_t insn_count = reg_read(reg::kInsnCount);
    const uint64_t insn_addr = uint64_t(reg_read(reg::kInsnAddrHi)) << 32 | reg_read(reg::kInsnAddrLo);
    if (cycle_limit_hit) {
      std::ostringstream m;
      m << "no FINISH after " << opt.cycle_limit << " cycles (" << insn_count << " instructions at 0x" << std::hex
        << insn_addr
        << "; raise the limit with --cycle-limit (the rtl option \"cycle_limit\") if the stream is legitimately this "
           "long)";
      error = m.str();
      snapshot[reg::kStatus] = reg::kError;
      snapshot[reg::kErrorIndex] = insn_count;
      snapshot[reg::kCyclesLo] = uint32_t(opt.cycle_limit);
      snapshot[reg::kCyclesHi] = uint32_t(opt.cycle_limit >> 32);
      reset();
      return;
    }
    if (status & reg::kError) {
      auto fault = AccelFault((status >> reg::kFaultShift) & reg::kFaultMask);
      uint32_t index = snapshot[reg::kErrorIndex];
      error = describe(index, fault);
      for (auto& d : dram.decode_errors()) error += "; " + d.describe(dram.bus_bytes());
      if (fault == AccelFault::Deadlock) {
        for (uint32_t m = 0; m < 3; ++m) {
          uint32_t w = snapshot[kWaitRegBase + 4 * m];
          if (w >> 31)
            error += "; " + std::string(to_string(Module(m))) + " module waits at " +
                     describe(w & 0x7fffffff, AccelFault::None);
        }
      }
      reset();  // drop bursts still in flight
    }
  }

  // "instruction K (disassembly): fault", reading the stream the captured registers point at.
  std::string describe(uint32_t index, AccelFault fault) {
    const uint32_t insn_count = reg_read(reg::kInsnCount);  // the arguments: not in the snapshot
    const uint64_t insn_addr = uint64_t(reg_read(reg::kInsnAddrHi)) << 32 | reg_read(reg::kInsnAddrLo);
    std::ostringstream m;
    m << "instruction " << index;
    const std::optional<InsnWord> word = index < insn_count ? insn_word(insn_addr, index) : std::nullopt;
    if (word) {
      const InsnWord& w = *word;
      try {
        std::string text = disassemble(decode(w, IsaLayout(config), index));  // before writing " (": decode may throw
        m << " (" << text << ")";
      } catch (const IsaError& e) {
        // The word itself and why it does not decode, so a corrupt stream can be told from an ISA mismatch.
        std::string why = e.what();
        const std::string prefix = "instruction " + std::to_string(index) + ": ";
        if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
        m << " (undecodable word 0x";
        for (size_t q = w.size(); q-- > 0;) m << std::hex << std::setw(16) << std::setfill('0') << w[q];
        m << std::dec << ": " << why << ")";
      }
    }
    if (fault != AccelFault::None) m << ": " << to_string(fault);
    return m.str();
  }
};

RtlSim::RtlSim(AccelConfig config, RtlSimOptions options, uint64_t dram_bytes)
    : RtlSim("rtl", std::move(config), std::move(options), dram_bytes, rtl::make_loop_engine) {}
RtlSim::RtlSim(std::string name, AccelConfig config, RtlSimOptions options, uint64_t dram_bytes,
               const EngineFactory& make_engine)
    : name_(std::move(name)),
      impl_(std::make_unique<Impl>(name_, std::move(config), std::move(options), dram_bytes, make_engine)) {}
// A destructor cannot throw: a coverage file that cannot be written is said on stderr.
RtlSim::~RtlSim() {
  if (impl_->opt.coverage_path.empty()) return;
  try {
    impl_->core.write_coverage(impl_->opt.coverage_path);
  } catch (const std::exception& e) {
    std::cerr << name_ << ": the RTL's coverage was not written: " << e.what() << "\n";
  }
}

const AccelConfig& RtlSim::config() const { return impl_->config; }
uint64_t RtlSim::simulated_cycles() const { return impl_->cycle(); }
double RtlSim::simulation_seconds() const { return impl_->sim_seconds; }
std::string RtlSim::error_message() const { return impl_->error; }
void RtlSim::label_next_run(const std::string& label) { impl_->next_label = label; }
void RtlSim::record_commits(bool on) {
  if (on)
    impl_->core.on_commit([d = impl_.get()](int, uint32_t index) { d->commit(index); });
  else
    impl_->core.on_commit(nullptr);
}
std::vector<CommitRecord> RtlSim::take_commits() { return take_sorted(impl_->commits); }
std::vector<std::string> RtlSim::available_configs() { return rtl::model_config_names(); }

// Allocations cover whole bus beats: the DMA reads full beats even for narrower entries (micro-ops).
uint64_t RtlSim::alloc(uint64_t bytes, uint64_t alignment) {
  const uint64_t bus = impl_->config.dram_bus_bytes();
  bytes = (bytes + bus - 1) / bus * bus;
  uint64_t a = impl_->dram.allocator().alloc(bytes, std::max(alignment, bus), name());
  std::memset(impl_->dram.host_ptr(a), 0, bytes);  // reproducible runs, like the functional simulator
  return a;
}
// The end is rounded up to a whole beat (the DMA reads full beats), the start is kept: a segment
// that does not start on a beat then leaves its first beat outside device memory, so a DMA reading
// from before it is answered DECERR, as the functional simulator calls it out of range.
void RtlSim::alloc_at(uint64_t addr, uint64_t bytes) {
  const uint64_t bus = impl_->config.dram_bus_bytes();
  uint64_t end = (addr + bytes + bus - 1) / bus * bus;
  impl_->dram.allocator().alloc_at(addr, end - addr, name());
  std::memset(impl_->dram.host_ptr(addr), 0, end - addr);
}
void RtlSim::free(uint64_t addr) { impl_->dram.allocator().free(addr, name()); }

void RtlSim::write(uint64_t addr, const void* src, uint64_t bytes) {
  if (!impl_->dram.allocator().contains(addr, bytes))
    LOOM_THROW(DeviceError, name(), ": write of ", bytes, " bytes at 0x", std::hex, addr,
               " is outside allocated device memory");
  std::memcpy(impl_->dram.host_ptr(addr), src, bytes);
}
void RtlSim::read(uint64_t addr, void* dst, uint64_t bytes) {
  if (!impl_->dram.allocator().contains(addr, bytes))
    LOOM_THROW(DeviceError, name(), ": read of ", bytes, " bytes at 0x", std::hex, addr,
               " is outside allocated device memory");
  std::memcpy(dst, impl_->dram.host_ptr(addr), bytes);
}

// An offset inside the control window goes to the RTL, which answers SLVERR where it has no
// register; one past it would alias.
void RtlSim::write_reg(uint32_t offset, uint32_t value) {
  Impl& d = *impl_;
  if (offset % 4 || offset >= kControlWindowBytes)
    LOOM_THROW(DeviceError, name(), ": no register at offset 0x", std::hex, offset);
  // A run that ended while the host did not poll is captured before any write: capturing a faulty
  // run resets the RTL, which must not wipe the next launch's arguments.
  if (d.running && (d.core.irq() || d.broken())) d.end_run(false);
  // A write the control block must refuse still goes to it: its SLVERR is what the host reports.
  // One that it accepts returns as on a board, and the host sees the register change or not (the
  // random regression's control exercise compares that with the reference).
  const bool read_only = offset == reg::kStatus || offset >= reg::kCyclesLo;
  const bool start = offset == reg::kControl && (value & reg::kStart);
  const bool start_while_running = start && d.running;
  uint32_t resp;
  d.axil_write(offset, value, resp);
  if ((read_only || start_while_running) && resp == 0) return;
  if (read_only && offset >= kAccelRegsEnd)
    LOOM_THROW(DeviceError, name(), ": no writable register at offset 0x", std::hex, offset, " (SLVERR)");
  if (read_only) LOOM_THROW(DeviceError, name(), ": register 0x", std::hex, offset, " is read-only (SLVERR)");
  if (start_while_running) LOOM_THROW(DeviceError, name(), ": START while a run is in progress (SLVERR)");
  if (resp != 0) LOOM_THROW(DeviceError, name(), ": register write at offset 0x", std::hex, offset, " answered SLVERR");
  if (offset == reg::kInsnAddrLo) d.run_insn_addr = (d.run_insn_addr & ~uint64_t{0xffffffff}) | value;
  if (offset == reg::kInsnAddrHi) d.run_insn_addr = (d.run_insn_addr & 0xffffffff) | uint64_t(value) << 32;
  if (start) {
    d.snapshot.clear();
    d.error.clear();
    d.running = true;
    d.run_start = d.cycle();
    d.core.begin_run(d.next_label);
    ++d.runs;
    d.run_label = std::move(d.next_label);
    d.next_label.clear();
    d.dram.clear_decode_errors();
  }
}

uint32_t RtlSim::read_reg(uint32_t offset) {
  Impl& d = *impl_;
  if (offset % 4 || offset >= kControlWindowBytes)
    LOOM_THROW(DeviceError, name(), ": no register at offset 0x", std::hex, offset);
  if (d.running && offset == reg::kStatus) {
    // Simulated time passes while the host polls: run a slice, or to the end of the run.
    uint64_t left = d.opt.cycle_limit - std::min(d.opt.cycle_limit, d.cycle() - d.run_start);
    d.advance(std::min<uint64_t>(left, 1u << 20));
    if (d.core.irq() || d.broken())
      d.end_run(false);
    else if (d.cycle() - d.run_start >= d.opt.cycle_limit)
      d.end_run(true);
  }
  if (!d.running) {
    auto it = d.snapshot.find(offset);
    if (it != d.snapshot.end()) return it->second;
  }
  return d.reg_read(offset);
}

void register_rtl_sim() {
  register_accel_backend_options("rtl", rtl_option_schema());
  register_accel_backend("rtl", [](const std::string& json) {
    BackendConfig b = parse_backend_config(json, "rtl");
    return std::unique_ptr<AccelDevice>(std::make_unique<RtlSim>(b.config, RtlSimOptions::from_json(b.options.dump())));
  });
  // Before any job runs: the options as the factory reads them, and a model built for the config.
  register_accel_backend_check("rtl", [](const std::string& json) {
    BackendConfig b = parse_backend_config(json, "rtl");
    const RtlSimOptions o = RtlSimOptions::from_json(b.options.dump());
    if (o.coverage_path.empty())
      rtl::require_model(b.config, "rtl");
    else
      rtl::require_coverage_model(b.config, "rtl");
  });
}

namespace {
const bool registered = (register_rtl_sim(), true);
}

}  // namespace loom::sim
