// The accelerator form of a quantized model's layers: int8 conv2d / dense with an int32 bias and
// the model's round-half-up requantization ((x + 2^(s-1)) >> s, then the clamp; the rounding is
// folded into the bias) compiled for the accelerator and run on the functional simulator under
// every module interleaving, bit-exact against plain C++ written from the definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <tuple>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/codegen/accel.h"
#include "loom/ops/accel_schedules.h"
#include "loom/ops/accel_target.h"
#include "loom/schedule/lower.h"
#include "loom/sim/functional_sim.h"

namespace loom {
namespace {

using namespace loom::ir;

struct ConvCase {
  int c, oc, h, w, k, stride, pad, shift;
  bool relu;
  const char* config = "default";
};

std::vector<int8_t> random_int8(size_t n, uint64_t seed) {
  std::vector<int8_t> v(n);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& e : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    e = int8_t(int(x % 256) - 128);
  }
  return v;
}

int8_t requantize_round(int64_t acc, int shift, int lo, int hi) {
  int64_t v = shift > 0 ? (acc + (int64_t(1) << (shift - 1))) >> shift : acc;  // >> of a negative value floors
  return int8_t(std::clamp<int64_t>(v, lo, hi));
}

NDArray from_bytes(const std::vector<int64_t>& shape, DataType t, const void* data) {
  NDArray a = NDArray::empty(shape, t);
  std::memcpy(a.raw_data(), data, a.nbytes());
  return a;
}

void run_on_fsim(const LoweredFunc& f, const accel::AccelConfig& cfg, std::vector<NDArray>& args,
                 const std::vector<int8_t>& want, const std::string& what) {
  codegen::AccelModule m = codegen::build_accel(f, cfg);
  // The requantizing epilogue in two ALU passes: a bias (the function's third argument) moved
  // into the accumulators instead of their reset (the GEMMs accumulate onto it; no ADD with a
  // register operand after them), and the shift with the clamp's two bounds (an int8 range, or its
  // non-negative part with ReLU) as one SHRSAT.
  // (The stream's closing pass may come in parts, each STORE part beside the next pass: counted
  // by the entries each op covers too.)
  std::map<accel::AluOp, int> alu;
  std::map<accel::AluOp, int64_t> entries;
  int resets = 0;
  for (const accel::Instruction& i : m.instructions()) {
    if (i.opcode == accel::Opcode::Alu) {
      ++alu[i.alu_op];
      entries[i.alu_op] += int64_t(i.iter_out) * i.iter_in * (i.uop_end - i.uop_begin);
    }
    resets += i.opcode == accel::Opcode::Gemm && i.reset;
  }
  // (A shift by 0 is no SHR: the clamp stays one CLIP.)
  const int clamps = alu[accel::AluOp::ShrSat] + alu[accel::AluOp::Clip];
  EXPECT_GT(clamps, 0) << what;
  EXPECT_EQ(alu[accel::AluOp::Shr], 0) << what;
  EXPECT_EQ(alu[accel::AluOp::Add] + alu[accel::AluOp::Min] + alu[accel::AluOp::Max], 0) << what;
  if (f.args.size() == 4) {
    EXPECT_EQ(resets, 0) << what;
    EXPECT_EQ(entries[accel::AluOp::Mov], entries[accel::AluOp::ShrSat] + entries[accel::AluOp::Clip]) << what;
  }
  using P = sim::FunctionalSim::Interleave;
  for (auto [policy, seed] : {std::pair{P::LoadFirst, 0}, std::pair{P::StoreFirst, 0}, std::pair{P::Random, 3}}) {
    sim::FunctionalSim dev(cfg);
    dev.set_interleave(policy, seed);
    std::memset(args.back().raw_data(), 0x55, args.back().nbytes());
    m.run(dev, args);
    const int8_t* got = static_cast<const int8_t*>(args.back().raw_data());
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(int(got[i]), int(want[i]))
          << what << ": element " << i << " (blocked order), interleave " << int(policy);
  }
}

class AccelModelConv : public ::testing::TestWithParam<ConvCase> {};
// Model layers, and the shapes that used to fail (issue: every legal shape compiles): odd block
// counts under virtual threads, 13x17 images, 31/47/55 outputs (no tile of 7/14 divides them),
// 5x5 and 7x7 stride-2 kernels, and the batch-2 config.
INSTANTIATE_TEST_SUITE_P(
    Layers, AccelModelConv,
    ::testing::Values(ConvCase{32, 64, 14, 14, 3, 1, 1, 9, true}, ConvCase{64, 32, 14, 14, 1, 2, 0, 7, false},
                      ConvCase{16, 48, 9, 11, 3, 2, 1, 10, true}, ConvCase{32, 32, 7, 7, 3, 1, 1, 0, false},
                      ConvCase{16, 48, 13, 17, 3, 1, 1, 8, true}, ConvCase{16, 16, 31, 31, 3, 1, 1, 8, true},
                      ConvCase{16, 16, 47, 47, 3, 1, 1, 8, false}, ConvCase{16, 32, 55, 55, 3, 1, 1, 8, true},
                      ConvCase{16, 32, 23, 23, 5, 2, 2, 9, true}, ConvCase{16, 64, 32, 32, 7, 2, 3, 10, true},
                      ConvCase{32, 48, 10, 10, 3, 1, 1, 8, true, "batch2"},
                      ConvCase{64, 96, 12, 12, 3, 2, 1, 8, true, "1x32x32"}),
    [](const auto& p) {
      auto c = p.param;
      return std::string(c.config == std::string("default") ? "" : std::string(c.config) + "_") + std::to_string(c.c) +
             "to" + std::to_string(c.oc) + "_" + std::to_string(c.h) + "x" + std::to_string(c.w) + "_k" +
             std::to_string(c.k) + "s" + std::to_string(c.stride) + "_shift" + std::to_string(c.shift);
    });

TEST_P(AccelModelConv, BiasAndRoundingMatchTheModelDefinition) {
  ConvCase c = GetParam();
  accel::AccelConfig cfg = accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + c.config + ".json");
  const int B = cfg.block_in, BO = cfg.block_out, N = cfg.batch;
  int oh = (c.h + 2 * c.pad - c.k) / c.stride + 1, ow = (c.w + 2 * c.pad - c.k) / c.stride + 1;
  std::vector<int8_t> x = random_int8(size_t(N) * c.c * c.h * c.w, 1),
                      wt = random_int8(size_t(c.oc) * c.c * c.k * c.k, 2);
  std::vector<int32_t> bias(c.oc);
  for (int o = 0; o < c.oc; ++o) bias[o] = (o * 7919 % 20001) - 10000;
  int lo = c.relu ? 0 : -128, hi = 127;
  // Plain C++ from the definition, NCHW / OIHW.
  std::vector<int8_t> ref(size_t(N) * c.oc * oh * ow);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < c.oc; ++o)
      for (int y = 0; y < oh; ++y)
        for (int xx = 0; xx < ow; ++xx) {
          int64_t acc = bias[o];
          for (int i = 0; i < c.c; ++i)
            for (int dy = 0; dy < c.k; ++dy)
              for (int dx = 0; dx < c.k; ++dx) {
                int iy = y * c.stride + dy - c.pad, ix = xx * c.stride + dx - c.pad;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                acc += int64_t(x[((size_t(n) * c.c + i) * c.h + iy) * c.w + ix]) *
                       wt[((size_t(o) * c.c + i) * c.k + dy) * c.k + dx];
              }
          ref[((size_t(n) * c.oc + o) * oh + y) * ow + xx] = requantize_round(acc, c.shift, lo, hi);
        }
  // Blocked operands: data [1, C/B, H, W, N, B], weights [OC/BO, C/B, K, K, BO, B], bias [OC/BO, N, BO].
  std::vector<int8_t> xb(x.size()), wb(wt.size()), want(ref.size());
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < c.c; ++i)
      for (int p = 0; p < c.h * c.w; ++p)
        xb[((size_t(i / B) * c.h * c.w + p) * N + n) * B + i % B] = x[(size_t(n) * c.c + i) * c.h * c.w + p];
  for (int o = 0; o < c.oc; ++o)
    for (int i = 0; i < c.c; ++i)
      for (int t = 0; t < c.k * c.k; ++t)
        wb[((size_t(o / BO) * (c.c / B) + i / B) * c.k * c.k + t) * BO * B + (o % BO) * B + i % B] =
            wt[(size_t(o) * c.c + i) * c.k * c.k + t];
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < c.oc; ++o)
      for (int p = 0; p < oh * ow; ++p)
        want[((size_t(o / BO) * oh * ow + p) * N + n) * BO + o % BO] = ref[(size_t(n) * c.oc + o) * oh * ow + p];
  std::vector<int32_t> rb = ops::rounding_bias(bias, c.shift), bb(size_t(N) * c.oc);
  for (int o = 0; o < c.oc; ++o)
    for (int n = 0; n < N; ++n) bb[(size_t(o / BO) * N + n) * BO + o % BO] = rb[o];

  Tensor X = placeholder({1, c.c / B, c.h, c.w, N, B}, DataType::Int(8), "X");
  Tensor W = placeholder({c.oc / BO, c.c / B, c.k, c.k, BO, B}, DataType::Int(8), "W");
  Tensor Bi = placeholder({c.oc / BO, N, BO}, DataType::Int(32), "bias");
  ops::QuantizedStages q = ops::conv2d_int8_blocked(X, W, Bi, c.stride, c.pad, {c.shift, c.relu, lo, hi});
  schedule::Schedule s({q.out});
  ops::ConvShape shape{oh, ow, c.oc / BO, c.c / B, c.k, c.k, c.stride, true};
  ops::schedule_conv2d_int8_accel(s, q, {N, B, BO}, ops::choose_conv_tiling(shape, 2, ops::accel_target(cfg).limits));
  std::vector<NDArray> args = {from_bytes({1, c.c / B, c.h, c.w, N, B}, DataType::Int(8), xb.data()),
                               from_bytes({c.oc / BO, c.c / B, c.k, c.k, BO, B}, DataType::Int(8), wb.data()),
                               from_bytes({c.oc / BO, N, BO}, DataType::Int(32), bb.data()),
                               NDArray::zeros({1, c.oc / BO, oh, ow, N, BO}, DataType::Int(8))};
  run_on_fsim(schedule::lower(s, {X, W, Bi, q.out}, "conv"), cfg, args, want, "conv");
}

