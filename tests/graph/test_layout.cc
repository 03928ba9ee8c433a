// Typed layouts (layout.cc) through the node attributes, and the errors of a bad layout.
#include <gtest/gtest.h>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/graph/layout.h"
#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph {
namespace {

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

}  // namespace
}  // namespace loom::graph
