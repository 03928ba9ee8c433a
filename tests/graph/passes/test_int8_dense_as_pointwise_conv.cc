// Pass int8_dense_as_pointwise_conv: an int8 dense layer over many rows runs as a 1x1 int8
// convolution of its rows, with the requantization moved along; results bit for bit the dense's.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

NDArray int8_values(const Shape& shape, int seed) {
  NDArray a = NDArray::empty(shape, DataType::Int(8));
  for (int64_t i = 0; i < a.numel(); ++i) a.set_from_double(i, double((i * 53 + seed * 7) % 255) - 127);
  return a;
}

// x[rows, 64] -> quantize -> dense (int8 [48, 64], int32 bias) -> requantize (per tensor, or per
// channel with multipliers) -> dequantize.
Graph int8_dense(int64_t rows, bool per_channel) {
  Graph g;
  int x = g.add_input("x", {{rows, 64}, DataType::Float(32)});
  int q = g.add_op("quantize", "q", {x}, Attrs().set("exponent", int64_t(-5)));
  NDArray bias = NDArray::empty({48}, DataType::Int(32));
  for (int64_t c = 0; c < 48; ++c) bias.set_from_double(c, double(c * 131 % 2000) - 1000);
  int d = g.add_op("dense", "fc", {q, g.add_constant("w", int8_values({48, 64}, 3)), g.add_constant("b", bias)});
  int rq;
  if (per_channel) {
    NDArray m = NDArray::empty({48}, DataType::Int(32));
    for (int64_t c = 0; c < 48; ++c) m.set_from_double(c, double(int64_t(1) << (c % 5)));
    rq = g.add_op("requantize_channel", "fc_rq", {d, g.add_constant("m", m)}, Attrs().set("shift", int64_t(12)));
  } else {
    rq = g.add_op("requantize", "fc_rq", {d}, Attrs().set("shift", int64_t(10)));
  }
  g.outputs = {g.add_op("dequantize", "y", {rq}, Attrs().set("exponent", int64_t(-2)))};
  return g;
}

int count_ops(const Graph& g, const std::string& op) {
  int k = 0;
  for (const Node& n : g.nodes) k += n.is_op() && n.op == op;
  return k;
}

TEST(GraphPasses, Int8DenseOverManyRowsIsAPointwiseConv) {
  for (bool per_channel : {false, true}) {
    Graph g = int8_dense(40, per_channel);
    NDArray in = test::random_float32({40, 64}, 9, -4, 4);
    std::vector<NDArray> want = reference_run(g, {in});
    Graph o = g;
    infer_types(o);
    int8_dense_as_pointwise_conv(o);
    EXPECT_EQ(count_ops(o, "dense"), 0) << o.str();
    EXPECT_EQ(count_ops(o, "conv2d"), 1) << o.str();
    EXPECT_EQ(o.output_names(), g.output_names());
    EXPECT_TRUE(test::arrays_close(reference_run(o, {in})[0], want[0], 0, 0)) << "interpreted";
    std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g).file, "int8 dense").run({in});
    EXPECT_TRUE(test::arrays_close(got[0], want[0], 0, 0)) << "compiled, per channel " << per_channel;
  }
}

// The offset byte groups on any host: the layout pass asked for them (graph::build asks on VNNI
// targets) reads the signed input plus 128 and takes 128 x the weight sums out of the bias; the
// interpreter on the rewritten graph equals it on the original, and where the host has VNNI the
// compiled model does too.
TEST(GraphPasses, SignedInt8InputsTakeOffsetByteGroups) {
  Graph g = int8_dense(40, false);
  NDArray in = test::random_float32({40, 64}, 4, -4, 4);
  std::vector<NDArray> want = reference_run(g, {in});
  Graph o = g;
  PipelineOptions po;
  po.layout.int8_input_offset = true;
  optimize(o, po);
  int offset_convs = 0;
  for (const Node& n : o.nodes) offset_convs += n.is_op() && n.op == "conv2d" && n.attrs.get_int("input_offset", 0);
  EXPECT_EQ(offset_convs, 1) << o.str();
  EXPECT_TRUE(test::arrays_close(reference_run(o, {in})[0], want[0], 0, 0));
  po.layout.int8_input_offset = false;
  Graph plain = g;
  optimize(plain, po);
  for (const Node& n : plain.nodes) EXPECT_EQ(n.attrs.get_int("input_offset", 0), 0) << n.name;
}

// Few rows stay a dense layer (the layout changes would cost more than the dot products save), as
// do graphs with shape variables.
TEST(GraphPasses, Int8DenseOverFewRowsStaysDense) {
  Graph g = int8_dense(4, false);
  infer_types(g);
  int8_dense_as_pointwise_conv(g);
  EXPECT_EQ(count_ops(g, "dense"), 1);
  EXPECT_EQ(count_ops(g, "conv2d"), 0);
}

}  // namespace
}  // namespace loom::graph
