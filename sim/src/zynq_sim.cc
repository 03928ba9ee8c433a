// A simulator standing in for a Zynq board (backends "zynq-fsim", "zynq-rtl"): the DMA region is
// a block of the simulator's memory, and the CPU's view of it a separate copy that only syncs
// reconcile, as the board's caches do. Where the board would silently compute with stale data,
// this one stops: START while the CPU has written bytes it has not synced for the device, or a
// CPU read of bytes the accelerator changed since it last ran that were not synced for the CPU,
// is a DeviceError naming the address.
#include <cstring>
#include <map>
#include <vector>

#include "loom/runtime/error.h"
#include "loom/sim/board.h"
#include "zynq_platform.h"

namespace loom::sim {

namespace {

// Disjoint half-open byte ranges, merged as they are added.
class Ranges {
 public:
  void add(uint64_t lo, uint64_t hi) {
    if (lo >= hi) return;
    auto it = r_.upper_bound(lo);
    if (it != r_.begin() && std::prev(it)->second >= lo) {
      --it;
      lo = it->first;
      hi = std::max(hi, it->second);
      it = r_.erase(it);
    }
    while (it != r_.end() && it->first <= hi) {
      hi = std::max(hi, it->second);
      it = r_.erase(it);
    }
    r_[lo] = hi;
  }
  void remove(uint64_t lo, uint64_t hi) {
    std::vector<std::pair<uint64_t, uint64_t>> keep;
    for (auto it = r_.begin(); it != r_.end();) {
      if (it->second <= lo || it->first >= hi) {
        ++it;
        continue;
      }
      if (it->first < lo) keep.push_back({it->first, lo});
      if (it->second > hi) keep.push_back({hi, it->second});
      it = r_.erase(it);
    }
    for (auto& [a, b] : keep) r_[a] = b;
  }
  // The parts of [lo, hi) not covered.
  std::vector<std::pair<uint64_t, uint64_t>> gaps(uint64_t lo, uint64_t hi) const {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    uint64_t at = lo;
    auto it = r_.upper_bound(lo);
    if (it != r_.begin()) --it;
    for (; it != r_.end() && it->first < hi; ++it) {
      if (it->second <= at) continue;
      if (it->first > at) out.push_back({at, it->first});
      at = std::max(at, it->second);
    }
    if (at < hi) out.push_back({at, hi});
    return out;
  }
  const std::map<uint64_t, uint64_t>& all() const { return r_; }
  void clear() { r_.clear(); }

 private:
  std::map<uint64_t, uint64_t> r_;
};

class SimZynqPlatform : public ZynqPlatform {
 public:
  SimZynqPlatform(const std::string& inner, const std::string& config_json)
      : name_("zynq-" + inner), dev_(make_accel_device(inner, without_zynq_fields(config_json))) {
    const ZynqFields f = read_zynq_fields(config_json);
    base_ = dev_->alloc(f.dma_bytes, 4096);
    cpu_.assign(f.dma_bytes, 0xa5);  // the CPU's view starts unrelated to memory
  }
  std::string name() const override { return name_; }
  void write_register(uint32_t offset, uint32_t value) override {
    if (offset == reg::kControl && (value & reg::kStart)) {
      // What the CPU wrote and did not sync is still in its cache: the accelerator would read
      // the old bytes.
      for (const auto& [lo, hi] : unsynced_writes_.all()) {
        if (uint64_t at = first_difference(lo, hi); at != hi)
          LOOM_THROW(DeviceError, name_, ": START while the CPU's write of 0x", std::hex, base_ + at, std::dec, " (",
                     hi - lo, " bytes from 0x", std::hex, base_ + lo, std::dec,
                     ") is not synced for the device: the accelerator would read stale memory");
      }
      cpu_fresh_.clear();  // the accelerator may write anywhere in the region now
    }
    dev_->write_reg(offset, value);
  }
  uint32_t read_register(uint32_t offset) override { return dev_->read_reg(offset); }
  uint64_t dma_address() const override { return base_; }
  uint64_t dma_bytes() const override { return cpu_.size(); }
  void cpu_write(uint64_t offset, const void* src, uint64_t bytes) override {
    std::memcpy(cpu_.data() + offset, src, bytes);
    unsynced_writes_.add(offset, offset + bytes);
    cpu_fresh_.add(offset, offset + bytes);
  }
  void cpu_read(uint64_t offset, void* dst, uint64_t bytes) override {
    for (const auto& [lo, hi] : cpu_fresh_.gaps(offset, offset + bytes))
      if (uint64_t at = first_difference(lo, hi); at != hi)
        LOOM_THROW(DeviceError, name_, ": the CPU reads 0x", std::hex, base_ + at, std::dec,
                   ", which the accelerator changed and which was not synced for the CPU: it would read stale "
                   "cache contents");
    std::memcpy(dst, cpu_.data() + offset, bytes);
  }
  void sync_for_device(uint64_t offset, uint64_t bytes) override {
    dev_->write(base_ + offset, cpu_.data() + offset, bytes);
    unsynced_writes_.remove(offset, offset + bytes);
    cpu_fresh_.add(offset, offset + bytes);
  }
  void sync_for_cpu(uint64_t offset, uint64_t bytes) override {
    dev_->read(base_ + offset, cpu_.data() + offset, bytes);
    unsynced_writes_.remove(offset, offset + bytes);  // the cache lines were invalidated
    cpu_fresh_.add(offset, offset + bytes);
  }

 private:
  // The first offset in [lo, hi) where the CPU's view and memory differ (hi: none).
  uint64_t first_difference(uint64_t lo, uint64_t hi) {
    std::vector<uint8_t> mem(hi - lo);
    dev_->read(base_ + lo, mem.data(), mem.size());
    for (uint64_t i = 0; i < mem.size(); ++i)
      if (mem[i] != cpu_[lo + i]) return lo + i;
    return hi;
  }

  std::string name_;
  std::shared_ptr<AccelDevice> dev_;
  uint64_t base_ = 0;
  std::vector<uint8_t> cpu_;
  Ranges unsynced_writes_;  // written by the CPU, not yet synced for the device
  Ranges cpu_fresh_;        // what the CPU's view holds correctly since the accelerator last started
};

}  // namespace

std::unique_ptr<ZynqPlatform> make_sim_zynq_platform(const std::string& inner, const std::string& config_json) {
  return std::make_unique<SimZynqPlatform>(inner, config_json);
}

}  // namespace loom::sim
