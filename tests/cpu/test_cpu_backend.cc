// The whole CPU path: tensor expressions -> schedules -> lowering -> LLVM JIT (and exported
// shared libraries), run on real data and compared with the naive reference.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <tuple>

#include "common/scheduled_cases.h"
#include "common/temp_dir.h"
#include "common/test_util.h"
#include "loom/codegen/llvm.h"
#include "loom/ir/printer.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/layers.h"
#include "loom/runtime/cpu_target.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;

struct Prepared {
  std::vector<NDArray> args, want;
};

Prepared prepare(const test::Workload& w) {
  Prepared p;
  std::map<const Operation*, NDArray> in;
  uint64_t seed = 11;
  for (auto& t : w.inputs) {
    p.args.push_back(test::random_array(t, seed++));
    in[t.op().get()] = p.args.back();
  }
  for (auto& t : w.outputs) p.args.push_back(test::empty_like(t));
  p.want = reference_eval(w.outputs, in);
  return p;
}

void expect_outputs(const test::Workload& w, const Prepared& p, double tol, const std::string& context) {
  for (size_t i = 0; i < w.outputs.size(); ++i)
    EXPECT_TRUE(test::arrays_close(p.args[w.inputs.size() + i], p.want[i], tol, tol)) << context;
}

// Compiles the schedule of workload `w` on this host, runs it on random inputs and compares the
// outputs with the naive reference.
void expect_compiled_matches(const schedule::Schedule& s, const test::Workload& w, const std::string& name) {
  runtime::Module m = codegen::build_llvm({schedule::lower(s, w.args(), name)});
  Prepared p = prepare(w);
  m.call(name, p.args);
  expect_outputs(w, p, 1e-4, name);
}

class CpuCase : public ::testing::TestWithParam<size_t> {};

TEST_P(CpuCase, CompiledMatchesReference) {
  const auto& info = test::scheduled_cases()[GetParam()];
  auto c = info.build();
  LoweredFunc f = schedule::lower(*c.schedule, c.workload.args(), info.name);
  runtime::Module m = codegen::build_llvm({f});
  double tol = c.workload.outputs[0].dtype() == DataType::Float(16) ? 1e-2 : 1e-4;
  for (int threads : {1, 2}) {
    runtime::set_num_threads(threads);
    Prepared p = prepare(c.workload);
    m.call(info.name, p.args);
    expect_outputs(c.workload, p, tol, info.name + " with " + std::to_string(threads) + " threads\n" + to_string(f));
  }
}

INSTANTIATE_TEST_SUITE_P(AllSchedules, CpuCase, ::testing::Range<size_t>(0, test::scheduled_cases().size()),
                         [](const auto& p) { return test::scheduled_cases()[p.param].name; });

TEST(CpuBackend, TunedGemmAndConvSchedules) {
  {
    Tensor A = placeholder({64, 96}, DataType::Float(32), "A"), B = placeholder({96, 128}, DataType::Float(32), "B");
    Tensor C = ops::matmul_packed(A, B, 32);
    schedule::Schedule s({C});
    ops::schedule_matmul_packed_cpu(s, C, {8, 32, 256});
    expect_compiled_matches(s, test::Workload{{A, B}, {C}}, "gemm");
  }
  {
    Tensor X = placeholder({1, 16, 14, 14}, DataType::Float(32), "X"),
           W = placeholder({32, 16, 3, 3}, DataType::Float(32), "W");
    Tensor Y = ops::conv2d_nchw_packed(X, W, 1, 1, 32);
    schedule::Schedule s({Y});
    ops::schedule_conv2d_nchw_cpu(s, Y, 32, 7);
    expect_compiled_matches(s, test::Workload{{X, W}, {Y}}, "conv");
  }
}

// The GEMM register tile follows the target: AVX2 (8 lanes, 16 registers) 6 x 16, AVX-512
// (16, 32) 8 x 32, NEON (4, 32) 8 x 8. Each tiling, any M/N/K (partial tiles at the edges, a
// zero-padded last panel of B), matches the naive reference on this host.
TEST(CpuBackend, TargetAwareGemmTilingsOnOddShapes) {
  EXPECT_EQ(ops::gemm_tiling_for(8, 16).mr, 6);
  EXPECT_EQ(ops::gemm_tiling_for(8, 16).nr, 16);
  EXPECT_EQ(ops::gemm_tiling_for(16, 32).mr, 8);
  EXPECT_EQ(ops::gemm_tiling_for(16, 32).nr, 32);
  EXPECT_EQ(ops::gemm_tiling_for(4, 32).nr, 8);
  struct Shape {
    int m, n, k;
  };
  for (ops::GemmTiling t : {ops::gemm_tiling_for(8, 16), ops::gemm_tiling_for(16, 32)})
    for (Shape sh : {Shape{17, 31, 13}, Shape{1, 1000, 512}, Shape{1000, 1, 5}, Shape{64, 64, 64}, Shape{7, 33, 1}}) {
      SCOPED_TRACE(std::to_string(t.mr) + "x" + std::to_string(t.nr) + " on " + std::to_string(sh.m) + "x" +
                   std::to_string(sh.n) + "x" + std::to_string(sh.k));
      Tensor A = placeholder({sh.m, sh.k}, DataType::Float(32), "A"),
             B = placeholder({sh.k, sh.n}, DataType::Float(32), "B");
      Tensor C = ops::matmul_packed(A, B, t.nr);
      schedule::Schedule s({C});
      ops::schedule_matmul_packed_cpu(s, C, t);
      expect_compiled_matches(s, test::Workload{{A, B}, {C}}, "gemm");
    }
}

// For a few rows of A the tile covers them all and B is read in place, unpacked (packing costs as
// much as the product); one column of B becomes dot products along K. Every shape-aware tiling, in any form, computes
// the product correctly, partial tiles included.
TEST(CpuBackend, ShapeAwareGemmForms) {
  ops::GemmTiling row = ops::gemm_tiling_for(8, 16, 1, 1000, 512), few = ops::gemm_tiling_for(8, 16, 3, 10, 7),
                  many = ops::gemm_tiling_for(8, 16, 64, 64, 64), column = ops::gemm_tiling_for(8, 16, 1000, 1, 512),
                  odd_column = ops::gemm_tiling_for(8, 16, 1000, 1, 13);
  EXPECT_EQ(row.form, ops::GemmForm::Unpacked);
  EXPECT_EQ(row.mr, 1);
  EXPECT_EQ(row.nr, 32);
  EXPECT_EQ(few.form, ops::GemmForm::Unpacked);
  EXPECT_EQ(few.mr, 3);
  EXPECT_EQ(few.nr, 16);  // 10 columns need two vectors, not three
  EXPECT_EQ(many.form, ops::GemmForm::Packed);
  EXPECT_EQ(many.mr, 6);
  EXPECT_EQ(column.form, ops::GemmForm::DotK);
  EXPECT_EQ(column.nr, 8);
  EXPECT_EQ(odd_column.form, ops::GemmForm::Packed);  // K not a multiple of the lanes
  EXPECT_THROW(ops::gemm_tiling_for(8, 16, 0, 4, 4), ScheduleError);
  int lanes = codegen::target_info().float32_lanes(), regs = codegen::target_info().vector_registers;
  struct Shape {
    int m, n, k;
  };
  for (Shape sh : {Shape{1, 1000, 64}, Shape{2, 33, 17}, Shape{4, 7, 5}, Shape{5, 40, 9}, Shape{3, 1, 8},
                   Shape{1001, 1, 64}, Shape{1, 1, 32}, Shape{7, 1, 5}}) {
    ops::GemmTiling t = ops::gemm_tiling_for(lanes, regs, sh.m, sh.n, sh.k);
    SCOPED_TRACE(std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k) + " " +
                 ops::to_string(t.form));
    Tensor A = placeholder({sh.m, sh.k}, DataType::Float(32), "A"),
           B = placeholder({sh.k, sh.n}, DataType::Float(32), "B");
    Tensor C = ops::gemm(A, B, t);
    schedule::Schedule s({C});
    ops::schedule_gemm_cpu(s, C, t);
    expect_compiled_matches(s, test::Workload{{A, B}, {C}}, "gemm");
  }
  {
    // A partial last panel (257 = 16 x 16 + 1 columns) and a partial row tile: the product runs
    // over whole panels, so the last panel's tiles accumulate whole vectors with no per-lane
    // guard, and its copy into C is the one column C has there (partition_loops narrows it). Only
    // the packing of B pads its last panel, with zeros per lane.
    ops::GemmTiling t = ops::gemm_tiling_for(8, 16, 255, 257, 129);
    Tensor A = placeholder({255, 129}, DataType::Float(32), "A"), B = placeholder({129, 257}, DataType::Float(32), "B");
    Tensor C = ops::gemm(A, B, t);
    schedule::Schedule s({C});
    ops::schedule_gemm_cpu(s, C, t);
    std::string ir = to_string(schedule::lower(s, {A, B, C}, "gemm"));
    EXPECT_EQ(test::count_occurrences(ir, "< 257"), 1u) << ir;
    EXPECT_EQ(test::count_occurrences(ir, "< 257, B["), 1u) << ir;
    EXPECT_EQ(test::count_occurrences(ir, "] = C_panels[i.inner*16]"), 2u) << ir;  // the last panel's rows, one column
    expect_compiled_matches(s, test::Workload{{A, B}, {C}}, "gemm_panels");
  }
  Tensor A = placeholder({4, 4}, DataType::Float(32), "A");
  Tensor R = ops::relu(A);
  schedule::Schedule s({R});
  EXPECT_THROW(ops::schedule_gemm_cpu(s, R, {}), ScheduleError);
  EXPECT_THROW(ops::matmul_dot_k(A, placeholder({4, 2}, DataType::Float(32), "B"), 8), ShapeError);
}

