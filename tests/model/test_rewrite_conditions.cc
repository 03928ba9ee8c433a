// Every conditional graph rewrite tested where it is on: at sizes above its thresholds (the default
// pipeline, as `loom compile` runs it), a case just inside its conditions (rewritten) and, for
// each reason it excludes, a case just outside (left alone). Every case's compiled model is
// compared with the naive interpreter on the graph as built (before any pass), so a rewrite that
// fires where it must not, or changes a result, fails.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/test_util.h"
#include "loom/accel/config.h"
#include "loom/graph/build.h"
#include "loom/graph/layout.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

// A graph under construction with one float input, and convolutions with random constant weights.
struct Builder {
  Graph g;
  int x;
  uint64_t seed = 1;
  explicit Builder(Shape shape) { x = g.add_input("x", {std::move(shape), DataType::Float(32)}); }
  // Its input's channels from a typed copy (the graph's own nodes are typed by the passes).
  int64_t channels(int in) {
    Graph t = g;
    t.outputs = {in};
    infer_types(t);
    return t.type_of(in).shape[1];
  }
  int conv(const std::string& name, int in, int64_t out_c, int64_t k, Attrs a = {}) {
    int64_t in_c = channels(in), groups = a.get_int("groups", 1);
    int w = g.add_constant(name + "_w", test::random_float32({out_c, in_c / groups, k, k}, seed++, -0.2, 0.2));
    int b = g.add_constant(name + "_b", test::random_float32({out_c}, seed++, -0.1, 0.1));
    return g.add_op("conv2d", name, {in, w, b}, std::move(a));
  }
};

Attrs pads(int64_t p) { return Attrs().set("pads", std::vector<int64_t>{p, p, p, p}); }

// The optimized graph of the compiled model, checked against the interpreter on the graph as built.
Graph compiled_graph(const Graph& g, double tol = 1e-4, BuildOptions bo = {}) {
  std::vector<NDArray> in;
  for (int i : g.inputs) in.push_back(test::random_float32(g.node(i).type.shape, 7 + uint64_t(i), -0.5, 0.5));
  Graph typed = g;
  infer_types(typed);
  std::vector<NDArray> want = reference_run(typed, in);
  BuildResult r = build(g, bo);
  std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(r.file, g.name).run(in);
  EXPECT_TRUE(test::all_arrays_close(got, want, tol, tol));
  return std::move(r.graph);
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.is_op() && node.op == op;
  return n;
}

// The operator that produces node `id`'s data, looking through layout changes.
const Node& producer(const Graph& g, int id) {
  while (g.node(id).is_op() && g.node(id).op == "layout_transform") id = g.node(id).inputs[0];
  return g.node(id);
}

// ---- winograd_conv: blocked 3x3 float convs, stride 1, dilation 1, constant weights, groups of
// at least 32 channels, saving at least kWinogradMinSavedMacs on a map with enough tiles.

