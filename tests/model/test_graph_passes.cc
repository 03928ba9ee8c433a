// Graph IR and passes on graphs built by hand: BatchNorm folding (checked numerically against a
// naive convolution written here), fusion groups, the memory plan, constant folding, and the
// errors of type inference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/layout.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "memory_plan_check.h"

namespace loom::graph {
namespace {

// x[1, C, H, W] -> conv3x3 pad 1 (C -> C) -> batch_norm -> relu -> + x -> relu.
struct ResidualBlock {
  Graph g;
  NDArray w, gamma, beta, mean, var;
  int64_t C = 16, H = 6, W = 7;
  ResidualBlock() {
    w = test::random_float32({C, C, 3, 3}, 1, -0.3, 0.3);
    gamma = test::random_float32({C}, 2, 0.5, 1.5);
    beta = test::random_float32({C}, 3);
    mean = test::random_float32({C}, 4, -0.2, 0.2);
    var = test::random_float32({C}, 5, 0.5, 1.5);
    int x = g.add_input("x", {{1, C, H, W}, DataType::Float(32)});
    int conv =
        g.add_op("conv2d", "conv", {x, g.add_constant("w", w)}, Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}));
    int bn = g.add_op("batch_norm", "bn",
                      {conv, g.add_constant("gamma", gamma), g.add_constant("beta", beta), g.add_constant("mean", mean),
                       g.add_constant("var", var)},
                      Attrs().set("epsilon", 1e-5));
    int relu = g.add_op("relu", "relu1", {bn});
    int add = g.add_op("add", "residual", {relu, x});
    g.outputs = {g.add_op("relu", "relu2", {add})};
  }
  // The same computation with plain loops (double precision).
  NDArray reference(const NDArray& x) const {
    NDArray y = NDArray::empty({1, C, H, W}, DataType::Float(32));
    for (int64_t o = 0; o < C; ++o)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                int64_t yy = i + ky - 1, xx = j + kx - 1;
                if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                acc += x.get_as_double((c * H + yy) * W + xx) * w.get_as_double(((o * C + c) * 3 + ky) * 3 + kx);
              }
          double bn = (acc - mean.get_as_double(o)) / std::sqrt(var.get_as_double(o) + 1e-5) * gamma.get_as_double(o) +
                      beta.get_as_double(o);
          double r = std::max(bn, 0.0) + x.get_as_double((o * H + i) * W + j);
          y.set_from_double((o * H + i) * W + j, std::max(r, 0.0));
        }
    return y;
  }
};

TEST(GraphPasses, BatchNormFoldsIntoTheConvolution) {
  ResidualBlock b;
  Graph g = b.g;
  optimize(g);
  int batch_norms = 0, convs = 0;
  for (auto& n : g.nodes) {
    batch_norms += n.is_op() && n.op == "batch_norm";
    if (n.is_op() && (n.op == "conv2d" || n.op == "conv2d_winograd")) {
      ++convs;
      EXPECT_EQ(n.inputs.size(), 3u) << "the folded BatchNorm leaves a bias";
    }
  }
  EXPECT_EQ(batch_norms, 0) << g.str();
  EXPECT_EQ(convs, 1);
}

TEST(GraphPasses, ConvBiasReluResidualBecomeOneKernel) {
  ResidualBlock b;
  for (bool blocked : {false, true}) {
    Graph g = b.g;
    PipelineOptions o;
    o.layout.blocked_activations = blocked;
    o.layout.winograd_min_saved_macs = 0;  // Winograd on a map this small too: its kernel fuses the same
    optimize(g, o);
    FusionPlan plan = fuse_ops(g);
    std::string s = plan.str(g);
    // NCHW: one kernel. NCHWc: the input is blocked once (read by the conv and the residual add),
    // the conv kernel (Winograd F(2x2, 3x3) on the 6x7 map), and the output unblocked.
    ASSERT_EQ(plan.groups.size(), blocked ? 3u : 1u) << s;
    EXPECT_NE(s.find(blocked ? "[out-elemwise-fusable]: conv2d_winograd* relu add relu"
                             : "[out-elemwise-fusable]: conv2d* relu add relu"),
              std::string::npos)
        << s;
    int transforms = 0;
    for (auto& n : g.nodes) transforms += n.is_op() && n.op == "layout_transform";
    EXPECT_EQ(transforms, blocked ? 2 : 0) << g.str();
  }
}

// Diamonds: x = conv(...) read by an element-wise side chain and by the node that closes it
// (SiLU x * sigmoid(x), GELU x * (1 + erf(x / c)) / 2) fuse into the conv's kernel, so x is
// never stored; the compiled graph matches the interpreter. A residual add of x after the closing
// node closes a larger diamond (all one kernel). No diamond closes where the side's value is also
// a graph output, or read by another node, or where x is read after the closing node by a node
// that cannot join (a pool): the conv keeps its own kernel.
TEST(GraphPasses, DiamondsFuseIntoTheirProducer) {
  auto conv_graph = [](Graph& g, int64_t C) {
    int x = g.add_input("x", {{1, C, 6, 7}, DataType::Float(32)});
    return g.add_op("conv2d", "conv",
                    {x, g.add_constant("w", test::random_float32({C, C, 3, 3}, 31, -0.3, 0.3)),
                     g.add_constant("b", test::random_float32({C}, 32, -0.1, 0.1))},
                    Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}));
  };
  auto scalar = [](float v) {
    NDArray a = NDArray::empty({1}, DataType::Float(32));
    a.data<float>()[0] = v;
    return a;
  };
  enum Variant { kDiamond, kResidual, kSideIsOutput, kSideReadElsewhere, kXPooledAfter };
  for (Variant variant : {kDiamond, kResidual, kSideIsOutput, kSideReadElsewhere, kXPooledAfter})
    for (const char* act : {"silu", "gelu"}) {
      SCOPED_TRACE(std::string(act) + ", variant " + std::to_string(int(variant)));
      bool fuses = variant == kDiamond || variant == kResidual;
      Graph g;
      int conv = conv_graph(g, 16), side, y;
      if (std::string(act) == "silu") {
        side = g.add_op("sigmoid", "sig", {conv});
        y = g.add_op("mul", "silu", {conv, side});
      } else {
        int d = g.add_op("div", "d", {conv, g.add_constant("c", scalar(1.4142f))});
        side = g.add_op("add", "one_plus", {g.add_op("erf", "erf", {d}), g.add_constant("one", scalar(1.0f))});
        y = g.add_op("mul", "half", {g.add_op("mul", "gelu", {conv, side}), g.add_constant("h", scalar(0.5f))});
      }
      g.outputs = {y};
      if (variant == kSideIsOutput) g.outputs.push_back(side);
      if (variant == kSideReadElsewhere) g.outputs.push_back(g.add_op("relu", "side_reader", {side}));
      if (variant == kResidual) g.outputs[0] = g.add_op("add", "residual", {y, conv});
      if (variant == kXPooledAfter) g.outputs.push_back(g.add_op("global_avg_pool2d", "x_pool", {conv}));
      Graph o = g;
      PipelineOptions po;
      po.layout.blocked_activations = false;
      optimize(o, po);
      FusionPlan plan = fuse_ops(o);
      std::string s = plan.str(o);
      int with_conv = 0;
      for (const FusedGroup& grp : plan.groups)
        for (int id : grp.nodes)
          if (o.node(id).op == "conv2d") {
            ++with_conv;
            EXPECT_EQ(grp.nodes.size() > 1, fuses) << s;
            std::string closing = variant == kResidual ? "residual" : std::string(act) == "silu" ? "silu" : "half";
            if (fuses) {
              EXPECT_EQ(o.node(grp.output).name, closing) << s;
            }
          }
      EXPECT_EQ(with_conv, 1) << s;
      for (bool blocked : {false, true}) {
        BuildOptions bo;
        bo.pipeline.layout.blocked_activations = blocked;
        auto ex = runtime::GraphExecutor::from_model_file(build(g, bo).file, "diamond");
        NDArray x = test::random_float32({1, 16, 6, 7}, 33, -2, 2);
        std::vector<NDArray> got = ex.run({x}), want = reference_run(g, {x});
        for (size_t k = 0; k < want.size(); ++k)
          for (int64_t i = 0; i < want[k].numel(); ++i)
            ASSERT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-5) << k << " " << i;
      }
    }
}

