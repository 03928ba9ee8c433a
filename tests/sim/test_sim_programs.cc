// Whole layers driven through the runtime driver on the backend under test, compared bit-exactly
// with plain C++ references: a blocked int8 matmul (double-buffered with dependency tokens) and a
// 3x3 conv2d layer with requantization on the ALU.
#include <gtest/gtest.h>

#include <fstream>

#include "accel/accel_harness.h"
#include "common/temp_dir.h"
#include "loom/accel/examples.h"

namespace loom::accel {
using loom::ConfigError;
using loom::DeviceError;
using loom::IsaError;
namespace {

using test::AccelHarness;

class SimPrograms : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Configs, SimPrograms, ::testing::Range(0, 3),
                         [](const auto& p) { return test::test_configs()[p.param].name; });

TEST_P(SimPrograms, BlockedMatmulMatchesReference) {
  AccelConfig cfg = test::test_configs()[GetParam()];
  const int M = 6 * cfg.batch, N = 3 * cfg.block_out, K = 4 * cfg.block_in;
  AccelHarness h(cfg);
  auto a = test::random_values<int8_t>(size_t(M) * K, 8, -128, 127),
       w = test::random_values<int8_t>(size_t(N) * K, 9, -128, 127);
  auto da = h.upload(pack_blocks(a, M, K, cfg.batch, cfg.block_in)),
       dw = h.upload(pack_blocks(w, N, K, cfg.block_out, cfg.block_in));
  auto dc = h.drv.alloc(size_t(M) * N);
  emit_blocked_matmul(h.drv, da, dw, dc, M, N, K);
  auto counters = h.drv.synchronize();
  EXPECT_EQ(counters["gemm_macs"], uint64_t(M) * N * K);
  auto c = unpack_blocks(h.download<int8_t>(dc, size_t(M) * N), M, N, cfg.batch, cfg.block_out);
  // An independent plain loop, not reference_matmul (which shares this file's author's assumptions).
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int32_t s = 0;
      for (int q = 0; q < K; ++q) s += int32_t(a[m * K + q]) * w[n * K + q];
      ASSERT_EQ(c[m * N + n], int8_t(s)) << "C[" << m << ", " << n << "]";
    }
}

