#include "loom/runtime/accel_device.h"
#include "loom/runtime/interrupt.h"

#include <algorithm>
#include <thread>

#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"

namespace loom {

const char* to_string(AccelFault f) {
  switch (f) {
    case AccelFault::None:
      return "no fault";
    case AccelFault::IllegalOpcode:
      return "illegal opcode";
    case AccelFault::IllegalMemType:
      return "illegal memory type for this opcode";
    case AccelFault::IllegalAluOp:
      return "illegal ALU opcode";
    case AccelFault::ReservedBits:
      return "reserved instruction bits are set";
    case AccelFault::IllegalDeps:
      return "dependency flag the module cannot use";
    case AccelFault::BadDmaShape:
      return "malformed DMA shape (stride smaller than the row, or padding where none is allowed)";
    case AccelFault::SramOverflow:
      return "scratchpad buffer overflow";
    case AccelFault::BadUopRange:
      return "bad micro-op range, zero loop extent or shift amount";
    case AccelFault::IndexOutOfRange:
      return "micro-op scratchpad index out of range";
    case AccelFault::DmaFault:
      return "DMA outside allocated device memory";
    case AccelFault::FetchFault:
      return "instruction fetch outside allocated device memory";
    case AccelFault::Deadlock:
      return "dependency deadlock";
    case AccelFault::NoFinish:
      return "the stream has no FINISH instruction";
    case AccelFault::Count:
      break;
  }
  return "?";
}

const char* to_string(AccelCounter c) {
  switch (c) {
    case AccelCounter::LoadInsns:
      return "load_insns";
    case AccelCounter::UopLoadInsns:
      return "uop_load_insns";
    case AccelCounter::AccLoadInsns:
      return "acc_load_insns";
    case AccelCounter::StoreInsns:
      return "store_insns";
    case AccelCounter::GemmInsns:
      return "gemm_insns";
    case AccelCounter::AluInsns:
      return "alu_insns";
    case AccelCounter::DmaLoadBytesInp:
      return "dma_load_bytes_inp";
    case AccelCounter::DmaLoadBytesWgt:
      return "dma_load_bytes_wgt";
    case AccelCounter::DmaLoadBytesAcc:
      return "dma_load_bytes_acc";
    case AccelCounter::DmaLoadBytesUop:
      return "dma_load_bytes_uop";
    case AccelCounter::DmaStoreBytes:
      return "dma_store_bytes";
    case AccelCounter::GemmMacs:
      return "gemm_macs";
    case AccelCounter::AluOps:
      return "alu_ops";
    case AccelCounter::GemmResetSteps:
      return "gemm_reset_steps";
    case AccelCounter::AluVectorOps:
      return "alu_vector_ops";
    case AccelCounter::PadEntriesInp:
      return "pad_entries_inp";
    case AccelCounter::PadEntriesWgt:
      return "pad_entries_wgt";
    case AccelCounter::PadEntriesAcc:
      return "pad_entries_acc";
    case AccelCounter::LoadBusyCycles:
      return "load_busy_cycles";
    case AccelCounter::LoadStallCycles:
      return "load_stall_cycles";
    case AccelCounter::ComputeBusyCycles:
      return "compute_busy_cycles";
    case AccelCounter::ComputeStallCycles:
      return "compute_stall_cycles";
    case AccelCounter::StoreBusyCycles:
      return "store_busy_cycles";
    case AccelCounter::StoreStallCycles:
      return "store_stall_cycles";
    case AccelCounter::GemmCycles:
      return "gemm_cycles";
    case AccelCounter::Count:
      break;
  }
  return "?";
}

void AccelDevice::alloc_at(uint64_t addr, uint64_t bytes) {
  LOOM_THROW(DeviceError, name(), ": cannot allocate at a fixed address (0x", std::hex, addr, ", ", std::dec, bytes,
             " bytes)");
}

void AccelDevice::launch(uint64_t insn_addr, uint32_t count) {
  write_reg(reg::kInsnAddrLo, uint32_t(insn_addr));
  write_reg(reg::kInsnAddrHi, uint32_t(insn_addr >> 32));
  write_reg(reg::kInsnCount, count);
  write_reg(reg::kControl, reg::kStart);
}

void AccelDevice::wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // Before each poll: a simulator's read of STATUS simulates the next slice of the run.
    runtime::check_interrupt("the accelerator's run was stopped while it ran (the device is mid-run)");
    uint32_t st = read_reg(reg::kStatus);
    if (st & reg::kError) LOOM_THROW(DeviceError, name(), ": ", error_message());
    if (st & reg::kDone) return;
    if (std::chrono::steady_clock::now() > deadline)
      LOOM_THROW(DeviceError, name(), ": no FINISH within ", timeout.count(), " ms");
    std::this_thread::yield();
  }
}

