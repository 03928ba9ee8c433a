#include "dram_model.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "loom/runtime/hex.h"

namespace loom::sim::rtl {

std::string DecodeError::describe(int bus_bytes) const {
  std::ostringstream os;
  os << "AXI4 " << (write ? "write" : "read") << " burst at " << hex(addr) << " (" << beats << " beats of " << bus_bytes
     << " bytes) at cycle " << cycle << " reaches memory outside every allocation: answered DECERR";
  return os.str();
}

DramModel::DramModel(uint64_t base, uint64_t bytes, int bus_bytes, uint32_t latency, double bytes_per_cycle,
                     AxiLimits limits, double stall_rate)
    : base_(base),
      mem_(new uint8_t[bytes]),
      allocator_(base, bytes),
      bus_(bus_bytes),
      latency_(latency),
      bytes_per_cycle_(bytes_per_cycle),
      stall_threshold_(uint64_t(std::clamp(stall_rate, 0.0, 1.0) * 18446744073709551615.0)),
      limits_(std::move(limits)) {}

bool DramModel::stalled(int channel) const {
  if (!stall_threshold_) return false;
  uint64_t x = now_ * 3 + uint64_t(channel) + 0x9e3779b97f4a7c15ull;  // splitmix64 of (cycle, channel)
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return (x ^ (x >> 31)) < stall_threshold_;
}

void DramModel::drive(Inputs& in) const {
  in.m_arready = reads_.size() < kMaxQueued && !stalled(0);
  in.m_awready = writes_.size() < kMaxQueued && !stalled(1);
  const bool beat_credit = credit_ >= bus_;
  in.m_rvalid = false;
  if (!reads_.empty() && reads_.front().ready_at <= now_ && beat_credit) {
    const Burst& b = reads_.front();
    in.m_rvalid = true;
    in.m_rid = b.id;
    in.m_rlast = b.done + 1 == b.beats;
    in.m_rresp = b.ok ? 0 : 3;  // OKAY or DECERR
    in.m_rdata.fill(0);
    if (b.ok)
      std::memcpy(
          in.m_rdata.data(),
          port_ ? b.data.data() + uint64_t(b.done) * bus_ : mem_.get() + (b.addr + uint64_t(b.done) * bus_ - base_),
          bus_);
  }
  in.m_wready = !writes_.empty() && beat_credit && !stalled(2);
  in.m_bvalid = !responses_.empty() && responses_.front().ready_at <= now_;
  in.m_bresp = in.m_bvalid && !responses_.front().ok ? 3 : 0;
}

template <typename... Args>
void DramModel::violate(const char* channel, const Args&... what) {
  if (!violation_.empty()) return;  // keep the first
  std::ostringstream os;
  os << "AXI4 protocol violation at cycle " << now_ << " on the " << channel << ": ";
  (os << ... << what);
  violation_ = os.str();
}

// The rules every burst request obeys; `x` is 'R' or 'W' for the signal names (ARLEN / AWLEN).
void DramModel::check_burst(const char* channel, char x, uint64_t addr, uint32_t len, uint32_t size, uint32_t burst) {
  const std::string a = std::string("A") + x;
  int bus_shift = 0;
  while ((1 << bus_shift) < bus_) ++bus_shift;
  if (burst != 1) violate(channel, "burst type: ", a, "BURST = ", burst, ", this memory serves only INCR (1) bursts");
  if (size != uint32_t(bus_shift))
    violate(channel, "beat size: ", a, "SIZE = ", size, " (", 1u << std::min(size, 31u), " bytes), the bus is ", bus_,
            " bytes wide (", a, "SIZE = ", bus_shift, ")");
  if (len > 255) violate(channel, "burst length: ", a, "LEN = ", len, " exceeds 255 (256 beats, the INCR limit)");
  if (addr % uint64_t(bus_))
    violate(channel, "unaligned burst: ", a, "ADDR ", hex(addr), " is not aligned to the ", bus_, "-byte beat");
  const uint64_t last = addr + uint64_t(len + 1) * bus_ - 1;
  if ((addr >> 12) != (last >> 12))
    violate(channel, "burst crosses a 4 KiB boundary: ", a, "ADDR ", hex(addr), ", ", a, "LEN ", len, " (", len + 1,
            " beats of ", bus_, " bytes) ends at ", hex(last), ", past ", hex((addr | 0xfff) + 1));
}

void DramModel::check(const Inputs& in, const Outputs& out) {
  if (!in.rst_n) {  // reset: nothing is checked, and nothing carries over
    have_prev_ = false;
    return;
  }
  // Handshake stability: a VALID without READY last cycle must still be there, unchanged.
  if (have_prev_) {
    const Outputs& p = prev_out_;
    if (p.m_arvalid && !prev_in_.m_arready) {
      if (!out.m_arvalid)
        violate("read address channel (AR)",
                "ARVALID dropped before ARREADY (AXI4: VALID stays high until the handshake)");
      else if (out.m_araddr != p.m_araddr || out.m_arlen != p.m_arlen || out.m_arid != p.m_arid ||
               out.m_arsize != p.m_arsize || out.m_arburst != p.m_arburst)
        violate("read address channel (AR)", "payload changed while ARVALID waited for ARREADY: ARADDR ",
                hex(p.m_araddr), " -> ", hex(out.m_araddr), ", ARLEN ", p.m_arlen, " -> ", out.m_arlen, ", ARID ",
                p.m_arid, " -> ", out.m_arid);
    }
    if (p.m_awvalid && !prev_in_.m_awready) {
      if (!out.m_awvalid)
        violate("write address channel (AW)",
                "AWVALID dropped before AWREADY (AXI4: VALID stays high until the handshake)");
      else if (out.m_awaddr != p.m_awaddr || out.m_awlen != p.m_awlen || out.m_awid != p.m_awid ||
               out.m_awsize != p.m_awsize || out.m_awburst != p.m_awburst)
        violate("write address channel (AW)", "payload changed while AWVALID waited for AWREADY: AWADDR ",
                hex(p.m_awaddr), " -> ", hex(out.m_awaddr), ", AWLEN ", p.m_awlen, " -> ", out.m_awlen);
    }
    if (p.m_wvalid && !prev_in_.m_wready) {
      if (!out.m_wvalid)
        violate("write data channel (W)", "WVALID dropped before WREADY (AXI4: VALID stays high until the handshake)");
      else if (out.m_wdata != p.m_wdata || out.m_wlast != p.m_wlast || out.m_wstrb != p.m_wstrb)
        violate("write data channel (W)", "WDATA, WSTRB or WLAST changed while WVALID waited for WREADY");
    }
  }
  have_prev_ = true;
  prev_in_ = in;
  prev_out_ = out;

  if (out.m_arvalid && in.m_arready) {
    check_burst("read address channel (AR)", 'R', out.m_araddr, out.m_arlen, out.m_arsize, out.m_arburst);
    if (out.m_arid >= limits_.reads_per_id.size()) {
      violate("read address channel (AR)", "ARID ", out.m_arid, " is not an ID the accelerator uses (0..",
              limits_.reads_per_id.size() - 1, ")");
    } else {
      size_t in_flight =
          std::count_if(reads_.begin(), reads_.end(), [&](const Burst& b) { return b.id == out.m_arid; });
      if (in_flight + 1 > limits_.reads_per_id[out.m_arid])
        violate("read address channel (AR)", "outstanding reads: burst ", in_flight + 1, " in flight for ARID ",
                out.m_arid, ", the limit is ", limits_.reads_per_id[out.m_arid]);
    }
  }
  if (out.m_awvalid && in.m_awready) {
    check_burst("write address channel (AW)", 'W', out.m_awaddr, out.m_awlen, out.m_awsize, out.m_awburst);
    size_t in_flight = writes_.size() + responses_.size();
    if (in_flight + 1 > limits_.writes)
      violate("write address channel (AW)", "outstanding writes: burst ", in_flight + 1,
              " without a write response, the limit is ", limits_.writes);
  }
  if (out.m_wvalid && in.m_wready) {
    const Burst& b = writes_.front();  // the model raises WREADY only with a burst to fill
    const uint32_t beat = b.done + 1;
    if (out.m_wlast && beat != b.beats)
      violate("write data channel (W)", "WLAST on beat ", beat, " of a ", b.beats, "-beat burst");
    if (!out.m_wlast && beat == b.beats)
      violate("write data channel (W)", "WLAST missing on the last beat (", beat, " of ", b.beats, ")");
    const uint32_t all = bus_ >= 32 ? ~0u : (1u << bus_) - 1;
    if ((out.m_wstrb & all) != all)
      violate("write data channel (W)", "partial write strobes: WSTRB ", hex(out.m_wstrb), " on beat ", beat,
              " (this memory writes whole beats)");
  }
}

void DramModel::update(const Inputs& in, const Outputs& out) {
  check(in, out);
  if (out.m_arvalid && in.m_arready) {
    Burst b{out.m_araddr, out.m_arlen + 1};
    b.id = out.m_arid;
    b.ready_at = now_ + latency_;
    b.ok = in_range(b.addr, uint64_t(b.beats) * bus_);
    if (!b.ok) decode_errors_.push_back({false, b.addr, b.beats, now_});
    if (port_ && b.ok) {
      b.data.resize(uint64_t(b.beats) * bus_);
      b.ready_at = now_ + port_->read_burst(b.addr, b.data.data(), uint32_t(b.data.size()));
    }
    reads_.push_back(std::move(b));
  }
  if (in.m_rvalid && out.m_rready) {
    credit_ -= bus_;
    if (++reads_.front().done == reads_.front().beats) reads_.pop_front();
  }
  if (out.m_awvalid && in.m_awready) {
    Burst b{out.m_awaddr, out.m_awlen + 1};
    b.id = out.m_awid;
    b.ok = in_range(b.addr, uint64_t(b.beats) * bus_);
    if (!b.ok) decode_errors_.push_back({true, b.addr, b.beats, now_});
    writes_.push_back(b);
  }
  if (out.m_wvalid && in.m_wready) {
    credit_ -= bus_;
    Burst& b = writes_.front();
    if (b.ok && port_)
      b.data.insert(b.data.end(), out.m_wdata.begin(), out.m_wdata.begin() + bus_);
    else if (b.ok)
      std::memcpy(mem_.get() + (b.addr + uint64_t(b.done) * bus_ - base_), out.m_wdata.data(), bus_);
    if (++b.done == b.beats || out.m_wlast) {
      b.ok = b.ok && b.done == b.beats && out.m_wlast;  // WLAST must mark the burst's last beat
      b.ready_at = now_ + latency_;
      if (port_ && b.ok) b.ready_at = now_ + port_->write_burst(b.addr, b.data.data(), uint32_t(b.data.size()));
      b.data = {};
      responses_.push_back(std::move(b));
      writes_.pop_front();
    }
  }
  if (in.m_bvalid && out.m_bready) responses_.pop_front();
  // Unused budget does not accumulate beyond one burst's worth: bandwidth is a rate, not a bank.
  credit_ = std::min(credit_ + bytes_per_cycle_, std::max(bytes_per_cycle_, double(bus_)) * 4);
  ++now_;
}

void DramModel::clear() {
  reads_.clear();
  writes_.clear();
  responses_.clear();
  have_prev_ = false;
  violation_.clear();
  decode_errors_.clear();
}

}  // namespace loom::sim::rtl
