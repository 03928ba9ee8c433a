// Scheduled int8 operators compiled for the accelerator (DMA, tensorized GEMM, ALU requantize,
// virtual threads) and run on the functional simulator, bit-exact against the naive reference of
// the same tensor expressions.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>

#include "common/test_util.h"
#include "loom/accel/linker.h"
#include "loom/codegen/accel.h"
#include "loom/ir/printer.h"
#include "loom/ops/accel_schedules.h"
#include "loom/ops/accel_target.h"
#include "loom/schedule/lower.h"
#include "loom/sim/functional_sim.h"

namespace loom {
namespace {

using namespace loom::ir;

accel::AccelConfig config_named(const std::string& name) {
  return accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + name + ".json");
}

void run_and_check(const schedule::Schedule& s, const std::vector<Tensor>& inputs, const Tensor& out,
                   const accel::AccelConfig& cfg, const std::string& name) {
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
  for (auto [policy, seed] :
       {std::pair{P::LoadFirst, 0}, std::pair{P::StoreFirst, 0}, std::pair{P::Random, 1}, std::pair{P::Random, 2}}) {
    sim::FunctionalSim dev(cfg);
    dev.set_interleave(policy, seed);
    arrays.back() = test::empty_like(out);
    auto stats = m.run(dev, arrays);
    EXPECT_GT(stats.counters["gemm_macs"], 0u);
    ASSERT_TRUE(test::arrays_close(arrays.back(), want)) << "interleave " << int(policy) << " seed " << seed << "\n"
                                                         << to_string(f) << m.disassemble(dev);
  }
}

struct DenseCase {
  const char* config;
  int batch_blocks, in_blocks, out_blocks, vthreads;
};

class AccelDense : public ::testing::TestWithParam<DenseCase> {};
INSTANTIATE_TEST_SUITE_P(Shapes, AccelDense,
                         ::testing::Values(DenseCase{"default", 1, 4, 4, 2}, DenseCase{"default", 2, 3, 2, 1},
                                           DenseCase{"batch2", 1, 2, 4, 2}, DenseCase{"1x32x32", 1, 2, 2, 2}),
                         [](const auto& p) {
                           return std::string(p.param.config) + "_" + std::to_string(p.param.in_blocks) + "x" +
                                  std::to_string(p.param.out_blocks) + "_vt" + std::to_string(p.param.vthreads);
                         });

TEST_P(AccelDense, MatchesReference) {
  DenseCase c = GetParam();
  accel::AccelConfig cfg = config_named(c.config);
  ops::Blocking b{cfg.batch, cfg.block_in, cfg.block_out};
  Tensor X = placeholder({c.batch_blocks, c.in_blocks, b.batch, b.block_in}, DataType::Int(8), "X");
  Tensor W = placeholder({c.out_blocks, c.in_blocks, b.block_out, b.block_in}, DataType::Int(8), "W");
  auto q = ops::dense_int8_blocked(X, W, {8, true});
  schedule::Schedule s({q.out});
  ops::schedule_dense_int8_accel(s, q, b, ops::AccelDenseTiling{1, 1, c.vthreads});
  run_and_check(s, {X, W}, q.out, cfg, "dense");
}

// A dense layer whose accumulator covers two batch blocks and four output-channel blocks at once:
// the two loops around the tensorized GEMM fold into one GEMM instruction (a 2 x 4 micro-op loop)
// per input-channel block. Checked against plain C++ (int32 dot products, arithmetic shift, relu,
// clamp), under every module interleaving.
TEST(AccelCodegen, DenseFoldsTwoLoopsIntoOneGemmAndMatchesPlainCpp) {
  accel::AccelConfig cfg = accel::default_config();
  const int BB = 2, IC = 3, OC = 4, BI = 16, BO = 16, shift = 5;
  Tensor X = placeholder({BB, IC, 1, BI}, DataType::Int(8), "X");
  Tensor W = placeholder({OC, IC, BO, BI}, DataType::Int(8), "W");
  auto q = ops::dense_int8_blocked(X, W, {shift, true});
  schedule::Schedule s({q.out});
  s[q.out].pragma(s[q.out].axis(0), "dma_copy");
  for (const Tensor& t : {q.shr, q.clip_lo, q.clip_hi}) {
    s[t].set_scope(scope::kAccAccum);
    s[t].pragma(s[t].axis(0), "alu");
  }
  schedule::Stage acc = s[q.acc];
  acc.set_scope(scope::kAccAccum);
  IterVar ic = acc.reduce_axis(0), ic_tns = acc.reduce_axis(1);
  acc.reorder({ic, acc.axis(0), acc.axis(1), acc.axis(2), acc.axis(3), ic_tns});
  acc.tensorize(acc.axis(2), ops::accel_gemm_intrin({1, BI, BO}));
  for (auto [t, scope] : {std::pair{X, scope::kAccInput}, std::pair{W, scope::kAccWeight}}) {
    schedule::Stage st = s[s.cache_read(t, scope, {q.acc})];
    st.compute_at(acc, ic);
    st.pragma(st.axis(0), "dma_copy");
  }
  LoweredFunc f = schedule::lower(s, {X, W, q.out}, "dense_fold");
  codegen::AccelModule m = codegen::build_accel(f, cfg);
  sim::FunctionalSim probe(cfg);
  std::string listing = m.disassemble(probe);
  int updates = 0;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("GEMM") == std::string::npos || line.find("reset") != std::string::npos) continue;
    ++updates;
    EXPECT_NE(line.find("loop=2x4"), std::string::npos) << line;
  }
  EXPECT_EQ(updates, IC) << to_string(f) << listing;

  NDArray x = test::random_array(X, 31, -128, 127), w = test::random_array(W, 32, -128, 127);
  std::vector<int8_t> want(BB * OC * BO);
  for (int n = 0; n < BB; ++n)
    for (int o = 0; o < OC * BO; ++o) {
      int32_t dot = 0;
      for (int c = 0; c < IC * BI; ++c)
        dot += int32_t(x.data<int8_t>()[(n * IC + c / BI) * BI + c % BI]) *
               w.data<int8_t>()[((o / BO * IC + c / BI) * BO + o % BO) * BI + c % BI];
      want[(n * OC + o / BO) * BO + o % BO] = int8_t(std::clamp(dot >> shift, 0, 127));
    }
  using P = sim::FunctionalSim::Interleave;
  for (auto policy : {P::LoadFirst, P::StoreFirst, P::Random}) {
    sim::FunctionalSim dev(cfg);
    dev.set_interleave(policy, 7);
    std::vector<NDArray> arrays{x, w, test::empty_like(q.out)};
    auto stats = m.run(dev, arrays);
    EXPECT_EQ(stats.counters["gemm_macs"], uint64_t(BB) * IC * OC * BI * BO);
    for (int k = 0; k < BB * OC * BO; ++k)
      ASSERT_EQ(arrays[2].data<int8_t>()[k], want[k]) << "element " << k << "\n" << listing;
  }
}

