// Graph operators compiled vs the naive interpreter and values written out here: reductions,
// top_k / arg_max order, activations, batched matmuls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

// Every reduction kind, over several axis sets with and without keepdims, compiled vs the naive
// interpreter (OpDef::reference) vs sums written out here for reduce_sum over axes {1, 3}.
TEST(GraphOps, ReductionsMatchTheInterpreterAndHandWrittenSums) {
  const Shape shape = {2, 3, 4, 5};
  NDArray x = test::random_float32(shape, 21, 0.1, 2.0);  // positive: log_sum is defined
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_sum_square", "reduce_l1",
                         "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp"})
    for (auto axes : {std::vector<int64_t>{}, {1, 3}, {-1}, {0, 2}})
      for (int64_t keep : {1, 0}) {
        if (axes.empty() && !keep) continue;  // rank 0: refused (tested below)
        SCOPED_TRACE(std::string(op) + " keepdims " + std::to_string(keep) + " axes " + shape_str(axes));
        Graph g;
        int in = g.add_input("x", {shape, DataType::Float(32)});
        Attrs a = Attrs().set("keepdims", keep);
        if (!axes.empty()) a.set("axes", axes);
        g.outputs = {g.add_op(op, "r", {in}, a)};
        auto ex = runtime::GraphExecutor::from_model_file(build(g).file, "reduce");
        NDArray got = ex.run({x})[0], want = reference_run(g, {x})[0];
        ASSERT_EQ(got.shape(), want.shape());
        for (int64_t i = 0; i < want.numel(); ++i)
          ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4 * (1 + std::fabs(want.get_as_double(i)))) << i;
        if (std::string(op) == "reduce_sum" && axes == std::vector<int64_t>{1, 3}) {
          for (int64_t n = 0; n < 2; ++n)
            for (int64_t h = 0; h < 4; ++h) {
              double s = 0;
              for (int64_t c = 0; c < 3; ++c)
                for (int64_t w = 0; w < 5; ++w) s += x.get_as_double(((n * 3 + c) * 4 + h) * 5 + w);
              EXPECT_NEAR(want.get_as_double(n * 4 + h), s, 1e-6 * s);  // the interpreter returns float32
            }
        }
      }
  Graph g;
  int in = g.add_input("x", {shape, DataType::Float(32)});
  g.outputs = {g.add_op("reduce_mean", "all", {in}, Attrs().set("keepdims", int64_t(0)))};
  EXPECT_NE(test::error_text<Error>([&] { infer_types(g); }).find("keepdims = 1"), std::string::npos);
  Graph h;
  int i32 = h.add_input("x", {shape, DataType::Int(32)});
  h.outputs = {h.add_op("reduce_mean", "m", {i32}, Attrs().set("axes", std::vector<int64_t>{1}))};
  EXPECT_NE(test::error_text<Error>([&] { infer_types(h); }).find("must be floating point"), std::string::npos);
}

// top_k and arg_max where the order is not obvious: ties go to the lower index (ONNX; the last
// one for select_last_index), NaN ranks above every number in top_k; compiled and interpreted,
// against indices written out here. (arg_max/arg_min of NaN are left out: they skip NaN, where
// numpy would return its index.)
TEST(GraphOps, TopKAndArgMaxTiesAndNaN) {
  const float nan = std::nanf("");
  struct Case {
    const char* op;
    Attrs attrs;
    std::vector<float> x;  // [2, 6]
    std::vector<double> want;
  };
  std::vector<float> with_nan = {3, 1, 3, 2, 3, 1, /**/ 1, nan, 5, 5, -1, nan};
  std::vector<float> ties = {3, 1, 3, 2, 3, 1, /**/ 0, 7, -2, 7, -2, 0};
  std::vector<Case> cases = {
      {"top_k", Attrs().set("k", int64_t(4)).set("output", "indices"), with_nan, {0, 2, 4, 3, /**/ 1, 5, 2, 3}},
      {"top_k",
       Attrs().set("k", int64_t(3)).set("largest", int64_t(0)).set("output", "indices"),
       with_nan,
       {1, 5, 3, /**/ 4, 0, 2}},
      {"arg_max", Attrs().set("axis", int64_t(1)), ties, {0, 1}},
      {"arg_max", Attrs().set("axis", int64_t(1)).set("select_last_index", int64_t(1)), ties, {4, 3}},
      {"arg_min", Attrs().set("axis", int64_t(1)), ties, {1, 2}},
      {"arg_min", Attrs().set("axis", int64_t(1)).set("select_last_index", int64_t(1)), ties, {5, 4}},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " " + c.attrs.str());
    NDArray x = NDArray::empty({2, 6}, DataType::Float(32));
    std::copy(c.x.begin(), c.x.end(), x.data<float>());
    Graph g;
    int in = g.add_input("x", {{2, 6}, DataType::Float(32)});
    g.outputs = {g.add_op(c.op, "y", {in}, c.attrs)};
    auto ex = runtime::GraphExecutor::from_model_file(build(g).file, "order");
    NDArray got = ex.run({x})[0], ref = reference_run(g, {x})[0];
    ASSERT_EQ(got.numel(), int64_t(c.want.size()));
    for (size_t i = 0; i < c.want.size(); ++i) {
      EXPECT_EQ(got.get_as_double(int64_t(i)), c.want[i]) << "compiled, element " << i;
      EXPECT_EQ(ref.get_as_double(int64_t(i)), c.want[i]) << "interpreter, element " << i;
    }
  }
}