// Tilings are searched within the scratchpads; what cannot fit, or does not divide, is named.
TEST(AccelTiling, SearchFitsEveryScratchpadAndErrorsNameTheLimit) {
  ops::AccelLimits lim{2048, 1024, 2048};
  for (int size : {31, 47, 55, 56, 13}) {
    ops::ConvShape c{size, size, 4, 2, 3, 3, 1, true};
    ops::AccelConvTiling t = ops::choose_conv_tiling(c, 2, lim);
    EXPECT_NO_THROW(ops::check_conv_tiling(c, t, lim)) << size;
  }
  ops::ConvShape c{47, 47, 4, 2, 3, 3, 1, true};
  std::string msg = test::error_text<ScheduleError>([&] { ops::check_conv_tiling(c, {47, 47, 1, 1}, lim); });
  EXPECT_NE(msg.find("the acc scratchpad needs 2210 entries, has 2048"), std::string::npos) << msg;
  msg = test::error_text<ScheduleError>([&] { ops::check_conv_tiling(c, {7, 47, 1, 1}, lim); });
  EXPECT_NE(msg.find("h_block 7 does not divide the 47 output rows; use one of 1, 47"), std::string::npos) << msg;
  msg = test::error_text<ScheduleError>([&] {
    ops::check_conv_tiling({8, 8, 3, 1, 3, 3, 1, false}, {8, 8, 1, 2}, lim);
  });
  EXPECT_NE(msg.find("oc_blocks x virtual threads = 2 does not divide the 3 output-channel blocks"), std::string::npos)
      << msg;
  msg = test::error_text<ScheduleError>([&] {
    ops::choose_conv_tiling({8, 8, 1, 1, 7, 7, 1, false}, 1, {16, 1024, 2048});
  });
  EXPECT_NE(msg.find("kernel 7x7 needs 49 input and weight entries"), std::string::npos) << msg;
}