struct ConvCase {
  int channels_blocks, out_blocks, hw, stride, pad;
  ops::AccelConvTiling tiling;
};

class AccelConv : public ::testing::TestWithParam<ConvCase> {};
INSTANTIATE_TEST_SUITE_P(Shapes, AccelConv,
                         ::testing::Values(ConvCase{2, 4, 8, 1, 1, {4, 8, 1, 2}}, ConvCase{1, 2, 7, 1, 1, {7, 7, 1, 2}},
                                           ConvCase{2, 2, 8, 2, 1, {2, 4, 1, 1}},
                                           ConvCase{1, 2, 6, 1, 0, {2, 4, 1, 2}}),
                         [](const auto& p) {
                           return "c" + std::to_string(p.param.channels_blocks) + "_o" +
                                  std::to_string(p.param.out_blocks) + "_hw" + std::to_string(p.param.hw) + "_s" +
                                  std::to_string(p.param.stride) + "_p" + std::to_string(p.param.pad);
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

// Output-channel blocks per tile (each reuses the input tile; 3-D weight and store DMAs), 1x1
// kernels with stride 2, and tilings chosen by choose_conv_tiling.
struct ConvTileCase {
  int channels_blocks, out_blocks, hw, kernel, stride;
  ops::AccelConvTiling tiling;
};
class AccelConvTiles : public ::testing::TestWithParam<ConvTileCase> {};
INSTANTIATE_TEST_SUITE_P(
    Tilings, AccelConvTiles,
    ::testing::Values(ConvTileCase{2, 4, 8, 3, 1, {4, 8, 2, 2}}, ConvTileCase{2, 8, 7, 3, 1, {7, 7, 4, 2}},
                      ConvTileCase{2, 4, 14, 1, 2, {7, 7, 2, 2}}, ConvTileCase{3, 4, 8, 3, 2, {4, 4, 2, 1}},
                      ConvTileCase{2, 4, 14, 3, 1,
                                   ops::choose_conv_tiling({14, 14, 4, 2, 3, 3, 1, false}, 2,
                                                           ops::accel_target(accel::default_config()).limits)}),
    [](const auto& p) {
      return "c" + std::to_string(p.param.channels_blocks) + "_o" + std::to_string(p.param.out_blocks) + "_hw" +
             std::to_string(p.param.hw) + "_k" + std::to_string(p.param.kernel) + "_s" +
             std::to_string(p.param.stride) + "_ob" + std::to_string(p.param.tiling.oc_blocks) + "_vt" +
             std::to_string(p.param.tiling.virtual_threads);
    });

TEST_P(AccelConvTiles, MatchesReference) {
  ConvTileCase c = GetParam();
  Tensor X = placeholder({1, c.channels_blocks, c.hw, c.hw, 1, 16}, DataType::Int(8), "X");
  Tensor W = placeholder({c.out_blocks, c.channels_blocks, c.kernel, c.kernel, 16, 16}, DataType::Int(8), "W");
  auto q = ops::conv2d_int8_blocked(X, W, c.stride, c.kernel / 2, {9, true});
  schedule::Schedule s({q.out});
  ops::schedule_conv2d_int8_accel(s, q, ops::Blocking{1, 16, 16}, c.tiling);
  run_and_check(s, {X, W}, q.out, accel::default_config(), "conv");
}

TEST(AccelCodegen, ChooseConvTilingFillsTheAccumulator) {
  const ops::AccelLimits lim = ops::accel_target(accel::default_config()).limits;  // acc 2048 entries
  auto conv3x3 = [](int hw, int oc_blocks) { return ops::ConvShape{hw, hw, oc_blocks, 1, 3, 3, 1, false}; };
  auto t = ops::choose_conv_tiling(conv3x3(14, 16), 2, lim);  // 98-entry tiles, two contexts: 8 blocks fit
  EXPECT_EQ(t.h_block, 7);
  EXPECT_EQ(t.w_block, 14);
  EXPECT_EQ(t.virtual_threads, 2);
  EXPECT_EQ(t.oc_blocks, 8);
  EXPECT_EQ(ops::choose_conv_tiling(conv3x3(56, 4), 2, lim).oc_blocks, 2);       // only 2 blocks per context
  EXPECT_EQ(ops::choose_conv_tiling(conv3x3(7, 1), 2, lim).virtual_threads, 1);  // one block: no second context
}

// Counts instructions of each kind in a conv2d's stream.
std::map<std::string, int> conv_stream_counts(int vthreads, int oc_blocks) {
  accel::AccelConfig cfg = accel::default_config();
  Tensor X = placeholder({1, 2, 7, 7, 1, 16}, DataType::Int(8), "X");
  Tensor W = placeholder({4, 2, 3, 3, 16, 16}, DataType::Int(8), "W");
  auto q = ops::conv2d_int8_blocked(X, W, 1, 1, {9, true});
  schedule::Schedule s({q.out});
  ops::schedule_conv2d_int8_accel(s, q, ops::Blocking{1, 16, 16}, {7, 7, oc_blocks, vthreads});
  codegen::AccelModule m = codegen::build_accel(schedule::lower(s, {X, W, q.out}, "conv"), cfg);
  sim::FunctionalSim dev(cfg);
  std::istringstream lines(m.disassemble(dev));
  std::map<std::string, int> n;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream w(line);
    std::string index, op;
    w >> index >> op;
    if (op.rfind("ALU", 0) == 0) op = "ALU";  // ALU.shr, ALU.max, ...
    if (op == "GEMM") op += line.find(" reset") != std::string::npos ? ".reset" : ".update";
    ++n[op];
  }
  return n;
}

TEST(AccelCodegen, ConvWindowFoldsIntoOneGemmPerInputBlock) {
  // 4 output-channel blocks, 2 input-channel blocks, one 7x7 tile: the 3x3 window is unrolled into
  // the micro-op kernel, so each (output block, input block) is one GEMM update, plus one reset
  // per output block; the ALU requantization (the shift, and max and min, as one shrsat) is one
  // instruction per block.
  auto n = conv_stream_counts(1, 1);
  EXPECT_EQ(n["GEMM.update"], 4 * 2);
  EXPECT_EQ(n["GEMM.reset"], 4);
  EXPECT_EQ(n["ALU"], 4);
  // The same with two virtual threads: the same instructions, and the ALU stages still run in place.
  auto v = conv_stream_counts(2, 1);
  EXPECT_EQ(v["GEMM.update"], 4 * 2);
  EXPECT_EQ(v["ALU"], 4);
  // Two output blocks per tile: half the GEMM updates, each twice as long.
  auto o = conv_stream_counts(1, 2);
  EXPECT_EQ(o["GEMM.update"], 2 * 2);
}

// The stream `f` compiles to with argument k at image offset offsets[k] (8 KiB apart, nothing
// between them), after `place` has moved any of them.
std::vector<accel::Instruction> emitted(const LoweredFunc& f,
                                        const std::function<void(std::vector<uint64_t>&)>& place = {}) {
  accel::ImageLinker linker(accel::default_config());
  const std::vector<int> bits = codegen::accel_arg_bits(f, linker.config());
  std::vector<uint64_t> offsets;
  for (size_t k = 0; k < f.args.size(); ++k) {
    linker.reserve(8192);
    offsets.push_back(linker.reserve(codegen::accel_arg_bytes(*f.args[k], bits[k])));
  }
  if (place) place(offsets);
  size_t stream = codegen::emit_accel(f, linker, offsets, f.name);
  return codegen::decode_stream(linker.finish(), stream, accel::default_config());
}

// A conv with bias over two virtual threads, one output block each: 2 row tiles x 2 channel
// groups. Emitted as compiled, or with the output placed `output_at` bytes from the bias in device
// memory (negative: before it), so that STOREs may overwrite it.
struct BiasConv {
  Tensor X, W, Bi;
  ops::QuantizedStages q;
  std::unique_ptr<schedule::Schedule> s;
  BiasConv() {
    X = placeholder({1, 2, 14, 7, 1, 16}, DataType::Int(8), "X");
    W = placeholder({4, 2, 3, 3, 16, 16}, DataType::Int(8), "W");
    Bi = placeholder({4, 1, 16}, DataType::Int(32), "bias");
    q = ops::conv2d_int8_blocked(X, W, Bi, 1, 1, {9, true});
    s = std::make_unique<schedule::Schedule>(std::vector<Tensor>{q.out});
    ops::schedule_conv2d_int8_accel(*s, q, ops::Blocking{1, 16, 16}, {7, 7, 1, 2});
  }
  std::vector<accel::Instruction> instructions(std::optional<int64_t> output_at = std::nullopt) const {
    return emitted(schedule::lower(*s, {X, W, Bi, q.out}, "conv"), [&](std::vector<uint64_t>& offsets) {
      if (output_at) offsets[3] = uint64_t(int64_t(offsets[2]) + *output_at);
    });
  }
};

size_t accumulator_loads(const std::vector<accel::Instruction>& insns) {
  return size_t(std::count_if(insns.begin(), insns.end(), [](const accel::Instruction& i) {
    return i.opcode == accel::Opcode::Load && i.mem == accel::MemType::Acc;
  }));
}

// A bias stays on chip from tile to tile while the tiles compute the same output channels: one
// accumulator LOAD per context and channel group (4), not per tile (8); the outputs still equal
// the reference under every module interleaving. A LOAD of bytes a STORE of the same kernel wrote
// is refused, since no token orders the two. The output (6272 bytes; each STORE 7 x 7 out entries
// of 16 bytes) placed against the bias (4 accumulator entries of 64 bytes: the first channel
// group's contexts load blocks 0 and 2, the second group's 1 and 3):
// - starting where it ends, or ending 16 bytes before its start: nothing is refused (each STORE
//   spans its 784 bytes; held LOADs are checked too, so a STORE reaching the bias would be);
// - over it: the second tile's bias LOADs come after the first tile's STOREs over it;
// - starting 16 bytes before its end: the second group loads block 3 after the first tile's STORE;
// - the first STORE ending 16 bytes into block 0: refused though the second tile's LOAD of block
//   0 is held (the check comes first).
TEST(AccelCodegen, ABiasIsLoadedOncePerChannelGroupAndNeverAfterAStoreOverIt) {
  BiasConv c;
  EXPECT_EQ(accumulator_loads(c.instructions()), 4u);
  EXPECT_EQ(accumulator_loads(c.instructions(256)), 4u);
  EXPECT_EQ(accumulator_loads(c.instructions(-6272 - 16)), 4u);
  for (int64_t at : {0, 240, -768}) {
    std::string msg = test::error_text<CodegenError>([&] { c.instructions(at); });
    EXPECT_NE(msg.find("DMA into 'bias.acc.acc' from 'bias': reads device memory"), std::string::npos)
        << "output at " << at << ": " << msg;
    EXPECT_NE(msg.find("that a STORE of this kernel wrote"), std::string::npos) << msg;
  }
  run_and_check(*c.s, {c.X, c.W, c.Bi}, c.q.out, accel::default_config(), "conv");
}

// An ALU stage S over int32 A (loaded into the accumulators at the output's loop around the last
// two axes, or the last one when A has three) stored as int8 O, both [2, rows, 16], lowered.
LoweredFunc alu_over_loaded_rows(const Tensor& A, const std::function<Expr(const std::vector<Var>&)>& s_of, int rows,
                                 const std::string& name) {
  Tensor S = compute({2, rows, 16}, s_of, "S");
  Tensor O = compute(
      {2, rows, 16}, [&](const std::vector<Var>& i) { return cast(DataType::Int(8), S(i[0], i[1], i[2])); }, "O");
  schedule::Schedule s({O});
  const int at = A.ndim() == 2 ? 0 : 1;  // one row of A per output row, or a row group per output
  s[O].pragma(s[O].axis(at + 1), "dma_copy");
  s[S].set_scope(scope::kAccAccum);
  s[S].compute_at(s[O], s[O].axis(at));
  s[S].pragma(s[S].axis(at + 1), "alu");
  schedule::Stage a = s[s.cache_read(A, scope::kAccAccum, {S})];
  a.compute_at(s[O], s[O].axis(at));
  a.pragma(a.axis(0), "dma_copy");
  return schedule::lower(s, {A, O}, name);
}

// Compiled, the accumulator LOADs counted and run on fsim with A drawn from [-60, 60]; returns A
// and O.
std::pair<NDArray, NDArray> run_alu_over_loaded_rows(const LoweredFunc& f, const Tensor& A, int rows,
                                                     size_t want_loads) {
  codegen::AccelModule m = codegen::build_accel(f, accel::default_config());
  EXPECT_EQ(accumulator_loads(m.instructions()), want_loads) << m.disassemble();
  NDArray x = test::random_array(A, 5, -60, 60);
  std::vector<NDArray> arrays{x, NDArray::zeros({2, rows, 16}, DataType::Int(8))};
  sim::FunctionalSim dev(accel::default_config());
  m.run(dev, arrays);
  return {x, arrays[1]};
}

// An accumulator buffer loaded and then changed in place (an ALU ADD) is loaded again by the next
// iteration, though the LOAD is the same: what it loaded is gone.
TEST(AccelCodegen, AnAccumulatorLoadChangedInPlaceIsLoadedAgain) {
  Tensor A = placeholder({1, 16}, DataType::Int(32), "A");
  LoweredFunc f = alu_over_loaded_rows(
      A, [&](const std::vector<Var>& i) { return A(i[1], i[2]) + 3; }, 1, "add_in_place");
  auto [x, o] = run_alu_over_loaded_rows(f, A, 1, 2);
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 16; ++k)
      ASSERT_EQ(o.data<int8_t>()[r * 16 + k], x.data<int32_t>()[k] + 3) << "row " << r << ", lane " << k;
}