TEST(RewriteConditions, WinogradOnlyForStrideOneUndilated3x3WithConstantWeights) {
  // 64 -> 64 at 28x28: 28.9 M multiply-adds, above the threshold that turns the rewrite on.
  struct Case {
    const char* name;
    Attrs attrs;
    int64_t k;
    bool rewritten;
  };
  for (const Case& c :
       {Case{"plain", pads(1), 3, true},
        Case{"dilated", pads(2).set("dilations", std::vector<int64_t>{2, 2}), 3, false},
        Case{"strided", pads(1).set("strides", std::vector<int64_t>{2, 2}), 3, false},
        Case{"five_by_five", pads(2), 5, false}, Case{"wide_groups", pads(1).set("groups", int64_t(2)), 3, true},
        Case{"narrow_groups", pads(1).set("groups", int64_t(16)), 3, false}}) {
    SCOPED_TRACE(c.name);
    Builder b({1, 64, 28, 28});
    b.g.outputs = {b.conv("conv", b.x, 64, c.k, c.attrs)};
    Graph o = compiled_graph(b.g, 2e-4);
    EXPECT_EQ(count_ops(o, "conv2d_winograd"), c.rewritten ? 1 : 0) << o.str();
    EXPECT_EQ(count_ops(o, "conv2d"), c.rewritten ? 0 : 1) << o.str();
  }
  // Weights given at run time (an input, not a constant): direct.
  Graph g;
  int x = g.add_input("x", {{1, 64, 28, 28}, DataType::Float(32)});
  int w = g.add_input("w", {{64, 64, 3, 3}, DataType::Float(32)});
  g.outputs = {g.add_op("conv2d", "conv", {x, w}, pads(1))};
  EXPECT_EQ(count_ops(compiled_graph(g, 2e-4), "conv2d_winograd"), 0) << "weights computed by a node";
  // Below the saving threshold (14x14, 32 -> 32: 1.8 M multiply-adds): direct.
  Builder small({1, 32, 14, 14});
  small.g.outputs = {small.conv("conv", small.x, 32, 3, pads(1))};
  EXPECT_EQ(count_ops(compiled_graph(small.g), "conv2d_winograd"), 0);
}

// ---- pool_before_pointwise_conv: an averaging pool of a 1x1, stride-1, unpadded float conv that
// the pool alone reads, where pooling first does fewer operations.

TEST(RewriteConditions, PoolMovesBeforeOnlyAnUnpaddedPointwiseConvItAloneReads) {
  Attrs pool2 = Attrs()
                    .set("kernel", std::vector<int64_t>{2, 2})
                    .set("strides", std::vector<int64_t>{2, 2})
                    .set("pads", std::vector<int64_t>{0, 0, 0, 0});
  struct Case {
    const char* name;
    std::string pool_op;
    Attrs pool_attrs;
    int64_t k;
    Attrs conv_attrs;
    bool second_reader, conv_is_output, moved;
  };
  Attrs padded_pool = Attrs(pool2).set("pads", std::vector<int64_t>{1, 1, 1, 1});
  for (const Case& c : {Case{"inside", "avg_pool2d", pool2, 1, {}, false, false, true},
                        Case{"global", "global_avg_pool2d", {}, 1, {}, false, false, true},
                        Case{"max_pool", "max_pool2d", pool2, 1, {}, false, false, false},
                        Case{"three_by_three", "avg_pool2d", pool2, 3, pads(1), false, false, false},
                        Case{"strided_conv", "avg_pool2d", pool2, 1, Attrs().set("strides", std::vector<int64_t>{2, 2}),
                             false, false, false},
                        Case{"padded_conv", "avg_pool2d", pool2, 1, pads(1), false, false, false},
                        Case{"pool_counts_its_padding",
                             "avg_pool2d",
                             Attrs(padded_pool).set("count_include_pad", int64_t(1)),
                             1,
                             {},
                             false,
                             false,
                             false},
                        Case{"pool_excludes_its_padding", "avg_pool2d", padded_pool, 1, {}, false, false, true},
                        Case{"conv_read_twice", "avg_pool2d", pool2, 1, {}, true, false, false},
                        Case{"conv_is_an_output", "avg_pool2d", pool2, 1, {}, false, true, false}}) {
    SCOPED_TRACE(c.name);
    Builder b({1, 64, 28, 28});
    int conv = b.conv("conv", b.x, 32, c.k, c.conv_attrs);
    int pool = b.g.add_op(c.pool_op, "pool", {conv}, c.pool_attrs);
    b.g.outputs = {pool};
    if (c.second_reader) b.g.outputs = {pool, b.g.add_op("relu", "other_reader", {conv})};
    if (c.conv_is_output) b.g.outputs = {pool, conv};
    Graph o = compiled_graph(b.g);
    // Moved: the convolution reads the pool's output.
    bool moved = false;
    for (const Node& n : o.nodes)
      if (n.is_op() && n.op == "conv2d" && producer(o, n.inputs[0]).op == c.pool_op) moved = true;
    EXPECT_EQ(moved, c.moved) << o.str();
  }
}

