// Precision as a config parameter on the functional simulator and the performance model: the
// shipped W4A8, W4A4, W2A8 and 16-bit-accumulator configs run the blocked matrix product on packed
// narrow data equal to a plain loop written here (its own bit extraction, not accel/packing.h);
// 16-bit accumulators wrap where 32-bit ones do not; narrower weights move fewer DMA bytes; the
// backends and schedules that implement 8-bit operands only refuse the others by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/error_text.h"
#include "loom/accel/driver.h"
#include "loom/accel/examples.h"
#include "loom/accel/program.h"
#include "loom/graph/build.h"
#include "loom/ops/accel_target.h"
#include "loom/runtime/error.h"
#include "loom/sim/backends.h"
#include "loom/sim/functional_sim.h"
#include "loom/sim/perf_model.h"

namespace loom {
namespace {

using accel::AccelConfig;

AccelConfig shipped(const std::string& name) {
  return AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + name + ".json");
}

// Element k of `bits`-bit two's complement values packed from the lowest bit of byte 0 upwards.
int element(const std::vector<uint8_t>& bytes, size_t k, int bits) {
  int v = 0;
  for (int b = 0; b < bits; ++b) {
    size_t bit = k * size_t(bits) + size_t(b);
    v |= ((bytes[bit / 8] >> (bit % 8)) & 1) << b;
  }
  return v & (1 << (bits - 1)) ? v - (1 << bits) : v;
}

// Row-major element (r, c) of a [rows/rb][cols/cb][rb][cb]-blocked matrix.
size_t blocked(int r, int c, int cols, int rb, int cb) {
  return ((size_t(r / rb) * (cols / cb) + c / cb) * rb + r % rb) * cb + c % cb;
}

class Precision : public ::testing::TestWithParam<std::string> {};

TEST_P(Precision, BlockedMatmulEqualsAPlainLoop) {
  sim::register_backends();
  const AccelConfig cfg = shipped(GetParam());
  const int M = 4 * cfg.batch, N = 4 * cfg.block_out, K = 8 * cfg.block_in;
  sim::FunctionalSim fsim(cfg);
  accel::Program p = accel::matmul_program(fsim, cfg, M, N, K, 11);
  ASSERT_GE(p.segments.size(), 3u);
  const std::vector<uint8_t>&a = p.segments[0].data, &w = p.segments[1].data;
  ASSERT_EQ(a.size(), size_t(M) * K * size_t(cfg.inp_bits) / 8);
  ASSERT_EQ(w.size(), size_t(N) * K * size_t(cfg.wgt_bits) / 8);
  sim::FunctionalSim dev(cfg);
  accel::ProgramResult r = accel::run_program(p, dev);
  ASSERT_EQ(r.mismatched_checks, 0u) << r.report;
  std::vector<uint8_t> c(size_t(M) * N * size_t(cfg.out_bits) / 8);
  dev.read(p.checks[0].addr, c.data(), c.size());
  int lo[2] = {0, 0}, hi[2] = {0, 0};  // the inputs' and the weights' extremes
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int64_t sum = 0;
      for (int k = 0; k < K; ++k) {
        int x = element(a, blocked(m, k, K, cfg.batch, cfg.block_in), cfg.inp_bits);
        int y = element(w, blocked(n, k, K, cfg.block_out, cfg.block_in), cfg.wgt_bits);
        lo[0] = std::min(lo[0], x), hi[0] = std::max(hi[0], x), lo[1] = std::min(lo[1], y), hi[1] = std::max(hi[1], y);
        sum += x * y;
      }
      // The low out_bits bits of the sum, as a signed value.
      int want = int(uint64_t(sum) & ((1u << cfg.out_bits) - 1));
      if (want & (1 << (cfg.out_bits - 1))) want -= 1 << cfg.out_bits;
      ASSERT_EQ(element(c, blocked(m, n, N, cfg.batch, cfg.block_out), cfg.out_bits), want)
          << GetParam() << " at (" << m << ", " << n << ")";
    }
  // The operands span their widths' ranges (the narrow ones every value).
  for (int s = 0; s < 2; ++s) {
    const int bits = s == 0 ? cfg.inp_bits : cfg.wgt_bits, min = -(1 << (bits - 1)), max = (1 << (bits - 1)) - 1;
    EXPECT_TRUE(bits == 8 ? lo[s] < min / 2 && hi[s] > max / 2 : lo[s] == min && hi[s] == max)
        << (s ? "weights" : "inputs") << " in [" << lo[s] << ", " << hi[s] << "]";
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, Precision, ::testing::Values("default", "w4a8", "w4a4", "w2a8", "acc16"));

// GEMM then an arithmetic shift by 12 and a store: the sum 16 x 127 x 127 = 258064 wraps in a
// 16-bit accumulator (to -4080, shifted -1) and not in a 32-bit one (63).
int8_t shifted_sum(const AccelConfig& cfg) {
  sim::FunctionalSim dev(cfg);
  accel::Driver drv(dev, cfg);
  std::vector<int8_t> x(size_t(cfg.inp_block_bytes()), 127), k(size_t(cfg.wgt_block_bytes()), 127);
  auto bx = drv.alloc(x.size()), bw = drv.alloc(k.size()), bo = drv.alloc(size_t(cfg.out_block_bytes()));
  drv.copy_to_device(bx, x.data(), x.size());
  drv.copy_to_device(bw, k.data(), k.size());
  drv.load_2d(accel::MemType::Wgt, 0, bw.addr, 1, 1, 1);
  drv.load_2d(accel::MemType::Inp, 0, bx.addr, 1, 1, 1);
  drv.dep_push(accel::Module::Load, accel::Module::Compute);
  drv.dep_pop(accel::Module::Load, accel::Module::Compute);
  drv.gemm(accel::UopKernelBuilder().push(0, 0, 0).build(), true);
  drv.gemm(accel::UopKernelBuilder().push(0, 0, 0).build(), false);
  drv.alu(accel::UopKernelBuilder().push(0, 0, 0).build(), accel::AluOp::Shr, true, 12);
  drv.dep_push(accel::Module::Compute, accel::Module::Store);
  drv.dep_pop(accel::Module::Compute, accel::Module::Store);
  drv.store_2d(0, bo.addr, 1, 1, 1);
  drv.synchronize();
  std::vector<int8_t> out(size_t(cfg.out_block_bytes()));
  drv.copy_from_device(bo, out.data(), out.size());
  for (int8_t v : out) EXPECT_EQ(v, out[0]);
  return out[0];
}

TEST(PrecisionAccumulator, SixteenBitsWrapAround) {
  EXPECT_EQ(shifted_sum(shipped("default")), 63);
  EXPECT_EQ(shifted_sum(shipped("acc16")), -1);
}

// W4A8 moves half the weight bytes of W8A8 for the same product, and the performance model times it.
TEST(PrecisionPerf, NarrowWeightsMoveFewerBytes) {
  std::map<std::string, uint64_t> wgt_bytes;
  for (const std::string& name : {"default", "w4a8", "w2a8"}) {
    const AccelConfig cfg = shipped(name);
    sim::PerfSim perf(cfg);
    accel::Program p = accel::matmul_program(perf, cfg, 16, 64, 128, 3);
    sim::PerfSim dev(cfg);
    accel::ProgramResult r = accel::run_program(p, dev);
    ASSERT_EQ(r.mismatched_checks, 0u) << name << ": " << r.report;
    EXPECT_GT(r.cycles, 0u) << name;
    wgt_bytes[name] = r.counters.at("dma_load_bytes_wgt");
  }
  EXPECT_EQ(wgt_bytes["w4a8"] * 2, wgt_bytes["default"]);
  EXPECT_EQ(wgt_bytes["w2a8"] * 4, wgt_bytes["default"]);
}

// What implements 8-bit operands only says so, naming the config and its precision.
TEST(PrecisionRefused, ByTheRtlTheSchedulesAndTheCompiler) {
  sim::register_backends();
  const AccelConfig w4 = shipped("w4a8");
  const std::string says =
      "implements 8-bit inputs and weights with 32-bit accumulators (W8A8); config 'w4a8' is "
      "W4A8, 32-bit accumulators";
  for (const std::string& backend : accel_backends())
    if (backend == "rtl" || backend == "systemc") {
      std::string e = test::error_text<Error>([&] { check_accel_backend(backend, w4.to_json()); });
      EXPECT_NE(e.find(says), std::string::npos) << backend << ": " << e;
    }
  EXPECT_NE(test::error_text<ConfigError>([&] { ops::accel_target(w4); }).find(says), std::string::npos);
  graph::BuildOptions bo;
  bo.accel = w4;
  graph::QuantizeOptions q;
  EXPECT_NE(test::error_text<ConfigError>([&] { graph::check_targets(bo, &q); }).find("the accelerator target " + says),
            std::string::npos);
}

}  // namespace
}  // namespace loom
