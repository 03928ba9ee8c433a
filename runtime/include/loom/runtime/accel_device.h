// One device interface for every accelerator backend (functional simulator, Verilator RTL
// simulation, SystemC platform, FPGA board through XRT): device memory with physical addresses,
// host<->device copies, 32-bit control registers, launch and wait. The accelerator driver only
// talks to this interface, so the same instruction streams run on every backend.
//
// Register map (byte offsets; see docs/accel.md). Vitis' ap_ctrl_hs convention up to the
// arguments, so the RTL is also an XRT kernel:
//   0x00 CONTROL      ap_ctrl_hs: bit 0 START (write 1: run INSN_COUNT instructions from INSN_ADDR;
//                     reads 1 while the run is in progress), bit 1 DONE (set when a run ends, cleared
//                     when CONTROL is read), bit 2 IDLE, bit 3 READY (as DONE)
//   0x04 GIE          bit 0: global interrupt enable
//   0x08 IER          bit 0: interrupt on done, bit 1: on ready
//   0x0c ISR          bit 0 done, bit 1 ready (set by the accelerator; writing 1 toggles a bit)
//   0x10 INSN_ADDR_LO 0x14 INSN_ADDR_HI   physical address of the first instruction (argument 0)
//   0x18 INSN_COUNT   (argument 1)
//   0x1c STATUS       bit 0 DONE, bit 1 ERROR, bits 8..15 the fault cause (AccelFault; 0 where a
//                     backend reports only a message) (read-only; cleared by START, not by reads)
//   0x20 CYCLES_LO    0x24 CYCLES_HI       cycles of the last run (0 for untimed backends)
//   0x28 ERROR_INDEX  index of the instruction that failed (valid when ERROR); 0x2c reads 0
//   0x30 + 8*k        performance counter k (see AccelCounter), 64-bit: low word, then high word
// The interrupt line is GIE && (IER & ISR) != 0.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom {

namespace reg {
inline constexpr uint32_t kControl = 0x00, kGie = 0x04, kIer = 0x08, kIsr = 0x0c, kInsnAddrLo = 0x10,
                          kInsnAddrHi = 0x14, kInsnCount = 0x18, kStatus = 0x1c, kCyclesLo = 0x20, kCyclesHi = 0x24,
                          kErrorIndex = 0x28, kCounterBase = 0x30;
// CONTROL bits (ap_ctrl_hs); ISR/IER bits.
inline constexpr uint32_t kStart = 1, kApDone = 2, kApIdle = 4, kApReady = 8, kIrqDone = 1, kIrqReady = 2;
// STATUS bits.
inline constexpr uint32_t kDone = 1, kError = 2, kFaultShift = 8, kFaultMask = 0xff;
}  // namespace reg

// Why a run stopped with ERROR (STATUS bits 8..15), for backends that detect faults in hardware.
enum class AccelFault : uint32_t {
  None,
  IllegalOpcode,
  IllegalMemType,
  IllegalAluOp,
  ReservedBits,
  IllegalDeps,
  BadDmaShape,
  SramOverflow,
  BadUopRange,
  IndexOutOfRange,
  DmaFault,
  FetchFault,
  Deadlock,
  NoFinish,
  Count
};
const char* to_string(AccelFault f);  // e.g. "dependency deadlock"

// Performance counters of the last run, in register order. Instruction counts per kind (LOAD of
// inputs/weights on the load module, LOAD of micro-ops and of accumulators on the compute module),
// DMA bytes moved per scratchpad (data rows only: padding is not transferred), GEMM multiply-
// accumulates and ALU element operations; then what an energy model needs beyond those (every
// scratchpad access follows from these counts, accel/energy_model.h): GEMM steps that zero their
// accumulator entry, ALU element operations whose operand is an accumulator entry (not an
// immediate), and scratchpad entries a LOAD filled with zeros, per scratchpad. These depend on the
// instructions alone, so every backend counts them alike (the performance model without executing).
// Timed backends add, per module, the cycles it spent
// executing an instruction (busy, including waits for memory) and waiting for a dependency token
// (stall), and the cycles the GEMM core issued a multiply-accumulate step; untimed ones report 0.
enum class AccelCounter : uint32_t {
  LoadInsns,
  UopLoadInsns,
  AccLoadInsns,
  StoreInsns,
  GemmInsns,
  AluInsns,
  DmaLoadBytesInp,
  DmaLoadBytesWgt,
  DmaLoadBytesAcc,
  DmaLoadBytesUop,
  DmaStoreBytes,
  GemmMacs,
  AluOps,
  GemmResetSteps,
  AluVectorOps,
  PadEntriesInp,
  PadEntriesWgt,
  PadEntriesAcc,
  LoadBusyCycles,
  LoadStallCycles,
  ComputeBusyCycles,
  ComputeStallCycles,
  StoreBusyCycles,
  StoreStallCycles,
  GemmCycles,
  Count
};
inline constexpr AccelCounter kFirstTimingCounter = AccelCounter::LoadBusyCycles;
const char* to_string(AccelCounter c);  // e.g. "dma_load_bytes_inp"
inline constexpr uint32_t counter_reg(AccelCounter c) {
  return reg::kCounterBase + 8 * uint32_t(c);
}  // low word; +4 high
inline constexpr uint32_t kAccelRegsEnd = counter_reg(AccelCounter::Count);  // one past the last counter register
// Hardware backends (RTL) also expose, after the counters, one read-only wait register per module
// (load, compute, store): bit 31 set while the module waits for a dependency token, bits 0..30
// the index of the instruction it waits at. They explain deadlocks.
inline constexpr uint32_t kWaitRegBase = kAccelRegsEnd, kWaitRegsEnd = kWaitRegBase + 12;
// The control port's AXI4-Lite address window (the RTL's 12-bit addresses; the Vitis kernel's
// register range): every offset below it reaches the control block.
inline constexpr uint32_t kControlWindowBytes = 0x1000;

