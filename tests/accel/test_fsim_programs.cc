// Whole layers driven through the runtime driver on the functional simulator, compared bit-exactly
// with plain C++ references: a blocked int8 matmul (double-buffered with dependency tokens) and a
// 3x3 conv2d layer with requantization on the ALU.
#include <gtest/gtest.h>

#include "accel_harness.h"

namespace loom::accel {
using loom::ConfigError;
using loom::DeviceError;
using loom::IsaError;
namespace {

using test::AccelHarness;

// C[m, n] = int8(sum_k A[m, k] * W[n, k]) for A: M x K, W: N x K, in blocked layouts:
// A as [M/B][K/BI][B][BI], W as [N/BO][K/BI][BO][BI], C as [M/B][N/BO][B][BO].
void blocked_matmul(AccelHarness& h, int M, int N, int K, const std::vector<int8_t>& a, const std::vector<int8_t>& w, std::vector<int8_t>& c) {
  const AccelConfig& cfg = h.cfg;
  const int B = cfg.batch, BI = cfg.block_in, BO = cfg.block_out, mb = M / B, nb = N / BO, kb = K / BI;
  auto pack = [](const std::vector<int8_t>& src, int rows, int cols, int rb, int cb) {
    std::vector<int8_t> out(src.size());
    size_t k = 0;
    for (int r0 = 0; r0 < rows / rb; ++r0)
      for (int c0 = 0; c0 < cols / cb; ++c0)
        for (int r = 0; r < rb; ++r)
          for (int cc = 0; cc < cb; ++cc) out[k++] = src[(r0 * rb + r) * cols + c0 * cb + cc];
    return out;
  };
  auto da = h.upload(pack(a, M, K, B, BI)), dw = h.upload(pack(w, N, K, BO, BI));
  auto dc = h.drv.alloc(size_t(M) * N);
  // Two contexts alternate over output row blocks: while one computes, the other loads.
  const int ctx_inp = kb, ctx_acc = nb;
  h.drv.load_2d(MemType::Wgt, 0, dw.addr, 1, nb * kb, nb * kb);  // all weights stay resident
  for (int i = 0; i < mb; ++i) {
    int ctx = i % 2;
    if (i >= 2) h.drv.dep_pop(Module::Compute, Module::Load);  // context's input buffer is free again
    h.drv.load_2d(MemType::Inp, ctx * ctx_inp, da.addr + uint64_t(i) * kb * B * BI, 1, kb, kb);
    h.drv.dep_push(Module::Load, Module::Compute);
    h.drv.dep_pop(Module::Load, Module::Compute);
    if (i >= 2) h.drv.dep_pop(Module::Store, Module::Compute);  // context's output entries were stored
    h.drv.gemm(UopKernelBuilder().loop(nb, 1, 0, kb).push(ctx * ctx_acc, 0, 0).build(), true);
    h.drv.gemm(UopKernelBuilder().loop(nb, 1, 0, kb).loop(kb, 0, 1, 1).push(ctx * ctx_acc, ctx * ctx_inp, 0).build(), false);
    h.drv.dep_push(Module::Compute, Module::Load);
    h.drv.dep_push(Module::Compute, Module::Store);
    h.drv.dep_pop(Module::Compute, Module::Store);
    h.drv.store_2d(ctx * ctx_acc, dc.addr + uint64_t(i) * nb * B * BO, 1, nb, nb);
    h.drv.dep_push(Module::Store, Module::Compute);
  }
  // Balance the tokens the last two iterations pushed but nobody popped.
  for (int i = std::max(0, mb - 2); i < mb; ++i) {
    h.drv.dep_pop(Module::Compute, Module::Load);
    h.drv.dep_pop(Module::Store, Module::Compute);
  }
  h.drv.dep_push(Module::Load, Module::Compute);  // no-ops carrying the last pops
  h.drv.dep_pop(Module::Load, Module::Compute);
  auto counters = h.drv.synchronize();
  std::vector<int8_t> packed = h.download<int8_t>(dc, size_t(M) * N);
  c.assign(size_t(M) * N, 0);
  size_t k = 0;
  for (int m0 = 0; m0 < mb; ++m0)
    for (int n0 = 0; n0 < nb; ++n0)
      for (int b = 0; b < B; ++b)
        for (int o = 0; o < BO; ++o) c[(m0 * B + b) * N + n0 * BO + o] = packed[k++];
  EXPECT_EQ(counters["gemm_macs"], uint64_t(M) * N * K);
}

class FsimPrograms : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Configs, FsimPrograms, ::testing::Range(0, 3),
                         [](const auto& p) { return test::test_configs()[p.param].name; });

TEST_P(FsimPrograms, BlockedMatmulMatchesReference) {
  AccelConfig cfg = test::test_configs()[GetParam()];
  const int M = 6 * cfg.batch, N = 3 * cfg.block_out, K = 4 * cfg.block_in;
  AccelHarness h(cfg);
  auto a = test::random_values<int8_t>(size_t(M) * K, 8, -128, 127), w = test::random_values<int8_t>(size_t(N) * K, 9, -128, 127);
  std::vector<int8_t> c;
  blocked_matmul(h, M, N, K, a, w, c);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int32_t s = 0;
      for (int q = 0; q < K; ++q) s += int32_t(a[m * K + q]) * w[n * K + q];
      ASSERT_EQ(c[m * N + n], int8_t(s)) << "C[" << m << ", " << n << "]";
    }
}