// Batched products (attention's QKᵀ over a ViT's 197 tokens, a Swin window's 49) take column
// tiles of two vectors. The last tile is the columns it has, unguarded, in whole vectors and one
// narrower (16 lanes: 49 = 32 + 16 + 1, 53 = 32 + 16 + 5, 69 = 2 x 32 + 5): every vector loop is
// vectors, none left to LLVM's per-lane code (gathers, scalar multiply-adds), and none of an odd
// width past one register (which LLVM builds lane by lane).
TEST(CpuBackend, BatchMatmulColumnTilesFitTheColumns) {
  int lanes = codegen::target_info().float32_lanes(), regs = codegen::target_info().vector_registers;
  for (int n : {3 * lanes, 3 * lanes + 1, 3 * lanes + 5, 4 * lanes + 5, 4 * lanes}) {
    SCOPED_TRACE(std::to_string(n) + " columns");
    Tensor A = placeholder({4, 50, 32}, DataType::Float(32), "A"),
           B = placeholder({4, 32, n}, DataType::Float(32), "B");
    Tensor C = ops::batch_matmul(A, B, "C");
    schedule::Schedule s({C});
    ops::schedule_batch_matmul_cpu(s, C, C, lanes, regs);
    schedule::LowerOptions target;
    target.vector_bits = codegen::target_info().vector_bits;
    std::string ir = to_string(schedule::lower(s, {A, B, C}, "bmm", target));
    EXPECT_EQ(test::count_occurrences(ir, " < " + std::to_string(n) + ")"), 0u) << ir;  // no column guard
    EXPECT_EQ(ir.find("vectorized ("), std::string::npos) << ir;
    EXPECT_NE(ir.find(", 1, " + std::to_string(2 * lanes) + ")"), std::string::npos) << ir;  // two-vector tiles
    const int tail = n % (2 * lanes), narrowest = tail > lanes ? tail - lanes : tail;
    if (narrowest > 1) EXPECT_NE(ir.find(", 1, " + std::to_string(narrowest) + ")"), std::string::npos) << ir;
    if (tail > lanes) EXPECT_EQ(ir.find(", 1, " + std::to_string(tail) + ")"), std::string::npos) << ir;
    expect_compiled_matches(s, test::Workload{{A, B}, {C}}, "bmm" + std::to_string(n));
  }
}

// A vector loop whose last lanes still store something (zero padding past a ragged split's
// guard) keeps all its lanes: only a tail that provably does nothing is cut off. 10 elements
// split by 16 lanes, the padding's guard ending at 7: elements 7-9 are zeros, not left unwritten.
TEST(CpuBackend, VectorTailThatStoresKeepsItsLanes) {
  Tensor X = placeholder({10}, DataType::Float(32), "X");
  Tensor Y = compute(
      {10}, [&](Var i) { return if_then_else(i < 7, X(i), make_zero(DataType::Float(32))); }, "Y");
  schedule::Schedule s({Y});
  auto [o, i] = s[Y].split(s[Y].axis(0), 16);
  s[Y].vectorize(i);
  runtime::Module m = codegen::build_llvm({schedule::lower(s, {X, Y}, "pad")});
  NDArray x = test::random_float32({10}, 3), y = test::random_float32({10}, 4, 50, 60);
  m.call("pad", {x, y});
  for (int k = 0; k < 10; ++k) EXPECT_EQ(y.data<float>()[k], k < 7 ? x.data<float>()[k] : 0.0f) << "element " << k;
}

// Y = X [rows, 40] x W (12 blocks of the target's lanes, packed) + bias, scheduled by
// schedule_dense_fused_cpu for the target; `ir` is its lowered function.
struct ScheduledDense {
  static constexpr int K = 40, blocks = 12;
  explicit ScheduledDense(int rows)
      : X(placeholder({rows, K}, DataType::Float(32), "X")),
        W(placeholder({blocks, K, lanes()}, DataType::Float(32), "W")),
        bias(placeholder({blocks * lanes()}, DataType::Float(32), "bias")),
        Y(ops::dense(X, W, bias, lanes(), "Y")),
        s({Y}) {
    Tensor product = Y;  // the reduction that reads the packed weights, under the bias
    for (const Tensor& in : Y.op()->input_tensors())
      if (!in.op()->reduce_axes().empty()) product = in;
    ops::schedule_dense_fused_cpu(s, product, Y, lanes(), codegen::target_info().vector_registers);
    ir = to_string(schedule::lower(s, {X, W, bias, Y}, "dense"));
  }
  static int lanes() { return codegen::target_info().float32_lanes(); }
  Tensor X, W, bias, Y;
  schedule::Schedule s;
  std::string ir;
};

// A dense layer over a row or a few (a recurrent step's [1, 512] x [512, 2048], a classifier)
// accumulates groups of up to 8 output blocks at once: independent chains of multiply-adds (one
// block's single chain waited on each multiply-add's latency). Against plain loops.
TEST(CpuBackend, DenseOfFewRowsAccumulatesSeveralBlocks) {
  int lanes = codegen::target_info().float32_lanes();
  for (int rows : {1, 3}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    ScheduledDense d(rows);
    // 6 blocks per group (the largest divisor of 12 up to 8): a row's 6 vectors of accumulators.
    EXPECT_NE(d.ir.find("[float32 * " + std::to_string(6 * lanes) + "] in local"), std::string::npos) << d.ir;
    expect_compiled_matches(d.s, test::Workload{{d.X, d.W, d.bias}, {d.Y}}, "dense" + std::to_string(rows));
  }
}

