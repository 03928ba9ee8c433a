// The SystemC TLM-2.0 virtual platform of the "systemc" backend. Per accelerator slot:
//
//   HostModule --(TLM, AXI4-Lite registers)--> AccelModule --(TLM, AXI4 bursts)--> MemoryRouter
//                                              (the Verilated RTL                    |-> FixedLatencyMemory
//                                               through RtlCore, clk)                '-> BankedDram
//
// The accelerator's ports stay pin-accurate inside AccelModule: RtlCore drives the AXI4-Lite pins
// cycle by cycle for each register transaction the host sends, and the DRAM model keeps checking
// the AXI4 rules and pacing beats at the port's bandwidth, but hands each whole burst to the
// memory over TLM; the target's annotated delay (in clock periods) is the burst's latency.
//
// One elaboration per process: the kernel cannot elaborate again after sc_start, and tests open
// and close many devices, so the platform is built once, on first use, with kSlots slots, and
// devices attach to a free slot and detach when closed. Simulated time only passes inside a
// device's call (sc_start until the slot's work is done, then sc_pause), and only the slot whose
// device called does any work, so each device sees the cycles it would see alone.
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <systemc>
#include <tlm>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "../rtl/rtl_core.h"
#include "loom/runtime/error.h"
#include "systemc_engine.h"

// libsystemc's main() calls sc_main; Loom's programs have their own main and never call it.
extern "C" int sc_main(int, char*[]) { return 1; }

namespace loom::sim::sc {

using namespace sc_core;

namespace {

const sc_time& period() {
  static const sc_time p(1, SC_NS);
  return p;
}
uint32_t to_cycles(const sc_time& t) { return uint32_t(t / period()); }

// A memory controller in front of the DRAM array (the one the device allocates from, RtlCore's
// DramModel): data moves between the payload and the array; the delay is the burst's latency.
class MemoryTarget : public sc_module {
 public:
  tlm_utils::simple_target_socket<MemoryTarget> socket;
  rtl::DramModel* dram = nullptr;  // the attached device's array

  explicit MemoryTarget(sc_module_name name) : sc_module(name), socket("socket") {
    socket.register_b_transport(this, &MemoryTarget::b_transport);
    socket.register_transport_dbg(this, &MemoryTarget::transport_dbg);
  }
  virtual void reset() {}

 protected:
  virtual uint32_t latency(bool write, uint64_t addr, uint32_t bytes) = 0;

 private:
  bool move(tlm::tlm_generic_payload& gp) {
    const uint64_t addr = gp.get_address();
    const uint32_t bytes = gp.get_data_length();
    if (!dram || !dram->allocator().contains(addr, bytes)) {
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return false;
    }
    if (gp.is_read())
      std::memcpy(gp.get_data_ptr(), dram->host_ptr(addr), bytes);
    else
      std::memcpy(dram->host_ptr(addr), gp.get_data_ptr(), bytes);
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    return true;
  }
  void b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
    if (move(gp)) delay += latency(gp.is_write(), gp.get_address(), gp.get_data_length()) * period();
  }
  unsigned transport_dbg(tlm::tlm_generic_payload& gp) { return move(gp) ? gp.get_data_length() : 0; }
};

class FixedLatencyMemory final : public MemoryTarget {
 public:
  uint32_t cycles = 32;
  using MemoryTarget::MemoryTarget;

 protected:
  uint32_t latency(bool, uint64_t, uint32_t) override { return cycles; }
};

// A DRAM with one open row per bank: rows of `row_bytes` interleaved over the banks; a burst to
// the open row of its bank takes the hit latency, any other the miss latency (and opens its row).
class BankedDram final : public MemoryTarget {
 public:
  MemoryOptions opt;
  uint64_t hits = 0, misses = 0;
  using MemoryTarget::MemoryTarget;
  void reset() override {
    open_.assign(opt.banks, UINT64_MAX);
    hits = misses = 0;
  }

 protected:
  uint32_t latency(bool, uint64_t addr, uint32_t) override {
    const uint64_t row = addr / opt.row_bytes;
    uint64_t& open = open_[row % opt.banks];
    if (open == row) return ++hits, opt.row_hit_latency;
    open = row;
    return ++misses, opt.row_miss_latency;
  }

 private:
  std::vector<uint64_t> open_;
};

// The interconnect between the accelerator and the memories: forwards to the device's choice.
class MemoryRouter final : public sc_module {
 public:
  tlm_utils::simple_target_socket<MemoryRouter> in;
  tlm_utils::simple_initiator_socket<MemoryRouter> to_fixed, to_banked;
  bool banked = false;

