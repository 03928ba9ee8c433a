// The AXI4 checker in the RTL backend's DRAM model, driven by a hand-written master: every rule it
// enforces is broken once, and the violation must name the rule, the channel and the cycle. (The
// RTL itself obeys them: every RTL test runs under the checker, and DmaRowsAcross4KiBBoundaries
// in the shared table puts DMA rows across 4 KiB boundaries.)
#include <gtest/gtest.h>

#include <functional>

#include "rtl/dram_model.h"

namespace loom::sim::rtl {
namespace {

constexpr uint64_t kBase = 0x10000000;

// A 16-byte bus, responses 1000 cycles late (nothing completes unless a test waits for it).
struct Bench {
  explicit Bench(AxiLimits limits = {{4, 4}, 2}, uint32_t latency = 1000)
      : dram(kBase, 1 << 20, 16, latency, 16, std::move(limits)) {
    dram.allocator().alloc_at(kBase, 64 * 1024, "test");
    in.rst_n = true;
  }
  // One cycle: the model drives its READYs/responses, `set` drives the master's outputs (which
  // persist from the previous cycle unless changed), then the handshakes happen.
  void cycle(const std::function<void(Outputs&)>& set = {}) {
    dram.drive(in);
    if (set) set(out);
    dram.update(in, out);
  }
  static void read(Outputs& o, uint64_t addr, uint32_t len, uint32_t id = 0) {
    o.m_arvalid = true;
    o.m_araddr = addr;
    o.m_arlen = len;
    o.m_arid = id;
    o.m_arsize = 4;
    o.m_arburst = 1;
  }
  static void write(Outputs& o, uint64_t addr, uint32_t len) {
    o.m_awvalid = true;
    o.m_awaddr = addr;
    o.m_awlen = len;
    o.m_awsize = 4;
    o.m_awburst = 1;
  }
  static void beat(Outputs& o, bool last, uint8_t fill = 0) {
    o.m_wvalid = true;
    o.m_wlast = last;
    o.m_wstrb = 0xffff;
    o.m_wdata.fill(fill);
  }
  // The violation, checked for the words every message must have.
  std::string violation(const std::string& rule, const std::string& channel, uint64_t cycle) const {
    const std::string& v = dram.violation();
    EXPECT_NE(v.find(rule), std::string::npos) << v;
    EXPECT_NE(v.find(channel), std::string::npos) << v;
    EXPECT_NE(v.find("at cycle " + std::to_string(cycle) + " "), std::string::npos) << v;
    return v;
  }
  DramModel dram;
  Inputs in;
  Outputs out;
};

TEST(AxiChecker, LegalTrafficPassesAndIsServed) {
  Bench b({{4, 4}, 2}, 2);
  b.cycle([](Outputs& o) { Bench::write(o, kBase + 4096 - 32, 1); });  // two beats, ends right at the boundary
  b.cycle([](Outputs& o) {
    o.m_awvalid = false;
    Bench::beat(o, false, 0x11);
  });
  b.cycle([](Outputs& o) { Bench::beat(o, true, 0x22); });
  b.cycle([](Outputs& o) {
    o.m_wvalid = false;
    o.m_bready = true;
    Bench::read(o, kBase + 4096 - 32, 1, 1);
  });
  b.cycle([](Outputs& o) {
    o.m_arvalid = false;
    o.m_rready = true;
  });
  for (int k = 0; k < 10; ++k) b.cycle();
  EXPECT_EQ(b.dram.violation(), "");
  EXPECT_EQ(b.dram.host_ptr(kBase + 4096 - 32)[0], 0x11);
  EXPECT_EQ(b.dram.host_ptr(kBase + 4096 - 1)[0], 0x22);
  EXPECT_TRUE(b.dram.decode_errors().empty());
}

TEST(AxiChecker, BurstAcross4KiB) {
  Bench b;
  b.cycle();
  b.cycle([](Outputs& o) { Bench::read(o, kBase + 4096 - 48, 3); });
  std::string v = b.violation("burst crosses a 4 KiB boundary", "read address channel (AR)", 1);
  EXPECT_NE(v.find("ARADDR 0x10000fd0, ARLEN 3 (4 beats of 16 bytes) ends at 0x1000100f"), std::string::npos) << v;
  Bench w;
  w.cycle([](Outputs& o) { Bench::write(o, kBase + 3 * 4096 - 16, 1); });
  w.violation("burst crosses a 4 KiB boundary", "write address channel (AW)", 0);
}

TEST(AxiChecker, BurstShape) {
  Bench len;
  len.cycle([](Outputs& o) { Bench::read(o, kBase, 256); });
  len.violation("burst length: ARLEN = 256 exceeds 255", "(AR)", 0);
  Bench type;
  type.cycle([](Outputs& o) {
    Bench::write(o, kBase, 3);
    o.m_awburst = 2;  // WRAP
  });
  type.violation("burst type: AWBURST = 2", "(AW)", 0);
  Bench size;
  size.cycle([](Outputs& o) {
    Bench::read(o, kBase, 3);
    o.m_arsize = 3;
  });
  size.violation("beat size: ARSIZE = 3 (8 bytes), the bus is 16 bytes wide", "(AR)", 0);
  Bench align;
  align.cycle([](Outputs& o) { Bench::read(o, kBase + 8, 0); });
  align.violation("unaligned burst: ARADDR 0x10000008", "(AR)", 0);
}

TEST(AxiChecker, WlastExactlyOnTheLastBeatAndFullStrobes) {
  Bench early;
  early.cycle([](Outputs& o) { Bench::write(o, kBase, 3); });
  early.cycle([](Outputs& o) {
    o.m_awvalid = false;
    Bench::beat(o, false);
  });
  early.cycle([](Outputs& o) { Bench::beat(o, true); });
  early.violation("WLAST on beat 2 of a 4-beat burst", "write data channel (W)", 2);
  Bench missing;
  missing.cycle([](Outputs& o) { Bench::write(o, kBase, 1); });
  missing.cycle([](Outputs& o) {
    o.m_awvalid = false;
    Bench::beat(o, false);
  });
  missing.cycle();  // the second (last) beat without WLAST
  missing.violation("WLAST missing on the last beat (2 of 2)", "(W)", 2);
  Bench strobes;
  strobes.cycle([](Outputs& o) { Bench::write(o, kBase, 0); });
  strobes.cycle([](Outputs& o) {
    o.m_awvalid = false;
    Bench::beat(o, true);
    o.m_wstrb = 0x00ff;
  });
  strobes.violation("partial write strobes: WSTRB 0xff", "(W)", 1);
}

TEST(AxiChecker, HandshakeSignalsHoldUntilReady) {
  // W before its AW: the model holds WREADY low, so the beat must wait, unchanged.
  Bench drop;
  drop.cycle([](Outputs& o) { Bench::beat(o, true, 1); });
  drop.cycle([](Outputs& o) { o.m_wvalid = false; });
  drop.violation("WVALID dropped before WREADY", "write data channel (W)", 1);
  Bench change;
  change.cycle([](Outputs& o) { Bench::beat(o, true, 1); });
  change.cycle([](Outputs& o) { o.m_wdata[3] = 9; });
  change.violation("changed while WVALID waited for WREADY", "(W)", 1);
  // AR: fill the model's 16-burst queue, then ARREADY is low.
  Bench ar({{32}, 2});
  for (int k = 0; k < 16; ++k) ar.cycle([&](Outputs& o) { Bench::read(o, kBase + 16 * k, 0); });
  ar.cycle();  // ARVALID waits (ARREADY low)
  ASSERT_EQ(ar.dram.violation(), "");
  ar.cycle([](Outputs& o) { o.m_araddr += 16; });
  ar.violation("payload changed while ARVALID waited for ARREADY: ARADDR 0x100000f0 -> 0x10000100",
               "read address channel (AR)", 17);
  Bench ar_drop({{32}, 2});
  for (int k = 0; k < 17; ++k) ar_drop.cycle([&](Outputs& o) { Bench::read(o, kBase + 16 * k, 0); });
  ar_drop.cycle([](Outputs& o) { o.m_arvalid = false; });
  ar_drop.violation("ARVALID dropped before ARREADY", "(AR)", 17);
  // AW: the same with the write queue full.
  Bench aw({{4}, 32});
  for (int k = 0; k < 17; ++k) aw.cycle([&](Outputs& o) { Bench::write(o, kBase + 16 * k, 0); });
  aw.cycle([](Outputs& o) { o.m_awlen = 1; });
  aw.violation("payload changed while AWVALID waited for AWREADY", "write address channel (AW)", 17);
}

TEST(AxiChecker, OutstandingTransactionLimits) {
  Bench reads;  // 4 per ARID
  for (int k = 0; k < 4; ++k) reads.cycle([&](Outputs& o) { Bench::read(o, kBase + 64 * k, 3, 1); });
  reads.cycle([](Outputs& o) { Bench::read(o, kBase, 0, 0); });  // another ID has room
  ASSERT_EQ(reads.dram.violation(), "");
  reads.cycle([](Outputs& o) { Bench::read(o, kBase + 1024, 0, 1); });
  reads.violation("outstanding reads: burst 5 in flight for ARID 1, the limit is 4", "(AR)", 5);
  Bench id;
  id.cycle([](Outputs& o) { Bench::read(o, kBase, 0, 5); });
  id.violation("ARID 5 is not an ID the accelerator uses", "(AR)", 0);
  Bench writes;  // 2 without a response
  writes.cycle([](Outputs& o) { Bench::write(o, kBase, 0); });
  writes.cycle([](Outputs& o) { Bench::write(o, kBase + 16, 0); });
  writes.cycle([](Outputs& o) { Bench::write(o, kBase + 32, 0); });
  writes.violation("outstanding writes: burst 3 without a write response, the limit is 2", "write address channel (AW)",
                   2);
}

TEST(AxiChecker, UnmappedAddressesAnswerDecerrAndAreRecorded) {
  Bench b({{4, 4}, 2}, 1);
  b.cycle([](Outputs& o) { Bench::read(o, kBase + 64 * 1024 + 64, 3); });  // past the allocation
  b.cycle([](Outputs& o) {
    o.m_arvalid = false;
    o.m_rready = true;
  });
  b.dram.drive(b.in);
  EXPECT_TRUE(b.in.m_rvalid);
  EXPECT_EQ(b.in.m_rresp, 3u);        // DECERR
  EXPECT_EQ(b.dram.violation(), "");  // answered, not a protocol violation of the master
  ASSERT_EQ(b.dram.decode_errors().size(), 1u);
  EXPECT_EQ(b.dram.decode_errors()[0].describe(16),
            "AXI4 read burst at 0x10010040 (4 beats of 16 bytes) at cycle 0 reaches memory outside every allocation: "
            "answered DECERR");
  // Reset clears the checker: a new run starts clean.
  Bench v;
  v.cycle([](Outputs& o) { Bench::read(o, kBase, 256); });
  ASSERT_NE(v.dram.violation(), "");
  v.dram.clear();
  EXPECT_EQ(v.dram.violation(), "");
  EXPECT_TRUE(v.dram.decode_errors().empty());
}

}  // namespace
}  // namespace loom::sim::rtl
