// Pass winograd_conv: the tile chosen for a map size, and which 3x3 convs become conv2d_winograd.
#include <gtest/gtest.h>

#include <map>

#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

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

}  // namespace
}  // namespace loom::graph