// ---- prune_conv_taps: kernel taps that read only padding at every output are cut; taps that
// read the map somewhere stay.

TEST(RewriteConditions, ConvTapsArePrunedOnlyWhereTheyReadPaddingAlone) {
  struct Case {
    const char* name;
    int64_t dilation, size;
    int64_t kernel_after;  // the largest kernel left (2: at least 2)
  };
  // Dilation 14 over a 14x14 map: the outer taps read padding for every output (a 1x1 conv is
  // left); dilation 13: the outer taps read the map's last row from the first output (kept where
  // they are live); dilation 2: every tap is live.
  for (const Case& c :
       {Case{"center_only", 14, 14, 1}, Case{"edge_rows_live", 13, 14, 2}, Case{"all_live", 2, 14, 3}}) {
    SCOPED_TRACE(c.name);
    Builder b({1, 32, c.size, c.size});
    b.g.outputs = {
        b.conv("conv", b.x, 32, 3, pads(c.dilation).set("dilations", std::vector<int64_t>{c.dilation, c.dilation}))};
    Graph o = b.g;
    optimize(o);
    int64_t kernel = 0;  // the largest kernel height left (weights [O, C, kh, kw] or blocked [.., .., kh, ..])
    for (const Node& n : o.nodes)
      if (n.is_op() && (n.op == "conv2d" || n.op == "conv2d_winograd") && o.node(n.inputs[1]).is_constant())
        kernel = std::max(kernel, n.op == "conv2d_winograd" ? int64_t(3) : o.type_of(n.inputs[1]).shape[2]);
    if (c.kernel_after == 2)
      EXPECT_GE(kernel, 2) << o.str();
    else
      EXPECT_EQ(kernel, c.kernel_after) << o.str();
    compiled_graph(b.g);  // compiled == interpreter
  }
  // Pads of 2 before and 4 after (SAME_UPPER-like) on a 7x7 map, 5x5 taps at dilation 2: the last
  // tap reads the map's last row for the first output only, so every tap stays.
  Builder b({1, 32, 7, 7});
  b.g.outputs = {
      b.conv("conv", b.x, 32, 5,
             Attrs().set("pads", std::vector<int64_t>{2, 2, 4, 4}).set("dilations", std::vector<int64_t>{2, 2}))};
  compiled_graph(b.g);
}

// ---- dense_from_matmul: a float matmul by a constant 2-D matrix becomes dense, taking a bias
// add along the last axis; a computed right operand or a bias along another axis stays apart.

TEST(RewriteConditions, MatmulBecomesDenseOnlyByAConstantMatrix) {
  auto build_case = [](bool constant_b, bool last_axis_bias) {
    Graph g;
    int x = g.add_input("x", {{2, 16, 64}, DataType::Float(32)});
    int b = g.add_constant("b", test::random_float32({64, 32}, 1, -0.2, 0.2));
    if (!constant_b) b = g.add_op("relu", "b_computed", {b});
    int mm = g.add_op("matmul", "mm", {x, b});
    // Along the last axis, or a different bias per row (also ending in 32: only its other
    // dimensions tell it from a last-axis bias).
    NDArray bias = test::random_float32(last_axis_bias ? Shape{32} : Shape{16, 32}, 2);
    g.outputs = {g.add_op("add", "bias_add", {mm, g.add_constant("bias", bias)})};
    return g;
  };
  struct Case {
    const char* name;
    bool constant_b, last_axis_bias, dense, bias_folded;
  };
  for (const Case& c : {Case{"inside", true, true, true, true}, Case{"computed_matrix", false, true, false, false},
                        Case{"bias_per_row", true, false, true, false}}) {
    SCOPED_TRACE(c.name);
    Graph g = build_case(c.constant_b, c.last_axis_bias);
    Graph o = g;
    infer_types(o);
    dense_from_matmul(o);
    infer_types(o);
    int dense = 0, matmul = 0, add = 0;
    for (const Node& n : o.nodes)
      if (n.is_op()) dense += n.op == "dense", matmul += n.op == "matmul", add += n.op == "add";
    EXPECT_EQ(dense, c.dense ? 1 : 0) << o.str();
    EXPECT_EQ(matmul, c.dense ? 0 : 1) << o.str();
    EXPECT_EQ(add, c.bias_folded ? 0 : 1) << o.str();
    compiled_graph(g);
  }
}