TEST(AccelModelDense, BiasAndRoundingMatchTheModelDefinition) {
  accel::AccelConfig cfg = accel::default_config();
  const int B = cfg.block_in, BO = cfg.block_out, C = 64, OC = 48, shift = 8;
  std::vector<int8_t> x = random_int8(C, 5), wt = random_int8(size_t(OC) * C, 6);
  std::vector<int32_t> bias(OC);
  for (int o = 0; o < OC; ++o) bias[o] = o % 2 ? 128 * o : -1000 - o;  // some exactly on a rounding half
  std::vector<int8_t> want(OC);
  for (int o = 0; o < OC; ++o) {
    int64_t acc = bias[o];
    for (int i = 0; i < C; ++i) acc += int64_t(x[i]) * wt[size_t(o) * C + i];
    want[o] = requantize_round(acc, shift, -128, 127);  // blocked [1, OC/BO, 1, BO] is plain order
  }
  std::vector<int8_t> wb(wt.size());
  for (int o = 0; o < OC; ++o)
    for (int i = 0; i < C; ++i)
      wb[(size_t(o / BO) * (C / B) + i / B) * BO * B + (o % BO) * B + i % B] = wt[size_t(o) * C + i];
  std::vector<int32_t> bb = ops::rounding_bias(bias, shift);
  Tensor X = placeholder({1, C / B, 1, B}, DataType::Int(8), "X");
  Tensor W = placeholder({OC / BO, C / B, BO, B}, DataType::Int(8), "W");
  Tensor Bi = placeholder({OC / BO, 1, BO}, DataType::Int(32), "bias");
  ops::QuantizedStages q = ops::dense_int8_blocked(X, W, Bi, {shift, false, -128, 127});
  schedule::Schedule s({q.out});
  ops::schedule_dense_int8_accel(s, q, {1, B, BO}, ops::AccelDenseTiling{1, 1, 1});
  std::vector<NDArray> args = {from_bytes({1, C / B, 1, B}, DataType::Int(8), x.data()),
                               from_bytes({OC / BO, C / B, BO, B}, DataType::Int(8), wb.data()),
                               from_bytes({OC / BO, 1, BO}, DataType::Int(32), bb.data()),
                               NDArray::zeros({1, OC / BO, 1, BO}, DataType::Int(8))};
  run_on_fsim(schedule::lower(s, {X, W, Bi, q.out}, "dense"), cfg, args, want, "dense");
}

