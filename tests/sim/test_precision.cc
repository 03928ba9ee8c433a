// Precision as a config parameter on every accelerator backend built here (fsim, perf, rtl, systemc): the
// shipped W4A8, W4A4, W2A8 and 16-bit-accumulator configs run the blocked matrix product on packed
// narrow data equal to a plain loop written here (its own bit extraction, not accel/packing.h);
// 16-bit accumulators wrap where 32-bit ones do not; narrower weights move fewer DMA bytes; the
// RTL and SystemC compute the same; the schedules refuse 16-bit accumulators by name.
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

// The backends built here for `cfg` (the RTL and SystemC only where its Verilated model was built).
std::vector<std::string> backends_for(const AccelConfig& cfg) {
  std::vector<std::string> out;
  for (const std::string& b : {"fsim", "perf", "rtl", "systemc"}) try {
      check_accel_backend(b, cfg.to_json());
      out.push_back(b);
    } catch (const Error&) {
    }
  return out;
}

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
  std::map<std::string, uint64_t> fsim_counters;
  for (const std::string& backend : backends_for(cfg)) {
    SCOPED_TRACE(GetParam() + " on " + backend);
    auto dev = make_accel_device(backend, cfg.to_json());
    accel::ProgramResult r = accel::run_program(p, *dev);
    ASSERT_EQ(r.mismatched_checks, 0u) << r.report;
    std::vector<uint8_t> c(size_t(M) * N * size_t(cfg.out_bits) / 8);
    dev->read(p.checks[0].addr, c.data(), c.size());
    int lo[2] = {0, 0}, hi[2] = {0, 0};  // the inputs' and the weights' extremes
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        int64_t sum = 0;
        for (int k = 0; k < K; ++k) {
          int x = element(a, blocked(m, k, K, cfg.batch, cfg.block_in), cfg.inp_bits);
          int y = element(w, blocked(n, k, K, cfg.block_out, cfg.block_in), cfg.wgt_bits);
          lo[0] = std::min(lo[0], x), hi[0] = std::max(hi[0], x), lo[1] = std::min(lo[1], y),
          hi[1] = std::max(hi[1], y);
          sum += x * y;
        }
        // The low out_bits bits of the sum, as a signed value.
        int want = int(uint64_t(sum) & ((1u << cfg.out_bits) - 1));
        if (want & (1 << (cfg.out_bits - 1))) want -= 1 << cfg.out_bits;
        ASSERT_EQ(element(c, blocked(m, n, N, cfg.batch, cfg.block_out), cfg.out_bits), want)
            << "at (" << m << ", " << n << ")";
      }
    // The operands span their widths' ranges (the narrow ones every value).
    for (int s = 0; s < 2; ++s) {
      const int bits = s == 0 ? cfg.inp_bits : cfg.wgt_bits, min = -(1 << (bits - 1)), max = (1 << (bits - 1)) - 1;
      EXPECT_TRUE(bits == 8 ? lo[s] < min / 2 && hi[s] > max / 2 : lo[s] == min && hi[s] == max)
          << (s ? "weights" : "inputs") << " in [" << lo[s] << ", " << hi[s] << "]";
    }
    // Every backend moves and multiplies the same amounts.
    if (backend == "fsim") fsim_counters = r.counters;
    for (const char* k : {"gemm_macs", "dma_load_bytes_inp", "dma_load_bytes_wgt", "dma_store_bytes"})
      EXPECT_EQ(r.counters.at(k), fsim_counters.at(k)) << k;
  }
#ifdef LOOM_HAVE_RTL
  // Each shipped precision has its RTL model in the default build (LOOM_RTL_CONFIGS).
  EXPECT_NO_THROW(check_accel_backend("rtl", cfg.to_json()));
#endif
}