// ---- concat_in_place: a concat along a dimension with only 1s before it, of values computed by
// CPU kernels at aligned offsets, is written in place; other concats (a batch before the axis, a
// constant operand no kernel writes, one value at two offsets) stay copies.

TEST(RewriteConditions, ConcatsAreWrittenInPlaceOnlyWhereEveryInputIsAContiguousRange) {
  struct Case {
    const char* name;
    int64_t batch;
    bool constant_operand, same_twice, blocked, in_place;
  };
  // On plain NCHW activations (blocked off) a constant operand reaches the concat as it is; on
  // blocked ones a layout kernel would write it.
  for (const Case& c :
       {Case{"inside", 1, false, false, true, true}, Case{"inside_nchw", 1, false, false, false, true},
        Case{"batch_two", 2, false, false, true, false}, Case{"constant_operand", 1, true, false, false, false},
        Case{"one_value_twice", 1, false, true, true, false}}) {
    SCOPED_TRACE(c.name);
    Builder b({c.batch, 32, 14, 14});
    int a = b.conv("a", b.x, 32, 1), d = b.conv("d", b.x, 32, 1);
    int second = c.constant_operand ? b.g.add_constant("k", test::random_float32({1, 32, 14, 14}, 9))
                 : c.same_twice     ? a
                                    : d;
    b.g.outputs = {
        b.g.add_op("relu", "out", {b.g.add_op("concat", "cat", {a, second}, Attrs().set("axis", int64_t(1)))})};
    BuildOptions bo;
    bo.pipeline.layout.blocked_activations = c.blocked;
    Graph o = compiled_graph(b.g, 1e-4, bo);
    bool in_place = false;
    for (const Node& n : o.nodes) in_place |= is_in_place_concat(n);
    EXPECT_EQ(in_place, c.in_place) << o.str();
  }
}

// ---- interleave_narrow_groups: a grouped float conv with groups narrower than the vector lanes,
// a multiple of the lanes of them, between two ungrouped convs with constant weights (only
// one-input element-wise ops between, each value read once) runs with interleaved channels.

TEST(RewriteConditions, NarrowGroupsInterleaveOnlyBetweenTwoPlainConvs) {
  struct Case {
    const char* name;
    int64_t groups, group_width;
    bool read_twice, grouped_consumer, two_input_op, interleaved;
  };
  // 32 groups: a multiple of 8 and of 16 lanes (AVX2 and AVX-512 hosts); 12 groups of neither.
  for (const Case& c : {Case{"inside", 32, 4, false, false, false, true},
                        Case{"groups_not_a_multiple_of_the_lanes", 12, 4, false, false, false, false},
                        Case{"groups_wider_than_the_lanes", 16, 32, false, false, false, false},
                        Case{"input_read_twice", 32, 4, true, false, false, false},
                        Case{"grouped_consumer", 32, 4, false, true, false, false},
                        Case{"two_input_op_between", 32, 4, false, false, true, false}}) {
    SCOPED_TRACE(c.name);
    const int64_t C = c.groups * c.group_width;
    Builder b({1, 64, 14, 14});
    int p = b.g.add_op("relu", "p_relu", {b.conv("producer", b.x, C, 1)});
    if (c.two_input_op)
      p = b.g.add_op("add", "shift", {p, b.g.add_constant("s", test::random_float32({1, C, 1, 1}, 4))});
    int grouped = b.conv("grouped", p, C, 3, pads(1).set("groups", c.groups));
    int r = b.g.add_op("relu", "g_relu", {grouped});
    int q = b.conv("consumer", r, c.grouped_consumer ? C : 64, 1,
                   c.grouped_consumer ? Attrs().set("groups", int64_t(2)) : Attrs());
    b.g.outputs = {q};
    if (c.read_twice) b.g.outputs.push_back(p);
    Graph o = compiled_graph(b.g);
    bool interleaved = false;
    for (const Node& n : o.nodes) interleaved |= n.is_op() && n.attrs.get_int("interleaved_groups", 0) == 1;
    EXPECT_EQ(interleaved, c.interleaved) << o.str();
  }
}