// Dense layers under the chosen chunked tiling (all input blocks per load, many output blocks per
// GEMM instruction), on every config, odd block counts included: bit-exact against the definition.
TEST(AccelModelDense, ChosenTilingsOnEveryConfig) {
  struct Case {
    const char* config;
    int batch_blocks, ic, oc, vt;
  };
  for (Case c : {Case{"default", 1, 32, 63, 2}, Case{"default", 1, 5, 7, 2}, Case{"default", 2, 3, 4, 2},
                 Case{"batch2", 1, 4, 6, 2}, Case{"1x32x32", 1, 3, 5, 1}}) {
    SCOPED_TRACE(std::string(c.config) + " " + std::to_string(c.ic) + "->" + std::to_string(c.oc));
    accel::AccelConfig cfg = accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + c.config + ".json");
    ops::Blocking b{cfg.batch, cfg.block_in, cfg.block_out};
    Tensor X = placeholder({c.batch_blocks, c.ic, b.batch, b.block_in}, DataType::Int(8), "X");
    Tensor W = placeholder({c.oc, c.ic, b.block_out, b.block_in}, DataType::Int(8), "W");
    auto q = ops::dense_int8_blocked(X, W, {7, true});
    schedule::Schedule s({q.out});
    ops::schedule_dense_int8_accel(
        s, q, b, ops::choose_dense_tiling({c.batch_blocks, c.ic, c.oc}, c.vt, ops::accel_target(cfg).limits));
    std::vector<NDArray> args = {test::random_array(X, 1, -128, 127), test::random_array(W, 2, -128, 127),
                                 test::empty_like(q.out)};
    NDArray want = reference_eval({q.out}, {{X.op().get(), args[0]}, {W.op().get(), args[1]}})[0];
    std::vector<int8_t> w(want.data<int8_t>(), want.data<int8_t>() + want.numel());
    run_on_fsim(schedule::lower(s, {X, W, q.out}, "dense"), cfg, args, w, "dense");
  }
}

