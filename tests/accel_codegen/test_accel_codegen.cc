// Scheduled int8 operators compiled for the accelerator (DMA, tensorized GEMM, ALU requantize,
// virtual threads) and run on the functional simulator, bit-exact against the naive reference of
// the same tensor expressions.
#include <gtest/gtest.h>

#include <sstream>

#include "common/test_util.h"
#include "loom/codegen/accel.h"
#include "loom/ir/printer.h"
#include "loom/ops/accel_schedules.h"
#include "loom/schedule/lower.h"
#include "loom/sim/functional_sim.h"

namespace loom {
namespace {

using namespace loom::ir;

accel::AccelConfig config_named(const std::string& name) { return accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + name + ".json"); }

void run_and_check(const schedule::Schedule& s, const std::vector<Tensor>& inputs, const Tensor& out, const accel::AccelConfig& cfg,
                   const std::string& name) {
  std::vector<Tensor> args = inputs;
  args.push_back(out);
  LoweredFunc f = schedule::lower(s, args, name);
  codegen::AccelModule m = codegen::build_accel(f, cfg);
  std::vector<NDArray> arrays;
  std::map<const Operation*, NDArray> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    arrays.push_back(test::random_array(inputs[i], 100 + i, -128, 127));
    in[inputs[i].op().get()] = arrays.back();
  }
  arrays.push_back(test::empty_like(out));
  NDArray want = reference_eval({out}, in)[0];
  // The generated dependency tokens must make every legal interleaving of the three modules give
  // the same result: run greedy-load-first (exposes write-after-read races), greedy-store-first
  // (exposes read-after-write races) and random orders.
  using P = sim::FunctionalSim::Interleave;
  for (auto [policy, seed] : {std::pair{P::LoadFirst, 0}, std::pair{P::StoreFirst, 0}, std::pair{P::Random, 1}, std::pair{P::Random, 2}}) {
    sim::FunctionalSim dev(cfg);
    dev.set_interleave(policy, seed);
    arrays.back() = test::empty_like(out);
    auto stats = m.run(dev, arrays);
    EXPECT_GT(stats.counters["gemm_macs"], 0u);
    ASSERT_TRUE(test::arrays_close(arrays.back(), want)) << "interleave " << int(policy) << " seed " << seed << "\n" << to_string(f)
                                                       << m.disassemble(dev);
  }
}

struct DenseCase {
  const char* config;
  int batch_blocks, in_blocks, out_blocks, vthreads;
};

class AccelDense : public ::testing::TestWithParam<DenseCase> {};
INSTANTIATE_TEST_SUITE_P(Shapes, AccelDense,
                         ::testing::Values(DenseCase{"default", 1, 4, 4, 2}, DenseCase{"default", 2, 3, 2, 1}, DenseCase{"batch2", 1, 2, 4, 2},
                                           DenseCase{"1x32x32", 1, 2, 2, 2}),
                         [](const auto& p) {
                           return std::string(p.param.config) + "_" + std::to_string(p.param.in_blocks) + "x" + std::to_string(p.param.out_blocks) +
                                  "_vt" + std::to_string(p.param.vthreads);
                         });

TEST_P(AccelDense, MatchesReference) {
  DenseCase c = GetParam();
  accel::AccelConfig cfg = config_named(c.config);
  ops::Blocking b{cfg.batch, cfg.block_in, cfg.block_out};
  Tensor X = placeholder({c.batch_blocks, c.in_blocks, b.batch, b.block_in}, DataType::Int(8), "X");
  Tensor W = placeholder({c.out_blocks, c.in_blocks, b.block_out, b.block_in}, DataType::Int(8), "W");
  auto q = ops::dense_int8_blocked(X, W, {8, true});
  schedule::Schedule s({q.out});
  ops::schedule_dense_int8_accel(s, q, b, c.vthreads);
  run_and_check(s, {X, W}, q.out, cfg, "dense");
}

struct ConvCase {
  int channels_blocks, out_blocks, hw, stride, pad;
  ops::AccelConvTiling tiling;
};

class AccelConv : public ::testing::TestWithParam<ConvCase> {};
INSTANTIATE_TEST_SUITE_P(Shapes, AccelConv,
                         ::testing::Values(ConvCase{2, 4, 8, 1, 1, {4, 8, 1, 2}}, ConvCase{1, 2, 7, 1, 1, {7, 7, 1, 2}},
                                           ConvCase{2, 2, 8, 2, 1, {2, 4, 1, 1}}, ConvCase{1, 2, 6, 1, 0, {2, 4, 1, 2}}),
                         [](const auto& p) {
                           return "c" + std::to_string(p.param.channels_blocks) + "_o" + std::to_string(p.param.out_blocks) + "_hw" +
                                  std::to_string(p.param.hw) + "_s" + std::to_string(p.param.stride) + "_p" + std::to_string(p.param.pad);
                         });

TEST_P(AccelConv, MatchesReference) {
  ConvCase c = GetParam();
  accel::AccelConfig cfg = accel::default_config();
  ops::Blocking b{1, 16, 16};
  Tensor X = placeholder({1, c.channels_blocks, c.hw, c.hw, 1, 16}, DataType::Int(8), "X");
  Tensor W = placeholder({c.out_blocks, c.channels_blocks, 3, 3, 16, 16}, DataType::Int(8), "W");
  auto q = ops::conv2d_int8_blocked(X, W, c.stride, c.pad, {9, true});
  schedule::Schedule s({q.out});
  ops::schedule_conv2d_int8_accel(s, q, b, c.tiling);
  run_and_check(s, {X, W}, q.out, cfg, "conv");
}

// With two virtual threads the contexts run in lockstep on separate scratchpad buffers: fewer
// loads wait for the compute module (one context's loads overlap the other's GEMMs).
TEST(AccelCodegen, VirtualThreadContextsDoNotWaitForEachOther) {
  accel::AccelConfig cfg = accel::default_config();
  ops::Blocking b{1, 16, 16};
  auto first_loads_waiting = [&](int vthreads) {
    Tensor X = placeholder({1, 4, 1, 16}, DataType::Int(8), "X");
    Tensor W = placeholder({4, 4, 16, 16}, DataType::Int(8), "W");
    auto q = ops::dense_int8_blocked(X, W, {8, true});
    schedule::Schedule s({q.out});
    ops::schedule_dense_int8_accel(s, q, b, vthreads);
    codegen::AccelModule m = codegen::build_accel(schedule::lower(s, {X, W, q.out}, "dense"), cfg);
    sim::FunctionalSim dev(cfg);
    std::string listing = m.disassemble(dev);
    // Loads of the load module that wait for the compute module.
    int waiting = 0;
    std::istringstream lines(listing);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("LOAD inp") == std::string::npos && line.find("LOAD wgt") == std::string::npos) continue;
      waiting += line.find("pop_next") != std::string::npos;
    }
    return waiting;
  };
  EXPECT_LT(first_loads_waiting(2), first_loads_waiting(1));
}

TEST(AccelCodegen, HostStagesAreRejectedWithTheirName) {
  Tensor A = placeholder({16}, DataType::Int(32), "A");
  Tensor B = compute({16}, [&](Var i) { return A(i) + 1; }, "B");
  Tensor C = compute({16}, [&](Var i) { return B(i) * 2; }, "C");
  schedule::Schedule s({C});
  s[C].parallel(s[C].axis(0));
  auto f = schedule::lower(s, {A, C}, "host");
  try {
    codegen::build_accel(f, accel::default_config());
    FAIL();
  } catch (const CodegenError& e) {
    EXPECT_NE(std::string(e.what()).find("allocation 'B' in scope 'global'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