// The conv tile hook (a tuning log) is asked only for kernels that write their conv: a
// squeeze-and-excitation block's 1x1 conv on pooled features, whose epilogue multiplies it into
// the feature map, is not (the tuner measured the conv alone; its tile recomputed the conv per tile
// of the map). Tiles that fit the 14x14 conv but not the SE kernel leave the model's output right.
TEST(GraphPasses, ConvTilesAreAskedOnlyForKernelsWritingTheirConv) {
  Graph g;
  int x = g.add_input("x", {{1, 32, 14, 14}, DataType::Float(32)});
  int c1 =
      g.add_op("relu", "c1_relu",
               {g.add_op("conv2d", "c1", {x, g.add_constant("w1", test::random_float32({32, 32, 3, 3}, 41, -0.2, 0.2))},
                         Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}))});
  int pooled = g.add_op("global_avg_pool2d", "pool", {c1});
  int se =
      g.add_op("conv2d", "se", {pooled, g.add_constant("w2", test::random_float32({32, 32, 1, 1}, 42, -0.5, 0.5))});
  g.outputs = {g.add_op("mul", "scale", {c1, g.add_op("hard_sigmoid", "gate", {se})})};
  BuildOptions bo;
  bo.pipeline.layout.winograd = false;
  std::vector<ConvKernelKey> asked;
  bo.conv_tile = [&](const ConvKernelKey& k) -> std::optional<ops::NchwcConvTile> {
    asked.push_back(k);
    return ops::NchwcConvTile{1, 7, -1};
  };
  auto ex = runtime::GraphExecutor::from_model_file(build(g, bo).file, "se");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].layer.kernel, 3);
  NDArray in = test::random_float32({1, 32, 14, 14}, 43);
  NDArray got = ex.run({in})[0], want = reference_run(g, {in})[0];
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << i;
}

TEST(GraphPasses, LayoutTransformsOnlyAtBoundaries) {
  // ResNet-18: activations stay blocked from the first convolution to the global pool; only the
  // image going in and the pooled features going to the classifier are transformed.
  Graph g = builtin_model("resnet18", 1, 64);
  optimize(g);
  int transforms = 0, blocked_convs = 0;
  for (auto& n : g.nodes) {
    transforms += n.is_op() && n.op == "layout_transform";
    blocked_convs +=
        n.is_op() && (n.op == "conv2d" || n.op == "conv2d_winograd") && n.attrs.get_string("layout", "") == "NCHWc";
  }
  EXPECT_EQ(transforms, 2) << g.str();
  EXPECT_EQ(blocked_convs, 20) << g.str();
}

TEST(GraphPasses, CompiledBlockMatchesNaiveLoops) {
  ResidualBlock b;
  for (bool blocked : {false, true}) {
    BuildOptions o;
    o.pipeline.layout.blocked_activations = blocked;
    BuildResult r = build(b.g, o);
    auto ex = runtime::GraphExecutor::from_model_file(r.file, "block");
    NDArray x = test::random_float32({1, b.C, b.H, b.W}, 9);
    NDArray got = ex.run({x})[0], want = b.reference(x);
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << i << (blocked ? " NCHWc" : " NCHW");
  }
}

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

TEST(GraphPasses, UnfoldableBatchNormBecomesMultiplyAdd) {
  Graph g;
  int x = g.add_input("x", {{1, 4, 3, 3}, DataType::Float(32)});
  std::vector<int> params{x};
  for (int i = 0; i < 4; ++i)
    params.push_back(g.add_constant("p" + std::to_string(i), test::random_float32({4}, 20 + i, 0.5, 1.5)));
  g.outputs = {g.add_op("batch_norm", "bn", params)};
  optimize(g);
  std::string s = g.str();
  EXPECT_EQ(s.find("batch_norm"), std::string::npos) << s;
  EXPECT_NE(s.find("mul("), std::string::npos) << s;
  EXPECT_NE(s.find("add("), std::string::npos) << s;
}

// Linear layers as PyTorch exports them for 3-D activations: matmul by a constant, then a bias add.
TEST(GraphPasses, MatmulByConstantsBecomesDenseWithItsBias) {
  Graph g;
  int x = g.add_input("x", {{2, 5, 12}, DataType::Float(32)});
  int w = g.add_constant("w", test::random_float32({12, 7}, 1));  // shared by two layers
  int b = g.add_constant("b", test::random_float32({1, 1, 7}, 2));
  int y1 = g.add_op("add", "bias", {b, g.add_op("matmul", "proj1", {x, w})});
  int y2 = g.add_op("matmul", "proj2", {x, w});
  int wide = g.add_constant("b_wide", test::random_float32({5, 7}, 3));  // not along the last axis only
  int y3 = g.add_op("add", "bias_rows", {g.add_op("matmul", "proj3", {x, w}), wide});
  int v = g.add_op("transpose", "xt", {x}, Attrs().set("perm", std::vector<int64_t>{0, 2, 1}));
  int y4 = g.add_op("matmul", "activations", {x, v});  // no constant: stays a matmul
  g.outputs = {y1, y2, y3, y4};
  Graph d = g;
  dense_from_matmul(d);
  int dense = 0, matmul = 0, transposed = 0;
  for (auto& n : d.nodes) {
    dense += n.is_op() && n.op == "dense";
    matmul += n.is_op() && n.op == "matmul";
    transposed += n.is_constant() && n.type.shape == Shape{7, 12};
  }
  EXPECT_EQ(dense, 3) << d.str();
  EXPECT_EQ(matmul, 1) << d.str();
  EXPECT_EQ(transposed, 1) << "one transposed copy of the shared weights\n" << d.str();
  for (auto& n : d.nodes)
    if (n.is_op() && n.op == "dense" && n.name.find("proj1") != std::string::npos)
      EXPECT_EQ(n.inputs.size(), 3u) << "the bias add folds into the first layer";
  NDArray in = test::random_float32({2, 5, 12}, 4);
  auto want = reference_run(g, {in}), got = reference_run(d, {in});
  auto compiled = runtime::GraphExecutor::from_model_file(build(g).file, "m").run({in});
  for (size_t o = 0; o < 4; ++o) {
    ASSERT_EQ(got[o].shape(), want[o].shape());
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      EXPECT_NEAR(got[o].get_as_double(i), want[o].get_as_double(i), 1e-5) << "output " << o << " element " << i;
      EXPECT_NEAR(compiled[o].get_as_double(i), want[o].get_as_double(i), 1e-5) << "output " << o << " element " << i;
    }
  }
}

// Pools of convs of pools: the nodes the pass makes are typed at once, so a later pool can read
// them (it threw "read before type inference"); each rewrite against the interpreter.
TEST(GraphPasses, ChainedPoolsAndPointwiseConvs) {
  for (bool pool_of_pool : {false, true}) {
    SCOPED_TRACE(pool_of_pool ? "conv, pool, pool" : "conv, pool, conv, pool");
    Graph g;
    int x = g.add_input("x", {{2, 16, 8, 8}, DataType::Float(32)});
    Attrs pool2 = Attrs()
                      .set("kernel", std::vector<int64_t>{2, 2})
                      .set("strides", std::vector<int64_t>{2, 2})
                      .set("pads", std::vector<int64_t>(4, 0));
    int a = g.add_op("conv2d", "a", {x, g.add_constant("wa", test::random_float32({24, 16, 1, 1}, 1, -0.3, 0.3))});
    int p1 = g.add_op("avg_pool2d", "p1", {a}, pool2);
    int y = p1;
    if (!pool_of_pool)
      y = g.add_op("conv2d", "b", {p1, g.add_constant("wb", test::random_float32({8, 24, 1, 1}, 2, -0.3, 0.3))});
    g.outputs = {
        g.add_op(pool_of_pool ? "avg_pool2d" : "global_avg_pool2d", "p2", {y}, pool_of_pool ? pool2 : Attrs())};
    infer_types(g);
    Graph o = g;
    pool_before_pointwise_conv(o);
    NDArray in = test::random_float32({2, 16, 8, 8}, 3);
    NDArray want = reference_run(g, {in})[0], got = reference_run(o, {in})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-5) << i;
    EXPECT_EQ(o.node(o.outputs[0]).name, "p2");
  }
}

// An identity or a zero-width pad that is a graph output goes, and its producer takes its name
// (the model's output name); where the producer is an input, the copy stays, and so does a pad of
// positive width anywhere.
TEST(GraphPasses, RemovedCopiesKeepTheOutputName) {
  for (const char* op : {"identity", "pad"}) {
    SCOPED_TRACE(op);
    for (bool from_input : {false, true}) {
      Graph g;
      int x = g.add_input("x", {{1, 4, 3, 3}, DataType::Float(32)});
      int src = from_input ? x : g.add_op("relu", "relu", {x});
      Attrs a = std::string(op) == "pad" ? Attrs().set("pads", std::vector<int64_t>(8, 0)) : Attrs();
      g.outputs = {g.add_op(op, "output", {src}, a)};
      infer_types(g);
      simplify_inference(g);
      const Node& out = g.node(g.outputs[0]);
      EXPECT_EQ(out.name, "output") << g.str();
      EXPECT_EQ(out.op, from_input ? op : "relu") << g.str();
    }
  }
  // A pad of positive width is no copy: it stays.
  Graph g;
  int relu = g.add_op("relu", "relu", {g.add_input("x", {{1, 4, 3, 3}, DataType::Float(32)})});
  g.outputs = {g.add_op("pad", "output", {relu}, Attrs().set("pads", std::vector<int64_t>{0, 0, 1, 0, 0, 0, 0, 2}))};
  infer_types(g);
  simplify_inference(g);
  EXPECT_EQ(g.node(g.outputs[0]).op, "pad") << g.str();
  EXPECT_EQ(g.node(g.outputs[0]).type.shape, (Shape{1, 4, 4, 5}));
}