std::vector<uint32_t> AccelDevice::read_regs(uint32_t first, uint32_t count) {
  std::vector<uint32_t> v(count);
  for (uint32_t k = 0; k < count; ++k) v[k] = read_reg(first + 4 * k);
  return v;
}

uint64_t AccelDevice::cycles() {
  auto w = read_regs(reg::kCyclesLo, 2);
  return uint64_t(w[1]) << 32 | w[0];
}

uint64_t AccelDevice::counter(AccelCounter c) {
  LOOM_CHECK(c < AccelCounter::Count, "no such accelerator counter");
  auto w = read_regs(counter_reg(c), 2);
  return uint64_t(w[1]) << 32 | w[0];
}

std::vector<uint64_t> AccelDevice::run_counters() {
  // CYCLES_LO/HI, ERROR_INDEX, then the counters: one batch from CYCLES_LO to the last counter.
  auto w = read_regs(reg::kCyclesLo, (kAccelRegsEnd - reg::kCyclesLo) / 4);
  auto word64 = [&](uint32_t offset) {
    size_t k = (offset - reg::kCyclesLo) / 4;
    return uint64_t(w[k + 1]) << 32 | w[k];
  };
  std::vector<uint64_t> out{word64(reg::kCyclesLo)};
  for (uint32_t k = 0; k < uint32_t(AccelCounter::Count); ++k) out.push_back(word64(counter_reg(AccelCounter(k))));
  return out;
}

std::map<std::string, uint64_t> AccelDevice::counters() {
  std::map<std::string, uint64_t> out;
  std::vector<uint64_t> all = run_counters();
  for (uint32_t k = 0; k < uint32_t(AccelCounter::Count); ++k) out[to_string(AccelCounter(k))] = all[k + 1];
  out["dma_load_bytes"] =
      out["dma_load_bytes_inp"] + out["dma_load_bytes_wgt"] + out["dma_load_bytes_acc"] + out["dma_load_bytes_uop"];
  return out;
}

DeviceMemoryAllocator::DeviceMemoryAllocator(uint64_t base, uint64_t size) : base_(base), size_(size) {}

// Sizes and addresses may come from untrusted files (program files, images): every comparison
// is written so that values near 2^64 cannot wrap into a range that looks valid.
static bool fits_below(uint64_t addr, uint64_t bytes, uint64_t limit) { return addr <= limit && bytes <= limit - addr; }

uint64_t DeviceMemoryAllocator::alloc(uint64_t bytes, uint64_t alignment, const std::string& device) {
  if (bytes == 0) bytes = 1;
  if (alignment == 0 || (alignment & (alignment - 1)))
    LOOM_THROW(DeviceError, device, ": alignment ", alignment, " is not a power of two");
  if (alignment > size_)
    LOOM_THROW(DeviceError, device, ": alignment ", alignment, " exceeds the device memory (", size_, " bytes)");
  auto align_up = [&](uint64_t a) {
    return (a + alignment - 1) / alignment * alignment;
  };  // a <= base_ + size_: no wrap
  uint64_t cursor = base_;
  for (auto [start, size] : live_) {
    if (fits_below(align_up(cursor), bytes, start)) break;
    cursor = start + size;
  }
  uint64_t aligned = align_up(cursor);
  if (!fits_below(aligned, bytes, base_ + size_))
    LOOM_THROW(DeviceError, device, ": out of device memory allocating ", bytes, " bytes (", size_, " bytes in all)");
  live_[aligned] = bytes;
  return aligned;
}