// The same accumulator LOAD after another LOAD into its entries is emitted again: rows j = 0, 1
// of A take turns in the same two entries, each summed into a third by an ALU ADD.
TEST(AccelCodegen, AnAccumulatorLoadAfterAnotherIntoItsEntriesIsLoadedAgain) {
  Tensor A = placeholder({2, 2, 16}, DataType::Int(32), "A");
  auto [x, o] = run_alu_over_loaded_rows(
      alu_over_loaded_rows(
          A, [&](const std::vector<Var>& i) { return A(i[1], 0, i[2]) + A(i[1], 1, i[2]); }, 2, "row_sums"),
      A, 2, 4);
  const int32_t* v = x.data<int32_t>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 16; ++k)
        ASSERT_EQ(o.data<int8_t>()[(i * 2 + j) * 16 + k], v[j * 32 + k] + v[j * 32 + 16 + k])
            << "i " << i << ", j " << j << ", lane " << k;
}

// Both output rows sum the same two rows of A: the second row's LOAD is held (one LOAD in all).
// With O placed over A, the first row's STORE overwrites A's bytes, and the second row's LOAD is
// refused though it would be held: the check comes before the hold.
TEST(AccelCodegen, AHeldLoadOfBytesAStoreWroteIsRefusedToo) {
  Tensor A = placeholder({1, 2, 16}, DataType::Int(32), "A");
  LoweredFunc f = alu_over_loaded_rows(
      A, [&](const std::vector<Var>& i) { return A(0, 0, i[2]) + A(0, 1, i[2]); }, 1, "same_row_sums");
  auto [x, o] = run_alu_over_loaded_rows(f, A, 1, 1);
  const int32_t* v = x.data<int32_t>();
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 16; ++k)
      ASSERT_EQ(o.data<int8_t>()[i * 16 + k], v[k] + v[16 + k]) << "row " << i << ", lane " << k;
  std::string msg =
      test::error_text<CodegenError>([&] { emitted(f, [](std::vector<uint64_t>& at) { at[1] = at[0]; }); });
  EXPECT_NE(msg.find("DMA into 'A.acc.acc' from 'A': reads device memory"), std::string::npos) << msg;
}

