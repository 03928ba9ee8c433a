// Adapter from a Verilated `loom_accel` class (one per config) to rtl::Model. Included only by
// the generated per-config translation units (rtl_model.cc.in).
#pragma once
#include <verilated.h>
#include <verilated_cov.h>
#include <verilated_fst_c.h>
#include "verilated_hooks.h"  // first: it adjusts the Verilator runtime's hooks

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "rtl_model.h"

namespace loom::sim::rtl {

// Copies between byte arrays and Verilator signals of any width (CData/SData/IData/QData or
// VlWide words), little-endian.
template <typename Sig>
void load_bytes(Sig& sig, const std::array<uint8_t, kMaxBusBytes>& bytes) {
  if constexpr (std::is_integral_v<Sig>) {
    Sig v = 0;
    std::memcpy(&v, bytes.data(), sizeof(Sig));
    sig = v;
  } else {
    std::memcpy(sig.data(), bytes.data(), sizeof(sig.m_storage));
  }
}
template <typename Sig>
void store_bytes(const Sig& sig, std::array<uint8_t, kMaxBusBytes>& bytes) {
  if constexpr (std::is_integral_v<Sig>) {
    std::memcpy(bytes.data(), &sig, sizeof(Sig));
  } else {
    std::memcpy(bytes.data(), sig.data(), sizeof(sig.m_storage));
  }
}

// Copies a Verilated unpacked array of entries (integers or VlWide) into bytes.
template <typename Array>
void copy_entries(const Array& a, size_t entry_bytes, std::vector<uint8_t>& bytes) {
  constexpr size_t depth = sizeof(a.m_storage) / sizeof(a.m_storage[0]);
  bytes.resize(depth * entry_bytes);
  for (size_t e = 0; e < depth; ++e) {
    const auto& v = a.m_storage[e];
    if constexpr (std::is_integral_v<std::decay_t<decltype(v)>>)
      std::memcpy(bytes.data() + e * entry_bytes, &v, std::min(entry_bytes, sizeof(v)));
    else
      std::memcpy(bytes.data() + e * entry_bytes, v.data(), std::min(entry_bytes, sizeof(v.m_storage)));
  }
}

template <typename V>
class ModelImpl final : public Model {
 public:
  // Verilator registers a model's scopes (for %m in assertion messages) with the thread's current
  // context, not the model's: make it this model's while constructing and destroying it, as
  // several models (and their contexts) come and go on one thread.
  ModelImpl() : ctx_(new VerilatedContext) {
    Verilated::threadContextp(ctx_.get());
    top_.reset(new V(ctx_.get(), "loom_accel"));
    ctx_->traceEverOn(true);
    top_->clk = 0;
  }
  ~ModelImpl() override {
    Verilated::threadContextp(ctx_.get());
    close_trace();
    top_->final();
    top_.reset();
    ctx_.reset();
    Verilated::threadContextp(Verilated::defaultContextp());  // not the deleted one
  }

  void eval_low(const Inputs& in, Outputs& out) override {
    V& t = *top_;
    t.rst_n = in.rst_n;
    t.s_axil_awvalid = in.awvalid;
    t.s_axil_awaddr = in.awaddr;
    t.s_axil_wvalid = in.wvalid;
    t.s_axil_wdata = in.wdata;
    t.s_axil_wstrb = 0xf;
    t.s_axil_bready = in.bready;
    t.s_axil_arvalid = in.arvalid;
    t.s_axil_araddr = in.araddr;
    t.s_axil_rready = in.rready;
    t.m_axi_arready = in.m_arready;
    t.m_axi_rvalid = in.m_rvalid;
    load_bytes(t.m_axi_rdata, in.m_rdata);
    t.m_axi_rresp = in.m_rresp;
    t.m_axi_rlast = in.m_rlast;
    t.m_axi_rid = in.m_rid;
    t.m_axi_awready = in.m_awready;
    t.m_axi_wready = in.m_wready;
    t.m_axi_bvalid = in.m_bvalid;
    t.m_axi_bresp = in.m_bresp;
    t.m_axi_bid = 0;
    t.eval();
    note_failure();
    out.irq = t.irq;
    out.interrupt = t.ap_interrupt;
    out.awready = t.s_axil_awready;
    out.wready = t.s_axil_wready;
    out.bvalid = t.s_axil_bvalid;
    out.bresp = t.s_axil_bresp;
    out.arready = t.s_axil_arready;
    out.rvalid = t.s_axil_rvalid;
    out.rdata = t.s_axil_rdata;
    out.rresp = t.s_axil_rresp;
    out.m_arvalid = t.m_axi_arvalid;
    out.m_araddr = t.m_axi_araddr;
    out.m_arlen = t.m_axi_arlen;
    out.m_arid = t.m_axi_arid;
    out.m_arsize = t.m_axi_arsize;
    out.m_arburst = t.m_axi_arburst;
    out.m_rready = t.m_axi_rready;
    out.m_awvalid = t.m_axi_awvalid;
    out.m_awaddr = t.m_axi_awaddr;
    out.m_awlen = t.m_axi_awlen;
    out.m_awid = t.m_axi_awid;
    out.m_awsize = t.m_axi_awsize;
    out.m_awburst = t.m_axi_awburst;
    out.m_wstrb = uint32_t(t.m_axi_wstrb);
    out.m_wvalid = t.m_axi_wvalid;
    store_bytes(t.m_axi_wdata, out.m_wdata);
    out.m_wlast = t.m_axi_wlast;
    out.m_bready = t.m_axi_bready;
  }

