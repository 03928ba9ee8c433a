// Compiled models (build.cc) loaded side by side in one process keep their own kernels.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/runtime/graph_executor.h"

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