// Two virtual threads: in every tile each context's requantization follows its own last GEMM (its
// STORE runs beside the other context's last GEMM), and past the first tile each context's bias
// preset follows the other context's first GEMM (the STORE of its tile before has drained by
// then); a new bias is loaded for both contexts before either preset.
TEST(AccelCodegen, EachContextsPresetAndEpilogueSitBesideTheOtherContextsGemms) {
  BiasConv c;
  std::string ops;  // M: a preset (MOV), S: the requantization (SHRSAT), G: a GEMM update, L: a bias load
  for (const accel::Instruction& i : c.instructions()) {
    if (i.opcode == accel::Opcode::Gemm && !i.reset) ops += 'G';
    if (i.opcode == accel::Opcode::Alu) ops += i.alu_op == accel::AluOp::Mov ? 'M' : 'S';
    if (i.opcode == accel::Opcode::Load && i.mem == accel::MemType::Acc) ops += 'L';
  }
  auto count = [&](const std::string& pattern) {
    size_t n = 0;
    for (size_t p = ops.find(pattern); p != std::string::npos; p = ops.find(pattern, p + 1)) ++n;
    return n;
  };
  const size_t tiles = 4;
  EXPECT_EQ(count("S"), 2 * tiles) << ops;
  EXPECT_EQ(count("GSGS"), tiles) << "every tile: each context's requantization after its own last GEMM\n" << ops;
  EXPECT_EQ(count("MGMG"), tiles - 1) << "past the first tile: each preset after the other context's first GEMM\n"
                                      << ops;
  EXPECT_EQ(ops.rfind("LMLMGG", 0), 0u) << "the first tile: both presets before the first GEMMs\n" << ops;
  EXPECT_EQ(count("LLMGMG"), 1u) << "the second channel group: both bias loads before either preset\n" << ops;
}