// A dense layer of several block groups: its row tiles prefetch the next group's weights
// (pragma prefetch, prefetch_ahead), which must change no result. Against loops written here, at
// row counts that fill the tiles, leave a partial tile, and give one tile (a prefetch distance of
// 1); 20 x 96 x 40 through the LLVM IR, whose kernel prefetches.
TEST(GraphPasses, DenseTilesPrefetchTheNextWeights) {
  for (int64_t rows : {20, 16, 5}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    const int64_t K = 40, N = 96;
    NDArray w = test::random_float32({K, N}, 1), b = test::random_float32({N}, 2);
    Graph g;
    int x = g.add_input("x", {{rows, K}, DataType::Float(32)});
    int mm = g.add_op("matmul", "proj", {x, g.add_constant("w", w)});
    g.outputs = {g.add_op("add", "bias", {mm, g.add_constant("b", b)})};
    test::TestDir dir;
    BuildOptions options;
    options.llvm.dump_ir_path = dir.file("kernels.ll");
    auto built = build(g, options);
    std::ifstream ll(dir.file("kernels.ll"));
    std::string ir((std::istreambuf_iterator<char>(ll)), std::istreambuf_iterator<char>());
    EXPECT_NE(ir.find("@llvm.prefetch"), std::string::npos);
    NDArray in = test::random_float32({rows, K}, 3);
    NDArray got = runtime::GraphExecutor::from_model_file(built.file, "dense").run({in})[0];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t n = 0; n < N; ++n) {
        double want = b.get_as_double(n);
        for (int64_t k = 0; k < K; ++k) want += in.get_as_double(r * K + k) * w.get_as_double(k * N + n);
        ASSERT_NEAR(got.get_as_double(r * N + n), want, 1e-4) << "row " << r << " column " << n;
      }
  }
}

// Transposes of constants fold whatever their size (the evaluator stops at fold_constants'
// max_elements): ONNX's 2-D MatMul by a constant imports as dense(x, transpose(W)), and a language
// model's output projection (768 x 50257) stayed a transpose at every run. Here past a limit of
// 1000 elements; a 3-axis permutation checked element by element, and a bad permutation named.
TEST(GraphPasses, ConstantTransposesFoldAtAnySize) {
  Graph g;
  int x = g.add_input("x", {{2, 48}, DataType::Float(32)});
  NDArray w = test::random_float32({48, 40}, 1);
  int wt = g.add_op("transpose", "wt", {g.add_constant("w", w)}, Attrs().set("perm", std::vector<int64_t>{1, 0}));
  NDArray c = test::random_float32({3, 5, 7}, 2);
  int ct = g.add_op("transpose", "ct", {g.add_constant("c", c)}, Attrs().set("perm", std::vector<int64_t>{2, 0, 1}));
  g.outputs = {g.add_op("dense", "proj", {x, wt}), ct};
  infer_types(g);
  fold_constants(g, 1000);
  for (auto& n : g.nodes) EXPECT_FALSE(n.is_op() && n.op == "transpose") << g.str();
  const Node& folded_w = g.node(g.node(g.outputs[0]).inputs[1]);
  ASSERT_TRUE(folded_w.is_constant());
  ASSERT_EQ(folded_w.value.shape(), (Shape{40, 48}));
  for (int64_t k = 0; k < 48; ++k)
    for (int64_t n = 0; n < 40; ++n)
      ASSERT_EQ(folded_w.value.get_as_double(n * 48 + k), w.get_as_double(k * 40 + n)) << k << ", " << n;
  const Node& folded_c = g.node(g.outputs[1]);
  ASSERT_TRUE(folded_c.is_constant());
  ASSERT_EQ(folded_c.value.shape(), (Shape{7, 3, 5}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k = 0; k < 7; ++k)
        ASSERT_EQ(folded_c.value.get_as_double((k * 3 + i) * 5 + j), c.get_as_double((i * 5 + j) * 7 + k));
  EXPECT_THROW(transpose_constant(c, {0, 0, 1}), InternalError);
  EXPECT_THROW(transpose_constant(c, {}), InternalError);
}

// LayerNorm as PyTorch exports it: the square is a multiply, and the variance's reduction takes the
// square in (one kernel from the square to the normalized output); numbers as the interpreter's.
TEST(GraphPasses, LayerNormVarianceIsOneKernelWithoutPow) {
  Graph g;
  int x = g.add_input("x", {{3, 40}, DataType::Float(32)});
  Attrs last = Attrs().set("axes", std::vector<int64_t>{-1}).set("keepdims", int64_t(1));
  int centered = g.add_op("sub", "centered", {x, g.add_op("reduce_mean", "mean", {x}, last)});
  NDArray two = NDArray::empty({}, DataType::Float(32));
  two.set_from_double(0, 2.0);
  int sq = g.add_op("pow", "square", {centered, g.add_constant("two", two)});
  NDArray eps = NDArray::empty({}, DataType::Float(32));
  eps.set_from_double(0, 1e-5);
  int var = g.add_op("add", "var_eps", {g.add_op("reduce_mean", "var", {sq}, last), g.add_constant("eps", eps)});
  NDArray three = NDArray::empty({}, DataType::Float(32));
  three.set_from_double(0, 3.0);
  g.outputs = {g.add_op("div", "normalized", {centered, g.add_op("sqrt", "std", {var})}),
               g.add_op("pow", "cube", {x, g.add_constant("three", three)})};  // stays a pow
  NDArray in = test::random_float32({3, 40}, 9, -3, 3);
  auto want = reference_run(g, {in});
  Graph o = g;
  optimize(o);
  int pows = 0;
  for (auto& n : o.nodes) pows += n.is_op() && n.op == "pow";
  EXPECT_EQ(pows, 1) << o.str();
  std::string plan = fuse_ops(o).str(o);
  EXPECT_NE(plan.find("mul reduce_mean* add sqrt div"), std::string::npos) << plan;
  auto got = runtime::GraphExecutor::from_model_file(build(g).file, "ln").run({in});
  for (size_t k = 0; k < 2; ++k)
    for (int64_t i = 0; i < want[k].numel(); ++i)
      EXPECT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-4) << "output " << k << " element " << i;
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

// Grouped convolutions (ResNeXt, RegNet) whose group widths are whole blocks run blocked, each
// output block reading only its group's input blocks; groups narrower than a block (ResNeXt's 4
// and 8 channels) are regrouped into blocks of whole groups with block-diagonal weights (3x3
// stride-1 ones as Winograd convolutions with the same groups); others stay NCHW. Against the
// interpreter.
TEST(GraphPasses, GroupedConvolutionsRunBlocked) {
  struct Case {
    int64_t C, O, groups, k, stride;
    bool blocked;
  };
  for (const Case& c : {Case{64, 64, 4, 3, 1, true}, Case{64, 128, 8, 3, 2, true}, Case{32, 32, 2, 1, 1, true},
                        Case{128, 128, 32, 3, 1, true}, Case{64, 64, 8, 3, 2, true}, Case{32, 32, 16, 1, 1, true},
                        Case{6, 12, 2, 3, 1, false}}) {
    SCOPED_TRACE(std::to_string(c.groups) + " groups, " + std::to_string(c.C) + " -> " + std::to_string(c.O));
    Graph g;
    int x = g.add_input("x", {{1, c.C, 9, 11}, DataType::Float(32)});
    int w = g.add_constant("w", test::random_float32({c.O, c.C / c.groups, c.k, c.k}, 1, -0.3, 0.3));
    int64_t p = c.k / 2;
    Attrs a = Attrs().set("groups", c.groups).set("pads", std::vector<int64_t>{p, p, p, p});
    a.set("strides", std::vector<int64_t>{c.stride, c.stride});
    int conv = g.add_op("conv2d", "conv", {x, w, g.add_constant("b", test::random_float32({c.O}, 2))}, a);
    g.outputs = {g.add_op("relu", "relu", {conv})};
    NDArray in = test::random_float32({1, c.C, 9, 11}, 3);
    NDArray want = reference_run(g, {in})[0];
    Graph o = g;
    optimize(o);
    bool blocked = false;
    for (auto& n : o.nodes) {
      if (!n.is_op() || (n.op != "conv2d" && n.op != "conv2d_winograd") || !conv_layout(n).blocked()) continue;
      blocked = true;
      // Regrouped where a group is narrower than the block b: C / b groups of one block each.
      int64_t b = o.type_of(n.inputs[1]).shape[4], group_width = c.C / c.groups;
      EXPECT_EQ(n.attrs.get_int("groups", 1), group_width < b ? c.C / b : c.groups) << o.str();
    }
    EXPECT_EQ(blocked, c.blocked) << o.str();
    NDArray interpreted = reference_run(o, {in})[0];  // the blocked graph in the interpreter too
    NDArray got = runtime::GraphExecutor::from_model_file(build(g).file, "grouped").run({in})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
      ASSERT_NEAR(interpreted.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
    }
  }
}

// winograd_tile_for: the tile that saves the most multiply-adds, at least 1.5x over at least 9
// tiles, else direct; given the channels, also direct where it saves fewer than
// kWinogradMinSavedMacs multiply-adds a call.
TEST(GraphPasses, WinogradTileFollowsTheMapSize) {
  EXPECT_EQ(winograd_tile_for(28, 28, 128 * 32), 4);   // DenseNet-121's 28x28: 28.9 M, 21.7 M saved
  EXPECT_EQ(winograd_tile_for(14, 14, 128 * 32), 0);   // its 14x14: 7.2 M, 4.9 M saved
  EXPECT_EQ(winograd_tile_for(7, 7, 128 * 32), 0);     // its 7x7: 1.8 M, 0.8 M saved
  EXPECT_EQ(winograd_tile_for(14, 14, 256 * 256), 4);  // ResNet-18's 14x14: 115.6 M, 77.9 M saved
  EXPECT_EQ(winograd_tile_for(7, 7, 512 * 512), 2);    // its 7x7: 115.6 M, 48.4 M saved
  EXPECT_EQ(winograd_tile_for(7, 7, 512 * 512, 1e9), 0);
  EXPECT_EQ(winograd_tile_for(14, 14, 128 * 32, 0), 4);
  EXPECT_EQ(winograd_tile_for(56, 56), 4);  // 4x fewer
  EXPECT_EQ(winograd_tile_for(14, 14), 4);  // 3.06x (F(2x2): 2.25x)
  EXPECT_EQ(winograd_tile_for(9, 9), 4);    // 3 x 3 tiles of 4: 2.25x (F(2x2): 1.82x)
  EXPECT_EQ(winograd_tile_for(8, 8), 2);    // 2 x 2 tiles of 4 are too few; 4 x 4 of 2: 2.25x
  EXPECT_EQ(winograd_tile_for(7, 7), 2);    // 1.72x
  EXPECT_EQ(winograd_tile_for(6, 6), 2);    // 2.25x
  EXPECT_EQ(winograd_tile_for(5, 5), 2);    // 9 tiles of 2: 1.56x
  EXPECT_EQ(winograd_tile_for(4, 4), 0);    // 4 tiles
  EXPECT_EQ(winograd_tile_for(1, 100), 0);  // one output row per tile row: 1.0x and 1.13x
  EXPECT_EQ(winograd_tile_for(3, 100), 4);  // 3 of 4 rows: 3x
}

// 3x3 stride-1 float convs on blocked data become conv2d_winograd with F(4x4) on a 14x14 map (one
// with groups of 32 channels too) and F(2x2) on a 7x7 one; narrow groups, a strided 3x3, a 1x1
// and a 3x3 over a 4x4 map stay direct, and nothing changes with LayoutOptions::winograd off. The
// optimized graph in the interpreter (the Winograd reference: the transforms tile by tile in
// doubles) and the compiled model equal the interpreter on the original graph.
TEST(GraphPasses, WinogradForStrideOne3x3Convs) {
  Graph g;
  int x = g.add_input("x", {{1, 16, 14, 14}, DataType::Float(32)});
  Attrs pad1 = Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  auto conv = [&](const std::string& name, int in, int64_t c, int64_t o, int64_t k, Attrs a) {
    int64_t groups = a.get_int("groups", 1);
    int w = g.add_constant(name + "_w", test::random_float32({o, c / groups, k, k}, uint64_t(o + k), -0.3, 0.3));
    int b = g.add_constant(name + "_b", test::random_float32({o}, uint64_t(o + 7)));
    return g.add_op("relu", name + "_relu", {g.add_op("conv2d", name, {in, w, b}, a)});
  };
  int c1 = conv("c1", x, 16, 64, 3, pad1);  // 14x14: F(4x4)
  // Two groups of 32 channels: F(4x4). ResNeXt-like 16 groups of 4 channels, regrouped by
  // alter_layout into 8 groups of one block: direct.
  int c1g = conv("c1g", c1, 64, 64, 3, Attrs(pad1).set("groups", int64_t(2)));
  int c1n = conv("c1n", c1g, 64, 64, 3, Attrs(pad1).set("groups", int64_t(16)));
  int c2 = conv("c2", c1n, 64, 32, 3, Attrs(pad1).set("strides", std::vector<int64_t>{2, 2}));  // strided: direct
  int c3 = conv("c3", c2, 32, 16, 3, pad1);                                                     // 7x7: F(2x2)
  int c4 = conv("c4", c3, 16, 16, 1, Attrs());                                                  // 1x1: direct
  int c5 = conv("c5", c4, 16, 16, 3, Attrs().set("strides", std::vector<int64_t>{2, 2}));       // to 3x3
  g.outputs = {c4, conv("c6", c5, 16, 16, 3, pad1)};                                            // 3x3: direct
  NDArray in = test::random_float32({1, 16, 14, 14}, 3);
  std::vector<NDArray> want = reference_run(g, {in});
  for (bool on : {true, false}) {
    SCOPED_TRACE(on ? "winograd on" : "winograd off");
    PipelineOptions po;
    po.layout.vector_lanes = 8;
    po.layout.winograd = on;
    po.layout.winograd_min_saved_macs = 0;  // the tile rule alone: these maps are small
    Graph o = g;
    optimize(o, po);
    std::map<std::string, int64_t> tiles;  // conv name -> Winograd tile (0: direct)
    for (const Node& n : o.nodes)
      if (n.is_op() && (n.op == "conv2d" || n.op == "conv2d_winograd"))
        tiles[n.name] = n.op == "conv2d" ? 0 : n.attrs.get_int("tile");
    std::map<std::string, int64_t> expected = {{"c1", on ? 4 : 0}, {"c1g", on ? 4 : 0}, {"c1n", 0}, {"c2", 0},
                                               {"c3", on ? 2 : 0}, {"c4", 0},           {"c5", 0},  {"c6", 0}};
    EXPECT_EQ(tiles, expected) << o.str();
    std::vector<NDArray> interpreted = reference_run(o, {in});
    BuildOptions bo;
    bo.pipeline.layout.winograd = on;
    bo.pipeline.layout.winograd_min_saved_macs = 0;
    std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g, bo).file, "wino").run({in});
    for (size_t k = 0; k < want.size(); ++k) {
      // The transformed weights are float32: within their rounding of the exact convolution.
      EXPECT_TRUE(test::arrays_close(interpreted[k], want[k], 1e-5, 1e-5)) << "interpreted, output " << k;
      EXPECT_TRUE(test::arrays_close(got[k], want[k], 1e-4, 1e-4)) << "compiled, output " << k;
    }
  }
}

