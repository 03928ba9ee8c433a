// Scheduled int8 operators compiled for the accelerator and run on the cycle-accurate RTL
// simulation (small shapes), bit-exact against the naive reference; and the overlap virtual
// threads buy, measured in cycles.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/codegen/accel.h"
#include "loom/ops/accel_operators.h"
#include "loom/schedule/lower.h"
#include "loom/sim/rtl_sim.h"

namespace loom {
namespace {

using namespace loom::ir;

// Runs the scheduled function on a fresh RTL device; returns its cycles.
uint64_t run_on_rtl(const schedule::Schedule& s, const std::vector<Tensor>& inputs, const Tensor& out,
                    const accel::AccelConfig& cfg) {
  std::vector<Tensor> args = inputs;
  args.push_back(out);
  codegen::AccelModule m = codegen::build_accel(schedule::lower(s, args, "op"), cfg);
  std::vector<NDArray> arrays;
  std::map<const Operation*, NDArray> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    arrays.push_back(test::random_array(inputs[i], 7 + i, -128, 127));
    in[inputs[i].op().get()] = arrays.back();
  }
  arrays.push_back(test::empty_like(out));
  sim::RtlSim dev(cfg);
  auto stats = m.run(dev, arrays);
  EXPECT_TRUE(test::arrays_close(arrays.back(), reference_eval({out}, in)[0]));
  EXPECT_EQ(stats.cycles, dev.cycles());
  return stats.cycles;
}

uint64_t conv_cycles(int channels_blocks, int out_blocks, int hw, int stride, ops::AccelConvTiling t) {
  accel::AccelConfig cfg = accel::default_config();
  ops::AccelOpSpec spec;
  spec.channels = 16 * channels_blocks;
  spec.out_channels = 16 * out_blocks;
  spec.size = hw;
  spec.stride = stride;
  spec.conv_tiling = t;
  spec.rq = {9, true};
  ops::AccelOperator a = ops::make_accel_operator(spec, ops::accel_target(cfg), "conv");
  codegen::AccelModule m = codegen::build_accel(a.func, cfg);
  std::vector<NDArray> args = a.random_args(7);
  sim::RtlSim dev(cfg);
  auto stats = m.run(dev, args);
  EXPECT_TRUE(test::arrays_close(args.back(), a.expected(args)));
  return stats.cycles;
}

TEST(AccelRtl, Conv2dStride1And2WithPadding) {
  EXPECT_GT(conv_cycles(2, 2, 8, 1, {4, 8, 1, 2}), 0u);
  EXPECT_GT(conv_cycles(2, 4, 8, 2, {2, 4, 2, 1}), 0u);
}

// Tiles one output column wide: the output rows of a tile are one scratchpad entry each, strided
// in DRAM (each becomes its own row of a 2-D store), with and without virtual threads.
TEST(AccelRtl, Conv2dOneColumnTiles) {
  EXPECT_GT(conv_cycles(2, 2, 8, 1, {4, 1, 1, 1}), 0u);
  EXPECT_GT(conv_cycles(2, 4, 8, 2, {2, 1, 2, 2}), 0u);
}

TEST(AccelRtl, DenseOnEveryConfig) {
  for (const char* name : {"default", "1x32x32", "batch2"}) {
    SCOPED_TRACE(name);
    accel::AccelConfig cfg = accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + name + ".json");
    ops::Blocking b{cfg.batch, cfg.block_in, cfg.block_out};
    Tensor X = placeholder({1, 3, b.batch, b.block_in}, DataType::Int(8), "X");
    Tensor W = placeholder({4, 3, b.block_out, b.block_in}, DataType::Int(8), "W");
    auto q = ops::dense_int8_blocked(X, W, {8, true});
    schedule::Schedule s({q.out});
    ops::schedule_dense_int8_accel(s, q, b, ops::AccelDenseTiling{1, 1, 2});
    run_on_rtl(s, {X, W}, q.out, cfg);
  }
}

// A GEMV-shaped classifier (512 -> 1008, batch 1) uses every weight entry once, so it is bound by
// loading the weights: 2016 entries of 256 bytes over the 16-byte bus are 32,256 cycles. The chosen
// tiling must come within 20% of that (a schedule of one weight block per GEMM is several times slower).
TEST(AccelRtl, DenseClassifierIsBoundByWeightLoads) {
  accel::AccelConfig cfg = accel::default_config();
  ops::Blocking b{1, 16, 16};
  Tensor X = placeholder({1, 32, 1, 16}, DataType::Int(8), "X");
  Tensor W = placeholder({63, 32, 16, 16}, DataType::Int(8), "W");
  auto q = ops::dense_int8_blocked(X, W, {8, true});
  schedule::Schedule s({q.out});
  ops::AccelDenseTiling t = ops::choose_dense_tiling({1, 32, 63}, 2, ops::accel_target(cfg).limits);
  EXPECT_EQ(t.ic_blocks, 32);  // all input blocks per load
  ops::schedule_dense_int8_accel(s, q, b, t);
  uint64_t cycles = run_on_rtl(s, {X, W}, q.out, cfg);
  double bound = 63.0 * 32 * cfg.wgt_block_bytes() / cfg.dram_bus_bytes();
  EXPECT_LT(double(cycles), 1.2 * bound) << cycles << " cycles, weight-load bound " << bound;
}

// Two virtual threads let one context's loads run while the other computes: a layer whose loads
// are a large share of its time gets measurably faster.
TEST(AccelRtl, VirtualThreadsOverlapLoadsWithCompute) {
  uint64_t one = conv_cycles(4, 2, 7, 1, {7, 7, 1, 1});
  uint64_t two = conv_cycles(4, 2, 7, 1, {7, 7, 1, 2});
  EXPECT_LT(double(two), 0.95 * double(one)) << "1 thread: " << one << " cycles, 2 threads: " << two;
}

}  // namespace
}  // namespace loom