// A dense layer over many rows (a transformer's tokens): row tiles of the GEMM tile's rows, the
// reduction unrolled by its k_unroll around them. With a partial last row tile (a ViT's 197
// tokens) the row tiles keep their own loop inside the parallel block groups, which
// partition_loops splits into whole tiles and one tail: fused with the groups, the whole tiles of
// every group but the first ran guarded. The whole tiles fetch the next group's weights between
// them. Against plain loops.
TEST(CpuBackend, DenseOfManyRowsUnrollsItsReductionAndKeepsWholeTilesUnguarded) {
  ops::GemmTiling t =
      ops::gemm_tiling_for(codegen::target_info().float32_lanes(), codegen::target_info().vector_registers);
  for (int rows : {2 * t.mr, 2 * t.mr + 3}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    ScheduledDense d(rows);
    // The reduction's outer loop: 40 / 4 steps, each 4 unrolled.
    EXPECT_NE(d.ir.find("for (k.outer, 0, " + std::to_string(ScheduledDense::K / t.k_unroll) + ")"), std::string::npos)
        << d.ir;
    // 6 groups of 2 blocks, 2 whole row tiles each: fused into one parallel loop, or, with a
    // partial tile, the groups parallel, their 2 whole tiles a loop of their own and no guard.
    if (rows % t.mr == 0) {
      EXPECT_NE(d.ir.find("parallel (j.outer.outer.i.outer.fused, 0, 12)"), std::string::npos) << d.ir;
    } else {
      EXPECT_NE(d.ir.find("parallel (j.outer.outer, 0, 6)"), std::string::npos) << d.ir;
      EXPECT_NE(d.ir.find("for (i.outer, 0, 2)"), std::string::npos) << d.ir;
      // No guard but the whole tiles' prefetch of the next group's weights (prefetch_across).
      EXPECT_EQ(test::count_occurrences(d.ir, "if ("), 1u) << d.ir;
      EXPECT_NE(d.ir.find("if (k.outer % 2 == i.outer && j.outer.outer + 1 < 6) {"), std::string::npos) << d.ir;
    }
    expect_compiled_matches(d.s, test::Workload{{d.X, d.W, d.bias}, {d.Y}}, "dense_rows" + std::to_string(rows));
  }
}

// Softmax along the innermost axis reduces in two steps (partials every 8th or 16th element, then
// the partials), so its max and sum vectorize; a row of no multiple of 8 from 32 elements on (a
// ViT's 197 tokens) takes 16 partials with the last step's elements past the row neutral. The
// result matches the naive reference for a multiple of 16, of 8 only, such a row, and a short
// length that keeps the single-step form. exp is computed once per element, in whole vectors
// wherever the row has them.
TEST(CpuBackend, SoftmaxReductionsVectorize) {
  int lanes = codegen::target_info().float32_lanes();
  for (int m : {1000, 48, 197, 30}) {
    Tensor X = placeholder({5, m}, DataType::Float(32), "X");
    Tensor Y = ops::softmax(X, 1, "Y");
    schedule::Schedule s({Y});
    ops::schedule_generic_cpu(s, Y, lanes);
    LoweredFunc f = schedule::lower(s, {X, Y}, "softmax");
    std::string ir = to_string(f);
    bool two_step = ir.find("Y_max_partial") != std::string::npos;
    EXPECT_EQ(two_step, m % 8 == 0 || m >= 32) << ir;
    if (two_step) {
      EXPECT_NE(ir.find("Y_max_partial[ramp("), std::string::npos) << ir;  // a vector of partial maxima
    }
    // exp once per element: its stage is read by the sum and the division, and is not inlined
    // into both (it was computed twice); a row's whole vectors and its tail are separate loops.
    EXPECT_GE(test::count_occurrences(ir, "exp("), 1u) << ir;
    EXPECT_EQ(test::count_occurrences(ir, "exp("), test::count_occurrences(ir, "] = exp(")) << ir;
    EXPECT_NE(ir.find("] = exp(X[ramp("), std::string::npos) << ir;
    // The tail's guard is on the row's own vectors, not on a loop fused over rows (there it would
    // hold on no range of that loop but the first row's, and every other row would run guarded).
    EXPECT_FALSE(std::regex_search(ir, std::regex("if \\([^\\n]*%"))) << ir;
    expect_compiled_matches(s, test::Workload{{X}, {Y}}, "softmax" + std::to_string(m));
  }
}

// A blocked map [N, C/b, H, W, b] goes by rows before blocks in its parallel loop, as the
// convolutions split theirs; a 5-D tensor whose innermost axis is no block keeps its order. Both
// match the reference.
TEST(CpuBackend, BlockedMapsGoByRowsFirst) {
  int lanes = codegen::target_info().float32_lanes();
  for (auto [inner, rows_first] : {std::pair{8, true}, std::pair{7, false}}) {
    Tensor X = placeholder({1, 8, 20, 20, inner}, DataType::Float(32), "X");
    Tensor Y = ops::relu(X, "Y");
    schedule::Schedule s({Y});
    ops::schedule_generic_cpu(s, Y, lanes);
    std::string ir = to_string(schedule::lower(s, {X, Y}, "relu"));
    SCOPED_TRACE(ir);
    EXPECT_NE(ir.find(rows_first ? "parallel (i.k.fused" : "parallel (i.j.fused"), std::string::npos);
    expect_compiled_matches(s, test::Workload{{X}, {Y}}, "relu" + std::to_string(inner));
  }
}

// Rows of no whole number of vectors join into one loop when every read steps evenly across the
// rows' ends: a channel shuffle's rows of 6 (shorter than a vector on AVX2 and AVX-512) are 36
// contiguous elements, vectorized (they ran as scalar copies); a row-wise broadcast (a division by
// each row's own value) keeps its rows of 3 apart, since fused it would gather. Both match the
// reference.
TEST(CpuBackend, ShortRowsJoinWhenReadEvenly) {
  int lanes = codegen::target_info().float32_lanes();
  Tensor X = placeholder({1, 116, 6, 6}, DataType::Float(32), "X");
  Tensor Y = ops::reshape(ops::transpose(ops::reshape(X, ops::Shape{1, 2, 58, 6, 6}, "split"), {0, 2, 1, 3, 4}, "swap"),
                          ops::Shape{1, 116, 6, 6}, "Y");
  schedule::Schedule s({Y});
  ops::schedule_generic_cpu(s, Y, lanes);
  std::string ir = to_string(schedule::lower(s, {X, Y}, "shuffle"));
  EXPECT_NE(ir.find("Y[ramp("), std::string::npos) << ir;
  EXPECT_NE(ir.find("X[ramp("), std::string::npos) << ir;
  expect_compiled_matches(s, test::Workload{{X}, {Y}}, "shuffle");

  Tensor A = placeholder({6, 10, 3}, DataType::Float(32), "A");
  Tensor R = placeholder({6, 10, 1}, DataType::Float(32), "R");
  Tensor Q = ops::binary(ops::BinaryOp::Div, A, R, "Q");
  schedule::Schedule q({Q});
  ops::schedule_generic_cpu(q, Q, lanes);
  std::string qir = to_string(schedule::lower(q, {A, R, Q}, "row_scale"));
  EXPECT_EQ(qir.find("ramp("), std::string::npos) << qir;  // rows of 3: scalar, no gather
  expect_compiled_matches(q, test::Workload{{A, R}, {Q}}, "row_scale");

  // Joined with a guarded tail, a map with nothing outside its rows would leave the threads no
  // parallel loop: its rows stay apart.
  Tensor B = placeholder({1, 10, 6}, DataType::Float(32), "B");
  Tensor P = ops::binary(ops::BinaryOp::Mul, B, B, "P");
  schedule::Schedule p({P});
  ops::schedule_generic_cpu(p, P, lanes);
  std::string pir = to_string(schedule::lower(p, {B, P}, "square"));
  EXPECT_EQ(pir.find("ramp("), std::string::npos) << pir;
  expect_compiled_matches(p, test::Workload{{B}, {P}}, "square");
}