// A conv with 21 output channels (a segmentation head's classes) computes 32 zero-padded ones,
// channel-blocked, and a slice keeps the 21; one with 3 (padding past twice the work) and one
// with a multiple of 8 are left alone. The optimized graph in the interpreter and the compiled
// model equal the interpreter on the original graph.
TEST(GraphPasses, OddOutputChannelsArePaddedToBlocks) {
  Graph g;
  int x = g.add_input("x", {{1, 16, 9, 9}, DataType::Float(32)});
  auto conv = [&](const std::string& name, int in, int64_t c, int64_t o) {
    int w = g.add_constant(name + "_w", test::random_float32({o, c, 1, 1}, uint64_t(o), -0.5, 0.5));
    int b = g.add_constant(name + "_b", test::random_float32({o}, uint64_t(o + 1)));
    return g.add_op("conv2d", name, {in, w, b});
  };
  int head = conv("head", g.add_op("relu", "r", {conv("body", x, 16, 24)}), 24, 21);
  g.outputs = {head, conv("tiny", x, 16, 3)};
  NDArray in = test::random_float32({1, 16, 9, 9}, 3);
  std::vector<NDArray> want = reference_run(g, {in});
  Graph o = g;
  PipelineOptions po;
  po.layout.vector_lanes = 16;
  optimize(o, po);
  std::map<std::string, Shape> convs;
  int slices = 0;
  for (const Node& n : o.nodes) {
    if (n.is_op() && n.op == "conv2d") convs[n.name] = n.type.shape;
    slices += n.is_op() && n.op == "slice";
  }
  EXPECT_EQ(convs["head_padded"], (Shape{1, 2, 9, 9, 16})) << o.str();  // 32 channels, blocked
  EXPECT_EQ(convs["tiny"], (Shape{1, 3, 9, 9})) << o.str();
  EXPECT_EQ(convs.count("body_padded"), 0u) << o.str();
  EXPECT_EQ(slices, 1) << o.str();
  std::vector<NDArray> interpreted = reference_run(o, {in});
  std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g).file, "heads").run({in});
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_TRUE(test::arrays_close(interpreted[k], want[k], 1e-9, 1e-9)) << "interpreted, output " << k;
    EXPECT_TRUE(test::arrays_close(got[k], want[k], 1e-4, 1e-4)) << "compiled, output " << k;
  }
}

