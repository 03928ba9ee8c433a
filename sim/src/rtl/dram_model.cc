#include "dram_model.h"

#include <algorithm>
#include <cstring>

namespace loom::sim::rtl {

DramModel::DramModel(uint64_t base, uint64_t bytes, int bus_bytes, uint32_t latency, double bytes_per_cycle)
    : base_(base), mem_(new uint8_t[bytes]), allocator_(base, bytes), bus_(bus_bytes), latency_(latency), bytes_per_cycle_(bytes_per_cycle) {}

void DramModel::drive(Inputs& in) const {
  in.m_arready = reads_.size() < kMaxQueued;
  in.m_awready = writes_.size() < kMaxQueued;
  const bool beat_credit = credit_ >= bus_;
  in.m_rvalid = false;
  if (!reads_.empty() && reads_.front().ready_at <= now_ && beat_credit) {
    const Burst& b = reads_.front();
    in.m_rvalid = true;
    in.m_rid = b.id;
    in.m_rlast = b.done + 1 == b.beats;
    in.m_rresp = b.ok ? 0 : 3;  // OKAY or DECERR
    in.m_rdata.fill(0);
    if (b.ok) std::memcpy(in.m_rdata.data(), mem_.get() + (b.addr + uint64_t(b.done) * bus_ - base_), bus_);
  }
  in.m_wready = !writes_.empty() && beat_credit;
  in.m_bvalid = !responses_.empty() && responses_.front().ready_at <= now_;
  in.m_bresp = in.m_bvalid && !responses_.front().ok ? 3 : 0;
}

void DramModel::update(const Inputs& in, const Outputs& out) {
  if (out.m_arvalid && in.m_arready) {
    Burst b{out.m_araddr, out.m_arlen + 1};
    b.id = out.m_arid;
    b.ready_at = now_ + latency_;
    b.ok = in_range(b.addr, uint64_t(b.beats) * bus_);
    reads_.push_back(b);
  }
  if (in.m_rvalid && out.m_rready) {
    credit_ -= bus_;
    if (++reads_.front().done == reads_.front().beats) reads_.pop_front();
  }
  if (out.m_awvalid && in.m_awready) {
    Burst b{out.m_awaddr, out.m_awlen + 1};
    b.ok = in_range(b.addr, uint64_t(b.beats) * bus_);
    writes_.push_back(b);
  }
  if (out.m_wvalid && in.m_wready) {
    credit_ -= bus_;
    Burst& b = writes_.front();
    if (b.ok) std::memcpy(mem_.get() + (b.addr + uint64_t(b.done) * bus_ - base_), out.m_wdata.data(), bus_);
    if (++b.done == b.beats || out.m_wlast) {
      b.ok = b.ok && b.done == b.beats && out.m_wlast;  // WLAST must mark the burst's last beat
      b.ready_at = now_ + latency_;
      responses_.push_back(b);
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
}

}  // namespace loom::sim::rtl