// Residual add on the accelerator: both int8 operands widened by identity GEMMs, added and
// requantized on the ALU; checked against the CPU definition add_int8 (plain int32 adds).
struct AddCase {
  int channel_blocks, hw;
  ops::AccelConvTiling tiling;
};
class AccelAdd : public ::testing::TestWithParam<AddCase> {};
INSTANTIATE_TEST_SUITE_P(Shapes, AccelAdd,
                         ::testing::Values(AddCase{2, 14, {7, 14, 1, 2}}, AddCase{3, 8, {4, 8, 1, 1}},
                                           AddCase{4, 7, {7, 7, 1, 2}}),
                         [](const auto& p) {
                           return "c" + std::to_string(p.param.channel_blocks) + "_hw" + std::to_string(p.param.hw) +
                                  "_vt" + std::to_string(p.param.tiling.virtual_threads);
                         });

TEST_P(AccelAdd, MatchesTheCpuDefinition) {
  AddCase c = GetParam();
  accel::AccelConfig cfg = accel::default_config();
  Tensor A = placeholder({1, c.channel_blocks, c.hw, c.hw, 1, 16}, DataType::Int(8), "A");
  Tensor B = placeholder({1, c.channel_blocks, c.hw, c.hw, 1, 16}, DataType::Int(8), "B");
  Tensor Eye = placeholder({16, 16}, DataType::Int(8), "eye");
  ops::Requantize rq{1, true};
  auto add = ops::add_int8_widening(A, B, Eye, rq);
  schedule::Schedule s({add.q.out});
  ops::schedule_add_int8_accel(s, add, ops::Blocking{1, 16, 16}, c.tiling);
  LoweredFunc f = schedule::lower(s, {A, B, Eye, add.q.out}, "add");
  codegen::AccelModule m = codegen::build_accel(f, cfg);
  NDArray a = test::random_array(A, 3, -128, 127), b = test::random_array(B, 4, -128, 127);
  NDArray eye = NDArray::empty({16, 16}, DataType::Int(8));
  auto id = ops::identity_block(16);
  std::copy(id.begin(), id.end(), eye.data<int8_t>());
  // The reference is the CPU operator, not the widened form.
  auto cpu = ops::add_int8(A, B, rq);
  NDArray want = reference_eval({cpu.out}, {{A.op().get(), a}, {B.op().get(), b}})[0];
  using P = sim::FunctionalSim::Interleave;
  for (auto policy : {P::LoadFirst, P::StoreFirst, P::Random}) {
    sim::FunctionalSim dev(cfg);
    dev.set_interleave(policy, 5);
    std::vector<NDArray> arrays{a, b, eye, test::empty_like(add.q.out)};
    auto stats = m.run(dev, arrays);
    EXPECT_EQ(stats.counters["gemm_macs"], uint64_t(2) * c.channel_blocks * c.hw * c.hw * 16 * 16);
    ASSERT_TRUE(test::arrays_close(arrays.back(), want)) << to_string(f) << m.disassemble(dev);
  }
}