// conv2d_winograd's type errors name the node: a tile with no matrices, weights of the wrong
// shape, int8 data, a bias that is not float32, groups that do not divide the channel blocks.
TEST(GraphErrors, WinogradNodesCheckTheirOperands) {
  for (int variant = 0; variant < 5; ++variant) {
    Graph g;
    DataType dt = variant == 2 ? DataType::Int(8) : DataType::Float(32);
    int x = g.add_input("x", {{1, 2, 8, 8, 8}, dt});
    int u = g.add_constant("u", NDArray::zeros({variant == 1 ? 36 : 16, 2, 2, 8, 8}, DataType::Float(32)));
    Attrs a = Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}).set("tile", int64_t(variant == 0 ? 3 : 2));
    a.set("layout", std::string("NCHWc")).set("oc_block", int64_t(8));
    if (variant == 4) a.set("groups", int64_t(3));
    std::vector<int> inputs{x, u};
    if (variant == 3) inputs.push_back(g.add_constant("b", NDArray::zeros({16}, DataType::Int(32))));
    g.outputs = {g.add_op("conv2d_winograd", "wino", inputs, a)};
    const char* what[] = {"output tiles of 3", "are not [16, O/ob", "float32", "expected float32[16]",
                          "3 groups do not divide"};
    try {
      infer_types(g);
      ADD_FAILURE() << "no error for variant " << variant;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("wino"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what[variant]), std::string::npos) << e.what();
    }
  }
}

// A concat along channels whose inputs come in whole blocks stays blocked (DenseNet: no NCHW round
// trip per layer), and so do the per-channel scale and shift after it (BatchNorm that no conv
// absorbed); a concat with an input of part of a block, and a spatial broadcast, run plain. Every
// output equals the interpreter on the original graph.
TEST(GraphPasses, ChannelConcatStaysBlocked) {
  Graph g;
  int x = g.add_input("x", {{1, 8, 6, 7}, DataType::Float(32)});
  auto conv = [&](const std::string& name, int64_t out, uint64_t seed) {
    int w = g.add_constant(name + "_w", test::random_float32({out, 8, 3, 3}, seed, -0.3, 0.3));
    return g.add_op("conv2d", name, {x, w}, Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}));
  };
  int a = conv("a", 16, 1), b = conv("b", 32, 2), c = conv("c", 24, 3);
  int ab = g.add_op("concat", "cat_ab", {a, b}, Attrs().set("axis", int64_t(-3)));
  int scaled = g.add_op("mul", "scale", {ab, g.add_constant("gamma", test::random_float32({48, 1, 1}, 4, 0.5, 1.5))});
  int shifted =
      g.add_op("add", "shift", {scaled, g.add_constant("beta", test::random_float32({1, 48, 1, 1}, 5, -0.2, 0.2))});
  int act = g.add_op("relu", "act", {shifted});
  int spatial = g.add_op("mul", "spatial", {act, g.add_constant("mask", test::random_float32({1, 1, 6, 7}, 6))});
  int d = g.add_op("conv2d", "d", {spatial, g.add_constant("d_w", test::random_float32({16, 48, 1, 1}, 7, -0.3, 0.3))});
  int ac = g.add_op("concat", "cat_ac", {a, c}, Attrs().set("axis", int64_t(1)));
  g.outputs = {d, g.add_op("relu", "act_ac", {ac})};
  NDArray in = test::random_float32({1, 8, 6, 7}, 8);
  std::vector<NDArray> want = reference_run(g, {in});
  Graph o = g;
  optimize(o);
  auto rank_of = [&](const std::string& name) -> size_t {
    for (auto& n : o.nodes)
      if (n.name == name) return n.type.shape.size();
    return 0;
  };
  int64_t lanes = PipelineOptions().layout.vector_lanes;  // what optimize() blocks by
  EXPECT_EQ(rank_of("cat_ab"), 5u) << o.str();
  EXPECT_EQ(rank_of("scale"), 5u) << o.str();
  EXPECT_EQ(rank_of("shift"), 5u) << o.str();
  EXPECT_EQ(rank_of("spatial"), 4u) << o.str();
  // 24 channels: whole blocks of 8 (AVX2's lanes), not of 16 (AVX-512's).
  EXPECT_EQ(rank_of("cat_ac"), 24 % lanes == 0 ? 5u : 4u) << o.str();
  std::vector<NDArray> interpreted = reference_run(o, {in});
  std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g).file, "concat").run({in});
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape());
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      ASSERT_NEAR(interpreted[k].get_as_double(i), want[k].get_as_double(i), 1e-4)
          << "output " << k << " element " << i;
      ASSERT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-4) << "output " << k << " element " << i;
    }
  }
}

// A per-channel constant as a binary op's first operand, blocked while the layout pass adds nodes
// (the review's case: nine nodes, the repacked constant the ninth added, which grew the pass's
// type table under the output shape it was reading). Against the interpreter.
TEST(GraphPasses, ChannelConstantFirstOperandStaysBlocked) {
  Graph g;
  int x = g.add_input("x", {{1, 8, 4, 4}, DataType::Float(32)});
  std::vector<int> convs;
  for (int k = 0; k < 4; ++k) {
    int w = g.add_constant("w" + std::to_string(k), test::random_float32({8, 8, 1, 1}, 10 + k, -0.5, 0.5));
    convs.push_back(g.add_op("conv2d", "c" + std::to_string(k), {x, w}));
  }
  int cat = g.add_op("concat", "cat", convs, Attrs().set("axis", int64_t(2)));
  int y = g.add_op("mul", "scaled", {g.add_constant("s", test::random_float32({1, 8, 1, 1}, 20)), convs[0]});
  g.outputs = {cat, y};
  NDArray in = test::random_float32({1, 8, 4, 4}, 21);
  std::vector<NDArray> want = reference_run(g, {in});
  for (int lanes : {8, 16}) {
    Graph o = g;
    PipelineOptions po;
    po.layout.vector_lanes = lanes;
    optimize(o, po);
    for (auto& n : o.nodes)
      if (n.name == "scaled") EXPECT_EQ(n.type.shape.size(), 5u) << o.str();  // 8 channels: blocks of 8 either way
    std::vector<NDArray> got = reference_run(o, {in});
    for (size_t k = 0; k < want.size(); ++k)
      for (int64_t i = 0; i < want[k].numel(); ++i)
        ASSERT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-5) << "output " << k << " element " << i;
  }
}

// Kernel taps that read only padding at every output position are cut from the weights, the pads
// shrinking to keep the output where it was: DeepLabV3's atrous convolutions (dilation >= the map)
// become 1x1; a partly live dilation keeps its taps. Against the interpreter on the original graph.
// (Case: H, W, kernel, dilation, stride, pads, and the kernel expected after the pass.)
TEST(GraphPasses, DeadConvolutionTapsArePruned) {
  struct Case {
    int64_t H, W, k, dilation, stride;
    std::vector<int64_t> pads;  // top, left, bottom, right
    int64_t kh, kw;             // the kernel after the pass
  };
  // Cut only into the square, evenly padded form the conv templates and tuning keys assume: a
  // cut that would leave 2x3 or 1x2 taps, or uneven pads, keeps the kernel.
  for (const Case& c : {Case{14, 14, 3, 24, 1, {24, 24, 24, 24}, 1, 1}, Case{14, 14, 3, 12, 1, {12, 12, 12, 12}, 3, 3},
                        Case{1, 1, 5, 1, 1, {2, 2, 2, 2}, 1, 1}, Case{3, 3, 3, 4, 2, {4, 4, 4, 4}, 1, 1},
                        Case{4, 9, 3, 3, 1, {0, 3, 3, 3}, 3, 3}, Case{5, 7, 3, 6, 2, {6, 0, 6, 6}, 3, 3},
                        Case{2, 2, 3, 1, 2, {1, 1, 1, 1}, 3, 3}, Case{6, 6, 3, 1, 1, {1, 1, 1, 1}, 3, 3}}) {
    SCOPED_TRACE(std::to_string(c.H) + "x" + std::to_string(c.W) + " dilation " + std::to_string(c.dilation));
    Graph g;
    int x = g.add_input("x", {{1, 4, c.H, c.W}, DataType::Float(32)});
    int w = g.add_constant("w", test::random_float32({8, 4, c.k, c.k}, 1, -0.5, 0.5));
    Attrs a = Attrs().set("pads", c.pads).set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
    a.set("strides", std::vector<int64_t>{c.stride, c.stride});
    g.outputs = {g.add_op("conv2d", "conv", {x, w, g.add_constant("b", test::random_float32({8}, 2))}, a)};
    infer_types(g);
    Graph pruned = g;
    prune_conv_taps(pruned);
    const Node& conv = pruned.node(pruned.outputs[0]);
    const Shape& kernel = pruned.type_of(conv.inputs[1]).shape;
    EXPECT_EQ(kernel[2], c.kh);
    EXPECT_EQ(kernel[3], c.kw);
    EXPECT_EQ(conv.type.shape, g.node(g.outputs[0]).type.shape);
    NDArray in = test::random_float32({1, 4, c.H, c.W}, 3);
    NDArray want = reference_run(g, {in})[0];
    NDArray interpreted = reference_run(pruned, {in})[0];
    NDArray got = runtime::GraphExecutor::from_model_file(build(g).file, "dilated").run({in})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_NEAR(interpreted.get_as_double(i), want.get_as_double(i), 1e-5) << "element " << i;
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
    }
  }
}