TEST(AccelModelDense, ImpossibleTilingNamesTheScratchpad) {
  try {
    ops::choose_dense_tiling({1, 4, 4}, 1, {0, 8, 8});
    FAIL();
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("inp 0"), std::string::npos) << e.what();
  }
}

// The conv chooser's tilings pass its own checker on the shapes where the default heuristic does
// not fit (31x31 and 47x47 outputs with two contexts, AlexNet's first layer), on every config.
TEST(AccelModelConv, ChosenTilingsPassTheChecker) {
  for (const char* config : {"default", "1x32x32", "batch2"}) {
    const ops::AccelLimits lim =
        ops::accel_target(accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + config + ".json")).limits;
    for (ops::ConvShape c :
         {ops::ConvShape{31, 31, 4, 4, 3, 3, 1, true}, ops::ConvShape{47, 47, 2, 2, 3, 3, 1, true},
          ops::ConvShape{55, 55, 4, 1, 11, 11, 4, true}, ops::ConvShape{7, 7, 32, 32, 3, 3, 1, true}})
      for (int vt : {1, 2, 4}) {
        SCOPED_TRACE(std::string(config) + " " + std::to_string(c.out_h) + "x" + std::to_string(c.out_w) + " vt " +
                     std::to_string(vt));
        EXPECT_NO_THROW(ops::check_conv_tiling(c, ops::choose_conv_tiling(c, vt, lim), lim));
      }
  }
}

// An add tile is one channel block, and the largest one whose operands (half the input
// scratchpad) and widened stages (a quarter of the accumulator scratchpad) fit in every context:
// ResNet-18's 56x56 adds take 4 whole rows. Contexts that do not divide the blocks, or whose
// identity blocks overflow the weight scratchpad, fall back to one; nothing fitting is an error
// naming the scratchpads.
TEST(AccelModelAdd, TilesAreTheLargestThatFitOneBlock) {
  const ops::AccelLimits lim = ops::accel_target(accel::default_config()).limits;  // inp 2048, acc 2048
  auto tile = [&](int h, int w, int blocks, int vt, const ops::AccelLimits& l) {
    ops::AccelConvTiling t = ops::choose_add_tiling({.out_h = h, .out_w = w, .channel_blocks = blocks}, vt, l);
    return std::tuple(t.h_block, t.w_block, t.oc_blocks, t.virtual_threads);
  };
  EXPECT_EQ(tile(56, 56, 4, 2, lim), std::tuple(4, 56, 1, 2));    // 224 entries a context: 448 of acc's 512
  EXPECT_EQ(tile(28, 28, 8, 2, lim), std::tuple(7, 28, 1, 2));    // 196, whole rows before 14x14
  EXPECT_EQ(tile(14, 14, 16, 2, lim), std::tuple(14, 14, 1, 2));  // the whole map
  EXPECT_EQ(tile(56, 56, 4, 1, lim), std::tuple(8, 56, 1, 1));    // one context: twice the entries
  EXPECT_EQ(tile(56, 56, 3, 2, lim), std::tuple(8, 56, 1, 1));    // 2 does not divide 3 blocks
  // The input scratchpad binding (64 entries, 32 a context); the weight scratchpad too small for
  // two contexts' identity blocks.
  EXPECT_EQ(tile(56, 56, 4, 2, ops::AccelLimits{128, 64, 4096}), std::tuple(4, 8, 1, 2));
  EXPECT_EQ(tile(56, 56, 4, 2, ops::AccelLimits{2048, 3, 2048}), std::tuple(8, 56, 1, 1));
  for (const char* config : {"default", "1x32x32", "batch2"}) {
    const ops::AccelLimits l =
        ops::accel_target(accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + config + ".json")).limits;
    for (auto [h, w, blocks] :
         {std::tuple{56, 56, 4}, std::tuple{31, 31, 3}, std::tuple{7, 56, 8}, std::tuple{7, 7, 32}})
      for (int vt : {1, 2, 4}) {
        SCOPED_TRACE(std::string(config) + " " + std::to_string(h) + "x" + std::to_string(w) + " vt " +
                     std::to_string(vt));
        auto [th, tw, tb, tvt] = tile(h, w, blocks, vt, l);
        EXPECT_EQ(tb, 1);
        EXPECT_EQ(h % th, 0);
        EXPECT_EQ(w % tw, 0);
        EXPECT_EQ(blocks % tvt, 0);
        const int64_t entries = int64_t(th) * tw * tvt;
        EXPECT_LE(entries, l.inp / 2);
        EXPECT_LE(entries, l.acc / 4);
        EXPECT_LE(2 * tvt, l.wgt);
        // No larger tile of whole factors fits with the same contexts.
        for (int h2 = 1; h2 <= h; ++h2)
          for (int w2 = 1; w2 <= w; ++w2)
            if (h % h2 == 0 && w % w2 == 0 && h2 * w2 > th * tw) {
              const int64_t larger = int64_t(h2) * w2 * tvt;
              EXPECT_TRUE(larger > l.inp / 2 || larger > l.acc / 4) << h2 << "x" << w2;
            }
      }
  }
  std::string e = test::error_text<ScheduleError>([&] { tile(7, 7, 2, 2, ops::AccelLimits{1, 64, 2}); });
  EXPECT_NE(e.find("not even one entry of one block fits (scratchpads inp 1, wgt 64, acc 2 entries"), std::string::npos)
      << e;
  e = test::error_text<ScheduleError>([&] { tile(7, 7, 2, 2, ops::AccelLimits{2048, 1, 2048}); });
  EXPECT_NE(e.find("scratchpads inp 2048, wgt 1, acc 2048 entries"), std::string::npos) << e;
  EXPECT_NE(test::error_text<ScheduleError>([&] { tile(0, 7, 2, 2, lim); }).find("must all be at least 1"),
            std::string::npos);
}