// ---- fuse_ops: a conv's bias, relu and residual add join its kernel when the conv's value has no
// other reader; a second reader keeps the conv's value a kernel output of its own.

TEST(RewriteConditions, ElementWiseOpsJoinTheirProducerOnlyAsItsOnlyReader) {
  for (bool second_reader : {false, true}) {
    SCOPED_TRACE(second_reader ? "conv read twice" : "conv read once");
    Builder b({1, 32, 14, 14});
    int conv = b.conv("conv", b.x, 32, 3, pads(1));
    int relu = b.g.add_op("relu", "relu", {conv});
    b.g.outputs = {b.g.add_op("add", "residual", {relu, b.x})};
    if (second_reader) b.g.outputs.push_back(b.g.add_op("sigmoid", "other", {conv}));
    compiled_graph(b.g);
    BuildResult r = build(b.g);
    // The group computing the conv: does it also hold the relu?
    bool together = false;
    for (const FusedGroup& grp : r.fusion.groups) {
      bool has_conv = false, has_relu = false;
      for (int id : grp.nodes) {
        const Node& n = r.graph.node(id);
        has_conv |= n.op == "conv2d" || n.op == "conv2d_winograd";
        has_relu |= n.op == "relu";
      }
      together |= has_conv && has_relu;
    }
    EXPECT_EQ(together, !second_reader) << r.fusion.str(r.graph);
  }
}

// ---- keep_padded_channels: a chain of padded float convs (ShuffleNetV2's branch: 1x1 conv, ReLU,
// depthwise 3x3, 1x1 conv, ReLU, 58 channels) keeps its zero channels through the ReLUs and the
// depthwise conv's input pad: a slice before the second 1x1 conv and one at the end are left, and
// no ReLU reads a slice. Kept in place: a ReLU whose slice another op reads too, an op with
// f(0) != 0 after the slice, ReLUs after a model's own channel split of a conv's outputs (weights
// nonzero past the split; or weights zero there but not the bias), a zero pad after such a split,
// a pad that appends ones, a pad that adds rows too, a pad of rows after a slice of every channel.

Attrs first_channels(int64_t c) {
  return Attrs()
      .set("starts", std::vector<int64_t>{0})
      .set("ends", std::vector<int64_t>{c})
      .set("axes", std::vector<int64_t>{1})
      .set("steps", std::vector<int64_t>{1});
}

