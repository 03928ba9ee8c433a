// The port-level view of one Verilated accelerator model, independent of the config it was
// elaborated for (each config's model has its own generated C++ class).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/accel/isa.h"

namespace loom::sim::rtl {

constexpr int kMaxBusBytes = 16;

struct Inputs {
  bool rst_n = false;
  // AXI4-Lite from the host
  bool awvalid = false, wvalid = false, bready = false, arvalid = false, rready = false;
  uint32_t awaddr = 0, wdata = 0, araddr = 0;
  // AXI4 responses from DRAM
  bool m_arready = false, m_rvalid = false, m_rlast = false, m_awready = false, m_wready = false, m_bvalid = false;
  uint32_t m_rresp = 0, m_rid = 0, m_bresp = 0;
  std::array<uint8_t, kMaxBusBytes> m_rdata{};
};

struct Outputs {
  bool irq = false;        // the run ended (DONE or ERROR): what the simulation waits for
  bool interrupt = false;  // ap_ctrl_hs: GIE && (IER & ISR) != 0
  bool awready = false, wready = false, bvalid = false, arready = false, rvalid = false;
  uint32_t bresp = 0, rdata = 0, rresp = 0;
  bool m_arvalid = false, m_rready = false, m_awvalid = false, m_wvalid = false, m_wlast = false, m_bready = false;
  uint64_t m_araddr = 0, m_awaddr = 0;
  uint32_t m_arlen = 0, m_arid = 0, m_arsize = 0, m_arburst = 0, m_awlen = 0, m_awid = 0, m_awsize = 0, m_awburst = 0;
  uint32_t m_wstrb = 0;  // one bit per byte lane
  std::array<uint8_t, kMaxBusBytes> m_wdata{};
};

// What each execution module (load, compute, store; in that order) does in a cycle, read from
// inside the RTL (signals marked Verilator-public in loom_accel.sv) for the timelines.
struct ModuleProbe {
  bool busy = false;     // executing an instruction
  bool stalled = false;  // waiting for a dependency token (or room for one)
  uint32_t index = 0;    // the instruction it executes or waits on
};
using Probes = std::array<ModuleProbe, 3>;

class Model {
 public:
  virtual ~Model() = default;
  // The modules' state in the last settled cycle.
  virtual void probe(Probes& p) const = 0;
  // The dependency-token counters: load->compute, compute->load, compute->store, store->compute.
  virtual std::array<uint32_t, 4> tokens() const = 0;
  // A scratchpad's contents, entries in order, `entry_bytes` each (little-endian elements).
  virtual void read_scratchpad(accel::MemType m, size_t entry_bytes, std::vector<uint8_t>& bytes) const = 0;
  // Applies the inputs with the clock low and settles the combinational outputs.
  virtual void eval_low(const Inputs& in, Outputs& out) = 0;
  // Rising clock edge (the registers take their next values), then the clock goes low again.
  virtual void posedge() = 0;
  // A SystemVerilog assertion in the RTL failed (the first failure is kept until clear_failure):
  // "hw/rtl/loom_fifo.sv:40: [0] %Error: ... Assertion failed in TOP.loom_accel...: <message>".
  virtual bool failed() const = 0;
  virtual std::string failure() const = 0;
  virtual void clear_failure() = 0;
  virtual void open_trace(const std::string& path) = 0;
  virtual void dump(uint64_t time) = 0;  // records the signals at `time` (in half cycles)
  virtual void close_trace() = 0;
  // Writes the model's coverage counters (a coverage build's; others have none) to `path` in
  // Verilator's format, one point per instance. Verilator stops the process when it cannot open
  // the file: give it one that can be written.
  virtual void write_coverage(const std::string& path) = 0;
};

using ModelFactory = std::unique_ptr<Model> (*)();
// Called by each generated model's translation unit (static initialization); `coverage`: built
// with Verilator's coverage counters (LOOM_RTL_COVERAGE_CONFIGS).
bool register_model(const std::string& config_json, ModelFactory factory, bool coverage);
// The model built for `config` (compared without its name), with coverage counters or without,
// or nullptr.
std::unique_ptr<Model> make_model(const accel::AccelConfig& config, bool coverage = false);
std::vector<std::string> model_config_names();
// For a config whose name is a built model's but whose parameters are not: "field value (built:
// value), ..."; "" when no built model has its name.
std::string differences_from_model_named(const accel::AccelConfig& config);
// DeviceError unless a model is built for `config`, saying which are built or how it differs from
// the one built under its name, and how to build it. `backend` names the asking backend.
void require_model(const accel::AccelConfig& config, const std::string& backend);
// The same for the coverage build of `config`'s model.
void require_coverage_model(const accel::AccelConfig& config, const std::string& backend);

}  // namespace loom::sim::rtl