// The shapes a user passes to the choosers: conv_shape_of reads a conv's from its stages, and a
// hand-made ConvShape that differs is refused field by field; the integer forms of the add and
// dense choosers, deprecated, still give the typed forms' tilings.
TEST(AccelModelShapes, ConvShapesComeFromTheOperatorAndOldFormsStillWork) {
  const ops::AccelLimits lim = ops::accel_target(accel::default_config()).limits;
  Tensor X = placeholder({1, 4, 14, 14, 1, 16}, DataType::Int(8), "X");
  Tensor W = placeholder({2, 4, 3, 5, 16, 16}, DataType::Int(8), "W");
  ops::QuantizedStages q = ops::conv2d_int8_blocked(X, W, 1, 1, {8, true});
  ops::ConvShape c = ops::conv_shape_of(q, 1, true);
  EXPECT_EQ(std::tuple(c.out_h, c.out_w, c.oc_blocks, c.ic_blocks, c.kernel_h, c.kernel_w, c.stride, c.bias),
            std::tuple(14, 12, 2, 4, 3, 5, 1, true));
  EXPECT_NO_THROW(ops::check_conv_shape(c, q, 1));
  // Output and input channel blocks swapped, as positional braces make easy.
  ops::ConvShape swapped = c;
  std::swap(swapped.oc_blocks, swapped.ic_blocks);
  std::string e = test::error_text<ScheduleError>([&] { ops::check_conv_shape(swapped, q, 1); });
  EXPECT_NE(e.find("does not describe it: oc_blocks 4 (the conv's: 2), ic_blocks 2 (the conv's: 4)"), std::string::npos)
      << e;
  ops::ConvShape square = c;
  square.kernel_w = 3;
  e = test::error_text<ScheduleError>([&] { ops::check_conv_shape(square, q, 1); });
  EXPECT_NE(e.find("kernel_w 3 (the conv's: 5)"), std::string::npos) << e;
  EXPECT_NE(test::error_text<ScheduleError>([&] {
              ops::conv_shape_of(ops::dense_int8_blocked(placeholder({1, 4, 1, 16}, DataType::Int(8), "D"),
                                                         placeholder({2, 4, 16, 16}, DataType::Int(8), "V"), {8, true}),
                                 1, false);
            }).find("is not a blocked conv"),
            std::string::npos);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  for (auto [h, w, blocks, vt] : {std::tuple{14, 14, 4, 2}, std::tuple{31, 31, 3, 1}, std::tuple{7, 56, 8, 2}}) {
    ops::AccelConvTiling old_add = ops::choose_add_tiling(h, w, blocks, vt, lim);
    ops::AccelConvTiling add = ops::choose_add_tiling({.out_h = h, .out_w = w, .channel_blocks = blocks}, vt, lim);
    EXPECT_EQ(std::tuple(old_add.h_block, old_add.w_block, old_add.oc_blocks, old_add.virtual_threads),
              std::tuple(add.h_block, add.w_block, add.oc_blocks, add.virtual_threads));
    ops::AccelDenseTiling old_dense = ops::choose_dense_tiling(1, h, blocks * 3, vt, lim);
    ops::AccelDenseTiling dense = ops::choose_dense_tiling({1, h, blocks * 3}, vt, lim);
    EXPECT_EQ(std::tuple(old_dense.oc_blocks, old_dense.ic_blocks, old_dense.virtual_threads),
              std::tuple(dense.oc_blocks, dense.ic_blocks, dense.virtual_threads));
    EXPECT_NO_THROW(ops::check_dense_tiling(1, h, blocks * 3, old_dense, lim));
  }
  EXPECT_THROW(ops::check_dense_tiling(1, 32, 63, ops::AccelDenseTiling{1, 1, 2}, lim), ScheduleError);
#pragma GCC diagnostic pop
}

