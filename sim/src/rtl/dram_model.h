// DRAM on the accelerator's AXI4 master port: a byte array behind an allocator, answering read
// bursts `latency` cycles after the request and write bursts `latency` cycles after their last
// beat, with beats limited by a shared bandwidth budget (bytes per cycle). Bursts that touch
// memory outside one live allocation answer DECERR (and are not performed); each is recorded.
// Optionally it holds its READYs low at random (back-pressure).
//
// It is also a checker of the AXI4 rules the RTL (the master) must obey, every cycle:
//   * handshake: once ARVALID / AWVALID / WVALID is high without READY, it stays high and the
//     channel's payload (address, length, size, burst, ID; data, strobes, last) stays unchanged
//     until the handshake;
//   * bursts: INCR only, full-width beats (AxSIZE = the bus width), AxLEN + 1 <= 256, a start
//     address aligned to the beat, and never across a 4 KiB boundary;
//   * write data: WLAST exactly on the last beat of its burst, every write strobe set;
//   * outstanding transactions: at most `limits.reads_per_id[id]` read bursts per ARID and
//     `limits.writes` write bursts without a response.
// The first violation is kept (with the rule, the channel and the cycle) until clear(); the
// simulator ends the run with it.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/accel_device.h"
#include "rtl_model.h"

namespace loom::sim::rtl {

struct AxiLimits {
  std::vector<uint32_t> reads_per_id;  // read bursts in flight per ARID (IDs past the end are not used)
  uint32_t writes = 0;                 // write bursts without a write response
};

// Where whole bursts go instead of the model's own array and fixed latency: a memory beyond the
// AXI4 port (the SystemC platform's TLM-2.0 target). A read burst's data is taken when its request
// is accepted, a write burst's when its last beat is; each call answers the cycles until the first
// read beat may go (the write response may be sent).
class MemoryPort {
 public:
  virtual ~MemoryPort() = default;
  virtual uint32_t read_burst(uint64_t addr, uint8_t* dst, uint32_t bytes) = 0;
  virtual uint32_t write_burst(uint64_t addr, const uint8_t* src, uint32_t bytes) = 0;
};

// A burst that touched memory outside every allocation (answered DECERR).
struct DecodeError {
  bool write;
  uint64_t addr;
  uint32_t beats;
  uint64_t cycle;
  std::string describe(int bus_bytes) const;
};

class DramModel {
 public:
  // stall_rate: fraction of cycles in which ARREADY, AWREADY and WREADY are held low (each
  // channel on its own; reproducible pseudo-random back-pressure).
  DramModel(uint64_t base, uint64_t bytes, int bus_bytes, uint32_t latency, double bytes_per_cycle, AxiLimits limits,
            double stall_rate = 0);
  DeviceMemoryAllocator& allocator() { return allocator_; }
  uint8_t* host_ptr(uint64_t addr) { return mem_.get() + (addr - base_); }

  void drive(Inputs& in) const;                       // responses shown to the RTL this cycle
  void update(const Inputs& in, const Outputs& out);  // handshakes of this cycle, then one cycle passes
  void clear();  // drops every transaction in flight (accelerator reset) and the checker's state

  // The first AXI4 rule the master broke since clear(), e.g. "AXI4 protocol violation at cycle
  // 812 on the write data channel (W): WLAST on beat 2 of a 4-beat burst"; empty if none.
  const std::string& violation() const { return violation_; }
  // Bursts answered DECERR since clear() or clear_decode_errors().
  const std::vector<DecodeError>& decode_errors() const { return decode_errors_; }
  void clear_decode_errors() { decode_errors_.clear(); }
  int bus_bytes() const { return bus_; }
  // Bursts go to `port` (not owned; nullptr: the model's array and fixed latency). Set it before
  // traffic, or right after clear().
  void set_port(MemoryPort* port) { port_ = port; }

 private:
  struct Burst {
    uint64_t addr;
    uint32_t beats, done = 0, id = 0;
    uint64_t ready_at = 0;  // cycle from which it may be served
    bool ok = true;
    std::vector<uint8_t> data;  // with a port: the read burst's data, or the write burst's so far
  };
  bool in_range(uint64_t addr, uint64_t bytes) const { return allocator_.contains(addr, bytes); }
  bool stalled(int channel) const;  // this cycle's back-pressure on channel 0 (AR), 1 (AW) or 2 (W)
  void check(const Inputs& in, const Outputs& out);
  void check_burst(const char* channel, char x, uint64_t addr, uint32_t len, uint32_t size, uint32_t burst);
  template <typename... Args>
  void violate(const char* channel, const Args&... what);

  uint64_t base_;
  MemoryPort* port_ = nullptr;
  std::unique_ptr<uint8_t[]> mem_;
  DeviceMemoryAllocator allocator_;
  int bus_;
  uint32_t latency_;
  double bytes_per_cycle_, credit_ = 0;
  uint64_t stall_threshold_ = 0;  // a cycle's hash below it stalls the channel
  AxiLimits limits_;
  uint64_t now_ = 0;
  std::deque<Burst> reads_, writes_, responses_;  // responses_: write bursts waiting for B
  static constexpr size_t kMaxQueued = 16;

  // checker state: the previous cycle's ports (valid while have_prev_)
  bool have_prev_ = false;
  Inputs prev_in_;
  Outputs prev_out_;
  std::string violation_;
  std::vector<DecodeError> decode_errors_;
};

}  // namespace loom::sim::rtl