// conv2d, BATCH images of BLOCK_IN -> BLOCK_OUT channels (1x16x14x14 -> 16 on the default config),
// 3x3, pad 1, stride 1, then out = clamp(acc >> shift, 0, 127) on the ALU. One output row per
// step: three padded input rows are loaded (the padding comes from the DMA), nine micro-ops (one
// per kernel tap) run over the row's columns. Load, compute and store hand off with tokens.
TEST_P(SimPrograms, Conv2dLayerWithRequantize) {
  AccelConfig cfg = test::test_configs()[GetParam()];
  const int N = cfg.batch, CI = cfg.block_in, CO = cfg.block_out, H = 14, W = 14, shift = 8;
  AccelHarness h(cfg);
  auto x = test::random_values<int8_t>(N * CI * H * W, 10, -128, 127),
       k = test::random_values<int8_t>(CO * CI * 9, 11, -128, 127);
  // Input as [H][W] entries of [N][CI], weights as [ky][kx] entries of [CO][CI].
  std::vector<int8_t> xp(x.size()), kp(k.size());
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < CI; ++c)
      for (int y = 0; y < H; ++y)
        for (int xx = 0; xx < W; ++xx) xp[((y * W + xx) * N + n) * CI + c] = x[((n * CI + c) * H + y) * W + xx];
  for (int o = 0; o < CO; ++o)
    for (int i = 0; i < CI; ++i)
      for (int t = 0; t < 9; ++t) kp[(t * CO + o) * CI + i] = k[(o * CI + i) * 9 + t];
  auto dx = h.upload(xp), dk = h.upload(kp);
  auto dy = h.drv.alloc(N * CO * H * W);
  h.drv.load_2d(MemType::Wgt, 0, dk.addr, 1, 9, 9);
  const int pw = W + 2;
  for (int y = 0; y < H; ++y) {
    int top = y - 1, rows = 3, pad0 = 0, pad1 = 0;
    if (top < 0) pad0 = -top, rows += top, top = 0;
    if (top + rows > H) pad1 = top + rows - H, rows = H - top;
    if (y > 0) h.drv.dep_pop(Module::Compute, Module::Load);
    h.drv.load_2d(MemType::Inp, 0, dx.addr + uint64_t(top) * W * cfg.inp_block_bytes(), rows, W, W, pad0, pad1, 1, 1);
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
    h.drv.store_2d(0, dy.addr + uint64_t(y) * W * cfg.out_block_bytes(), 1, W, W);
    h.drv.dep_push(Module::Store, Module::Compute);
  }
  h.drv.dep_pop(Module::Compute, Module::Load);
  h.drv.dep_pop(Module::Store, Module::Compute);
  auto counters = h.drv.synchronize();
  EXPECT_EQ(counters["gemm_macs"], uint64_t(H) * W * 9 * N * CO * CI);
  EXPECT_EQ(counters["alu_ops"], uint64_t(3) * H * W * N * CO);
  EXPECT_EQ(h.drv.uploaded_kernels(), 3u);  // reset, taps and requantize kernels, reused for all rows
  auto got = h.download<int8_t>(dy, N * CO * H * W);
  int nonzero = 0;
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < CO; ++o)
      for (int y = 0; y < H; ++y)
        for (int xx = 0; xx < W; ++xx) {
          int32_t s = 0;
          for (int i = 0; i < CI; ++i)
            for (int ky = 0; ky < 3; ++ky)
              for (int kx = 0; kx < 3; ++kx) {
                int iy = y + ky - 1, ix = xx + kx - 1;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                s += int32_t(x[((n * CI + i) * H + iy) * W + ix]) * k[(o * CI + i) * 9 + ky * 3 + kx];
              }
          int32_t want = std::min(127, std::max(0, s >> shift));
          nonzero += want > 0 && want < 127;
          ASSERT_EQ(got[((y * W + xx) * N + n) * CO + o], want) << "n=" << n << " o=" << o << " y=" << y << " x=" << xx;
        }
  EXPECT_GT(nonzero, N * CO * H * W / 10);  // the requantization keeps information, not just 0 / 127
}

}  // namespace
}  // namespace loom::accel

namespace loom::accel {
namespace {

TEST(AccelPrograms, SaveLoadRunWithChecks) {
  if (test::test_backend_is_board())
    GTEST_SKIP() << "a board's runtime places buffers itself: recorded programs replay at their addresses only on "
                    "simulators (alloc_at)";
  AccelConfig cfg = default_config();
  sim::FunctionalSim builder_dev(cfg);
  Program p = matmul_program(builder_dev, cfg, 4, 32, 64, 3);
  test::TestDir dir;
  std::string path = dir.file("matmul.loomprg");
  p.save(path);
  Program q = Program::load(path);
  EXPECT_EQ(q.instructions().size(), p.insn_count);
  EXPECT_EQ(q.instructions().back().opcode, Opcode::Finish);
  auto fresh = test::make_test_device(cfg);
  ProgramResult r = run_program(q, *fresh);
  EXPECT_EQ(r.mismatched_checks, 0u) << r.report;
  EXPECT_EQ(r.counters["gemm_macs"], uint64_t(4) * 32 * 64);
  // A corrupted expectation is detected.
  q.checks[0].data[5] ^= 1;
  auto again = test::make_test_device(cfg);
  EXPECT_EQ(run_program(q, *again).mismatched_checks, 1u);
  std::ofstream(path, std::ios::binary) << "not a program";
  EXPECT_THROW(Program::load(path), loom::RuntimeError);
}

}  // namespace
}  // namespace loom::accel
