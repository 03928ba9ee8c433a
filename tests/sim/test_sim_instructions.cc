// Per-instruction behaviour of the functional simulator, for every test config, checked against
// values computed here in plain C++.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "accel/accel_harness.h"

namespace loom::accel {
using loom::ConfigError;
using loom::DeviceError;
using loom::IsaError;
namespace {

using test::AccelHarness;

class SimInstruction : public ::testing::TestWithParam<int> {
 protected:
  AccelConfig cfg = test::test_configs()[GetParam()];
  int B = cfg.batch, BI = cfg.block_in, BO = cfg.block_out;
};

std::string config_name(const ::testing::TestParamInfo<int>& p) { return test::test_configs()[p.param].name; }
INSTANTIATE_TEST_SUITE_P(Configs, SimInstruction, ::testing::Range(0, 3), config_name);

// Identity weights make GEMM copy inputs to the output: a way to observe the input scratchpad.
std::vector<int8_t> identity_weights(const AccelConfig& c) {
  std::vector<int8_t> w(c.block_out * c.block_in, 0);
  for (int o = 0; o < std::min(c.block_out, c.block_in); ++o) w[o * c.block_in + o] = 1;
  return w;
}

TEST_P(SimInstruction, LoadWithPaddingThroughIdentityGemm) {
  if (BI != BO) GTEST_SKIP();
  AccelHarness h(cfg);
  const int rows = 2, cols = 3, stride = 5;  // a 2x3 window of a 2x5 DRAM image of input entries
  auto img = test::random_values<int8_t>(rows * stride * B * BI, 1, -100, 100);
  auto in = h.upload(img);
  auto w = h.upload(identity_weights(cfg));
  const int py0 = 1, py1 = 0, px0 = 1, px1 = 2, prow = rows + py0 + py1, pcol = cols + px0 + px1, n = prow * pcol;
  auto out = h.drv.alloc(n * B * BO);
  h.drv.load_2d(MemType::Inp, 0, in.addr, rows, cols, stride, py0, py1, px0, px1);
  h.drv.load_2d(MemType::Wgt, 0, w.addr, 1, 1, 1);
  h.drv.dep_push(Module::Load, Module::Compute);
  h.drv.dep_pop(Module::Load, Module::Compute);
  h.drv.gemm(UopKernelBuilder().loop(n, 1, 1, 0).push(0, 0, 0).build(), true);
  h.drv.gemm(UopKernelBuilder().loop(n, 1, 1, 0).push(0, 0, 0).build(), false);
  h.drv.dep_push(Module::Compute, Module::Store);
  h.drv.dep_pop(Module::Compute, Module::Store);
  h.drv.store_2d(0, out.addr, 1, n, n);
  auto counters = h.drv.synchronize();
  auto got = h.download<int8_t>(out, n * B * BO);
  for (int r = 0; r < prow; ++r)
    for (int c = 0; c < pcol; ++c)
      for (int e = 0; e < B * BO; ++e) {
        bool pad = r < py0 || r >= py0 + rows || c < px0 || c >= px0 + cols;
        int8_t want = pad ? 0 : img[(((r - py0) * stride) + (c - px0)) * B * BI + e];
        ASSERT_EQ(got[(r * pcol + c) * B * BO + e], want) << "row " << r << " col " << c << " elem " << e;
      }
  EXPECT_EQ(counters["dma_load_bytes"],
            uint64_t(rows * cols * B * BI + BO * BI + 4));  // + one 4-byte micro-op (the kernel is loaded once)
  EXPECT_EQ(counters["dma_load_bytes_inp"], uint64_t(rows * cols * B * BI));  // padding is not transferred
  EXPECT_EQ(counters["dma_load_bytes_wgt"], uint64_t(BO * BI));
  EXPECT_EQ(counters["dma_load_bytes_uop"], 4u);
  EXPECT_EQ(counters["dma_store_bytes"], uint64_t(n * B * BO));
  EXPECT_EQ(counters["load_insns"], 2u);
  EXPECT_EQ(counters["uop_load_insns"], 1u);
  EXPECT_EQ(counters["gemm_insns"], 2u);
  EXPECT_EQ(counters["store_insns"], 1u);
  EXPECT_EQ(counters["gemm_macs"], uint64_t(n) * B * BO * BI);
}

TEST_P(SimInstruction, GemmAccumulatesAndResets) {
  AccelHarness h(cfg);
  auto x = test::random_values<int8_t>(B * BI, 2, -128, 127), k = test::random_values<int8_t>(BO * BI, 3, -128, 127);
  auto xi = h.upload(x), ki = h.upload(k);
  auto out = h.drv.alloc(3 * B * BO);
  h.drv.load_2d(MemType::Inp, 0, xi.addr, 1, 1, 1);
  h.drv.load_2d(MemType::Wgt, 0, ki.addr, 1, 1, 1);
  h.drv.dep_push(Module::Load, Module::Compute);
  h.drv.dep_pop(Module::Load, Module::Compute);
  auto k0 = UopKernelBuilder().push(0, 0, 0).build(), k1 = UopKernelBuilder().push(1, 0, 0).build(),
       k2 = UopKernelBuilder().push(2, 0, 0).build();
  for (auto* kk : {&k0, &k1, &k2}) h.drv.gemm(*kk, true);
  h.drv.gemm(k0, false);  // acc0 = x.k
  h.drv.gemm(k1, false);
  h.drv.gemm(k1, false);  // acc1 = 2 x.k (wraps in int32, low byte stored)
  h.drv.gemm(k2, false);
  h.drv.gemm(k2, true);  // acc2 reset back to 0
  h.drv.dep_push(Module::Compute, Module::Store);
  h.drv.dep_pop(Module::Compute, Module::Store);
  h.drv.store_2d(0, out.addr, 1, 3, 3);
  h.drv.synchronize();
  auto got = h.download<int8_t>(out, 3 * B * BO);
  for (int b = 0; b < B; ++b)
    for (int o = 0; o < BO; ++o) {
      int32_t dot = 0;
      for (int q = 0; q < BI; ++q) dot += int32_t(x[b * BI + q]) * k[o * BI + q];
      EXPECT_EQ(got[b * BO + o], int8_t(dot));
      EXPECT_EQ(got[B * BO + b * BO + o], int8_t(2 * dot));
      EXPECT_EQ(got[2 * B * BO + b * BO + o], 0);
    }
  EXPECT_EQ(h.drv.uploaded_kernels(), 3u);  // each kernel uploaded once although used repeatedly
}

// Padding on the weight and accumulator scratchpads: every padded entry reads as zero.
TEST_P(SimInstruction, LoadWithPaddingIntoWeightsAndAccumulators) {
  AccelHarness h(cfg);
  const int rows = 2, cols = 2, stride = 3, py0 = 0, py1 = 1, px0 = 2, px1 = 1;
  const int pcol = cols + px0 + px1, n = (rows + py0 + py1) * pcol;
  auto pad = [&](int e) {
    int r = e / pcol - py0, c = e % pcol - px0;
    return r < 0 || r >= rows || c < 0 || c >= cols ? -1 : r * stride + c;  // source entry, or -1 for padding
  };
  // Weights: GEMM of one random input against each padded weight entry.
  auto x = test::random_values<int8_t>(B * BI, 20, -128, 127);
  auto wimg = test::random_values<int8_t>(rows * stride * BO * BI, 21, -128, 127);
  // Accumulators: copied to the out buffer by an ALU add of 0.
  auto aimg = test::random_values<int32_t>(rows * stride * B * BO, 22, -100000, 100000);
  auto dx = h.upload(x), dw = h.upload(wimg), da = h.upload(aimg);
  auto out = h.drv.alloc(2 * n * B * BO);
  h.drv.load_2d(MemType::Inp, 0, dx.addr, 1, 1, 1);
  h.drv.load_2d(MemType::Wgt, 0, dw.addr, rows, cols, stride, py0, py1, px0, px1);
  h.drv.dep_push(Module::Load, Module::Compute);
  h.drv.dep_pop(Module::Load, Module::Compute);
  h.drv.gemm(UopKernelBuilder().loop(n, 1, 0, 0).push(0, 0, 0).build(), true);
  h.drv.gemm(UopKernelBuilder().loop(n, 1, 0, 1).push(0, 0, 0).build(), false);
  h.drv.load_2d(MemType::Acc, n, da.addr, rows, cols, stride, py0, py1, px0, px1);
  h.drv.alu(UopKernelBuilder().loop(n, 1, 1).push(n, n).build(), AluOp::Add, true, 0);
  h.drv.dep_push(Module::Compute, Module::Store);
  h.drv.dep_pop(Module::Compute, Module::Store);
  h.drv.store_2d(0, out.addr, 1, 2 * n, 2 * n);
  auto counters = h.drv.synchronize();
  EXPECT_EQ(counters["dma_load_bytes_acc"], uint64_t(rows * cols * B * BO * 4));
  EXPECT_EQ(counters["acc_load_insns"], 1u);
  auto got = h.download<int8_t>(out, 2 * n * B * BO);
  for (int e = 0; e < n; ++e)
    for (int b = 0; b < B; ++b)
      for (int o = 0; o < BO; ++o) {
        int src = pad(e);
        int32_t dot = 0;
        if (src >= 0)
          for (int q = 0; q < BI; ++q) dot += int32_t(x[b * BI + q]) * wimg[(src * BO + o) * BI + q];
        ASSERT_EQ(got[(e * B + b) * BO + o], int8_t(dot)) << "weight entry " << e;
        int32_t acc = src >= 0 ? aimg[(src * B + b) * BO + o] : 0;
        ASSERT_EQ(got[((n + e) * B + b) * BO + o], int8_t(acc)) << "accumulator entry " << e;
      }
}

// Asymmetric zero padding (every side different, some zero) around rows that are contiguous in
// DRAM (x_stride == x_size), into the input, weight and accumulator scratchpads. The padded input
// goes through an identity GEMM, the padded weights through a GEMM with one random input, the
// padded accumulators through an ALU add of 0; STORE shows all three.
TEST_P(SimInstruction, LoadWithAsymmetricPaddingAtUnitStride) {
  if (BI != BO) GTEST_SKIP();
  struct Pads {
    int rows, cols, py0, py1, px0, px1;
  };
  for (Pads p : {Pads{2, 3, 2, 0, 1, 3}, Pads{3, 2, 0, 3, 0, 1}, Pads{2, 2, 1, 2, 3, 0}, Pads{4, 1, 0, 1, 2, 0},
                 Pads{1, 4, 3, 1, 0, 2}}) {
    SCOPED_TRACE("rows " + std::to_string(p.rows) + " cols " + std::to_string(p.cols) + " pads (" +
                 std::to_string(p.py0) + "," + std::to_string(p.py1) + "," + std::to_string(p.px0) + "," +
                 std::to_string(p.px1) + ")");
    AccelHarness h(cfg);
    const int pcol = p.cols + p.px0 + p.px1, n = (p.rows + p.py0 + p.py1) * pcol, m = p.rows * p.cols;
    auto src = [&](int e) {  // DRAM entry of padded entry e, or -1 for padding
      int r = e / pcol - p.py0, c = e % pcol - p.px0;
      return r < 0 || r >= p.rows || c < 0 || c >= p.cols ? -1 : r * p.cols + c;
    };
    auto iimg = test::random_values<int8_t>(m * B * BI, 40, -128, 127);
    auto wimg = test::random_values<int8_t>(m * BO * BI, 41, -128, 127);
    auto aimg = test::random_values<int32_t>(m * B * BO, 42, -1000000, 1000000);
    auto x = test::random_values<int8_t>(B * BI, 43, -128, 127);
    auto di = h.upload(iimg), dw = h.upload(wimg), da = h.upload(aimg), dx = h.upload(x),
         deye = h.upload(identity_weights(cfg));
    // Garbage loaded first where the padded blocks go: padding must overwrite it with zeros.
    auto gi = h.upload(test::random_values<int8_t>(n * B * BI, 44, 1, 127));
    auto gw = h.upload(test::random_values<int8_t>(n * BO * BI, 45, 1, 127));
    auto ga = h.upload(test::random_values<int32_t>(n * B * BO, 46, 1, 127));
    h.drv.load_2d(MemType::Inp, 0, gi.addr, 1, n, n);
    h.drv.load_2d(MemType::Wgt, 0, gw.addr, 1, n, n);
    h.drv.load_2d(MemType::Acc, 2 * n, ga.addr, 1, n, n);
    auto out = h.drv.alloc(3 * n * B * BO);
    h.drv.load_2d(MemType::Inp, 0, di.addr, p.rows, p.cols, p.cols, p.py0, p.py1, p.px0, p.px1);
    h.drv.load_2d(MemType::Inp, n, dx.addr, 1, 1, 1);
    h.drv.load_2d(MemType::Wgt, 0, dw.addr, p.rows, p.cols, p.cols, p.py0, p.py1, p.px0, p.px1);
    h.drv.load_2d(MemType::Wgt, n, deye.addr, 1, 1, 1);
    h.drv.dep_push(Module::Load, Module::Compute);
    h.drv.dep_pop(Module::Load, Module::Compute);
    h.drv.gemm(UopKernelBuilder().loop(2 * n, 1, 0, 0).push(0, 0, 0).build(), true);
    h.drv.gemm(UopKernelBuilder().loop(n, 1, 1, 0).push(0, 0, n).build(), false);  // acc[e] = inp[e] x identity
    h.drv.gemm(UopKernelBuilder().loop(n, 1, 0, 1).push(n, n, 0).build(), false);  // acc[n + e] = x . wgt[e]
    h.drv.load_2d(MemType::Acc, 2 * n, da.addr, p.rows, p.cols, p.cols, p.py0, p.py1, p.px0, p.px1);
    h.drv.alu(UopKernelBuilder().loop(n, 1, 1).push(2 * n, 2 * n).build(), AluOp::Add, true, 0);
    h.drv.dep_push(Module::Compute, Module::Store);
    h.drv.dep_pop(Module::Compute, Module::Store);
    h.drv.store_2d(0, out.addr, 1, 3 * n, 3 * n);
    auto counters = h.drv.synchronize();
    EXPECT_EQ(counters["dma_load_bytes_inp"], uint64_t((n + m + 1) * B * BI));  // padding is not transferred
    EXPECT_EQ(counters["dma_load_bytes_wgt"], uint64_t((n + m + 1) * BO * BI));
    EXPECT_EQ(counters["dma_load_bytes_acc"], uint64_t((n + m) * B * BO * 4));
    auto got = h.download<int8_t>(out, 3 * n * B * BO);
    for (int e = 0; e < n; ++e)
      for (int b = 0; b < B; ++b)
        for (int o = 0; o < BO; ++o) {
          const int s = src(e);
          int32_t dot = 0;
          if (s >= 0)
            for (int q = 0; q < BI; ++q) dot += int32_t(x[b * BI + q]) * wimg[(s * BO + o) * BI + q];
          ASSERT_EQ(got[(e * B + b) * BO + o], s < 0 ? 0 : iimg[(s * B + b) * BI + o]) << "input entry " << e;
          ASSERT_EQ(got[((n + e) * B + b) * BO + o], int8_t(dot)) << "weight entry " << e;
          ASSERT_EQ(got[((2 * n + e) * B + b) * BO + o], s < 0 ? 0 : int8_t(aimg[(s * B + b) * BO + o]))
              << "accumulator entry " << e;
        }
  }
}

// DMA rows that start a few beats below a 4 KiB boundary and run past it, and rows longer than
// one 256-beat burst: AXI4 bursts may not cross 4 KiB, so the DMAs split them there (the RTL
// backend's DRAM model fails the run on any burst that crosses). LOADs into inp, wgt and acc
// (two rows each, each row crossing its own boundary) and STOREs, all checked bit-exactly.
TEST_P(SimInstruction, DmaRowsAcross4KiBBoundaries) {
  if (BI != BO) GTEST_SKIP();
  AccelHarness h(cfg);
  const int Ei = B * BI, Ew = BO * BI, Ea = B * BO * 4, Eo = B * BO;
  auto below = [](int entry) {
    return std::max(1, (48 + entry - 1) / entry);
  };  // entries in 3 beats of 16 bytes (at least one)
  const uint64_t region = h.dev->alloc(16 * 4096, 4096);
  // A row start `below(entry)` entries before the 4 KiB page `page` of the region begins.
  auto at = [&](int page, int entry) { return region + uint64_t(page) * 4096 - uint64_t(below(entry)) * entry; };
  auto put = [&](uint64_t addr, const auto& v) { h.dev->write(addr, v.data(), v.size() * sizeof(v[0])); };
  const int xi = below(Ei) + 3, xw = 2, xa = below(Ea) + 3, longx = 300;
  const int a1 = 2 * xi, a2 = a1 + 2 * xw, a3 = a2 + 2 * xa, total = a3 + longx;  // accumulator / out entries
  std::vector<std::vector<int8_t>> irow, wrow;
  std::vector<std::vector<int32_t>> arow;
  for (int r = 0; r < 2; ++r) {  // row r of each image lies 4 KiB after row r - 1
    irow.push_back(test::random_values<int8_t>(xi * Ei, 50 + r, -128, 127));
    wrow.push_back(test::random_values<int8_t>(xw * Ew, 52 + r, -128, 127));
    arow.push_back(test::random_values<int32_t>(xa * B * BO, 54 + r, -1000000, 1000000));
    put(at(1, Ei) + r * 4096, irow[r]);
    put(at(3, Ew) + r * 4096, wrow[r]);
    put(at(5, Ea) + r * 4096, arow[r]);
  }
  auto ilong = test::random_values<int8_t>(longx * Ei, 56, -128, 127);
  put(at(8, Ei), ilong);
  auto x = test::random_values<int8_t>(Ei, 57, -128, 127);
  auto dx = h.upload(x), deye = h.upload(identity_weights(cfg));
  h.drv.load_2d(MemType::Inp, 0, at(1, Ei), 2, xi, 4096 / Ei);
  h.drv.load_2d(MemType::Inp, 2 * xi, dx.addr, 1, 1, 1);
  h.drv.load_2d(MemType::Inp, 2 * xi + 1, at(8, Ei), 1, longx, longx);
  h.drv.load_2d(MemType::Wgt, 0, deye.addr, 1, 1, 1);
  h.drv.load_2d(MemType::Wgt, 1, at(3, Ew), 2, xw, 4096 / Ew);
  h.drv.dep_push(Module::Load, Module::Compute);
  h.drv.dep_pop(Module::Load, Module::Compute);
  h.drv.gemm(UopKernelBuilder().loop(total, 1, 0, 0).push(0, 0, 0).build(), true);
  h.drv.gemm(UopKernelBuilder().loop(2 * xi, 1, 1, 0).push(0, 0, 0).build(), false);        // copies of the input rows
  h.drv.gemm(UopKernelBuilder().loop(2 * xw, 1, 0, 1).push(a1, 2 * xi, 1).build(), false);  // x . each weight entry
  h.drv.gemm(UopKernelBuilder().loop(longx, 1, 1, 0).push(a3, 2 * xi + 1, 0).build(), false);  // copy of the long row
  h.drv.load_2d(MemType::Acc, a2, at(5, Ea), 2, xa, 4096 / Ea);
  h.drv.alu(UopKernelBuilder().loop(2 * xa, 1, 1).push(a2, a2).build(), AluOp::Add, true, 0);
  h.drv.dep_push(Module::Compute, Module::Store);
  h.drv.dep_pop(Module::Compute, Module::Store);
  h.drv.store_2d(0, at(11, Eo), 2, a3 / 2, 4096 / Eo);
  h.drv.store_2d(a3, at(13, Eo), 1, longx, longx);
  h.drv.synchronize();
  // The out entries, in order, as stored: two rows of a3 / 2 entries 4 KiB apart, then the long row.
  std::vector<int8_t> got(size_t(total) * Eo);
  for (int r = 0; r < 2; ++r) h.dev->read(at(11, Eo) + r * 4096, &got[size_t(r) * (a3 / 2) * Eo], size_t(a3 / 2) * Eo);
  h.dev->read(at(13, Eo), &got[size_t(a3) * Eo], size_t(longx) * Eo);
  for (int e = 0; e < total; ++e)
    for (int b = 0; b < B; ++b)
      for (int o = 0; o < BO; ++o) {
        int8_t want;
        if (e < a1) {
          want = irow[e / xi][((e % xi) * B + b) * BI + o];
        } else if (e < a2) {
          int k = e - a1;
          int32_t dot = 0;
          for (int q = 0; q < BI; ++q) dot += int32_t(x[b * BI + q]) * wrow[k / xw][((k % xw) * BO + o) * BI + q];
          want = int8_t(dot);
        } else if (e < a3) {
          int k = e - a2;
          want = int8_t(arow[k / xa][((k % xa) * B + b) * BO + o]);
        } else {
          want = ilong[((e - a3) * B + b) * BI + o];
        }
        ASSERT_EQ(got[(size_t(e) * B + b) * BO + o], want)
            << "out entry " << e << " (inp rows < " << a1 << " <= weights < " << a2 << " <= accumulators < " << a3
            << " <= long row)";
      }
  // Nothing was written past the end of a stored row.
  int8_t after = 1;
  h.dev->read(at(11, Eo) + uint64_t(a3 / 2) * Eo, &after, 1);
  EXPECT_EQ(after, 0);
}

struct AluCase {
  AluOp op;
  bool imm;
  int32_t value;
};

// Every ALU op on acc0 = acc0 op (imm or acc1), checked on the stored int8 and on the whole int32
// accumulator, read back a byte at a time: ALU adds copy acc0 into acc2..acc5 (zero padding of
// the accumulator LOAD), shifts by 8, 16 and 24 bring each byte down, and a STORE writes the low
// bytes. Shift amounts cover [-40, 40] (beyond 24 an arithmetic and a logical shift of a negative
// value differ even in the low byte; beyond 31 they saturate) on values of every sign and size.
TEST_P(SimInstruction, EveryAluOpWithAndWithoutImmediate) {
  const int n = B * BO;
  auto a = test::random_values<int32_t>(n, 4, -100000, 100000), b = test::random_values<int32_t>(n, 5, -1000, 1000);
  const int32_t extremes[] = {INT32_MIN, INT32_MAX, -1, 1, -100000, int32_t(0x80000001), -2, 0x40000000};
  for (int e = 0; e < 8 && e < n; ++e) a[e] = extremes[e];
  std::vector<int32_t> shifts = test::random_values<int32_t>(n, 6, -40, 40);
  for (int e = 0; e < 6 && e < n; ++e) shifts[e] = std::vector<int32_t>{31, 25, -31, 32, -33, 28}[e];
  for (AluCase t : {AluCase{AluOp::Min, false, 0},
                    AluCase{AluOp::Max, false, 0},
                    AluCase{AluOp::Add, false, 0},
                    AluCase{AluOp::Mul, false, 0},
                    AluCase{AluOp::Shr, false, 0},
                    AluCase{AluOp::Min, true, 77},
                    AluCase{AluOp::Max, true, -5},
                    AluCase{AluOp::Add, true, -300},
                    AluCase{AluOp::Mul, true, 3},
                    AluCase{AluOp::Shr, true, 6},
                    AluCase{AluOp::Shr, true, -2},
                    AluCase{AluOp::Shr, true, 25},
                    AluCase{AluOp::Shr, true, 31},
                    AluCase{AluOp::Shr, true, -27},
                    AluCase{AluOp::Mov, false, 0},
                    AluCase{AluOp::Mov, true, -1234},
                    AluCase{AluOp::Clip, true, clip_imm(-100, 50)},
                    AluCase{AluOp::Clip, true, clip_imm(5, 5)},
                    AluCase{AluOp::Clip, true, clip_imm(-128, 127)},
                    AluCase{AluOp::Clip, true, clip_imm(0, 127)},
                    AluCase{AluOp::ShrSat, true, ShrSatImm{9, 8, false}.encode()},
                    AluCase{AluOp::ShrSat, true, ShrSatImm{9, 8, true}.encode()},
                    AluCase{AluOp::ShrSat, true, ShrSatImm{0, 1, false}.encode()},
                    AluCase{AluOp::ShrSat, true, ShrSatImm{20, 4, true}.encode()},
                    AluCase{AluOp::ShrSat, true, ShrSatImm{31, 16, false}.encode()},
                    AluCase{AluOp::ShrSat, true, ShrSatImm{17, 16, false}.encode()}}) {
    SCOPED_TRACE(std::string(to_string(t.op)) + (t.imm ? " imm " + std::to_string(t.value) : ""));
    AccelHarness h(cfg);
    std::vector<int32_t> second = t.op == AluOp::Shr ? shifts : b;
    std::vector<int32_t> both = a;
    both.insert(both.end(), second.begin(), second.end());
    auto in = h.upload(both);
    auto out = h.drv.alloc(5 * n);
    h.drv.load_2d(MemType::Acc, 0, in.addr, 1, 2, 2, 0, 0, 0, 4);  // acc0 = a, acc1 = b, acc2..acc5 = 0
    h.drv.alu(UopKernelBuilder().push(0, 1).build(), t.op, t.imm, t.value);
    h.drv.alu(UopKernelBuilder().loop(4, 1, 0).push(2, 0).build(), AluOp::Add, false);  // acc2..acc5 = acc0
    for (int k = 1; k < 4; ++k) h.drv.alu(UopKernelBuilder().push(2 + k, 2 + k).build(), AluOp::Shr, true, 8 * k);
    h.drv.dep_push(Module::Compute, Module::Store);
    h.drv.dep_pop(Module::Compute, Module::Store);
    h.drv.store_2d(0, out.addr, 1, 1, 1);
    h.drv.store_2d(2, out.addr + n, 1, 4, 4);
    auto counters = h.drv.synchronize();
    auto got = h.download<int8_t>(out, 5 * n);
    for (int e = 0; e < n; ++e) {
      int64_t x = a[e], y = t.imm ? t.value : second[e], r = 0;
      switch (t.op) {
        case AluOp::Min:
          r = std::min(x, y);
          break;
        case AluOp::Max:
          r = std::max(x, y);
          break;
        case AluOp::Add:
          r = x + y;
          break;
        case AluOp::Mul:
          r = x * y;
          break;
        case AluOp::Shr:
          r = y >= 0 ? x >> std::min<int64_t>(y, 31) : x << std::min<int64_t>(-y, 31);
          break;
        case AluOp::Mov:
          r = y;
          break;
        case AluOp::Clip:  // the immediate's low and high signed bytes
          r = std::min<int64_t>(std::max<int64_t>(x, int8_t(y & 0xff)), int8_t((y >> 8) & 0xff));
          break;
        case AluOp::ShrSat: {  // shift by y[4:0], then clamp to (y[8:5] + 1) bits, non-negative if y[9]
          const int64_t half = int64_t(1) << ((y >> 5) & 15);
          r = std::min<int64_t>(std::max<int64_t>(x >> (y & 31), (y >> 9) & 1 ? 0 : -half), half - 1);
          break;
        }
      }
      const int32_t want = int32_t(uint32_t(uint64_t(r)));
      ASSERT_EQ(got[e], int8_t(want)) << "element " << e << " a=" << x << " b=" << y;
      uint32_t acc = 0;
      for (int k = 0; k < 4; ++k) acc |= uint32_t(uint8_t(got[(1 + k) * n + e])) << (8 * k);
      ASSERT_EQ(int32_t(acc), want) << "accumulator of element " << e << " a=" << x << " b=" << y;
    }
    EXPECT_EQ(counters["alu_ops"], uint64_t(8 * n));
  }
}

// SHRSAT on each of d = 1, 2, 3 entries four times in one instruction (micro-ops over the d
// entries in turn: each iteration names the entry the one d iterations before it wrote, still in
// flight on the RTL at every distance). At d = 2 and 3 each pass shifts and clamps what the one
// before wrote; at d = 1 an iteration reads what the one just ahead of it read (isa.h), so the
// four passes apply the shift and clamp twice.
TEST_P(SimInstruction, ShrSatRepeatedOnTheSameEntries) {
  const int n = B * BO;
  for (int d = 1; d <= 3; ++d)
    for (bool non_negative : {false, true}) {
      SCOPED_TRACE("distance " + std::to_string(d) + (non_negative ? ", non-negative" : ", signed"));
      auto a = test::random_values<int32_t>(size_t(d * n), 12 + d, -4000000, 4000000);
      a[0] = INT32_MIN, a[1] = INT32_MAX;
      AccelHarness h(cfg);
      auto in = h.upload(a);
      auto out = h.drv.alloc(d * n);
      h.drv.load_2d(MemType::Acc, 0, in.addr, 1, d, d);
      UopKernelBuilder k;
      k.loop(4, 0, 0);
      for (int u = 0; u < d; ++u) k.push(u, u);
      h.drv.alu(k.build(), AluOp::ShrSat, true, ShrSatImm{3, 12, non_negative}.encode());
      h.drv.dep_push(Module::Compute, Module::Store);
      h.drv.dep_pop(Module::Compute, Module::Store);
      h.drv.store_2d(0, out.addr, 1, d, d);
      h.drv.synchronize();
      auto got = h.download<int8_t>(out, d * n);
      for (int e = 0; e < d * n; ++e) {
        int64_t x = a[e];
        for (int r = 0; r < (d == 1 ? 2 : 4); ++r)
          x = std::min<int64_t>(std::max<int64_t>(x >> 3, non_negative ? 0 : -2048), 2047);
        ASSERT_EQ(got[e], int8_t(x)) << "element " << e << " a=" << a[e];
      }
    }
}

// Whole scratchpads: a LOAD of every accumulator entry, an ALU pass over all of them and a STORE
// of every output entry (the DMAs count up to the buffer's depth; the last entry is written and
// read like the first).
TEST_P(SimInstruction, WholeScratchpadLoadAluAndStore) {
  const int n = B * BO;
  const int64_t acc = cfg.acc_depth(), outd = cfg.out_depth(), m = std::min(acc, outd);
  auto a = test::random_values<int32_t>(size_t(acc * n), 9, -100000, 100000);
  AccelHarness h(cfg);
  auto in = h.upload(a);
  auto out = h.drv.alloc(outd * n);
  h.drv.load_2d(MemType::Acc, 0, in.addr, 1, acc, acc);
  h.drv.alu(UopKernelBuilder().loop(uint32_t(m), 1, 1).push(0, 0).build(), AluOp::Add, true, 3);
  h.drv.dep_push(Module::Compute, Module::Store);
  h.drv.dep_pop(Module::Compute, Module::Store);
  h.drv.store_2d(0, out.addr, 1, outd, outd);
  auto counters = h.drv.synchronize();
  auto got = h.download<int8_t>(out, m * n);
  for (int64_t e = 0; e < m * n; ++e) ASSERT_EQ(got[e], int8_t(a[e] + 3)) << "element " << e << " of " << m * n;
  EXPECT_EQ(counters["alu_ops"], uint64_t(m * n));
}

// ALU chains whose register operand is the entry an earlier iteration of the same instruction
// just wrote (still in the pipeline on the RTL): acc[k] += acc[k - d] for d = 1, 2 and 3 gives
// running sums over every d-th entry, checked against the host's.
TEST_P(SimInstruction, AluOperandWrittenByTheIterationsBefore) {
  const int n = B * BO, entries = 12;
  for (int d = 1; d <= 3; ++d) {
    SCOPED_TRACE("distance " + std::to_string(d));
    AccelHarness h(cfg);
    auto a = test::random_values<int32_t>(entries * n, 40 + d, -1000, 1000);
    auto in = h.upload(a);
    auto out = h.drv.alloc(entries * n);
    h.drv.load_2d(MemType::Acc, 0, in.addr, 1, entries, entries);
    h.drv.alu(UopKernelBuilder().loop(entries - d, 1, 1).push(d, 0).build(), AluOp::Add, false);
    h.drv.alu(UopKernelBuilder().loop(entries, 1, 1).push(0, 0).build(), AluOp::Shr, true, 4);  // keep bits 4..11
    // MOV reads its operand where the other ops read their destination: acc[k] = acc[k - d]
    // repeats the first d entries (of the second half) through the forwarding paths.
    const int half = entries / 2;
    h.drv.alu(UopKernelBuilder().loop(half - d, 1, 1).push(half + d, half).build(), AluOp::Mov, false);
    h.drv.dep_push(Module::Compute, Module::Store);
    h.drv.dep_pop(Module::Compute, Module::Store);
    h.drv.store_2d(0, out.addr, 1, entries, entries);
    auto counters = h.drv.synchronize();
    auto got = h.download<int8_t>(out, entries * n);
    std::vector<int32_t> want = a;
    for (int k = d; k < entries; ++k)
      for (int e = 0; e < n; ++e) want[k * n + e] += want[(k - d) * n + e];
    for (int32_t& v : want) v >>= 4;
    for (int k = half + d; k < entries; ++k)
      for (int e = 0; e < n; ++e) want[k * n + e] = want[(k - d) * n + e];
    for (int i = 0; i < entries * n; ++i)
      ASSERT_EQ(got[i], int8_t(want[i])) << "entry " << i / n << " element " << i % n;
    // Only the ADD reads two entries an iteration.
    EXPECT_EQ(counters["alu_vector_ops"], uint64_t((entries - d) * n));
  }
}

TEST_P(SimInstruction, StridedStoreAndTwoLevelLoop) {
  AccelHarness h(cfg);
  const int n = B * BO, rows = 3, cols = 4;
  auto a = test::random_values<int32_t>(rows * cols * n, 7, -128, 127);
  auto in = h.upload(a);
  const int stride = 6;
  auto out = h.drv.alloc(rows * stride * n);
  std::vector<int8_t> zeros(rows * stride * n, 0);
  h.drv.copy_to_device(out, zeros.data(), zeros.size());
  h.drv.load_2d(MemType::Acc, 0, in.addr, 1, rows * cols, rows * cols);
  // Add 1 to every entry with a 2-level loop (rows x cols) and one micro-op.
  h.drv.alu(UopKernelBuilder().loop(rows, cols, cols).loop(cols, 1, 1).push(0, 0).build(), AluOp::Add, true, 1);
  h.drv.dep_push(Module::Compute, Module::Store);
  h.drv.dep_pop(Module::Compute, Module::Store);
  h.drv.store_2d(0, out.addr, rows, cols, stride);
  h.drv.synchronize();
  auto got = h.download<int8_t>(out, rows * stride * n);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < stride; ++c)
      for (int e = 0; e < n; ++e)
        ASSERT_EQ(got[(r * stride + c) * n + e], c < cols ? int8_t(a[(r * cols + c) * n + e] + 1) : 0) << r << "," << c;
}

}  // namespace
}  // namespace loom::accel