TEST(RewriteConditions, PaddedChannelsStayOnlyWhereTheyAreZero) {
  struct Case {
    const char* name;
    int slices, pads, relus_on_slices;  // left in the compiled graph
  };
  for (const Case& c :
       {Case{"inside", 2, 0, 0}, Case{"slice_read_twice", 3, 1, 1}, Case{"sigmoid_after_slice", 3, 1, 0},
        Case{"grouped_reader", 1, 0, 0}, Case{"split_of_a_wide_conv", 2, 0, 1}, Case{"bias_past_the_split", 2, 0, 1},
        Case{"zero_pad_after_split", 1, 1, 0}, Case{"pad_of_ones", 1, 1, 0}, Case{"pad_of_rows_too", 1, 1, 0},
        Case{"slice_of_every_channel", 1, 1, 0}}) {
    SCOPED_TRACE(c.name);
    const std::string name = c.name;
    Builder b({1, 32, 14, 14});
    auto pad_channels = [&](int in, std::vector<int64_t> pads, double value) {
      return b.g.add_op("pad", "pad", {in}, Attrs().set("pads", std::move(pads)).set("value", value));
    };
    if (name == "split_of_a_wide_conv" || name == "bias_past_the_split" || name == "zero_pad_after_split") {
      // 64 channels of which the chain reads the first 58: a real split, not padding
      int wide = b.conv("wide", b.x, 64, 1);
      Node& bias = b.g.node(b.g.node(wide).inputs[2]);
      if (name == "split_of_a_wide_conv")  // only the weights tell that the channels are not zero
        for (int64_t i = 58; i < 64; ++i) bias.value.set_from_double(i, 0);
      if (name == "bias_past_the_split") {
        // weights zero past the split, and the bias too but for its first channel there
        Node& w = b.g.node(b.g.node(wide).inputs[1]);
        for (int64_t i = 58 * 32; i < w.value.numel(); ++i) w.value.set_from_double(i, 0);
        for (int64_t i = 59; i < 64; ++i) bias.value.set_from_double(i, 0);
      }
      int split = b.g.add_op("slice", "split", {wide}, first_channels(58));
      b.g.outputs = {name == "zero_pad_after_split"
                         ? b.conv("after_pad", pad_channels(split, {0, 0, 0, 0, 0, 6, 0, 0}, 0), 16, 1)
                         : b.conv("after_split", b.g.add_op("relu", "split_act", {split}), 58, 1)};
    } else if (name == "slice_of_every_channel") {
      // a slice that keeps all 64 channels, then rows padded: nothing was sliced off
      int all = b.g.add_op("slice", "all", {b.conv("wide", b.x, 64, 1)}, first_channels(64));
      b.g.outputs = {b.conv("after_pad", pad_channels(all, {0, 0, 1, 0, 0, 0, 1, 0}, 0), 16, 1)};
    } else if (name == "pad_of_ones" || name == "pad_of_rows_too") {
      int first = b.conv("first", b.x, 58, 1);
      int pad = name == "pad_of_ones" ? pad_channels(first, {0, 0, 0, 0, 0, 6, 0, 0}, 1)
                                      : pad_channels(first, {0, 0, 1, 0, 0, 6, 1, 0}, 0);
      b.g.outputs = {b.conv("after_pad", pad, 16, 1)};
    } else {
      int first = b.conv("first", b.x, 58, 1);
      int act = b.g.add_op(name == "sigmoid_after_slice" ? "sigmoid" : "relu", "first_act", {first});
      if (name == "grouped_reader") {
        b.g.outputs = {b.conv("grouped", act, 58, 1, Attrs().set("groups", int64_t(2)))};
      } else {
        int dw = b.conv("dw", act, 58, 3, pads(1).set("groups", int64_t(58)));
        b.g.outputs = {b.g.add_op("relu", "out", {b.conv("last", dw, 58, 1)})};
        if (name == "slice_read_twice") b.g.outputs.push_back(first);
      }
    }
    Graph o = compiled_graph(b.g);
    EXPECT_EQ(count_ops(o, "slice"), c.slices) << o.str();
    EXPECT_EQ(count_ops(o, "pad"), c.pads) << o.str();
    int relus_on_slices = 0;
    for (const Node& n : o.nodes)
      relus_on_slices += n.is_op() && n.op == "relu" && producer(o, n.inputs[0]).op == "slice";
    EXPECT_EQ(relus_on_slices, c.relus_on_slices) << o.str();
  }
}

