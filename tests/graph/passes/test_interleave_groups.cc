// Narrow groups interleaved (pass interleave_narrow_groups, the blocked kernel of interleaved
// groups): where the pass renumbers channels and where it must not, and that the interpreter (on
// NCHW and on the blocked graph) and compiled models give the original graph's results.
#include <gtest/gtest.h>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

// x -> 1x1 conv (bias) -> relu -> grouped 3x3 conv (groups of cg, bias) -> relu -> 1x1 conv: a
// ResNeXt bottleneck. `between` (optional) adds a node after the first relu.
struct Bottleneck {
  Graph g;
  int first = -1, grouped = -1, last = -1;
  Bottleneck(int64_t c, int64_t cg, int64_t stride, const std::string& between = "", int64_t batch = 1,
             int64_t dilation = 1) {
    int x = g.add_input("x", {{batch, 24, 10, 10}, DataType::Float(32)});
    auto w = [&](const std::string& name, Shape s, uint64_t seed) {
      return g.add_constant(name, test::random_float32(std::move(s), seed, -0.4, 0.4));
    };
    first = g.add_op("conv2d", "conv1", {x, w("w1", {c, 24, 1, 1}, 1), w("b1", {c}, 2)});
    int v = g.add_op("relu", "relu1", {first});
    if (between == "scale")
      v = g.add_op("mul", "scale", {v, w("s", {c, 1, 1}, 3)});
    else if (between == "read_twice")
      g.outputs.push_back(v);
    grouped = g.add_op("conv2d", "conv2", {v, w("w2", {c, cg, 3, 3}, 4), w("b2", {c}, 5)},
                       Attrs()
                           .set("groups", c / cg)
                           .set("pads", std::vector<int64_t>{dilation, dilation, dilation, dilation})
                           .set("dilations", std::vector<int64_t>{dilation, dilation})
                           .set("strides", std::vector<int64_t>{stride, stride}));
    last = g.add_op("conv2d", "conv3", {g.add_op("relu", "relu2", {grouped}), w("w3", {32, c, 1, 1}, 6)});
    g.outputs.insert(g.outputs.begin(), last);
    infer_types(g);
  }
};

void expect_close(const std::vector<NDArray>& got, const std::vector<NDArray>& want, const std::string& what) {
  EXPECT_TRUE(test::all_arrays_close(got, want, 0, 1e-4)) << what;
}

// 4-, 8- and 16-channel groups (16 and 32 groups), stride 1 and 2: the pass renumbers the three
// convs (for lanes of 16), the NCHW interpreter gives the original results, and so do the
// blocked graph's interpreter and the compiled model (this host's lanes).
TEST(InterleaveGroups, BottlenecksKeepTheirResults) {
  // 16 groups: one block of group lanes; 32 groups (128 channels of 4): two blocks of them.
  // Batch 2 and dilation 2 once.
  for (auto [c, cg, stride, batch, dilation] : {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{64, 4, 1, 1, 1},
                                                {128, 8, 2, 1, 1},
                                                {256, 16, 1, 1, 1},
                                                {128, 4, 1, 1, 1},
                                                {64, 4, 1, 2, 2}}) {
    SCOPED_TRACE(std::to_string(cg) + "-channel groups, stride " + std::to_string(stride) + ", batch " +
                 std::to_string(batch) + ", dilation " + std::to_string(dilation));
    Bottleneck b(c, cg, stride, "", batch, dilation);
    NDArray x = test::random_float32({batch, 24, 10, 10}, 7);
    std::vector<NDArray> want = reference_run(b.g, {x});
    Graph o = b.g;
    interleave_narrow_groups(o, 16);
    EXPECT_EQ(o.node(b.grouped).attrs.get_int("interleaved_groups", 0), 1) << o.str();
    for (int conv : {b.first, b.grouped, b.last})  // every conv's weights renumbered
      EXPECT_NE(o.node(conv).inputs[1], b.g.node(conv).inputs[1]) << o.node(conv).name;
    expect_close(reference_run(o, {x}), want, "interpreter, NCHW");
    Graph blocked = b.g;
    optimize(blocked);
    // Blocked and interleaved where this host's lanes divide the groups and hold one.
    const int64_t lanes = PipelineOptions().layout.vector_lanes;
    if (c / cg % lanes == 0 && cg <= lanes) {
      const Node* conv2 = nullptr;  // node ids change in optimize: by name
      for (const Node& n : blocked.nodes)
        if (n.name == "conv2") conv2 = &n;
      ASSERT_NE(conv2, nullptr) << blocked.str();
      EXPECT_EQ(conv2->attrs.get_int("interleaved_groups", 0), 1) << blocked.str();
      EXPECT_EQ(blocked.type_of(conv2->inputs[1]).shape.size(), 5u) << blocked.str();
    }
    expect_close(reference_run(blocked, {x}), want, "interpreter, blocked");
    std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(b.g).file, "bottleneck").run({x});
    expect_close(got, want, "compiled");
  }
}