// Reductions over the innermost axis (LayerNorm's row means) take softmax's two steps: partials
// every 16th or 8th element, vectorized, then the partials (one chain per row ran BERT's LayerNorm
// several times slower); a row of no multiple of 8 keeps one step. Every kind, with and without
// the kept axis, matches plain loops in double precision.
TEST(CpuBackend, RowReductionsTakeTwoVectorizedSteps) {
  int lanes = codegen::target_info().float32_lanes();
  using K = ops::ReduceKind;
  for (int m : {48, 24, 30})
    for (bool keep : {true, false})
      for (K kind : {K::Sum, K::Mean, K::Max, K::Min, K::SumSquare, K::L1, K::L2, K::LogSum, K::LogSumExp, K::Prod}) {
        const int rows = 5;
        Tensor X = placeholder({rows, m}, DataType::Float(32), "X");
        Tensor R = ops::reduce(X, kind, {-1}, keep, "R");
        schedule::Schedule s({R});
        ops::schedule_generic_cpu(s, R, lanes);
        std::string name = std::string("rows_") + ops::to_string(kind) + std::to_string(m) + (keep ? "k" : "");
        LoweredFunc f = schedule::lower(s, {X, R}, name);
        std::string ir = to_string(f);
        SCOPED_TRACE(name + "\n" + ir);
        EXPECT_EQ(ir.find("_partial[ramp(") != std::string::npos, m % 8 == 0);  // a vector of partials
        NDArray x = NDArray::empty({rows, m}, DataType::Float(32));
        for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.5f + float((i * 7919) % 101) / 100.0f;
        NDArray r = NDArray::empty(keep ? ops::Shape{rows, 1} : ops::Shape{rows}, DataType::Float(32));
        runtime::Module mod = codegen::build_llvm({f});
        mod.call(name, {x, r});
        for (int row = 0; row < rows; ++row) {
          const float* v = x.data<float>() + row * m;
          double sum = 0, sq = 0, mx = v[0], mn = v[0], prod = 1, se = 0;
          for (int k = 0; k < m; ++k)
            sum += v[k], sq += double(v[k]) * v[k], mx = std::max<double>(mx, v[k]), mn = std::min<double>(mn, v[k]),
                                                    prod *= v[k];
          for (int k = 0; k < m; ++k) se += std::exp(v[k] - mx);
          double want = kind == K::Sum || kind == K::L1 ? sum
                        : kind == K::Mean               ? sum / m
                        : kind == K::Max                ? mx
                        : kind == K::Min                ? mn
                        : kind == K::SumSquare          ? sq
                        : kind == K::L2                 ? std::sqrt(sq)
                        : kind == K::LogSum             ? std::log(sum)
                        : kind == K::LogSumExp          ? std::log(se) + mx
                                                        : prod;
          EXPECT_NEAR(r.data<float>()[row], want, 1e-5 * std::max(1.0, std::abs(want))) << "row " << row;
        }
      }
}

// A reduction's points are counted with their reductions when deciding to run in parallel:
// LayerNorm's row means over a transformer's 768 columns (128 points, 98304 additions) run on
// every thread, kept as [1, 128, 1] or dropped to [1, 128] (the rows then vectors, whose outer
// loop joins the parallel one rather than a parallel loop of one iteration); a handful of short
// sums stays serial; all match the reference.
TEST(CpuBackend, RowReductionsRunInParallel) {
  int lanes = codegen::target_info().float32_lanes();
  for (auto [rows, cols, keep, parallel] :
       {std::tuple{128, 768, true, true}, std::tuple{128, 768, false, true}, std::tuple{4, 8, true, false}}) {
    Tensor X = placeholder({1, rows, cols}, DataType::Float(32), "X");
    IterVar k = reduce_axis(cols, "k");
    std::vector<Expr> shape = {1, rows};
    if (keep) shape.push_back(1);
    Tensor R = compute(
        shape, [&](const std::vector<Var>& i) { return sum(X(i[0], i[1], k->var), {k}); }, "R");
    schedule::Schedule s({R});
    ops::schedule_generic_cpu(s, R, lanes);
    std::string ir = to_string(schedule::lower(s, {X, R}, "row_sums"));
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols) + (keep ? ", kept" : ", dropped") + "\n" + ir);
    EXPECT_EQ(ir.find("parallel") != std::string::npos, parallel);
    EXPECT_FALSE(std::regex_search(ir, std::regex(R"(parallel \([^,]+, 0, 1\))")));  // no one-iteration loop
    expect_compiled_matches(s, test::Workload{{X}, {R}}, "row_sums" + std::to_string(rows));
  }
}

// A separable bilinear resize (two resample_axis stages): the first is stored, not inlined into
// the second, which reads it at two gathered columns per output (inlined, each output gathered
// four input elements). A cheap stage read
// once at a gathered index is still inlined.
TEST(CpuBackend, StageGatheredSeveralTimesIsStored) {
  int lanes = codegen::target_info().float32_lanes();
  Tensor X = placeholder({1, 3, 7, 7}, DataType::Float(32), "X");
  Tensor rows_index = placeholder({2, 28}, DataType::Int(32), "rows_index");
  Tensor rows_weight = placeholder({2, 28}, DataType::Float(32), "rows_weight");
  Tensor cols_index = placeholder({2, 32}, DataType::Int(32), "cols_index");
  Tensor cols_weight = placeholder({2, 32}, DataType::Float(32), "cols_weight");
  Tensor rows = ops::resample_axis(X, rows_index, rows_weight, Tensor(), 2, "rows");
  Tensor Y = ops::resample_axis(rows, cols_index, cols_weight, Tensor(), 3, "Y");
  schedule::Schedule s({Y});
  ops::schedule_generic_cpu(s, Y, lanes);
  std::string ir = to_string(schedule::lower(s, {X, rows_index, rows_weight, cols_index, cols_weight, Y}, "resize"));
  EXPECT_NE(ir.find("rows["), std::string::npos) << ir;    // stored, and read back by Y
  EXPECT_EQ(test::count_occurrences(ir, "X["), 2u) << ir;  // the two row taps, once per stored point

  // Nearest (one tap): read once per output, inlined.
  Tensor one_index = placeholder({1, 32}, DataType::Int(32), "one_index");
  Tensor one_weight = placeholder({1, 32}, DataType::Float(32), "one_weight");
  Tensor Z = ops::resample_axis(rows, one_index, one_weight, Tensor(), 3, "Z");
  schedule::Schedule s1({Z});
  ops::schedule_generic_cpu(s1, Z, lanes);
  std::string ir1 = to_string(schedule::lower(s1, {X, rows_index, rows_weight, one_index, one_weight, Z}, "nearest"));
  EXPECT_EQ(ir1.find("rows["), std::string::npos) << ir1;
}