// check_dense_tiling accepts what the chooser gives and names what is wrong with the rest.
TEST(AccelModelDense, CheckerNamesTheFactorOrTheScratchpad) {
  const ops::AccelLimits lim = ops::accel_target(accel::default_config()).limits;
  for (auto [ic, oc, vt] : {std::tuple{32, 63, 2}, std::tuple{5, 7, 3}, std::tuple{64, 128, 4}})
    EXPECT_NO_THROW(ops::check_dense_tiling({1, ic, oc}, ops::choose_dense_tiling({1, ic, oc}, vt, lim), lim));
  auto message = [&](int ic, int oc, ops::AccelDenseTiling t, ops::AccelLimits l) {
    return test::error_text<ScheduleError>([&] { ops::check_dense_tiling({1, ic, oc}, t, l); });
  };
  EXPECT_NE(message(32, 63, {1, 1, 2}, lim).find("oc_blocks x virtual threads = 2 does not divide the 63"),
            std::string::npos)
      << message(32, 63, {1, 1, 2}, lim);
  EXPECT_NE(message(32, 64, {1, 3, 1}, lim).find("ic_blocks 3 does not divide the 32"), std::string::npos)
      << message(32, 64, {1, 3, 1}, lim);
  std::string wgt = message(8, 8, {8, 8, 1}, {64, 32, 2048});
  EXPECT_NE(wgt.find("the wgt scratchpad needs 64 entries, has 32"), std::string::npos) << wgt;
  std::string acc = message(8, 8, {4, 1, 2}, {64, 64, 8});
  EXPECT_NE(acc.find("the acc scratchpad needs 16 entries, has 8"), std::string::npos) << acc;
}