void DeviceMemoryAllocator::alloc_at(uint64_t addr, uint64_t bytes, const std::string& device) {
  if (bytes == 0) bytes = 1;
  if (addr < base_ || !fits_below(addr - base_, bytes, size_))
    LOOM_THROW(DeviceError, device, ": ", bytes, " bytes at 0x", std::hex, addr, " lie outside device memory [0x",
               base_, ", 0x", base_ + size_, ")");
  auto next = live_.lower_bound(addr);
  bool overlaps = (next != live_.end() && next->first < addr + bytes) ||
                  (next != live_.begin() && std::prev(next)->first + std::prev(next)->second > addr);
  if (overlaps)
    LOOM_THROW(DeviceError, device, ": [0x", std::hex, addr, ", 0x", addr + bytes, ") overlaps a live allocation");
  live_[addr] = bytes;
}

void DeviceMemoryAllocator::free(uint64_t addr, const std::string& device) {
  if (!live_.erase(addr)) LOOM_THROW(DeviceError, device, ": free of 0x", std::hex, addr, " which is not allocated");
}

bool DeviceMemoryAllocator::contains(uint64_t addr, uint64_t bytes) const {
  auto it = live_.upper_bound(addr);
  if (it == live_.begin()) return false;
  --it;
  // Overflow-safe (untrusted addresses near 2^64 must not wrap into an allocation).
  return addr >= it->first && bytes <= it->second && addr - it->first <= it->second - bytes;
}

static std::map<std::string, AccelDeviceFactory>& registry() {
  static std::map<std::string, AccelDeviceFactory> r;
  return r;
}

void register_accel_backend(const std::string& name, AccelDeviceFactory factory) {
  registry()[name] = std::move(factory);
}

static std::map<std::string, AccelBackendCheck>& checks() {
  static std::map<std::string, AccelBackendCheck> r;
  return r;
}

void register_accel_backend_check(const std::string& name, AccelBackendCheck check) {
  checks()[name] = std::move(check);
}

static void require_backend(const std::string& name) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (auto& [n, f] : registry()) known += (known.empty() ? "" : ", ") + n;
    LOOM_THROW(
        DeviceError, "no accelerator backend named '", name, "' (available: ", known.empty() ? "none" : known, ")",
        known.empty() ? "; a program gets the simulators by linking Loom::sim (CMake target loom_sim), or by calling "
                        "loom::sim::register_backends() (loom/sim/backends.h) where it links the library another way"
                      : "; a remote device is rpc://HOST:PORT/BACKEND");
  }
}

void check_accel_backend(const std::string& name, const std::string& config_json) {
  if (rpc::is_url(name)) return;
  require_backend(name);
  if (auto it = checks().find(name); it != checks().end()) it->second(config_json);
}

std::unique_ptr<AccelDevice> make_accel_device(const std::string& name, const std::string& config_json) {
  if (rpc::is_url(name)) return rpc::make_rpc_device(name, config_json);
  require_backend(name);
  return registry().at(name)(config_json);
}

std::vector<std::string> accel_backends() {
  std::vector<std::string> out;
  for (auto& [n, f] : registry()) out.push_back(n);
  return out;
}

void check_backend_section(const std::string& name, const std::string& origin) {
  const std::vector<std::string> known = accel_backends();
  if (std::find(known.begin(), known.end(), name) != known.end()) return;
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  LOOM_THROW(ConfigError, "accelerator config ", origin, ": section '", name, "' names no backend of this build (",
             list, ")");
}

}  // namespace loom