// The NCHW conv register tile follows the target too (AVX2: 16 channels x 6 columns for 64
// channels at 56 columns, 12 accumulators, the last tile partial; AVX-512: 64 x 6), stays within
// the registers, and every chosen tile computes the convolution correctly on this host, with
// either reduction order (rows of 9, 6 and 8 columns: partial and full last tiles).
TEST(CpuBackend, TargetAwareConvTiles) {
  ops::ConvNchwTiling avx2 = ops::conv_nchw_tiling_for(8, 16, 64, 56),
                      avx512 = ops::conv_nchw_tiling_for(16, 32, 64, 56);
  EXPECT_EQ(avx2.oc_block, 16);
  EXPECT_EQ(avx2.x_block, 6);
  EXPECT_TRUE(avx2.window_outer);
  EXPECT_EQ(avx512.oc_block, 64);
  EXPECT_EQ(avx512.x_block, 6);
  // One 64-channel tile on AVX-512 leaves nothing to share out but the rows; AVX2's 4 tiles too few.
  EXPECT_TRUE(avx512.parallel_rows);
  EXPECT_TRUE(avx2.parallel_rows);
  EXPECT_FALSE(ops::conv_nchw_tiling_for(8, 16, 256, 56).parallel_rows);  // 16 channel blocks
  for (auto [lanes, regs] : {std::pair{8, 16}, std::pair{16, 32}})
    for (auto [c, hw] : {std::pair{32, 8}, std::pair{48, 6}, std::pair{16, 9}})
      for (bool window_outer : {true, false}) {
        ops::ConvNchwTiling t = ops::conv_nchw_tiling_for(lanes, regs, c, hw);
        t.window_outer = window_outer;
        SCOPED_TRACE(std::to_string(t.oc_block) + "x" + std::to_string(t.x_block) + " for " + std::to_string(c) +
                     " channels at " + std::to_string(hw));
        EXPECT_LE(t.x_block * (t.oc_block / lanes), regs - t.oc_block / lanes - 1);
        Tensor X = placeholder({1, c, hw, hw}, DataType::Float(32), "X"),
               W = placeholder({c, c, 3, 3}, DataType::Float(32), "W");
        Tensor Y = ops::conv2d_nchw_packed(X, W, 1, 1, t.oc_block);
        schedule::Schedule s({Y});
        ops::schedule_conv2d_nchw_cpu(s, Y, t);
        expect_compiled_matches(s, test::Workload{{X, W}, {Y}}, "conv");
      }
}

// A 3x3, pad-1 conv over NCHW8c data: in_blocks x 8 channels in, out_blocks x 8 out, hw x hw.
test::Workload nchw8c_conv3x3(int64_t in_blocks, int64_t out_blocks, int64_t hw) {
  Tensor X = placeholder({1, in_blocks, hw, hw, 8}, DataType::Float(32), "X"),
         W = placeholder({out_blocks, in_blocks, 3, 3, 8, 8}, DataType::Float(32), "W");
  ops::Conv2dParams p;
  p.pads = {1, 1, 1, 1};
  p.oc_block = 8;
  return test::Workload{{X, W}, {ops::conv2d_nchwc(X, W, Tensor(), p, "Y")}};
}

// The NCHWc conv tile of whole models: AVX2 (8 lanes, 16 registers, blocks of 8) takes 2 blocks
// x 6 columns at 56 (12 accumulators, 2 weights, 1 broadcast), AVX-512 (blocks of 16) 4 x 6 at
// 56 (24 accumulators); every choice fits the registers, and computes correctly here with partial last tiles.
TEST(CpuBackend, TargetAwareNchwcConvTiles) {
  ops::NchwcConvTile avx2 = ops::nchwc_conv_tile(8, 16, 8, 8, 56), avx512 = ops::nchwc_conv_tile(16, 32, 4, 16, 56);
  EXPECT_EQ(avx2.channel_blocks, 2);
  EXPECT_EQ(avx2.x_block, 6);
  EXPECT_EQ(avx512.channel_blocks, 4);
  EXPECT_EQ(avx512.x_block, 6);
  int lanes = codegen::target_info().float32_lanes(), regs = codegen::target_info().vector_registers;
  for (auto [c, hw] : {std::pair{32, 9}, std::pair{48, 7}, std::pair{16, 5}}) {
    ops::NchwcConvTile t = ops::nchwc_conv_tile(lanes, regs, c / 8, 8, hw);
    int v = t.channel_blocks * std::max(1, 8 / lanes);
    SCOPED_TRACE(std::to_string(t.channel_blocks) + " blocks x " + std::to_string(t.x_block) + " for " +
                 std::to_string(c) + " channels at " + std::to_string(hw));
    EXPECT_LE(t.x_block * v, regs - v - 1);
    test::Workload w = nchw8c_conv3x3(c / 8, c / 8, hw);
    schedule::Schedule s(w.outputs);
    ops::schedule_conv2d_nchwc_cpu(s, w.outputs[0], w.outputs[0], lanes, regs);
    expect_compiled_matches(s, w, "conv");
  }
  // A tile wider than the row (a hand-edited tuning log) is cut at the row: no loop over a
  // million columns to unroll, the same result.
  test::Workload w = nchw8c_conv3x3(2, 2, 6);
  Tensor Y = w.outputs[0];
  schedule::Schedule s({Y});
  ops::schedule_conv2d_nchwc_cpu(s, Y, Y, 8, 16, ops::NchwcConvTile{1, 1000000});
  std::string ir = to_string(schedule::lower(s, w.args(), "conv"));
  EXPECT_EQ(ir.find("1000000"), std::string::npos) << ir;
  expect_compiled_matches(s, w, "wide_tile");
  // The kernel rows, kernel columns and channels of an input block stay rolled loops (LLVM
  // unrolling them spilled the tile): every such loop carries `pragma llvm_unroll = 0`, and
  // nothing else does.
  std::map<std::string, int> rolled;
  const std::string pragma = "// attr pragma_llvm_unroll = 0\n";
  for (size_t at = ir.find(pragma); at != std::string::npos; at = ir.find(pragma, at + 1)) {
    size_t loop = ir.find_first_not_of(' ', at + pragma.size());
    rolled[ir.substr(loop, ir.find(',', loop) - loop)]++;
  }
  for (const char* loop : {"for (ry.c", "for (rx.c", "for (rci.c"}) EXPECT_GE(rolled[loop], 1) << loop << "\n" << ir;
  EXPECT_EQ(rolled.size(), 3u) << ir;
}

// Blocks of half a vector (8 channels, AVX-512's 16 lanes: MobileNetV2's 24-channel layers) over
// rows of an even width pair neighbouring columns in each vector: 16-lane multiply-adds, no gathers
// (the weights load as one 8-vector, the inputs as two broadcasts, ir::constant_lane_offsets; checked
// on the 1x1 conv, which has no padded copy), the tile's columns whole pairs that divide the row. An odd row keeps
// 8-lane vectors. Equal to the naive reference on this host (16-lane vectors run on AVX2 too, as two halves), on 1 and
// 2 threads; the input-blocks-outer order (a wide layer on a small map) pairs its columns too.
TEST(CpuBackend, HalfVectorBlocksPairColumns) {
  auto conv1x1 = [](int64_t in_blocks, int64_t out_blocks, int64_t hw) {
    Tensor X = placeholder({1, in_blocks, hw, hw, 8}, DataType::Float(32), "X"),
           W = placeholder({out_blocks, in_blocks, 1, 1, 8, 8}, DataType::Float(32), "W");
    ops::Conv2dParams p;
    p.oc_block = 8;
    return test::Workload{{X, W}, {ops::conv2d_nchwc(X, W, Tensor(), p, "Y")}};
  };
  struct Case {
    const char* what;
    test::Workload w;
    std::optional<ops::NchwcConvTile> tile;
    bool paired, blocks_outer = false;
  };
  for (Case c :
       {Case{"1x1, 144 -> 24 channels, 8x8", conv1x1(18, 3, 8), std::nullopt, true},
        Case{"3x3, 32 -> 24 channels, 10x10", nchw8c_conv3x3(4, 3, 10), std::nullopt, true},
        Case{"1x1 on a small map, input blocks outer", conv1x1(1030, 4, 2), ops::NchwcConvTile{4, 3}, true, true},
        Case{"1x1, a tuned tile of 5 columns (4: two pairs)", conv1x1(18, 3, 8), ops::NchwcConvTile{3, 5}, true},
        Case{"3x3, 7x7: odd rows", nchw8c_conv3x3(4, 3, 7), std::nullopt, false}}) {
    SCOPED_TRACE(c.what);
    Tensor Y = c.w.outputs[0];
    if (c.tile) EXPECT_EQ(ops::nchwc_input_blocks_outer(Y, Y, *c.tile), c.blocks_outer);
    schedule::Schedule s({Y});
    ops::schedule_conv2d_nchwc_cpu(s, Y, Y, 16, 32, c.tile);
    LoweredFunc f = schedule::lower(s, c.w.args(), "half_blocks");
    codegen::LLVMOptions o;
    o.target_cpu = "x86-64-v4";
    std::string ir = codegen::emit_llvm_ir({f}, o);
    EXPECT_EQ(ir.find("<16 x float>") != std::string::npos, c.paired);
    // (A padded input's copy, whose rows Loom leaves scalar, LLVM vectorizes with gathers.)
    if (c.w.inputs[1].ndim() == 6 && ops::const_dim(c.w.inputs[1], 2) == 1) {
      EXPECT_EQ(ir.find("gather"), std::string::npos) << ir;
      EXPECT_EQ(ir.find("scatter"), std::string::npos) << ir;  // stores of whole vectors
    }
    runtime::Module m = codegen::build_llvm({f});
    for (int threads : {1, 2}) {
      runtime::set_num_threads(threads);
      Prepared pr = prepare(c.w);
      m.call("half_blocks", pr.args);
      expect_outputs(c.w, pr, 1e-4, std::string(c.what) + ", " + std::to_string(threads) + " threads");
    }
  }
  runtime::set_num_threads(0);
}

