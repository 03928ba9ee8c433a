// Pass infer_types: type errors name the node (conv2d, unknown operators, conv2d_winograd's operands).
#include <gtest/gtest.h>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph {
namespace {

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

}  // namespace
}  // namespace loom::graph