  void probe(Probes& p) const override {
    const auto* r = top_->rootp;
    p[0] = {bool(r->loom_accel__DOT__ld_busy), bool(r->loom_accel__DOT__ld_stalled), r->loom_accel__DOT__ld_wait};
    p[1] = {bool(r->loom_accel__DOT__cp_busy), bool(r->loom_accel__DOT__cp_stalled), r->loom_accel__DOT__cp_wait};
    p[2] = {bool(r->loom_accel__DOT__st_busy), bool(r->loom_accel__DOT__st_stalled), r->loom_accel__DOT__st_wait};
  }

  std::array<uint32_t, 4> tokens() const override {
    const auto* r = top_->rootp;
    return {r->loom_accel__DOT__tok_l2c__DOT__count_q, r->loom_accel__DOT__tok_c2l__DOT__count_q,
            r->loom_accel__DOT__tok_c2s__DOT__count_q, r->loom_accel__DOT__tok_s2c__DOT__count_q};
  }
  void read_scratchpad(accel::MemType m, size_t entry_bytes, std::vector<uint8_t>& bytes) const override {
    const auto* r = top_->rootp;
    switch (m) {
      case accel::MemType::Inp:
        return copy_entries(r->loom_accel__DOT__inp_sram__DOT__mem_q, entry_bytes, bytes);
      case accel::MemType::Wgt:
        return copy_entries(r->loom_accel__DOT__wgt_sram__DOT__mem_q, entry_bytes, bytes);
      case accel::MemType::Out:
        return copy_entries(r->loom_accel__DOT__out_sram__DOT__mem_q, entry_bytes, bytes);
      case accel::MemType::Acc:
        return copy_entries(r->loom_accel__DOT__compute__DOT__acc_sram__DOT__mem_q, entry_bytes, bytes);
      case accel::MemType::Uop:
        return copy_entries(r->loom_accel__DOT__compute__DOT__uop_sram__DOT__mem_q, entry_bytes, bytes);
    }
  }

  void posedge() override {
    top_->clk = 1;
    top_->eval();
    note_failure();
    if (tracing_) trace_->dump(trace_time_ + 1);  // this cycle was dumped: dump its high phase too
    tracing_ = false;
    top_->clk = 0;
  }

  bool failed() const override { return !failure_.empty(); }
  std::string failure() const override { return failure_; }
  void clear_failure() override { failure_.clear(); }

  void open_trace(const std::string& path) override {
    if (trace_) return;
    trace_ = std::make_unique<VerilatedFstC>();
    top_->trace(trace_.get(), 99);
    trace_->open(path.c_str());
  }
  void dump(uint64_t time) override {  // after eval_low, before posedge
    tracing_ = trace_ != nullptr;
    trace_time_ = time;
    if (tracing_) trace_->dump(time);
  }
  void close_trace() override {
    if (trace_) trace_->close();
    trace_.reset();
    tracing_ = false;
  }
  void write_coverage(const std::string& path) override {
    ctx_->coveragep()->forcePerInstance(true);  // each FIFO's cover points its own
    ctx_->coveragep()->write(path.c_str());
  }

 private:
  void note_failure() {
    if (!rtl_stop_pending()) return;
    std::string s = take_rtl_stop();
    if (failure_.empty()) failure_ = s;
  }

  std::string failure_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<V> top_;
  std::unique_ptr<VerilatedFstC> trace_;
  bool tracing_ = false;
  uint64_t trace_time_ = 0;
};

}  // namespace loom::sim::rtl