// Vector loads whose lanes read constant offsets from one base come from a few contiguous runs and
// a shuffle, not a gather: runs of different lengths in permuted lane order, four runs of four,
// one element repeated; equal to the naive reference, and the LLVM IR has no gather.
TEST(CpuBackend, ConstantOffsetLoadsReadRuns) {
  struct Case {
    const char* what;
    std::function<Expr(Expr)> offset;  // lane f's offset from its row's start
  };
  for (Case c :
       {Case{"f % 3 + (f / 8) * 7: two runs of three, lanes permuted", [](Expr f) { return f % 3 + f / 8 * 7; }},
        Case{"f % 4 + (f / 4) * 5: four runs of four", [](Expr f) { return f % 4 + f / 4 * 5; }},
        Case{"(f / 16) * 3: one element", [](Expr f) { return f / 16 * 3; }}}) {
    SCOPED_TRACE(c.what);
    Tensor A = placeholder({8, 32}, DataType::Float(32), "A");
    Tensor Y = compute(
        {8, 16}, [&](Var i, Var f) { return A(i, c.offset(f)) * 2.0f; }, "Y");
    schedule::Schedule s({Y});
    s[Y].vectorize(s[Y].axis(1));
    LoweredFunc f = schedule::lower(s, {A, Y}, "runs");
    codegen::LLVMOptions o;
    o.target_cpu = "x86-64-v4";
    std::string ir = codegen::emit_llvm_ir({f}, o);
    EXPECT_EQ(ir.find("gather"), std::string::npos) << ir;
    EXPECT_NE(ir.find("<16 x float>"), std::string::npos) << ir;
    expect_compiled_matches(s, test::Workload{{A}, {Y}}, "runs");
  }
}

// A wide layer on a small map (the block group's weights past 1 MiB, its output map within 64
// KiB): the input blocks run outermost around the whole output map in a local buffer. Equal to
// the naive reference on 1 and 2 threads, the partial last column tile included; a layer with
// small weights keeps the row-tile order.
TEST(CpuBackend, NchwcInputBlocksOuterOnSmallMaps) {
  test::Workload w = nchw8c_conv3x3(128, 4, 5);
  Tensor Y = w.outputs[0];
  ops::NchwcConvTile tile{4, 3};  // 4 x 8 x 1024 x 9 floats of weights: 1.2 MB
  EXPECT_TRUE(ops::nchwc_input_blocks_outer(Y, Y, tile));
  EXPECT_FALSE(ops::nchwc_input_blocks_outer(Y, Y, ops::NchwcConvTile{2, 3}));
  for (int threads : {1, 2}) {
    runtime::set_num_threads(threads);
    schedule::Schedule s({Y});
    ops::schedule_conv2d_nchwc_cpu(s, Y, Y, 8, 16, tile);
    expect_compiled_matches(s, w, "wide_small_map");
  }
  runtime::set_num_threads(0);
}

// The conv's parallel loop takes the rows outside the block groups where the weights are no larger
// than the input map (the pool gives each thread the same part of every loop: rows a thread wrote
// before), the block groups outside where the weights are heavier (each thread then reads only
// its groups'). Both orders equal the naive reference on 1 and 2 threads.
TEST(CpuBackend, NchwcConvRowsFirstWhereWeightsAreLight) {
  struct Case {
    test::Workload w;
    bool rows_first;
  };
  for (auto& [w, rows_first] : {Case{nchw8c_conv3x3(2, 4, 20), true}, Case{nchw8c_conv3x3(4, 4, 6), false}}) {
    Tensor Y = w.outputs[0];
    EXPECT_EQ(ops::nchwc_rows_first(Y), rows_first);
    schedule::Schedule s({Y});
    ops::schedule_conv2d_nchwc_cpu(s, Y, Y, 8, 16, ops::NchwcConvTile{2, 3});
    std::string ir = to_string(schedule::lower(s, w.args(), "conv"));
    // The output's axes: i (batch), j (blocks, split into groups j.outer), k (rows), l (columns);
    // the padded input's loop comes first.
    std::smatch loop;
    ASSERT_TRUE(std::regex_search(ir, loop, std::regex(R"(parallel \((i\.[a-z.]*j\.outer[a-z.]*),)"))) << ir;
    const std::string name = loop[1];
    const size_t rows = name.find(".k."), groups = name.find("j.outer");
    ASSERT_NE(rows, std::string::npos) << name;
    EXPECT_EQ(rows < groups, rows_first) << name;
    for (int threads : {1, 2}) {
      runtime::set_num_threads(threads);
      expect_compiled_matches(s, w, rows_first ? "rows_first" : "groups_first");
    }
  }
  runtime::set_num_threads(0);
}

// The single-block loops of `assembly` (a label, then the branch back to it with no label between)
// that hold multiply-adds: how many, and how many of those touch the stack (a register tile that
// spills).
struct FmaLoops {
  int loops = 0, touching_the_stack = 0;
};
FmaLoops fma_loops(const std::string& assembly) {
  FmaLoops r;
  std::string label;
  bool fma = false, stack = false;
  for (size_t at = 0, end; at < assembly.size(); at = end + 1) {
    end = assembly.find('\n', at);
    if (end == std::string::npos) end = assembly.size();
    std::string l = assembly.substr(at, end - at);
    if (!l.empty() && l[0] == '.' && l.back() == ':') {
      label = l.substr(0, l.size() - 1), fma = stack = false;
      continue;
    }
    fma |= l.find("vfmadd") != std::string::npos;
    stack |= l.find("(%rsp)") != std::string::npos;
    if (!label.empty() && l.find("\tj") != std::string::npos && l.substr(l.find_last_of('\t') + 1) == label && fma) {
      ++r.loops;
      r.touching_the_stack += stack;
    }
  }
  return r;
}