// A residual add of two int8 [1, 2, 7, 7, 1, 16] operands with `shifts`, requantized by `shift`,
// scheduled with `tiling` and run on fsim, checked element by element against plain C++ from the
// definition: ((a << lshift_a) + (b << lshift_b) + 2^(shift-1) if rounded) >> shift, clamped.
// With `scaled_eyes` the operands widen through identities scaled by 2^lshift ([2, 16, 16]).
// Returns the program's listing ("" after a mismatch).
static std::string residual_add_on_fsim(const ops::AddShifts& shifts, int shift, const ops::AccelConvTiling& tiling,
                                        bool scaled_eyes = false) {
  accel::AccelConfig cfg = accel::default_config();
  Tensor A = placeholder({1, 2, 7, 7, 1, 16}, DataType::Int(8), "A");
  Tensor B = placeholder({1, 2, 7, 7, 1, 16}, DataType::Int(8), "B");
  Tensor Eye =
      placeholder(scaled_eyes ? std::vector<Expr>{2, 16, 16} : std::vector<Expr>{16, 16}, DataType::Int(8), "eye");
  auto add = ops::add_int8_widening(A, B, Eye, ops::Requantize{shift, false}, "add", shifts);
  schedule::Schedule s({add.q.out});
  ops::schedule_add_int8_accel(s, add, ops::Blocking{1, 16, 16}, tiling);
  codegen::AccelModule m = codegen::build_accel(schedule::lower(s, {A, B, Eye, add.q.out}, "add"), cfg);
  NDArray a = test::random_array(A, 7, -128, 127), b = test::random_array(B, 8, -128, 127);
  NDArray eye = test::empty_like(Eye);
  auto id = scaled_eyes ? ops::scaled_identity_blocks(16, shifts.lshift_a, shifts.lshift_b) : ops::identity_block(16);
  std::copy(id.begin(), id.end(), eye.data<int8_t>());
  sim::FunctionalSim dev(cfg);
  std::vector<NDArray> arrays{a, b, eye, test::empty_like(add.q.out)};
  m.run(dev, arrays);
  for (int64_t i = 0; i < a.numel(); ++i) {
    const int32_t sum = (int32_t(a.data<int8_t>()[i]) << shifts.lshift_a) +
                        (int32_t(b.data<int8_t>()[i]) << shifts.lshift_b) + (shifts.round ? 1 << (shift - 1) : 0);
    const int want = std::clamp(sum >> shift, -128, 127), got = arrays.back().data<int8_t>()[i];
    if (got != want) {
      ADD_FAILURE() << "element " << i << ": " << got << ", want " << want;
      return "";
    }
  }
  return m.disassemble(dev);
}

