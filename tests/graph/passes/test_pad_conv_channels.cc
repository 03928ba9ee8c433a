// Pass pad_conv_channels: convs with odd output channel counts computed on whole blocks.
#include <gtest/gtest.h>

#include <map>

#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

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

}  // namespace
}  // namespace loom::graph