// A conv on the image (an input block of its 3 channels, MobileNetV2's 3 -> 32 stride-2 stem)
// unrolls the channels: as a rolled loop of 3, LLVM hoisted the tile's broadcasts and its loop
// spilled accumulators and addresses to the stack (x86-64-v4, whatever the host). Equal to the
// naive reference on this host; a 16-channel input block keeps its channels rolled (its loop
// reloads two addresses from the stack, which costs little).
TEST(CpuBackend, ImageConvUnrollsItsChannels) {
  for (int64_t block : {3, 16}) {
    SCOPED_TRACE("input block of " + std::to_string(block));
    // A 3x3 stride-2 conv of `block` input channels to 32 on an hw x hw map, scheduled for AVX-512.
    auto conv = [&](int64_t hw) {
      Tensor X = placeholder({1, 1, hw, hw, block}, DataType::Float(32), "X"),
             W = placeholder({2, 1, 3, 3, block, 16}, DataType::Float(32), "W");
      ops::Conv2dParams p;
      p.pads = {1, 1, 1, 1};
      p.strides = {2, 2};
      p.oc_block = 16;
      Tensor Y = ops::conv2d_nchwc(X, W, Tensor(), p, "Y");
      auto s = std::make_unique<schedule::Schedule>(std::vector<Tensor>{Y});
      ops::schedule_conv2d_nchwc_cpu(*s, Y, Y, 16, 32);
      return std::pair{std::move(s), test::Workload{{X, W}, {Y}}};
    };
    auto [s, w] = conv(224);  // the stem's map: a tile of 2 blocks x 14 columns
    LoweredFunc f = schedule::lower(*s, w.args(), "image_conv");
    std::string ir = to_string(f);
    EXPECT_EQ(ir.find("for (rci") != std::string::npos, block == 16) << ir;  // the channels' loop
    EXPECT_NE(ir.find("for (rx"), std::string::npos) << ir;                  // the kernel columns stay rolled
    codegen::LLVMOptions o;
    o.target_cpu = "x86-64-v4";
    std::string assembly = codegen::emit_assembly({f}, o);
    FmaLoops loops = fma_loops(assembly);
    EXPECT_GE(loops.loops, 1) << assembly;
    if (block == 3) EXPECT_EQ(loops.touching_the_stack, 0) << assembly;
    auto [small, small_w] = conv(30);
    expect_compiled_matches(*small, small_w, "image_conv");
  }
}

// Interleaved narrow groups (weights [O/b, Cg, kh, kw, b]: output block ob reads lane l of input
// blocks j GH + ob % GH): equal to the naive reference for 4- and 8-channel groups, strides 1 and
// 2, rows that the column tile does not divide, on 1 and 2 threads.
TEST(CpuBackend, InterleavedGroupConvs) {
  for (auto [c, cg, hw, stride] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{64, 4, 9, 1}, {128, 8, 10, 2}, {128, 4, 7, 1}}) {
    SCOPED_TRACE(std::to_string(cg) + "-channel groups, stride " + std::to_string(stride));
    Tensor X = placeholder({1, c / 16, hw, hw, 16}, DataType::Float(32), "X"),
           W = placeholder({c / 16, cg, 3, 3, 16}, DataType::Float(32), "W");
    ops::Conv2dParams p;
    p.pads = {1, 1, 1, 1};
    p.strides = {stride, stride};
    p.groups = c / cg;
    p.oc_block = 16;
    p.interleaved_groups = true;
    Tensor Y = ops::conv2d_nchwc(X, W, Tensor(), p, "Y");
    for (int threads : {1, 2}) {
      runtime::set_num_threads(threads);
      schedule::Schedule s({Y});
      ops::schedule_interleaved_groups_nchwc_cpu(s, Y, Y, codegen::target_info().float32_lanes());
      expect_compiled_matches(s, test::Workload{{X, W}, {Y}}, "interleaved");
    }
  }
  runtime::set_num_threads(0);
}

// Depthwise NCHWc convolutions (inlined padding, rows serial inside the parallel loop of channel
// blocks when there are enough blocks, parallel too when not): equal to the naive reference for
// strides 1 and 2, odd sizes and rows narrower than the column tile, on 1 and 2 threads; with
// rows serial, loop partitioning leaves the interior rows' reads unguarded.
TEST(CpuBackend, DepthwiseNchwcConvs) {
  int lanes = codegen::target_info().float32_lanes();
  for (auto [c, hw, stride] : {std::tuple{64, 13, 1}, std::tuple{64, 14, 2}, std::tuple{8, 9, 1}, std::tuple{16, 3, 2},
                               std::tuple{96, 1, 1}}) {
    SCOPED_TRACE(std::to_string(c) + " channels, " + std::to_string(hw) + "x" + std::to_string(hw) + ", stride " +
                 std::to_string(stride));
    Tensor X = placeholder({1, c / 8, hw, hw, 8}, DataType::Float(32), "X"),
           W = placeholder({c / 8, 3, 3, 8}, DataType::Float(32), "W");
    runtime::set_num_threads(2);  // the schedule reads the thread count: the same choice on any host
    ops::Conv2dParams p;
    p.pads = {1, 1, 1, 1};
    p.strides = {stride, stride};
    p.groups = c;
    p.oc_block = 8;
    Tensor Y = ops::conv2d_nchwc(X, W, Tensor(), p, "Y");
    schedule::Schedule s({Y});
    ops::schedule_depthwise_nchwc_cpu(s, Y, Y, lanes);
    test::Workload w{{X, W}, {Y}};
    LoweredFunc f = schedule::lower(s, w.args(), "dw");
    runtime::Module m = codegen::build_llvm({f});
    for (int threads : {1, 2}) {
      runtime::set_num_threads(threads);
      Prepared pr = prepare(w);
      m.call("dw", pr.args);
      expect_outputs(w, pr, 1e-4, "dw, " + std::to_string(threads) + " threads\n" + to_string(f));
    }
    // Rows outside the blocks in the parallel loop (i: batch, k: rows, j: blocks), as the other
    // kernels of a model split their maps.
    EXPECT_NE(to_string(f).find("parallel (i.k.fused"), std::string::npos) << to_string(f);
    if (c == 64 && stride == 1) {
      // 8 blocks >= 4 x threads: rows are a serial loop, partitioned into first, interior, last.
      std::string ir = to_string(f);
      EXPECT_LT(test::count_occurrences(ir, "if_then_else("), test::count_occurrences(ir, "X["))
          << "some reads must be unguarded\n"
          << ir;
    }
  }
  runtime::set_num_threads(0);
}

// Cross-compiled, whatever the host: the AVX2 tile uses 256-bit registers only, the AVX-512 tile
// 512-bit ones, both with fused multiply-adds (assembly checks).
TEST(CpuBackend, GemmTilesCrossCompileForEveryX86Level) {
  struct Level {
    const char* cpu;
    int lanes, registers;
    const char *must, *must_not;
  };
  for (Level l : {Level{"x86-64-v3", 8, 16, "ymm", "zmm"}, Level{"x86-64-v4", 16, 32, "zmm", nullptr}}) {
    SCOPED_TRACE(l.cpu);
    codegen::LLVMOptions o;
    o.target_cpu = l.cpu;
    codegen::TargetInfo ti = codegen::target_info(o);
    EXPECT_EQ(ti.float32_lanes(), l.lanes);
    EXPECT_EQ(ti.vector_registers, l.registers);
    ops::GemmTiling t = ops::gemm_tiling_for(ti.float32_lanes(), ti.vector_registers);
    Tensor A = placeholder({96, 128}, DataType::Float(32), "A"), B = placeholder({128, 128}, DataType::Float(32), "B");
    Tensor C = ops::matmul_packed(A, B, t.nr);
    schedule::Schedule s({C});
    ops::schedule_matmul_packed_cpu(s, C, t);
    std::string assembly = codegen::emit_assembly({schedule::lower(s, {A, B, C}, "gemm")}, o);
    EXPECT_NE(assembly.find(l.must), std::string::npos);
    if (l.must_not) {
      EXPECT_EQ(assembly.find(l.must_not), std::string::npos);
    }
    EXPECT_NE(assembly.find("vfmadd"), std::string::npos) << "fused multiply-adds";
  }
}