// A squeeze-and-excitation block (EfficientNet, MobileNetV3): the computed [1, C, 1, 1] channel
// scales, as either operand of the multiply, convert to the blocked layout (a few elements) and
// the map they scale stays blocked instead of going to NCHW and back (docs/results.md).
// Against the interpreter (PyTorch: model_squeeze_excitation).
TEST(GraphPasses, ComputedChannelScalesKeepTheMapBlocked) {
  for (bool scale_first : {true, false}) {
    Graph g;
    int x = g.add_input("x", {{1, 8, 6, 6}, DataType::Float(32)});
    auto conv = [&](int in, int64_t O, int64_t C, int64_t k, const std::string& name) {
      int w = g.add_constant(name + "_w", test::random_float32({O, C, k, k}, int(O + C + k), -0.3, 0.3));
      Attrs a = Attrs().set("pads", std::vector<int64_t>(4, k / 2));
      return g.add_op("conv2d", name, {in, w, g.add_constant(name + "_b", test::random_float32({O}, int(O)))}, a);
    };
    int map = g.add_op("relu", "map", {conv(x, 32, 8, 3, "c0")});
    int squeezed = g.add_op("global_avg_pool2d", "pool", {map});
    int excited = g.add_op("relu", "fc1_relu", {conv(squeezed, 8, 32, 1, "fc1")});
    int scale = g.add_op("sigmoid", "scale", {conv(excited, 32, 8, 1, "fc2")});
    int scaled = g.add_op("mul", "scaled", scale_first ? std::vector<int>{scale, map} : std::vector<int>{map, scale});
    g.outputs = {conv(scaled, 16, 32, 1, "project")};
    infer_types(g);
    Graph o = g;
    PipelineOptions po;
    po.layout.vector_lanes = 16;
    optimize(o, po);
    for (int id = 0; id < static_cast<int>(o.nodes.size()); ++id) {
      const Node& n = o.node(id);
      if (n.name == "scaled") EXPECT_EQ(n.type.shape.size(), 5u) << o.str();
      // Only the image and the output convert at the map's size.
      if (n.op == "layout_transform" && n.type.numel() > 32)
        EXPECT_TRUE(n.inputs[0] == o.inputs[0] || std::find(o.outputs.begin(), o.outputs.end(), id) != o.outputs.end())
            << n.name << "\n"
            << o.str();
    }
    NDArray in = test::random_float32({1, 8, 6, 6}, 5);
    NDArray want = reference_run(g, {in})[0];
    NDArray interpreted = reference_run(o, {in})[0];
    NDArray got = runtime::GraphExecutor::from_model_file(build(g).file, "se").run({in})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_NEAR(interpreted.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
    }
  }
}

// Taps dead for most outputs but not all (DeepLabV3's dilation 12 over 14x14) cut the output into
// regions of one live tap set each: convolutions of those taps alone, unpadded, over slices of
// the input, concatenated back; slices and concats keep the channel-blocked layout. Where more
// than half the work is live the conv stays whole. Against the interpreter on the original graph
// (PyTorch checks the same forms: model_conv_atrous_regions*).
TEST(GraphPasses, PartlyDeadConvolutionTapsSplitIntoRegions) {
  struct Case {
    int64_t C, H, W, dilation, stride;
    size_t regions;  // conv2d nodes after the pass; 1: not split
  };
  for (const Case& c : {Case{64, 14, 14, 12, 1, 9}, Case{96, 20, 16, 8, 2, 6}, Case{64, 14, 14, 2, 1, 1}}) {
    SCOPED_TRACE(std::to_string(c.H) + "x" + std::to_string(c.W) + " dilation " + std::to_string(c.dilation));
    Graph g;
    int x = g.add_input("x", {{1, c.C, c.H, c.W}, DataType::Float(32)});
    // A 1x1 stem: the atrous conv reads a blocked value, as inside a network.
    x = g.add_op("conv2d", "stem", {x, g.add_constant("stem_w", test::random_float32({c.C, c.C, 1, 1}, 4, -0.2, 0.2))});
    int w = g.add_constant("w", test::random_float32({64, c.C, 3, 3}, 1, -0.1, 0.1));
    Attrs a = Attrs().set("pads", std::vector<int64_t>(4, c.dilation));
    a.set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
    a.set("strides", std::vector<int64_t>{c.stride, c.stride});
    int conv = g.add_op("conv2d", "conv", {x, w, g.add_constant("b", test::random_float32({64}, 2))}, a);
    g.outputs = {g.add_op("relu", "relu", {conv})};
    infer_types(g);
    Graph o = g;
    PipelineOptions po;
    po.layout.vector_lanes = 16;
    optimize(o, po);
    size_t convs = 0, transforms = 0;
    for (const Node& n : o.nodes) {
      if (n.op == "layout_transform") ++transforms;
      if (n.op != "conv2d" || n.name.rfind("stem", 0) == 0) continue;
      ++convs;
      if (c.regions > 1) EXPECT_EQ(n.attrs.get_ints("pads"), std::vector<int64_t>(4, 0)) << o.str();
    }
    EXPECT_EQ(convs, c.regions) << o.str();
    EXPECT_EQ(transforms, 2u) << o.str();  // the input and the output only: slices and concats stay blocked
    NDArray in = test::random_float32({1, c.C, c.H, c.W}, 3);
    NDArray want = reference_run(g, {in})[0];
    NDArray interpreted = reference_run(o, {in})[0];
    NDArray got = runtime::GraphExecutor::from_model_file(build(g).file, "atrous").run({in})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_NEAR(interpreted.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
      ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << "element " << i;
    }
  }
}

// Two atrous convs in a row, both split: the second reads the first's regions through their
// concat, which the pass types at once (it was read untyped, an internal error). Against the
// interpreter on the original graph.
TEST(GraphPasses, ChainedPartlyDeadConvolutionsSplit) {
  Graph g;
  int x = g.add_input("x", {{1, 64, 14, 14}, DataType::Float(32)});
  Attrs a = Attrs().set("pads", std::vector<int64_t>(4, 12)).set("dilations", std::vector<int64_t>{12, 12});
  int y = x;
  for (int k = 0; k < 2; ++k)
    y = g.add_op("conv2d", "atrous" + std::to_string(k),
                 {y, g.add_constant("w" + std::to_string(k), test::random_float32({64, 64, 3, 3}, 7 + k, -0.1, 0.1))},
                 a);
  g.outputs = {y};
  infer_types(g);
  Graph o = g;
  prune_conv_taps(o);
  size_t convs = 0;
  for (const Node& n : o.nodes) convs += n.op == "conv2d";
  EXPECT_EQ(convs, 18u) << o.str();
  NDArray in = test::random_float32({1, 64, 14, 14}, 9);
  NDArray want = reference_run(g, {in})[0], got = reference_run(o, {in})[0];
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << i;
}

// An average pool of a 1x1 conv's output becomes the conv of the pooled input (DenseNet's
// transitions) wherever every output averages its window's in-bounds values and that does fewer
// operations: against the interpreter on the original graph, which pools the conv's output.
TEST(GraphPasses, AveragePoolsMoveBeforePointwiseConvs) {
  struct Case {
    std::string what;
    std::string pool = "avg_pool2d";
    int64_t kernel = 2, stride = 2, pad = 0;
    bool include_pad = false, ceil = false, zero_width_pad = false, second_reader = false, pool_is_output = false;
    int64_t conv_kernel = 1, groups = 1, conv_stride = 1, H = 10, W = 12;
    bool moved = true;
  };
  std::vector<Case> cases(12);
  cases[0].what = "2x2 stride 2 (a DenseNet transition)";
  cases[1].what = "global average, the graph's output", cases[1].pool = "global_avg_pool2d",
  cases[1].pool_is_output = true;
  cases[2].what = "a zero-width pad before the pool (PyTorch's export)", cases[2].zero_width_pad = true;
  cases[3].what = "partial windows (ceil mode)", cases[3].kernel = 3, cases[3].ceil = true, cases[3].H = 11;
  cases[4].what = "padding left out of the count", cases[4].kernel = 3, cases[4].pad = 1;
  cases[5].what = "grouped 1x1 conv", cases[5].groups = 4;
  cases[6].what = "padding counted (the bias is not averaged with weight one)", cases[6].kernel = 3, cases[6].pad = 1,
  cases[6].include_pad = true, cases[6].moved = false;
  cases[7].what = "an unpadded 3x3 conv", cases[7].conv_kernel = 3, cases[7].moved = false;
  cases[8].what = "the conv read twice", cases[8].second_reader = true, cases[8].moved = false;
  cases[9].what = "a pool that keeps the map's size", cases[9].kernel = 3, cases[9].stride = 1, cases[9].pad = 1,
  cases[9].moved = false;
  cases[10].what = "a strided 1x1 conv", cases[10].conv_stride = 2, cases[10].moved = false;
  cases[11].what = "3x3 stride 2 pool", cases[11].kernel = 3;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph g;
    const int64_t C = 32, O = 16;
    int x = g.add_input("x", {{1, C, c.H, c.W}, DataType::Float(32)});
    int w = g.add_constant("w", test::random_float32({O, C / c.groups, c.conv_kernel, c.conv_kernel}, 1, -0.3, 0.3));
    Attrs ca = Attrs().set("groups", c.groups).set("pads", std::vector<int64_t>(4, 0));
    ca.set("strides", std::vector<int64_t>{c.conv_stride, c.conv_stride});
    int conv = g.add_op("conv2d", "conv", {x, w, g.add_constant("b", test::random_float32({O}, 2, -1, 1))}, ca);
    int pooled = conv;
    if (c.zero_width_pad)
      pooled =
          g.add_op("pad", "pad", {pooled}, Attrs().set("pads", std::vector<int64_t>(8, 0)).set("mode", "constant"));
    Attrs pa;
    if (c.pool == "avg_pool2d")
      pa.set("kernel", std::vector<int64_t>{c.kernel, c.kernel})
          .set("strides", std::vector<int64_t>{c.stride, c.stride})
          .set("pads", std::vector<int64_t>(4, c.pad))
          .set("count_include_pad", int64_t(c.include_pad))
          .set("ceil_mode", int64_t(c.ceil));
    pooled = g.add_op(c.pool, "pool", {pooled}, pa);
    g.outputs = {c.pool_is_output ? pooled : g.add_op("relu", "relu", {pooled})};
    if (c.second_reader) g.outputs.push_back(g.add_op("sigmoid", "other_reader", {conv}));
    infer_types(g);
    Graph o = g;
    simplify_inference(o);
    pool_before_pointwise_conv(o);
    const Node& out = c.pool_is_output ? o.node(o.outputs[0]) : o.node(o.node(o.outputs[0]).inputs[0]);
    EXPECT_EQ(out.op, c.moved ? "conv2d" : c.pool) << o.str();
    EXPECT_EQ(o.node(o.outputs[0]).name, g.node(g.outputs[0]).name);  // outputs keep their names
    if (c.moved) {
      EXPECT_EQ(o.node(out.inputs[0]).op, c.pool) << o.str();
    }
    EXPECT_EQ(o.node(o.outputs[0]).type, g.node(g.outputs[0]).type);
    NDArray in = test::random_float32({1, C, c.H, c.W}, 3);
    std::vector<NDArray> want = reference_run(g, {in}), interpreted = reference_run(o, {in});
    std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g).file, "pooled").run({in});
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(got[k].shape(), want[k].shape());
      for (int64_t i = 0; i < want[k].numel(); ++i) {
        ASSERT_NEAR(interpreted[k].get_as_double(i), want[k].get_as_double(i), 1e-5) << "element " << i;
        ASSERT_NEAR(got[k].get_as_double(i), want[k].get_as_double(i), 1e-4) << "element " << i;
      }
    }
  }
}