class AccelDevice {
 public:
  virtual ~AccelDevice() = default;
  virtual std::string name() const = 0;

  // Device memory, by physical address. alloc throws DeviceError when full.
  virtual uint64_t alloc(uint64_t bytes, uint64_t alignment = 64) = 0;
  // Allocates exactly [addr, addr + bytes) (for replaying recorded programs); backends whose
  // memory is managed elsewhere may refuse with DeviceError.
  virtual void alloc_at(uint64_t addr, uint64_t bytes);
  virtual void free(uint64_t addr) = 0;
  virtual void write(uint64_t addr, const void* src, uint64_t bytes) = 0;
  virtual void read(uint64_t addr, void* dst, uint64_t bytes) = 0;

  virtual void write_reg(uint32_t offset, uint32_t value) = 0;
  virtual uint32_t read_reg(uint32_t offset) = 0;

  // Human-readable reason of the last ERROR (which instruction, what went wrong).
  virtual std::string error_message() const = 0;

  // Run-level operations. The defaults are built on single register accesses; a remote or board
  // backend overrides them to do each in one step (one round trip, one call into the driver).
  //
  // `count` consecutive 32-bit registers from `first` (a batch of reads).
  virtual std::vector<uint32_t> read_regs(uint32_t first, uint32_t count);
  // Programs INSN_ADDR/INSN_COUNT and sets START.
  virtual void launch(uint64_t insn_addr, uint32_t count);
  // Names the next run in the device's timeline, if it records one (a model's kernel; the RTL
  // simulators' --trace). Others ignore it.
  virtual void label_next_run(const std::string& label) { (void)label; }
  // Polls STATUS until DONE or ERROR. Throws DeviceError on ERROR (with error_message()) and on
  // timeout. A remote backend bounds the wait where the device is, and the request by it.
  virtual void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

  // Built on read_regs: one batch each.
  uint64_t cycles();
  uint64_t counter(AccelCounter c);
  // CYCLES and every counter of the last run, read in one batch: [0] cycles, [1 + k] counter k.
  std::vector<uint64_t> run_counters();
  // Every counter by name, plus "dma_load_bytes" (all scratchpads together).
  std::map<std::string, uint64_t> counters();
};

// First-fit allocator over a physical address range, for backends that model DRAM themselves.
class DeviceMemoryAllocator {
 public:
  DeviceMemoryAllocator(uint64_t base, uint64_t size);
  uint64_t alloc(uint64_t bytes, uint64_t alignment, const std::string& device);
  void alloc_at(uint64_t addr, uint64_t bytes, const std::string& device);
  void free(uint64_t addr, const std::string& device);
  // True if [addr, addr + bytes) lies inside one live allocation.
  bool contains(uint64_t addr, uint64_t bytes) const;

 private:
  uint64_t base_, size_;
  std::map<uint64_t, uint64_t> live_;  // start -> size
};

// Backend registry: backends register a factory under a name ("fsim", "rtl", "systemc", "xrt").
// The config is the accelerator config as JSON (the runtime does not interpret it).
using AccelDeviceFactory = std::function<std::unique_ptr<AccelDevice>(const std::string& config_json)>;
void register_accel_backend(const std::string& name, AccelDeviceFactory factory);
std::unique_ptr<AccelDevice> make_accel_device(const std::string& name, const std::string& config_json);
std::vector<std::string> accel_backends();
// A config's backend section (an object-valued entry such as "zynq": {"uio": ...}) must name a
// backend of this build: a ConfigError naming `origin`, the section and the backends otherwise.
void check_backend_section(const std::string& name, const std::string& origin);
// Whether a backend can open a device for a config, asked without opening one (a tool checks every
// job before the first one runs): a backend registers a check beside its factory (the simulators:
// their options section read by the reader their factory uses; the RTL ones: is a model built for
// the config?); it throws the ConfigError or DeviceError make_accel_device would. An unknown
// backend throws as make_accel_device does; a backend without a check, and rpc:// URLs (the server
// decides), pass.
using AccelBackendCheck = std::function<void(const std::string& config_json)>;
void register_accel_backend_check(const std::string& name, AccelBackendCheck check);
void check_accel_backend(const std::string& name, const std::string& config_json);

}  // namespace loom