// Functions prefer 512-bit vectors exactly where the subtarget has AVX-512, whether a CPU name
// implies it (x86-64-v4 was missed by a list of names) or the features add or remove it.
TEST(CpuBackend, PreferredVectorWidthFollowsTheSubtargetFeatures) {
  Tensor A = placeholder({64}, DataType::Float(32), "A");
  Tensor B = compute(
      {64}, [&](Var i) { return A(i) * 2.0f; }, "B");
  schedule::Schedule s({B});
  ir::LoweredFunc f = schedule::lower(s, {A, B}, "twice");
  struct Case {
    const char *cpu, *features;
    bool avx512;
  };
  for (Case c : {Case{"x86-64-v4", "", true}, Case{"skylake-avx512", "", true}, Case{"znver4", "", true},
                 Case{"x86-64-v3", "", false}, Case{"znver3", "", false}, Case{"x86-64-v3", "+avx512f", true},
                 Case{"x86-64-v4", "-avx512f", false}}) {
    codegen::LLVMOptions o;
    o.target_cpu = c.cpu;
    o.target_features = c.features;
    std::string ir = codegen::emit_llvm_ir({f}, o);
    EXPECT_EQ(ir.find("\"prefer-vector-width\"=\"512\"") != std::string::npos, c.avx512) << c.cpu << " " << c.features;
  }
}

// AArch64 (NEON, 32 registers of 4 floats), cross-compiled from any host: the GEMM tile is 8 x 8,
// the kernel uses vector fused multiply-adds on NEON registers; the JIT refuses clearly, export
// links an AArch64 library.
TEST(CpuBackend, GemmTileCrossCompilesForAArch64) {
  codegen::LLVMOptions o;
  o.target_triple = "aarch64-linux-gnu";
  o.target_cpu = "neoverse-n1";
  codegen::TargetInfo ti = codegen::target_info(o);
  EXPECT_EQ(ti.float32_lanes(), 4);
  EXPECT_EQ(ti.vector_registers, 32);
  ops::GemmTiling t = ops::gemm_tiling_for(ti.float32_lanes(), ti.vector_registers);
  EXPECT_EQ(t.mr, 8);
  EXPECT_EQ(t.nr, 8);
  Tensor A = placeholder({96, 128}, DataType::Float(32), "A"), B = placeholder({128, 128}, DataType::Float(32), "B");
  Tensor C = ops::matmul_packed(A, B, t.nr);
  schedule::Schedule s({C});
  ops::schedule_matmul_packed_cpu(s, C, t);
  LoweredFunc f = schedule::lower(s, {A, B, C}, "gemm");
  std::string assembly = codegen::emit_assembly({f}, o);
  EXPECT_NE(assembly.find("fmla\tv"), std::string::npos) << "NEON fused multiply-adds";
  EXPECT_NE(assembly.find(".4s"), std::string::npos) << "4 x float32 vectors";
  EXPECT_EQ(assembly.find("ymm"), std::string::npos);
  EXPECT_EQ(assembly.find("vfmadd"), std::string::npos);
  std::string e = test::error_text<CodegenError>([&] { codegen::build_llvm({f}, o); });
  EXPECT_NE(e.find("cannot JIT-compile gemm for 'aarch64-linux-gnu'"), std::string::npos) << e;
  // Exporting links with the cross compiler (tests/codegen/test_llvm_cross.cc covers the library).
  if (std::system("command -v aarch64-linux-gnu-gcc > /dev/null 2>&1") != 0) return;
  test::TestDir dir;
  codegen::export_library({f}, dir.file("g.so"), o);
  std::ifstream lib(dir.file("g.so"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(lib)), std::istreambuf_iterator<char>());
  EXPECT_EQ(runtime::elf_cpu_arch(bytes), "aarch64");
}

TEST(CpuBackend, ExportedLibraryRoundTrip) {
  auto c = test::scheduled_cases()[2].build();  // vadd_vector_parallel
  LoweredFunc f = schedule::lower(*c.schedule, c.workload.args(), "vadd");
  test::TestDir dir;
  std::string path = dir.file("vadd.so");
  codegen::export_library({f}, path);
  runtime::Module m = runtime::Module::load(path);
  std::filesystem::remove(path);
  Prepared p = prepare(c.workload);
  m.call("vadd", p.args);
  expect_outputs(c.workload, p, 1e-6, "exported vadd");
  // Call-time checks name the function and the argument.
  std::vector<NDArray> wrong = p.args;
  wrong[1] = NDArray::zeros({36}, DataType::Float(32));
  try {
    m.call("vadd", wrong);
    FAIL() << "shape mismatch not reported";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'B'"), std::string::npos) << e.what();
  }
  wrong[1] = NDArray::zeros({37}, DataType::Int(32));
  EXPECT_THROW(m.call("vadd", wrong), TypeError);
}

// Sigmoid (SiLU, SE gates, LSTM) divides by a finite, nonzero value: on Intel's float vectors
// that division is a reciprocal estimate and a Newton step (recip_finite), not a divide
// instruction; AMD Zen keeps the division. The values stay within a few ulp of
// 1 / (1 + e^-x) on this host, and the edges hold.
TEST(CpuBackend, SigmoidTakesAReciprocalEstimateOnIntel) {
  for (const char* cpu : {"znver3", "znver4", "haswell", "skylake-avx512", "sapphirerapids"}) {
    codegen::LLVMOptions o;
    o.target_triple = "x86_64-pc-linux-gnu";
    o.target_cpu = cpu;
    int lanes = codegen::target_info(o).float32_lanes();
    Tensor A = placeholder({1024}, DataType::Float(32), "A");
    Tensor Y = compute(
        {1024}, [&](const std::vector<Var>& i) { return ops::sigmoid(A(i[0])); }, "Y");
    schedule::Schedule s({Y});
    ops::schedule_generic_cpu(s, Y, lanes);
    std::string assembly = codegen::emit_assembly({schedule::lower(s, {A, Y}, "sigmoid")}, o);
    bool zen = std::string(cpu).rfind("znver", 0) == 0;
    EXPECT_EQ(assembly.find("vdivps") != std::string::npos, zen) << cpu;
    EXPECT_EQ(assembly.find("vrcp14ps") != std::string::npos || assembly.find("vrcpps") != std::string::npos, !zen)
        << cpu;
  }
  const std::vector<float> x = {-1000.f,
                                -100.f,
                                -87.5f,
                                -20.f,
                                -1.f,
                                -1e-3f,
                                0.f,
                                0.5f,
                                3.f,
                                30.f,
                                1000.f,
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN(),
                                5.f,
                                -5.f};
  Tensor A = placeholder({int64_t(x.size())}, DataType::Float(32), "A");
  Tensor Y = compute(
      {int64_t(x.size())}, [&](const std::vector<Var>& i) { return ops::sigmoid(A(i[0])); }, "Y");
  schedule::Schedule s({Y});
  s[Y].vectorize(s[Y].axis(0));  // one vector of 16 lanes
  // This host's code, and Haswell's (the estimate, with AVX2's coarser rcpps) where it runs.
  std::vector<std::string> cpus = {""};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) cpus.push_back("haswell");
  for (const std::string& cpu : cpus) {
    codegen::LLVMOptions o;
    o.target_cpu = cpu;
    auto m = codegen::build_llvm({schedule::lower(s, {A, Y}, "sigmoid")}, o);
    NDArray a = NDArray::empty({int64_t(x.size())}, DataType::Float(32)), y = NDArray::empty(a.shape(), a.dtype());
    std::copy(x.begin(), x.end(), a.data<float>());
    m.call("sigmoid", {a, y});
    std::string where = cpu.empty() ? "host" : cpu;
    for (size_t k = 0; k < x.size(); ++k) {
      float got = y.data<float>()[k];
      if (std::isnan(x[k])) {
        EXPECT_TRUE(std::isnan(got)) << where << ": sigmoid(NaN) = " << got;
        continue;
      }
      double want = 1.0 / (1.0 + std::exp(-double(x[k])));
      EXPECT_FALSE(std::isnan(got)) << where << ": sigmoid(" << x[k] << ")";
      EXPECT_NEAR(got, want, 4e-7 * want + 2e-38) << where << ": sigmoid(" << x[k] << ")";
    }
  }
}

}  // namespace
}  // namespace loom
