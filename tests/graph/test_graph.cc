// The graph itself (graph.cc): Graph::verify finds a cycle.
#include <gtest/gtest.h>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph {
namespace {

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