// The products' corners on every backend: neighbouring weight columns (the products a DSP48 packs
// together) take each pair of {min, -1, max, 0, 1} against inputs at their extremes, where a packed
// multiplier's operand and borrows are widest. The whole accumulator is observed: stored, shifted
// right by out_bits and stored again until its top bit.
TEST_P(Precision, ExtremeProductsOnEveryBackend) {
  sim::register_backends();
  const AccelConfig cfg = shipped(GetParam());
  const int B = cfg.batch, BI = cfg.block_in, BO = cfg.block_out, ob = cfg.out_bits;
  const int wmin = -(1 << (cfg.wgt_bits - 1)), wmax = -wmin - 1, xmin = -(1 << (cfg.inp_bits - 1)), xmax = -xmin - 1;
  const int wv[8] = {wmin, wmin, -1, wmax, 0, 1, wmax, wmin}, xv[4] = {xmin, xmax, -1, xmin};
  auto weight = [&](int o, int q) { return wv[(o + 3 * q) % 8]; };
  auto input = [&](int s, int b, int q) { return s == 0 ? xmin : xv[(q + b) % 4]; };
  std::vector<int32_t> wq, xq;
  for (int o = 0; o < BO; ++o)
    for (int q = 0; q < BI; ++q) wq.push_back(weight(o, q));
  for (int s = 0; s < 2; ++s)
    for (int b = 0; b < B; ++b)
      for (int q = 0; q < BI; ++q) xq.push_back(input(s, b, q));
  // Packed with bits set here, not by accel/packing.h.
  auto pack = [](const std::vector<int32_t>& v, int bits) {
    std::vector<uint8_t> out((v.size() * size_t(bits) + 7) / 8, 0);
    for (size_t k = 0; k < v.size(); ++k)
      for (int b = 0; b < bits; ++b)
        if ((uint32_t(v[k]) >> b) & 1)
          out[(k * size_t(bits) + size_t(b)) / 8] |= uint8_t(1 << ((k * size_t(bits) + size_t(b)) % 8));
    return out;
  };
  const std::vector<uint8_t> wbytes = pack(wq, cfg.wgt_bits), xbytes = pack(xq, cfg.inp_bits);
  const int steps = (24 + ob - 1) / ob;
  for (const std::string& backend : backends_for(cfg)) {
    SCOPED_TRACE(GetParam() + " on " + backend);
    auto dev = make_accel_device(backend, cfg.to_json());
    accel::Driver drv(*dev, cfg);
    auto bw = drv.alloc(wbytes.size()), bx = drv.alloc(xbytes.size());
    auto bo = drv.alloc(size_t(2 * steps) * size_t(cfg.out_block_bytes()));
    drv.copy_to_device(bw, wbytes.data(), wbytes.size());
    drv.copy_to_device(bx, xbytes.data(), xbytes.size());
    drv.load_2d(accel::MemType::Wgt, 0, bw.addr, 1, 1, 1);
    drv.load_2d(accel::MemType::Inp, 0, bx.addr, 1, 2, 2);
    drv.dep_push(accel::Module::Load, accel::Module::Compute);
    drv.dep_pop(accel::Module::Load, accel::Module::Compute);
    for (int s = 0; s < 2; ++s) {
      drv.gemm(accel::UopKernelBuilder().push(uint32_t(s), uint32_t(s), 0).build(), true);
      drv.gemm(accel::UopKernelBuilder().push(uint32_t(s), uint32_t(s), 0).build(), false);
      for (int m = 0; m < steps; ++m) {
        if (m > 0) drv.alu(accel::UopKernelBuilder().push(uint32_t(s), 0).build(), accel::AluOp::Shr, true, ob);
        drv.dep_push(accel::Module::Compute, accel::Module::Store);
        drv.dep_pop(accel::Module::Compute, accel::Module::Store);
        drv.store_2d(uint32_t(s), bo.addr + uint64_t(s * steps + m) * uint64_t(cfg.out_block_bytes()), 1, 1, 1);
        drv.dep_push(accel::Module::Store, accel::Module::Compute);
        drv.dep_pop(accel::Module::Store, accel::Module::Compute);
      }
    }
    drv.synchronize();
    std::vector<uint8_t> got(size_t(2 * steps) * size_t(cfg.out_block_bytes()));
    drv.copy_from_device(bo, got.data(), got.size());
    for (int s = 0; s < 2; ++s)
      for (int b = 0; b < B; ++b)
        for (int o = 0; o < BO; ++o) {
          int64_t dot = 0;
          for (int q = 0; q < BI; ++q) dot += int64_t(weight(o, q)) * input(s, b, q);
          // wrapped at acc_bits, then each store's low out_bits bits of dot >> (m * out_bits)
          dot = int64_t(uint64_t(dot) << (64 - cfg.acc_bits)) >> (64 - cfg.acc_bits);
          for (int m = 0; m < steps; ++m) {
            std::vector<uint8_t> entry(got.begin() + (s * steps + m) * cfg.out_block_bytes(),
                                       got.begin() + (s * steps + m + 1) * cfg.out_block_bytes());
            int64_t shifted = dot >> std::min(m * ob, 31);
            int want = int(int64_t(uint64_t(shifted) << (64 - ob)) >> (64 - ob));
            ASSERT_EQ(element(entry, size_t(b * BO + o), ob), want)
                << "input " << s << ", row " << b << ", column " << o << ", bits from " << m * ob << " of " << dot;
          }
        }
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, Precision, ::testing::Values("default", "w4a8", "w4a4", "w2a8", "acc16"));

// GEMM then an arithmetic shift by 12 and a store: the sum 16 x 127 x 127 = 258064 wraps in a
// 16-bit accumulator (to -4080, shifted -1) and not in a 32-bit one (63).
int8_t shifted_sum(const AccelConfig& cfg, const std::string& backend) {
  auto device = make_accel_device(backend, cfg.to_json());
  AccelDevice& dev = *device;
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
  sim::register_backends();
  for (const std::string& backend : backends_for(shipped("acc16"))) {
    SCOPED_TRACE(backend);
    EXPECT_EQ(shifted_sum(shipped("default"), backend), 63);
    EXPECT_EQ(shifted_sum(shipped("acc16"), backend), -1);
  }
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

// The accelerator's operators accumulate in 32 bits unless their caller bounds each layer's sums: a
// 16-bit-accumulator config is refused by name by the operator tools, and taken by the compiler
// (whose partition keeps the layers that could overflow on the CPU); narrow operands are not refused.
TEST(PrecisionRefused, SixteenBitAccumulatorsByTheOperatorTools) {
  const AccelConfig a16 = shipped("acc16");
  const std::string says = "accumulate in 32 bits; config 'acc16' is W8A8, 16-bit accumulators";
  EXPECT_NE(test::error_text<ConfigError>([&] { ops::accel_target(a16); }).find(says), std::string::npos);
  EXPECT_NO_THROW(ops::accel_target(a16, /*bounded=*/true));
  graph::BuildOptions bo;
  bo.accel = a16;
  graph::QuantizeOptions q;
  EXPECT_NO_THROW(graph::check_targets(bo, &q));
  for (const char* narrow : {"w4a8", "w4a4", "w2a8"}) {
    EXPECT_NO_THROW(ops::accel_target(shipped(narrow))) << narrow;
    bo.accel = shipped(narrow);
    EXPECT_NO_THROW(graph::check_targets(bo, &q)) << narrow;
  }
}

}  // namespace
}  // namespace loom