TEST(GraphPasses, ConstantSubgraphsFold) {
  Graph g;
  int x = g.add_input("x", {{2, 3}, DataType::Float(32)});
  int c = g.add_constant("c", test::random_float32({3, 2}, 3));
  int t = g.add_op("transpose", "t", {c}, Attrs().set("perm", std::vector<int64_t>{1, 0}));
  g.outputs = {g.add_op("add", "sum", {x, t})};
  optimize(g);
  int ops = 0;
  for (auto& n : g.nodes) ops += n.is_op();
  EXPECT_EQ(ops, 1) << g.str();
  for (auto& n : g.nodes)
    if (n.is_constant()) {
      EXPECT_EQ(n.type.shape, (Shape{2, 3}));
    }
}

TEST(GraphPasses, MemoryPlanReusesBuffers) {
  // A chain of opaque kernels: each intermediate dies after its reader, so two buffers suffice.
  Graph g;
  int v = g.add_input("x", {{8, 256}, DataType::Float(32)});
  for (int i = 0; i < 6; ++i) v = g.add_op("softmax", "s" + std::to_string(i), {v}, Attrs().set("axis", int64_t(1)));
  g.outputs = {v};
  optimize(g);
  FusionPlan plan = fuse_ops(g);
  ASSERT_EQ(plan.groups.size(), 6u);
  MemoryPlan mem = plan_memory(g, plan);
  EXPECT_EQ(mem.unplanned_bytes, 6u * 8 * 256 * 4);
  EXPECT_EQ(mem.storage_bytes.size(), 2u) << mem.str(g);  // two buffers alternate
  EXPECT_EQ(mem.planned_bytes(), 2u * 8 * 256 * 4);
  // No kernel writes the storage it reads.
  for (auto& grp : plan.groups)
    for (int in : grp.inputs)
      if (mem.storage_of[in] >= 0) {
        EXPECT_NE(mem.storage_of[in], mem.storage_of[grp.output]);
      }
}

// The folded weights and bias against the formula, written out here: W' = W * s, b' = (b - mean) *
// s + beta with s = gamma / sqrt(var + eps), for an epsilon (1e-3) and variances (1e-4 .. 1e-3)
// where epsilon decides the scale.
TEST(GraphPasses, BatchNormFoldMatchesTheFormula) {
  const int64_t C = 3, O = 4;
  NDArray w = test::random_float32({O, C, 1, 1}, 11), b = test::random_float32({O}, 12, -0.1, 0.1);
  NDArray gamma = test::random_float32({O}, 13, 0.5, 1.5), beta = test::random_float32({O}, 14, -0.1, 0.1);
  NDArray mean = test::random_float32({O}, 15, -0.05, 0.05), var = test::random_float32({O}, 16, 1e-4, 1e-3);
  const double eps = 1e-3;
  Graph g;
  int x = g.add_input("x", {{1, C, 2, 2}, DataType::Float(32)});
  int conv = g.add_op("conv2d", "conv", {x, g.add_constant("w", w), g.add_constant("b", b)});
  int bn = g.add_op("batch_norm", "bn",
                    {conv, g.add_constant("gamma", gamma), g.add_constant("beta", beta), g.add_constant("mean", mean),
                     g.add_constant("var", var)},
                    Attrs().set("epsilon", eps));
  g.outputs = {bn};
  infer_types(g);
  simplify_inference(g);
  const Node& folded = g.node(g.outputs[0]);  // the BatchNorm's users now read the conv
  ASSERT_EQ(folded.op, "conv2d") << g.str();
  ASSERT_EQ(folded.inputs.size(), 3u) << g.str();
  const NDArray &fw = g.node(folded.inputs[1]).value, &fb = g.node(folded.inputs[2]).value;
  for (int64_t o = 0; o < O; ++o) {
    double s = gamma.get_as_double(o) / std::sqrt(var.get_as_double(o) + eps);
    EXPECT_NEAR(fb.get_as_double(o), (b.get_as_double(o) - mean.get_as_double(o)) * s + beta.get_as_double(o),
                1e-5 * std::fabs(s))
        << "bias of channel " << o;
    for (int64_t c = 0; c < C; ++c)
      EXPECT_NEAR(fw.get_as_double(o * C + c), w.get_as_double(o * C + c) * s, 1e-5 * std::fabs(s))
          << "weight " << o << ", " << c;
  }
}

// The memory plan against a brute-force check on random graphs: walking the kernels in order,
// no kernel's output may take a storage buffer that holds a value still to be read (by a later
// kernel, or as a graph output), and every value fits its buffer.
TEST(GraphPasses, MemoryPlanNeverReusesALiveBuffer) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    Graph g;
    std::vector<int> values{g.add_input("x", {{2, 8 + int64_t(seed % 5) * 8}, DataType::Float(32)})};
    const int64_t cols = g.type_of(values[0]).shape[1];
    int nodes = 6 + int(rng() % 14);
    for (int i = 0; i < nodes; ++i) {
      int a = values[rng() % values.size()], b = values[rng() % values.size()];
      std::string name = "n" + std::to_string(i);
      switch (rng() % 4) {
        case 0:
          values.push_back(g.add_op("softmax", name, {a}, Attrs().set("axis", int64_t(1))));
          break;  // opaque
        case 1:
          values.push_back(g.add_op("add", name, {a, b}));
          break;
        case 2:
          values.push_back(g.add_op("relu", name, {a}));
          break;
        default:
          values.push_back(
              g.add_op("dense", name, {a, g.add_constant(name + "_w", test::random_float32({cols, cols}, seed))}));
      }
    }
    test::pick_random_outputs(g, values, rng);
    infer_types(g);
    FusionPlan plan = fuse_ops(g);
    MemoryPlan mem = plan_memory(g, plan);
    std::map<int, size_t> last_read = test::last_reads(g, plan);
    std::map<int, int> holder;  // storage -> the value it holds
    for (size_t k = 0; k < plan.groups.size(); ++k) {
      int out = plan.groups[k].output, s = mem.storage_of[out];
      ASSERT_GE(s, 0) << "seed " << seed;
      ASSERT_GE(mem.storage_bytes[size_t(s)], g.type_of(out).nbytes()) << "seed " << seed;
      if (auto it = holder.find(s); it != holder.end()) {
        int held = it->second;
        bool still_read = last_read.count(held) && last_read[held] >= k;
        EXPECT_FALSE(still_read) << "seed " << seed << ": kernel " << k << " writes storage " << s << " over '"
                                 << g.node(held).name << "', read until step " << last_read[held] << "\n"
                                 << plan.str(g) << mem.str(g);
      }
      holder[s] = out;
    }
  }
}