  explicit MemoryRouter(sc_module_name name) : sc_module(name), in("in"), to_fixed("to_fixed"), to_banked("to_banked") {
    in.register_b_transport(this, &MemoryRouter::b_transport);
    in.register_transport_dbg(this, &MemoryRouter::transport_dbg);
  }

 private:
  tlm_utils::simple_initiator_socket<MemoryRouter>& out() { return banked ? to_banked : to_fixed; }
  void b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) { out()->b_transport(gp, delay); }
  unsigned transport_dbg(tlm::tlm_generic_payload& gp) { return out()->transport_dbg(gp); }
};

// The accelerator: RtlCore clocked by clk. Register transactions arrive on `ctrl` (b_transport
// returns after the cycles the AXI4-Lite pins take); bursts leave on `mem` (called from the
// clocked process: the platform's memories answer without waiting, with an annotated delay).
class AccelModule final : public sc_module, public rtl::MemoryPort {
 public:
  sc_in<bool> clk;
  tlm_utils::simple_target_socket<AccelModule> ctrl;
  tlm_utils::simple_initiator_socket<AccelModule> mem;

  enum class Work { None, Transaction, Reset, Run };
  rtl::RtlCore* core = nullptr;
  Work work = Work::None;
  uint64_t budget = 0;  // Run: cycles left

  SC_HAS_PROCESS(AccelModule);
  explicit AccelModule(sc_module_name name) : sc_module(name), clk("clk"), ctrl("ctrl"), mem("mem") {
    ctrl.register_b_transport(this, &AccelModule::b_transport);
    SC_METHOD(tick);
    sensitive << clk.pos();
    dont_initialize();
  }

  uint32_t read_burst(uint64_t addr, uint8_t* dst, uint32_t bytes) override {
    return burst(tlm::TLM_READ_COMMAND, addr, dst, bytes);
  }
  uint32_t write_burst(uint64_t addr, const uint8_t* src, uint32_t bytes) override {
    return burst(tlm::TLM_WRITE_COMMAND, addr, const_cast<uint8_t*>(src), bytes);
  }

 private:
  void tick() {
    if (!core || work == Work::None) return;
    const bool run_ends = core->cycle();
    switch (work) {
      case Work::Transaction:
        if (core->idle()) {
          work = Work::None;
          done_.notify(SC_ZERO_TIME);
        }
        break;
      case Work::Reset:
        if (core->idle()) {
          work = Work::None;
          sc_pause();
        }
        break;
      case Work::Run:
        if (run_ends || --budget == 0) {
          work = Work::None;
          sc_pause();
        }
        break;
      case Work::None:
        break;
    }
  }

  // An AXI4-Lite transaction on the pins, as long as it takes.
  void b_transport(tlm::tlm_generic_payload& gp, sc_time&) {
    uint32_t value = 0;
    if (gp.get_data_length() != 4 || !core) {
      gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
      return;
    }
    if (gp.is_write()) {
      std::memcpy(&value, gp.get_data_ptr(), 4);
      core->request_write(uint32_t(gp.get_address()), value);
    } else {
      core->request_read(uint32_t(gp.get_address()));
    }
    work = Work::Transaction;
    wait(done_);
    if (gp.is_read()) {
      value = core->rdata();
      std::memcpy(gp.get_data_ptr(), &value, 4);
    }
    gp.set_response_status(core->resp() == 0 ? tlm::TLM_OK_RESPONSE : tlm::TLM_GENERIC_ERROR_RESPONSE);
  }

  uint32_t burst(tlm::tlm_command cmd, uint64_t addr, uint8_t* data, uint32_t bytes) {
    tlm::tlm_generic_payload gp;
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(data);
    gp.set_data_length(bytes);
    gp.set_streaming_width(bytes);
    gp.set_byte_enable_ptr(nullptr);
    gp.set_dmi_allowed(false);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_time delay = SC_ZERO_TIME;
    mem->b_transport(gp, delay);  // the DRAM model checked the range first: the memories answer OK
    return to_cycles(delay);
  }

  sc_event done_;
};

// The host CPU's stand-in: sends the device's register accesses as TLM transactions.
class HostModule final : public sc_module {
 public:
  tlm_utils::simple_initiator_socket<HostModule> socket;
  bool write = false;
  uint32_t offset = 0, value = 0;
  tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
  sc_event request;

  SC_HAS_PROCESS(HostModule);
  explicit HostModule(sc_module_name name) : sc_module(name), socket("socket") { SC_THREAD(serve); }