// ---- alter_layout: a conv with constant weights whose output channels fill whole blocks (after
// pad_conv_channels) runs channel-blocked; weights given at run time, or 3 output channels
// (padding past twice the work), keep it NCHW.

TEST(RewriteConditions, ConvsRunBlockedOnlyWithConstantWeightsAndWholeBlocks) {
  struct Case {
    const char* name;
    int64_t out_channels;
    bool weights_input, blocked;
  };
  for (const Case& c : {Case{"inside", 64, false, true}, Case{"padded_to_blocks", 12, false, true},
                        Case{"three_channels", 3, false, false}, Case{"weights_given_at_run_time", 64, true, false}}) {
    SCOPED_TRACE(c.name);
    Graph g;
    int x = g.add_input("x", {{1, 32, 14, 14}, DataType::Float(32)});
    int w = c.weights_input ? g.add_input("w", {{c.out_channels, 32, 3, 3}, DataType::Float(32)})
                            : g.add_constant("w", test::random_float32({c.out_channels, 32, 3, 3}, 3, -0.2, 0.2));
    g.outputs = {g.add_op("relu", "out", {g.add_op("conv2d", "conv", {x, w}, pads(1))})};
    Graph o = compiled_graph(g);
    bool blocked = false;
    for (const Node& n : o.nodes)
      if (n.is_op() && (n.op == "conv2d" || n.op == "conv2d_winograd")) blocked |= conv_layout(n).blocked();
    EXPECT_EQ(blocked, c.blocked) << o.str();
  }
}

// ---- partition_accel: int8 convolutions the accelerator runs (ungrouped, undilated, equal
// strides, symmetric padding) go to it; each other kind stays on the CPU with its reason, and the
// model stays bit-exact with its CPU int8 build.

TEST(RewriteConditions, AcceleratorTakesOnlyTheConvolutionsItRuns) {
  struct Case {
    const char* name;
    Attrs attrs;
    const char* reason;  // nullptr: offloaded
  };
  for (const Case& c :
       {Case{"plain", pads(1), nullptr}, Case{"grouped", pads(1).set("groups", int64_t(2)), "grouped"},
        Case{"dilated", pads(2).set("dilations", std::vector<int64_t>{2, 2}), "dilated"},
        Case{"unequal_strides", pads(1).set("strides", std::vector<int64_t>{1, 2}), "unequal strides"},
        Case{"asymmetric_pads", Attrs().set("pads", std::vector<int64_t>{1, 0, 1, 0}), "asymmetric padding"}}) {
    SCOPED_TRACE(c.name);
    Builder b({1, 32, 14, 14});
    int first = b.conv("first", b.x, 32, 3, pads(1));
    b.g.outputs = {b.g.add_op("relu", "out", {b.conv("conv", b.g.add_op("relu", "r", {first}), 32, 3, c.attrs)})};
    std::vector<std::vector<NDArray>> calib = {{test::random_float32({1, 32, 14, 14}, 11)}};
    QuantizeResult q = quantize(b.g, calib);
    BuildOptions bo;
    bo.accel = accel::default_config();
    BuildResult r = build(q.graph, bo);
    std::string kept;
    for (const std::string& k : r.accel_report.kept) kept += k + "\n";
    bool conv_kept = kept.find("conv_int8 (conv2d)") != std::string::npos;
    EXPECT_EQ(conv_kept, c.reason != nullptr) << kept;
    if (c.reason) {
      EXPECT_NE(kept.find(c.reason), std::string::npos) << kept;
    }
    NDArray in = test::random_float32({1, 32, 14, 14}, 5);
    NDArray got = runtime::GraphExecutor::from_model_file(r.file, "accel").run({in})[0];
    NDArray want = runtime::GraphExecutor::from_model_file(build(q.graph).file, "cpu").run({in})[0];
    EXPECT_TRUE(test::arrays_close(got, want, 0, 0)) << "bit-exact with the CPU int8 build";
  }
}

}  // namespace
}  // namespace loom::graph