// A model's residual add: one operand shifted left to the other's exponent and the
// requantization rounded; the multiply by 2^3 runs as a shift left (SHR by -3: one cycle an
// iteration where MUL takes five).
TEST(AccelAdd, OperandShiftAndRoundingMatchPlainCpp) {
  const std::string listing = residual_add_on_fsim({.lshift_a = 3, .lshift_b = 0, .round = true}, 4, {7, 7, 1, 2});
  ASSERT_FALSE(listing.empty());
  EXPECT_EQ(listing.find("ALU.mul"), std::string::npos) << listing;
  EXPECT_NE(listing.find("ALU.shr imm=-3"), std::string::npos) << listing;
}

// The second widened operand of a residual add accumulates onto the first's accumulators (or,
// with the first shifted, onto them after the shift; with the second shifted, the first onto it):
// one GEMM reset a tile, no register ADD and no MOV, on one and two virtual threads, with tiles of
// 7 rows and of 1; with both operands shifted, the two GEMMs and the ADD stay.
TEST(AccelAdd, SecondOperandAccumulatesOntoTheFirst) {
  struct Case {
    ops::AddShifts shifts;
    ops::AccelConvTiling tiling;
  };
  for (const Case& c : {Case{{0, 0, false}, {7, 7, 1, 2}}, Case{{3, 0, true}, {7, 7, 1, 2}},
                        Case{{0, 2, true}, {1, 7, 1, 1}}, Case{{2, 5, true}, {7, 7, 1, 2}}}) {
    SCOPED_TRACE(::testing::Message() << "shifts " << c.shifts.lshift_a << "/" << c.shifts.lshift_b << ", "
                                      << c.tiling.virtual_threads << " virtual threads");
    const std::string listing = residual_add_on_fsim(c.shifts, 5, c.tiling);
    ASSERT_FALSE(listing.empty());
    auto count = [&](const std::string& what) { return test::count_occurrences(listing, what); };
    const bool both_shifted = c.shifts.lshift_a && c.shifts.lshift_b;
    EXPECT_EQ(count("GEMM reset"), count("STORE") * (both_shifted ? 2 : 1)) << listing;
    EXPECT_EQ(count("ALU.add uop"), both_shifted ? count("STORE") : 0) << listing;
    EXPECT_EQ(count("ALU.mov"), 0) << listing;  // the sum lands where the nest's destination is
  }
}

