// DRAM on the accelerator's AXI4 master port: a byte array behind an allocator, answering read
// bursts `latency` cycles after the request and write bursts `latency` cycles after their last
// beat, with beats limited by a shared bandwidth budget (bytes per cycle). Bursts that touch
// memory outside one live allocation answer DECERR (and are not performed).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>

#include "loom/runtime/accel_device.h"
#include "rtl_model.h"

namespace loom::sim::rtl {

class DramModel {
 public:
  DramModel(uint64_t base, uint64_t bytes, int bus_bytes, uint32_t latency, double bytes_per_cycle);
  DeviceMemoryAllocator& allocator() { return allocator_; }
  uint8_t* host_ptr(uint64_t addr) { return mem_.get() + (addr - base_); }

  void drive(Inputs& in) const;                         // responses shown to the RTL this cycle
  void update(const Inputs& in, const Outputs& out);    // handshakes of this cycle, then one cycle passes
  void clear();                                         // drops every transaction in flight (accelerator reset)

 private:
  struct Burst {
    uint64_t addr;
    uint32_t beats, done = 0, id = 0;
    uint64_t ready_at = 0;  // cycle from which it may be served
    bool ok = true;
  };
  bool in_range(uint64_t addr, uint64_t bytes) const { return allocator_.contains(addr, bytes); }

  uint64_t base_;
  std::unique_ptr<uint8_t[]> mem_;
  DeviceMemoryAllocator allocator_;
  int bus_;
  uint32_t latency_;
  double bytes_per_cycle_, credit_ = 0;
  uint64_t now_ = 0;
  std::deque<Burst> reads_, writes_, responses_;  // responses_: write bursts waiting for B
  static constexpr size_t kMaxQueued = 16;
};

}  // namespace loom::sim::rtl