// Per-channel shift amounts take one accumulator entry per channel block and context beside the
// bias: a tiling that fills the accumulators exactly without them is refused with them, naming
// the entries; the choosers leave room for them.
TEST(AccelModelShapes, ChannelShiftsTakeAccumulatorEntries) {
  ops::ConvShape c{.out_h = 7, .out_w = 7, .oc_blocks = 4, .ic_blocks = 2, .kernel_h = 1, .kernel_w = 1, .bias = true};
  const ops::AccelConvTiling t{7, 7, 2, 2};
  const ops::AccelLimits exact{1024, 1024, (2 * 49 + 2) * 2};  // the outputs and the bias entries of both contexts
  EXPECT_NO_THROW(ops::check_conv_tiling(c, t, exact));
  c.channel_shifts = true;
  std::string e = test::error_text<ScheduleError>([&] { ops::check_conv_tiling(c, t, exact); });
  EXPECT_NE(e.find("the acc scratchpad needs 204 entries, has 200"), std::string::npos) << e;
  EXPECT_NO_THROW(ops::check_conv_tiling(c, ops::choose_conv_tiling(c, 2, exact), exact));
  ops::DenseShape d{.batch_blocks = 1, .ic_blocks = 4, .oc_blocks = 8};
  const ops::AccelLimits dense_exact{64, 64, 16};  // 8 blocks x (1 output + 1 bias)
  EXPECT_NO_THROW(ops::check_dense_tiling(d, {8, 4, 1}, dense_exact));
  d.channel_shifts = true;
  e = test::error_text<ScheduleError>([&] { ops::check_dense_tiling(d, {8, 4, 1}, dense_exact); });
  EXPECT_NE(e.find("the acc scratchpad needs 24 entries, has 16"), std::string::npos) << e;
  EXPECT_NO_THROW(ops::check_dense_tiling(d, ops::choose_dense_tiling(d, 1, dense_exact), dense_exact));
}

// Weights in P passes take P times the weight entries and P + 1 sets of accumulators (each pass's
// and their sum); conv_shape_of reads the passes from the stages.
TEST(AccelModelShapes, WeightPassesTakeWeightAndAccumulatorEntries) {
  ops::ConvShape c{.out_h = 7, .out_w = 7, .oc_blocks = 2, .ic_blocks = 2, .kernel_h = 3, .kernel_w = 3, .bias = true};
  const ops::AccelConvTiling t{7, 7, 2, 1};
  const ops::AccelLimits fits_one{1024, 18, 2 * 49 + 2};  // one pass: 2 x 9 weight entries, the outputs and the bias
  EXPECT_NO_THROW(ops::check_conv_tiling(c, t, fits_one));
  c.weight_passes = 2;
  std::string e = test::error_text<ScheduleError>([&] { ops::check_conv_tiling(c, t, {1024, 1024, 2 * 49 + 2}); });
  EXPECT_NE(e.find("the acc scratchpad needs 296 entries, has 100"), std::string::npos) << e;
  e = test::error_text<ScheduleError>([&] { ops::check_conv_tiling(c, t, {1024, 18, 1024}); });
  EXPECT_NE(e.find("the wgt scratchpad needs 36 entries, has 18"), std::string::npos) << e;
  const ops::AccelLimits lim = ops::accel_target(accel::default_config()).limits;
  EXPECT_NO_THROW(ops::check_conv_tiling(c, ops::choose_conv_tiling(c, 2, lim), lim));
  Tensor X = placeholder({1, 2, 9, 9, 1, 16}, DataType::Int(8), "X");
  Tensor W = placeholder({2, 2, 2, 3, 3, 16, 16}, DataType::Int(8), "W");
  Tensor B = placeholder({2, 1, 16}, DataType::Int(32), "B");
  ops::QuantizedStages q = ops::conv2d_int8_blocked_passes(X, W, B, Tensor(), 1, 0, 4, {8});
  ops::ConvShape read = ops::conv_shape_of(q, 1, true);
  EXPECT_EQ(std::tuple(read.out_h, read.out_w, read.oc_blocks, read.ic_blocks, read.kernel_h, read.weight_passes),
            std::tuple(7, 7, 2, 2, 3, 2));
  EXPECT_EQ(q.combine.size(), 2u);  // one shift and one add for two passes
}

TEST(AccelModelOps, RoundingBiasSaturates) {
  EXPECT_EQ(ops::rounding_bias({0, -5, INT32_MAX}, 4), (std::vector<int32_t>{8, 3, INT32_MAX}));
  EXPECT_EQ(ops::rounding_bias({7}, 0), (std::vector<int32_t>{7}));
}

}  // namespace
}  // namespace loom