// Left alone: a per-channel scale between the convs, a value the caller also reads, groups of
// more channels than a vector, a group count that is no multiple of the lanes.
TEST(InterleaveGroups, WhatStaysInBlockOrder) {
  struct Case {
    int64_t c, cg;
    std::string between;
    const char* why;
  };
  for (const Case& k : {Case{64, 4, "scale", "per-channel scale"}, Case{64, 4, "read_twice", "value read twice"},
                        Case{512, 32, "", "32-channel groups"}, Case{96, 4, "", "24 groups"}}) {
    Bottleneck b(k.c, k.cg, 1, k.between);
    Graph o = b.g;
    interleave_narrow_groups(o, 16);
    EXPECT_FALSE(o.node(b.grouped).attrs.has("interleaved_groups")) << k.why;
    EXPECT_EQ(o.node(b.first).inputs[1], b.g.node(b.first).inputs[1]) << k.why;
  }
}

// The blocked kernel's weights and attribute go together: 5-D weights without the attribute, the
// attribute with other weights, or on an NCHW conv whose channel counts differ, are shape errors.
TEST(InterleaveGroups, InconsistentBlockedWeightsAreErrors) {
  Graph g;
  int x = g.add_input("x", {{1, 4, 6, 6, 16}, DataType::Float(32)});
  int w = g.add_constant("w", test::random_float32({4, 4, 3, 3, 16}, 1));
  int conv =
      g.add_op("conv2d", "conv", {x, w},
               Attrs().set("groups", int64_t(16)).set("layout", std::string("NCHWc")).set("oc_block", int64_t(16)));
  g.outputs = {conv};
  std::string msg = test::error_text<Error>([&] { infer_types(g); });
  EXPECT_NE(msg.find("interleaved groups need weights [C/b, C/groups, kh, kw, b]"), std::string::npos) << msg;
  // The attribute with block-diagonal weights [O/b, Cg/b, kh, kw, b, b].
  Graph h;
  int hx = h.add_input("x", {{1, 4, 6, 6, 16}, DataType::Float(32)});
  int hw = h.add_constant("w", test::random_float32({4, 1, 3, 3, 16, 16}, 1));
  h.outputs = {h.add_op("conv2d", "conv", {hx, hw},
                        Attrs()
                            .set("groups", int64_t(4))
                            .set("layout", std::string("NCHWc"))
                            .set("oc_block", int64_t(16))
                            .set("interleaved_groups", int64_t(1)))};
  msg = test::error_text<Error>([&] { infer_types(h); });
  EXPECT_NE(msg.find("interleaved groups need weights"), std::string::npos) << msg;
  // NCHW, 16 -> 32 channels.
  Graph p;
  int px = p.add_input("x", {{1, 16, 6, 6}, DataType::Float(32)});
  int pw = p.add_constant("w", test::random_float32({32, 4, 3, 3}, 1));
  p.outputs = {
      p.add_op("conv2d", "conv", {px, pw}, Attrs().set("groups", int64_t(4)).set("interleaved_groups", int64_t(1)))};
  msg = test::error_text<Error>([&] { infer_types(p); });
  EXPECT_NE(msg.find("interleaved groups need several groups and as many output as input channels"), std::string::npos)
      << msg;
  // The interpreter on an already typed graph whose interleaved conv lost its attribute.
  Bottleneck b(64, 4, 1);
  Graph o = b.g;
  optimize(o);
  for (Node& n : o.nodes)
    if (n.name == "conv2") n.attrs.erase("interleaved_groups");
  msg = test::error_text<Error>([&] { reference_run(o, {test::random_float32({1, 24, 10, 10}, 7)}); });
  EXPECT_NE(msg.find("interleaved groups take weights [O/b, Cg, kh, kw, b] and only they do"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace loom::graph