// The element-wise activations of ONNX: compiled vs the interpreter on random inputs, and both
// vs values written out here at x = -1, 0, 1 (ONNX's defaults for alpha, beta, gamma).
TEST(GraphOps, ActivationsMatchTheInterpreterAndHandValues) {
  const double selu_g = 1.05070102214813232421875, selu_a = 1.67326319217681884765625, e = std::exp(1.0);
  struct Case {
    const char* op;
    double at_minus_one, at_zero, at_one;
  };
  for (Case c :
       {Case{"reciprocal", -1, INFINITY, 1}, Case{"softsign", -0.5, 0, 0.5},
        Case{"softplus", std::log(1 + 1 / e), std::log(2.0), std::log(1 + e)}, Case{"sign", -1, 0, 1},
        Case{"elu", 1 / e - 1, 0, 1}, Case{"selu", selu_g * selu_a * (1 / e - 1), 0, selu_g},
        Case{"celu", 1 / e - 1, 0, 1}, Case{"hard_sigmoid", 0.3, 0.5, 0.7}, Case{"hard_swish", -1.0 / 3, 0, 2.0 / 3},
        Case{"thresholded_relu", 0, 0, 0}, Case{"floor", -1, 0, 1}, Case{"ceil", -1, 0, 1}, Case{"round", -1, 0, 1},
        Case{"sin", -std::sin(1.0), 0, std::sin(1.0)}, Case{"cos", std::cos(1.0), 1, std::cos(1.0)},
        Case{"tan", -std::tan(1.0), 0, std::tan(1.0)}, Case{"erf", -0.8427007929497149, 0, 0.8427007929497149}}) {
    SCOPED_TRACE(c.op);
    Graph g;
    int in = g.add_input("x", {{1, 3, 8, 8}, DataType::Float(32)});
    g.outputs = {g.add_op(c.op, "y", {in})};
    auto ex = runtime::GraphExecutor::from_model_file(build(g).file, "act");
    NDArray x = test::random_float32({1, 3, 8, 8}, 5, -4, 4);
    x.set_from_double(0, -1);
    x.set_from_double(1, 0);
    x.set_from_double(2, 1);
    NDArray got = ex.run({x})[0], want = reference_run(g, {x})[0];
    for (int64_t i = 0; i < want.numel(); ++i)
      if (!std::isinf(want.get_as_double(i)) || got.get_as_double(i) != want.get_as_double(i))
        ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-5 * (1 + std::fabs(want.get_as_double(i)))) << i;
    double hand[3] = {c.at_minus_one, c.at_zero, c.at_one};
    for (int i = 0; i < 3; ++i)
      if (std::isinf(hand[i]))
        EXPECT_TRUE(std::isinf(got.get_as_double(i))) << i;
      else
        EXPECT_NEAR(got.get_as_double(i), hand[i], 1e-6) << "at x = " << i - 1;
  }
}