// Widened through identities scaled by 2^lshift_a and 2^lshift_b, the operands are shifted by
// the GEMMs: no ALU shift left, the second GEMM accumulating onto the first, one reset a tile.
TEST(AccelAdd, ScaledIdentitiesShiftTheOperandsInTheGemms) {
  struct Case {
    ops::AddShifts shifts;
    ops::AccelConvTiling tiling;
  };
  for (const Case& c :
       {Case{{0, 1, true}, {7, 7, 1, 2}}, Case{{3, 0, true}, {1, 7, 1, 1}}, Case{{2, 6, false}, {7, 7, 1, 2}}}) {
    SCOPED_TRACE(::testing::Message() << "shifts " << c.shifts.lshift_a << "/" << c.shifts.lshift_b);
    const std::string listing = residual_add_on_fsim(c.shifts, 5, c.tiling, /*scaled_eyes=*/true);
    ASSERT_FALSE(listing.empty());
    auto count = [&](const std::string& what) { return test::count_occurrences(listing, what); };
    EXPECT_EQ(count("ALU.shr imm=-"), 0) << listing;
    EXPECT_EQ(count("ALU.add uop"), 0) << listing;
    // Rounded: the constant 2^(5-1) takes the reset's place (RoundingConstantTakesTheResetsPlace).
    EXPECT_EQ(count("GEMM reset") + count("ALU.mov imm=16 "), count("STORE")) << listing;
  }
}

// A rounded requantization's constant, added in place right after the GEMMs, is moved into the
// accumulators instead of their reset (one pass an entry fewer): with the operands shifted by the
// GEMMs, on one and two virtual threads. Where an ALU shift reads the accumulators between the
// reset and the ADD, the constant would be shifted too: the reset and the ADD stay. Every result
// is checked against plain C++ by residual_add_on_fsim.
TEST(AccelAdd, RoundingConstantTakesTheResetsPlace) {
  struct Case {
    ops::AddShifts shifts;
    ops::AccelConvTiling tiling;
    bool scaled_eyes, preset;
  };
  for (const Case& c : {Case{{0, 1, true}, {7, 7, 1, 2}, true, true}, Case{{3, 0, true}, {1, 7, 1, 1}, true, true},
                        Case{{0, 0, true}, {7, 7, 1, 1}, false, true}, Case{{3, 0, true}, {7, 7, 1, 2}, false, false},
                        Case{{2, 5, true}, {7, 7, 1, 2}, false, false}}) {
    SCOPED_TRACE(::testing::Message() << "shifts " << c.shifts.lshift_a << "/" << c.shifts.lshift_b
                                      << (c.scaled_eyes ? ", scaled identities" : ""));
    const std::string listing = residual_add_on_fsim(c.shifts, 5, c.tiling, c.scaled_eyes);
    ASSERT_FALSE(listing.empty());
    auto count = [&](const std::string& what) { return test::count_occurrences(listing, what); };
    const int64_t tiles = count("STORE");
    EXPECT_EQ(count("ALU.mov imm=16 "), c.preset ? tiles : 0) << listing;
    EXPECT_EQ(count("ALU.add imm=16 "), c.preset ? 0 : tiles) << listing;
  }
}

TEST(AccelCodegen, AddWideningChecksTheScaledIdentities) {
  Tensor A = placeholder({1, 2, 4, 4, 1, 16}, DataType::Int(8), "A");
  EXPECT_THROW(ops::add_int8_widening(A, A, placeholder({3, 16, 16}, DataType::Int(8), "eye"), {}), ShapeError);
  EXPECT_THROW(ops::add_int8_widening(A, A, placeholder({2, 16, 16}, DataType::Int(8), "eye"), {}, "add",
                                      {.lshift_a = 7, .lshift_b = 0, .round = false}),
               ShapeError);
  EXPECT_THROW(ops::scaled_identity_blocks(16, 0, 7), ShapeError);
  const auto m = ops::scaled_identity_blocks(2, 1, 6);
  EXPECT_EQ(m, (std::vector<int8_t>{2, 0, 0, 2, 64, 0, 0, 64}));
}

TEST(AccelCodegen, AddWideningChecksTheIdentityBlock) {
  Tensor A = placeholder({1, 2, 4, 4, 1, 16}, DataType::Int(8), "A");
  Tensor Eye = placeholder({16, 8}, DataType::Int(8), "eye");
  EXPECT_THROW(ops::add_int8_widening(A, A, Eye, {}), ShapeError);
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
    ops::schedule_dense_int8_accel(s, q, b, ops::AccelDenseTiling{1, 1, vthreads});
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
  Tensor B = compute(
      {16}, [&](Var i) { return A(i) + 1; }, "B");
  Tensor C = compute(
      {16}, [&](Var i) { return B(i) * 2; }, "C");
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