// conv2d, 16 -> 16 channels (one block), H x W, 3x3, pad 1, stride 1, then
// out = clamp(acc >> shift, 0, 127) on the ALU. One output row per step: three padded input rows
// are loaded, nine micro-ops (one per kernel tap) run over the row's columns.
TEST(FsimPrograms, Conv2dLayerWithRequantize) {
  AccelConfig cfg = default_config();
  const int C = 16, H = 14, W = 14, shift = 7;
  AccelHarness h(cfg);
  auto x = test::random_values<int8_t>(C * H * W, 10, -128, 127), k = test::random_values<int8_t>(C * C * 9, 11, -128, 127);
  // Input as [H][W][C] entries (one entry = 16 channels), weights as [ky][kx][O][I].
  std::vector<int8_t> xp(C * H * W), kp(C * C * 9);
  for (int c = 0; c < C; ++c)
    for (int y = 0; y < H; ++y)
      for (int xx = 0; xx < W; ++xx) xp[(y * W + xx) * C + c] = x[(c * H + y) * W + xx];
  for (int o = 0; o < C; ++o)
    for (int i = 0; i < C; ++i)
      for (int t = 0; t < 9; ++t) kp[(t * C + o) * C + i] = k[(o * C + i) * 9 + t];
  auto dx = h.upload(xp), dk = h.upload(kp);
  auto dy = h.drv.alloc(C * H * W);
  h.drv.load_2d(MemType::Wgt, 0, dk.addr, 1, 9, 9);
  const int pw = W + 2;
  for (int y = 0; y < H; ++y) {
    int top = y - 1, rows = 3, pad0 = 0, pad1 = 0;
    if (top < 0) pad0 = -top, rows += top, top = 0;
    if (top + rows > H) pad1 = top + rows - H, rows = H - top;
    if (y > 0) h.drv.dep_pop(Module::Compute, Module::Load);
    h.drv.load_2d(MemType::Inp, 0, dx.addr + uint64_t(top) * W * C, rows, W, W, pad0, pad1, 1, 1);
    h.drv.dep_push(Module::Load, Module::Compute);
    h.drv.dep_pop(Module::Load, Module::Compute);
    if (y > 0) h.drv.dep_pop(Module::Store, Module::Compute);
    h.drv.gemm(UopKernelBuilder().loop(W, 1, 0).push(0, 0).build(), true);
    UopKernelBuilder taps;
    taps.loop(W, 1, 1, 0);
    for (int dy2 = 0; dy2 < 3; ++dy2)
      for (int dx2 = 0; dx2 < 3; ++dx2) taps.push(0, dy2 * pw + dx2, dy2 * 3 + dx2);
    h.drv.gemm(taps.build(), false);
    h.drv.dep_push(Module::Compute, Module::Load);
    auto all = UopKernelBuilder().loop(W, 1, 1).push(0, 0).build();
    h.drv.alu(all, AluOp::Shr, true, shift);
    h.drv.alu(all, AluOp::Max, true, 0);
    h.drv.alu(all, AluOp::Min, true, 127);
    h.drv.dep_push(Module::Compute, Module::Store);
    h.drv.dep_pop(Module::Compute, Module::Store);
    h.drv.store_2d(0, dy.addr + uint64_t(y) * W * C, 1, W, W);
    h.drv.dep_push(Module::Store, Module::Compute);
  }
  h.drv.dep_pop(Module::Compute, Module::Load);
  h.drv.dep_pop(Module::Store, Module::Compute);
  h.drv.dep_push(Module::Load, Module::Compute);
  h.drv.dep_pop(Module::Load, Module::Compute);
  h.drv.synchronize();
  auto got = h.download<int8_t>(dy, C * H * W);
  for (int o = 0; o < C; ++o)
    for (int y = 0; y < H; ++y)
      for (int xx = 0; xx < W; ++xx) {
        int32_t s = 0;
        for (int i = 0; i < C; ++i)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              int iy = y + ky - 1, ix = xx + kx - 1;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              s += int32_t(x[(i * H + iy) * W + ix]) * k[(o * C + i) * 9 + ky * 3 + kx];
            }
        int32_t want = std::min(127, std::max(0, s >> shift));
        ASSERT_EQ(got[(y * W + xx) * C + o], want) << "o=" << o << " y=" << y << " x=" << xx;
      }
}

}  // namespace
}  // namespace loom::accel