 private:
  void serve() {
    for (;;) {
      wait(request);
      tlm::tlm_generic_payload gp;
      gp.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
      gp.set_address(offset);
      gp.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
      gp.set_data_length(4);
      gp.set_streaming_width(4);
      gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
      sc_time delay = SC_ZERO_TIME;
      socket->b_transport(gp, delay);
      status = gp.get_response_status();
      sc_pause();
    }
  }
};

struct Slot {
  AccelModule accel;
  HostModule host;
  MemoryRouter router;
  FixedLatencyMemory fixed;
  BankedDram banked;
  bool taken = false;

  explicit Slot(int i)
      : accel(name("accel", i).c_str()),
        host(name("host", i).c_str()),
        router(name("router", i).c_str()),
        fixed(name("dram_fixed", i).c_str()),
        banked(name("dram_banked", i).c_str()) {
    host.socket.bind(accel.ctrl);
    accel.mem.bind(router.in);
    router.to_fixed.bind(fixed.socket);
    router.to_banked.bind(banked.socket);
  }
  static std::string name(const char* what, int i) { return std::string(what) + std::to_string(i); }
};

class Platform {
 public:
  static Platform& get() {
    static Platform p;
    return p;
  }
  Slot& take() {
    for (auto& s : slots_)
      if (!s->taken) {
        s->taken = true;
        return *s;
      }
    LOOM_THROW(DeviceError, "systemc: all ", kSlots,
               " accelerator slots of this process's SystemC platform are in use (the SystemC kernel elaborates once "
               "per process; close a systemc device first)");
  }
  // Runs the simulation until a slot pauses it.
  void run() {
    sc_start();
    if (sc_get_status() != SC_PAUSED && sc_get_status() != SC_STOPPED)
      LOOM_THROW(DeviceError, "systemc: the simulation ended unexpectedly");
  }

 private:
  Platform() {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    clk_ = std::make_unique<sc_clock>("clk", period());
    for (int i = 0; i < kSlots; ++i) {
      slots_.push_back(std::make_unique<Slot>(i));
      slots_.back()->accel.clk.bind(*clk_);
    }
  }
  std::unique_ptr<sc_clock> clk_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

class SystemcEngine final : public rtl::CycleEngine {
 public:
  SystemcEngine(rtl::RtlCore& core, const MemoryOptions& memory) : core_(core), slot_(Platform::get().take()) {
    slot_.fixed.cycles = memory.latency;
    slot_.banked.opt = memory;
    slot_.banked.dram = slot_.fixed.dram = &core.dram();
    slot_.banked.reset();
    slot_.router.banked = memory.model == "banked";
    slot_.accel.core = &core;
    core.dram().set_port(&slot_.accel);
  }
  ~SystemcEngine() override {
    core_.dram().set_port(nullptr);
    slot_.accel.core = nullptr;
    slot_.accel.work = AccelModule::Work::None;
    slot_.banked.dram = slot_.fixed.dram = nullptr;
    slot_.taken = false;
  }

  void reset() override {
    core_.request_reset();
    slot_.accel.work = AccelModule::Work::Reset;
    Platform::get().run();
  }
  uint32_t axil_read(uint32_t offset, uint32_t& resp) override {
    transact(false, offset, 0, resp);
    return slot_.host.value;
  }
  void axil_write(uint32_t offset, uint32_t value, uint32_t& resp) override { transact(true, offset, value, resp); }
  void run(uint64_t max_cycles) override {
    if (max_cycles == 0) return;
    slot_.accel.budget = max_cycles;
    slot_.accel.work = AccelModule::Work::Run;
    Platform::get().run();
  }

 private:
  void transact(bool write, uint32_t offset, uint32_t value, uint32_t& resp) {
    HostModule& h = slot_.host;
    h.write = write;
    h.offset = offset;
    h.value = value;
    h.request.notify(SC_ZERO_TIME);
    Platform::get().run();
    if (h.status == tlm::TLM_INCOMPLETE_RESPONSE)
      LOOM_THROW(DeviceError, "systemc: the register transaction at offset 0x", std::hex, offset, " did not complete");
    resp = h.status == tlm::TLM_OK_RESPONSE ? 0 : 2;  // SLVERR
  }
  rtl::RtlCore& core_;
  Slot& slot_;
};

}  // namespace

}  // namespace loom::sim::sc

extern "C" loom::sim::rtl::CycleEngine* loom_systemc_make_engine(loom::sim::rtl::RtlCore* core,
                                                                 const loom::sim::sc::MemoryOptions* memory) {
  return new loom::sim::sc::SystemcEngine(*core, *memory);
}