// Layouts are typed (graph/layout.h): what set_conv_layout / transform_attrs write, conv_layout /
// transform_target read back, and a layout attribute that is no layout names the node.
TEST(GraphLayout, TypedLayoutsRoundTripThroughTheAttributes) {
  Graph g;
  int x = g.add_input("x", {{1, 16, 4, 4}, DataType::Float(32)});
  int conv = g.add_op("conv2d", "conv", {x, g.add_constant("w", test::random_float32({16, 16, 1, 1}, 1))});
  EXPECT_EQ(conv_layout(g.node(conv)), Layout::nchw());
  set_conv_layout(g.node(conv), Layout::nchwc(8));
  EXPECT_EQ(conv_layout(g.node(conv)), Layout::nchwc(8));
  EXPECT_EQ(conv_layout(g.node(conv)).str(), "NCHW8c");
  for (Layout to : {Layout::nchw(), Layout::nchwc(16)}) {
    int t = g.add_op("layout_transform", g.unique_name("t"), {x}, transform_attrs(to));
    EXPECT_EQ(transform_target(g.node(t)), to) << to.str();
  }
  g.node(conv).attrs.set("layout", std::string("NHWC"));
  std::string msg = test::error_text<ModelError>([&] { conv_layout(g.node(conv)); });
  EXPECT_NE(msg.find("conv2d 'conv': layout 'NHWC' is not a layout (NCHW or NCHWc)"), std::string::npos) << msg;
  int bad = g.add_op("layout_transform", "bad", {x});
  msg = test::error_text<ModelError>([&] { transform_target(g.node(bad)); });
  EXPECT_NE(msg.find("layout_transform 'bad': no target layout"), std::string::npos) << msg;
}

TEST(GraphErrors, TypeErrorsNameTheNode) {
  Graph g;
  int x = g.add_input("x", {{1, 3, 8, 8}, DataType::Float(32)});
  int w = g.add_constant("w", test::random_float32({4, 5, 3, 3}, 1));
  g.outputs = {g.add_op("conv2d", "my_conv", {x, w})};
  std::string msg = test::error_text<ModelError>([&] { infer_types(g); });
  EXPECT_NE(msg.find("node 'my_conv' (conv2d)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 channels"), std::string::npos) << msg;

  Graph h;
  int y = h.add_input("y", {{2}, DataType::Float(32)});
  h.outputs = {h.add_op("frobnicate", "f", {y})};
  msg = test::error_text<ModelError>([&] { infer_types(h); });
  EXPECT_NE(msg.find("unknown graph operator 'frobnicate'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("conv2d"), std::string::npos) << "lists the supported operators: " << msg;

  Graph k;
  int z = k.add_input("z", {{2}, DataType::Float(32)});
  k.outputs = {k.add_op("relu", "r", {z, z})};
  msg = test::error_text<ModelError>([&] { infer_types(k); });
  EXPECT_NE(msg.find("takes 1 inputs, has 2"), std::string::npos) << msg;
}

TEST(GraphErrors, CyclesAreFound) {
  Graph g;
  int x = g.add_input("x", {{2}, DataType::Float(32)});
  int a = g.add_op("relu", "a", {x});
  int b = g.add_op("relu", "b", {a});
  g.node(a).inputs = {b};
  g.outputs = {b};
  std::string msg = test::error_text<ModelError>([&] { g.verify(); });
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::graph

namespace loom::graph {
namespace {

// Every built-in model, compiled and run by the executor, agrees with the naive interpreter
// (small images keep the interpreter fast).
TEST(BuiltinModels, CompiledMatchesTheNaiveInterpreter) {
  for (const std::string& name : builtin_model_names()) {
    Graph g = builtin_model(name, name == "mlp" ? 3 : 1, 64);
    BuildResult r = build(g);
    auto ex = runtime::GraphExecutor::from_model_file(r.file, name);
    NDArray x = test::random_float32(ex.input_spec(0).shape, 11);
    NDArray got = ex.run({x})[0], want = reference_run(g, {x})[0];
    ASSERT_EQ(got.shape(), want.shape()) << name;
    auto [err, scale] = test::max_error(got, want);
    EXPECT_GT(scale, 0.05) << name << ": outputs should not vanish";
    EXPECT_LE(err, 1e-4 * scale) << name;
    // BatchNorms are folded away and the plan reuses memory.
    for (auto& n : r.graph.nodes) EXPECT_NE(n.op, "batch_norm") << name;
    EXPECT_LT(r.memory.planned_bytes(), r.memory.unplanned_bytes) << name;
  }
  std::string msg = test::error_text<ModelError>([] { builtin_model("alexnet"); });
  EXPECT_NE(msg.find("no built-in model 'alexnet'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::graph

namespace loom::graph {
namespace {

// Schedules follow the target: compiled for an AVX2-only CPU (8 float lanes, 16 vector registers:
// channel blocks of 8, shorter register tiles), the models still match the interpreter. The code
// runs on this host whenever the host has AVX2 (AVX-512 hosts do).
TEST(BuiltinModels, CompiledForAnAvx2Target) {
  BuildOptions o;
  o.llvm.target_cpu = "znver3";
  EXPECT_EQ(codegen::target_info(o.llvm).float32_lanes(), 8);
  EXPECT_EQ(codegen::target_info(o.llvm).vector_registers, 16);
  for (const std::string& name : {std::string("resnet18"), std::string("mobilenet_v2")}) {
    Graph g = builtin_model(name, 1, 64);
    BuildResult r = build(g, o);
    bool blocked_by_8 = false;
    for (auto& n : r.graph.nodes)
      blocked_by_8 |=
          n.is_op() && n.op == "conv2d" && n.attrs.get_string("layout", "") == "NCHWc" && n.type.shape.back() == 8;
    EXPECT_TRUE(blocked_by_8) << name;
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) continue;
    auto ex = runtime::GraphExecutor::from_model_file(r.file, name);
    NDArray x = test::random_float32(ex.input_spec(0).shape, 12);
    NDArray got = ex.run({x})[0], want = reference_run(g, {x})[0];
    auto [err, scale] = test::max_error(got, want);
    EXPECT_LE(err, 1e-4 * scale) << name;
  }
}

// BuildOptions::conv_tile (what `loom compile --tuning-log` sets) is asked once per blocked conv
// kernel with the tuner's key; the tiles it returns are used (the model still matches the
// reference), and one that does not fit is an error naming the kernel.
TEST(BuiltinModels, ConvTilesComeFromTheBuildOptions) {
  Graph g = builtin_model("resnet18", 1, 64);
  BuildOptions o;
  o.pipeline.layout.winograd = false;  // the tiles are the direct conv's; Winograd takes the 3x3 stride-1 layers
  std::vector<ConvKernelKey> keys;
  o.conv_tile = [&](const ConvKernelKey& k) -> std::optional<ops::NchwcConvTile> {
    keys.push_back(k);
    return ops::NchwcConvTile{1, 3};  // one block x 3 columns: not what the default picks
  };
  BuildResult r = build(g, o);
  ASSERT_FALSE(keys.empty());
  bool saw_64 = false;
  for (auto& k : keys) {
    EXPECT_EQ(k.layer.batch, 1);
    EXPECT_EQ(k.layer.in_channels % k.block, 0);
    saw_64 |= k.layer == ops::Conv2dLayer{1, 64, 16, 16, 64, 3, 1, 1};
  }
  EXPECT_TRUE(saw_64);  // layer1's 3x3 convs at 64/4 = 16 pixels
  auto ex = runtime::GraphExecutor::from_model_file(r.file, "resnet18");
  NDArray x = test::random_float32(ex.input_spec(0).shape, 5);
  NDArray got = ex.run({x})[0], want = reference_run(g, {x})[0];
  auto [err, scale] = test::max_error(got, want);
  EXPECT_LE(err, 1e-4 * scale);
  o.conv_tile = [](const ConvKernelKey&) -> std::optional<ops::NchwcConvTile> { return ops::NchwcConvTile{3, 4}; };
  std::string msg = test::error_text<CodegenError>([&] { build(g, o); });
  EXPECT_NE(msg.find("tile of 3 blocks x 4 columns does not fit"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::graph

namespace loom::graph {
namespace {

// Two compiled models loaded at once in one process each run their own kernels (the in-memory
// library of the second must not be mistaken for the first, still loaded, one).
TEST(GraphExecutorLoading, TwoModelsLoadedAtOnceKeepTheirOwnKernels) {
  auto model = [](const std::string& op) {
    Graph g;
    g.name = op;
    int x = g.add_input("x", {{4, 8}, DataType::Float(32)});
    g.outputs = {g.add_op(op, op, {x})};
    return runtime::GraphExecutor::from_model_file(build(g).file, op);
  };
  auto relu = model("relu");
  auto neg = model("neg");
  NDArray x = test::random_float32({4, 8}, 3);
  NDArray a = relu.run({x})[0], b = neg.run({x})[0];
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(a.get_as_double(i), std::max(x.get_as_double(i), 0.0)) << i;
    EXPECT_EQ(b.get_as_double(i), -x.get_as_double(i)) << i;
  }
}

}  // namespace
}  // namespace loom::graph