// erf, compiled (GELU's erf): within 3.6e-7 of std::erf everywhere on [-6, 6] (the rational's
// bound), exactly odd, 0 at 0, +-1 (to within a
// float step) beyond its clamp and at +-inf, and NaN kept; for this host and, where it runs,
// Haswell's AVX2 code (whose reciprocal estimate the division must not take).
TEST(GraphOps, ErfIsWithinItsBoundOverTheWholeRange) {
  const int64_t n = 1 << 18;
  Graph g;
  int in = g.add_input("x", {{1, n + 8}, DataType::Float(32)});
  g.outputs = {g.add_op("erf", "y", {in})};
  NDArray x = NDArray::zeros({1, n + 8}, DataType::Float(32));
  for (int64_t i = 0; i < n; ++i) x.set_from_double(i, -6.0 + 12.0 * double(i) / double(n - 1));
  const double special[8] = {NAN, INFINITY, -INFINITY, 0.0, 3.92, -3.92, 1e-30, -1e-30};
  for (int i = 0; i < 8; ++i) x.set_from_double(n + i, special[i]);
  std::vector<std::string> cpus = {""};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) cpus.push_back("haswell");
  for (const std::string& cpu : cpus) {
    SCOPED_TRACE(cpu.empty() ? "this host" : cpu);
    BuildOptions b;
    b.llvm.target_cpu = cpu;
    NDArray y = runtime::GraphExecutor::from_model_file(build(g, b).file, "erf").run({x})[0];
    double worst = 0, worst_at = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xi = x.get_as_double(i), err = std::fabs(y.get_as_double(i) - std::erf(xi));
      if (err > worst) worst = err, worst_at = xi;
      ASSERT_EQ(y.get_as_double(i), -y.get_as_double(n - 1 - i)) << "not odd at x = " << xi;
    }
    EXPECT_LE(worst, 3.6e-7) << "at x = " << worst_at;
    EXPECT_TRUE(std::isnan(y.get_as_double(n)));
    EXPECT_NEAR(y.get_as_double(n + 1), 1.0, 2.4e-7);
    EXPECT_NEAR(y.get_as_double(n + 2), -1.0, 2.4e-7);
    EXPECT_EQ(y.get_as_double(n + 3), 0.0);
    EXPECT_NEAR(y.get_as_double(n + 4), std::erf(3.92), 2.4e-7);
    EXPECT_NEAR(y.get_as_double(n + 5), -std::erf(3.92), 2.4e-7);
    EXPECT_NEAR(y.get_as_double(n + 6), 1.1283791670955126 * 1e-30, 1e-36);  // 2/sqrt(pi) x near 0
    EXPECT_NEAR(y.get_as_double(n + 7), -1.1283791670955126 * 1e-30, 1e-36);
    std::printf("erf (%s): largest error %.3g at x = %.6g\n", cpu.empty() ? "this host" : cpu.c_str(), worst, worst_at);
  }
}

// Batched products on the GEMM register tiles: rows, columns and batch that are no multiple of
// the tile, a broadcast batch, a fused bias; against the interpreter.
TEST(GraphOps, BatchMatmulTilesMatchTheInterpreter) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c : {Case{{3, 20, 37}, {3, 37, 45}}, Case{{2, 1, 9, 16}, {3, 16, 70}}, Case{{130, 17}, {17, 33}},
                        Case{{4, 5, 8}, {4, 8, 3}}}) {
    Graph g;
    int a = g.add_input("a", {c.a, DataType::Float(32)}), b = g.add_input("b", {c.b, DataType::Float(32)});
    int mm = g.add_op("matmul", "mm", {a, b});
    g.outputs = {g.add_op("add", "bias", {mm, g.add_constant("bias", test::random_float32({c.b.back()}, 3))})};
    std::vector<NDArray> in{test::random_float32(c.a, 1), test::random_float32(c.b, 2)};
    NDArray want = reference_run(g, in)[0];
    NDArray got = runtime::GraphExecutor::from_model_file(build(g).file, "mm").run(in)[0];
    ASSERT_EQ(got.shape(), want.shape()) << shape_str(c.a) << " x " << shape_str(c.b);
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4)
          << shape_str(c.a) << " x " << shape_str(c.b) << " element " << i;
  }
}

}  // namespace
}  // namespace loom::graph
