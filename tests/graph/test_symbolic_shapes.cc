// Shape variables end to end: a graph whose input has a dimension known only at run time is
// compiled once (symbolic extents in its kernels, storage for the largest shape) and run at
// several lengths, against the reference interpreter on the same graph with that length fixed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

using runtime::DimExpr;

// x[1, seq, 16] + bias[16], then erf and a product with x: elementwise with broadcasting.
Graph pointwise(const std::vector<DimExpr>& x_dims, std::vector<ShapeVar> vars) {
  Graph g;
  g.name = "pointwise";
  g.shape_vars = std::move(vars);
  int x = g.add_input("x", {{}, DataType::Float(32), x_dims});
  int b = g.add_constant("bias", test::random_float32({16}, 7));
  int s = g.add_op("add", "s", {x, b});
  int e = g.add_op("erf", "e", {s});
  g.outputs = {g.add_op("mul", "y", {e, x})};
  return g;
}

Graph pointwise_symbolic() {
  return pointwise({DimExpr::constant(1), DimExpr::variable("seq"), DimExpr::constant(16)}, {{"seq", 1, 100}});
}

Graph pointwise_at(int64_t seq) {
  return pointwise({DimExpr::constant(1), DimExpr::constant(seq), DimExpr::constant(16)}, {});
}

TEST(SymbolicShapes, TypesFollowTheShapeVariables) {
  Graph g = pointwise_symbolic();
  infer_types(g);
  EXPECT_EQ(g.type_of(g.outputs[0]).str(), "float32[1, seq, 16]");
  EXPECT_EQ(g.type_of(g.outputs[0]).shape, (Shape{1, 100, 16}));  // the largest: what storage holds
}

TEST(SymbolicShapes, OneCompiledModelRunsEveryLengthInItsRange) {
  Graph g = pointwise_symbolic();
  BuildResult built = build(g);
  auto ex = runtime::GraphExecutor::from_model_file(built.file, "pointwise");
  EXPECT_EQ(ex.input_spec(0).str(), "float32[1, seq, 16]");
  for (int64_t seq : {100, 1, 37, 2, 64}) {
    NDArray x = test::random_float32({1, seq, 16}, uint64_t(seq));
    std::vector<NDArray> got = ex.run({x});
    ASSERT_EQ(got[0].shape(), (std::vector<int64_t>{1, seq, 16}));
    EXPECT_EQ(ex.shape_values().at("seq"), seq);
    std::vector<NDArray> want = reference_run(pointwise_at(seq), {x});
    // The bias must be the same constant: pointwise_at draws it with the same seed.
    EXPECT_TRUE(test::arrays_close(got[0], want[0], 1e-5, 1e-5)) << "seq = " << seq;
  }
}

TEST(SymbolicShapes, InputsOutsideTheRangeAreClearErrors) {
  auto ex = runtime::GraphExecutor::from_model_file(build(pointwise_symbolic()).file, "pointwise");
  EXPECT_THAT(test::error_text<ShapeError>([&] {
                ex.set_input(0, test::random_float32({1, 101, 16}, 1));
              }),
              ::testing::HasSubstr("seq = 101 is outside its range [1, 100]"));
  EXPECT_THAT(test::error_text<ShapeError>([&] {
                ex.set_input(0, test::random_float32({1, 5, 8}, 1));
              }),
              ::testing::HasSubstr("dimension 2 is 8, not 16"));
  EXPECT_THAT(test::error_text<ShapeError>([&] {
                ex.set_input(0, test::random_float32({5, 16}, 1));
              }),
              ::testing::HasSubstr("it has 2 dimensions, not 3"));
}

}  // namespace
}  // namespace loom::graph

namespace loom::graph {
namespace {

TEST(SymbolicShapes, InputsMustAgreeOnEveryVariable) {
  Graph g;
  g.shape_vars = {{"seq", 1, 32}};
  runtime::ShapeExpr dims = {DimExpr::variable("seq"), DimExpr::constant(8)};
  int x = g.add_input("x", {{}, DataType::Float(32), dims});
  int z = g.add_input("z", {{}, DataType::Float(32), dims});
  g.outputs = {g.add_op("add", "y", {x, z})};
  auto ex = runtime::GraphExecutor::from_model_file(build(g).file, "two");
  NDArray a = test::random_float32({5, 8}, 1), b = test::random_float32({5, 8}, 2);
  NDArray sum = ex.run({a, b})[0];
  EXPECT_EQ(sum.shape(), (std::vector<int64_t>{5, 8}));
  EXPECT_FLOAT_EQ(float(sum.get_as_double(39)), float(a.get_as_double(39) + b.get_as_double(39)));
  ex.set_input(0, a);
  ex.set_input(1, test::random_float32({7, 8}, 3));
  EXPECT_THAT(test::error_text<ShapeError>([&] { ex.run(); }),
              ::testing::HasSubstr("input 'z' has seq = 7 (float32[seq, 8] as [7, 8]) but input 'x' has seq = 5"));
}

TEST(SymbolicShapes, AnOperatorWithoutSymbolicKernelsSaysSo) {
  Graph g;
  g.shape_vars = {{"seq", 1, 32}};
  int x = g.add_input("x", {{}, DataType::Float(32), {DimExpr::constant(1), DimExpr::variable("seq")}});
  g.outputs = {g.add_op("tile", "t", {x}, Attrs().set("repeats", std::vector<int64_t>{1, 2}))};
  EXPECT_THAT(test::error_text<CodegenError>([&] { build(g); }),
              ::testing::HasSubstr("does not compile with symbolic dimensions yet"));
}

TEST(SymbolicShapes, VariablesAreDeclaredWithTheirRange) {
  Graph g;
  runtime::ShapeExpr dims = {DimExpr::variable("seq")};
  EXPECT_THAT(test::error_text<ModelError>([&] {
                g.add_input("x", {{}, DataType::Float(32), dims});
              }),
              ::testing::HasSubstr("'seq', which is not one of the graph's shape variables"));
  g.shape_vars = {{"seq", 4, 2}};
  g.add_input("y", {{5}, DataType::Float(32)});
  g.outputs = {0};
  EXPECT_THAT(test::error_text<ModelError>([&] { g.verify(); }),
              ::testing::HasSubstr("has the range [4, 2]; it must be 0 <= min <= max"));
  // A variable that may be 0 (an empty cache) is probed from 1: it needs two values there.
  g.shape_vars = {{"past", 0, 1}};
  EXPECT_THAT(test::error_text<ModelError>([&] { g.verify(); }),
              ::testing::HasSubstr("has the range [0, 1]; it must be 0 <= min <= max, with max >= 2 where min is 0"));
  g.shape_vars = {{"past", 0, 2}};
  g.verify();
}

TEST(SymbolicShapes, TheExecutorGraphChecksDimsAgainstTheirStorage) {
  BuildResult built = build(pointwise_symbolic());
  runtime::ExecutorGraph plan = runtime::ExecutorGraph::from_json(built.file.graph_json, built.file.params_bytes, "m");
  ASSERT_EQ(plan.shape_vars.size(), 1u);
  EXPECT_EQ(plan.shape_vars[0].max, 100);
  // Round trip.
  runtime::ExecutorGraph again = runtime::ExecutorGraph::from_json(plan.to_json(), built.file.params_bytes, "m");
  EXPECT_EQ(again.values[size_t(again.inputs[0])].dims, plan.values[size_t(plan.inputs[0])].dims);
  // A range wider than the storage reserved for the largest shape.
  plan.shape_vars[0].max = 200;
  EXPECT_THAT(test::error_text<ModelError>(
                  [&] { runtime::ExecutorGraph::from_json(plan.to_json(), built.file.params_bytes, "m"); }),
              ::testing::HasSubstr("(seq) ranges over [1, 200], not up to its shape's 100"));
}

// x[seq, 64] x w[64, 48]: a dense layer over a symbolic number of rows.
Graph projection(const DimExpr& rows, std::vector<ShapeVar> vars) {
  Graph g;
  g.name = "projection";
  g.shape_vars = std::move(vars);
  int x = g.add_input("x", {{}, DataType::Float(32), {rows, DimExpr::constant(64)}});
  g.outputs = {g.add_op("matmul", "proj", {x, g.add_constant("w", test::random_float32({64, 48}, 5))})};
  return g;
}

TEST(SymbolicShapes, ADenseLayersRowVariantsAreChosenPerRun) {
  BuildResult built = build(projection(DimExpr::variable("seq"), {{"seq", 1, 32}}));
  const runtime::KernelCall* dense = nullptr;
  for (const runtime::KernelCall& k : built.executor_graph.kernels)
    if (!k.variants.empty()) dense = &k;
  ASSERT_NE(dense, nullptr);
  // One row exactly; buckets computing 4 rows for runs of 2-4 and 16 for 5-16.
  ASSERT_EQ(dense->variants.size(), 3u);
  EXPECT_EQ(dense->variants[0].var, "seq");
  EXPECT_EQ(dense->variants[0].value, 1);
  EXPECT_EQ(dense->variants[0].from, 0);
  EXPECT_EQ(dense->variants[1].from, 2);
  EXPECT_EQ(dense->variants[1].value, 4);
  EXPECT_EQ(dense->variants[2].from, 5);
  EXPECT_EQ(dense->variants[2].value, 16);
  auto ex = runtime::GraphExecutor::from_model_file(built.file, "projection");
  for (int64_t seq : {1, 2, 3, 4, 5, 16, 17, 32, 7, 1}) {
    NDArray x = test::random_float32({seq, 64}, uint64_t(seq));
    NDArray got = ex.run({x})[0];
    NDArray want = reference_run(projection(DimExpr::constant(seq), {}), {x})[0];
    EXPECT_TRUE(test::arrays_close(got, want, 1e-5, 1e-5)) << "seq = " << seq;
  }
  // The variants survive the executor graph's JSON, which checks what they name.
  runtime::ExecutorGraph plan = runtime::ExecutorGraph::from_json(built.file.graph_json, built.file.params_bytes, "m");
  size_t k = size_t(dense - built.executor_graph.kernels.data());
  EXPECT_EQ(plan.kernels[k].variants[0].func, dense->variants[0].func);
  EXPECT_EQ(plan.kernels[k].variants[2].from, 5);
  plan.kernels[k].variants[0].var = "len";
  EXPECT_THAT(test::error_text<ModelError>(
                  [&] { runtime::ExecutorGraph::from_json(plan.to_json(), built.file.params_bytes, "m"); }),
              ::testing::HasSubstr("has a variant for len = 1, which is not a CPU kernel's variant at a value of one "
                                   "of the model's shape variables"));
  plan.kernels[k].variants[0] = {dense->variants[0].func, "seq", 33};
  EXPECT_THAT(test::error_text<ModelError>(
                  [&] { runtime::ExecutorGraph::from_json(plan.to_json(), built.file.params_bytes, "m"); }),
              ::testing::HasSubstr("has a variant for seq = 33"));
  plan.kernels[k].variants[0] = dense->variants[0];
  plan.kernels[k].variants[2].from = 20;  // a bucket that ends before it starts
  EXPECT_THAT(test::error_text<ModelError>(
                  [&] { runtime::ExecutorGraph::from_json(plan.to_json(), built.file.params_bytes, "m"); }),
              ::testing::HasSubstr("has a variant for seq = 20..16"));
}

TEST(SymbolicShapes, DimensionsAreAffineForms) {
  DimExpr seq = DimExpr::variable("seq"), past = DimExpr::variable("past");
  DimExpr total = past + seq + DimExpr::constant(1);
  EXPECT_EQ(total.str(), "past + seq + 1");
  EXPECT_EQ((seq * 2 + DimExpr::constant(-3)).str(), "2*seq - 3");
  EXPECT_EQ((seq + seq * -1).str(), "0");
  EXPECT_EQ(total.eval({{"seq", 4}, {"past", 10}}), 15);
  std::map<std::string, int64_t> values;
  EXPECT_THAT(runtime::bind_shape({seq, total}, {4, 15}, values),
              ::testing::HasSubstr("variable 'past' of dimension 1"));
  values = {{"past", 10}};
  EXPECT_EQ(runtime::bind_shape({seq, total}, {4, 15}, values), "");
  EXPECT_EQ(values.at("seq"), 4);
  values = {{"past", 10}};
  EXPECT_THAT(runtime::bind_shape({seq, total}, {4, 16}, values),
              ::testing::HasSubstr("dimension 1 is 16, not past + seq + 1 = 15"));
}

}  // namespace
}  // namespace loom::graph

namespace loom::graph {
namespace {

// A cache's growth and its last entries: concat along the symbolic axis, slices from its end.
Graph concat_and_slices(std::vector<DimExpr> x_dims, std::vector<ShapeVar> vars) {
  Graph g;
  g.name = "concat_slices";
  g.shape_vars = std::move(vars);
  int x = g.add_input("x", {{}, DataType::Float(32), std::move(x_dims)});
  int c = g.add_op("concat", "c", {x, x}, Attrs().set("axis", int64_t(1)));
  auto slice = [&](const std::string& name, int64_t start, int64_t end) {
    return g.add_op("slice", name, {c},
                    Attrs()
                        .set("starts", std::vector<int64_t>{start})
                        .set("ends", std::vector<int64_t>{end})
                        .set("axes", std::vector<int64_t>{1})
                        .set("steps", std::vector<int64_t>{1}));
  };
  g.outputs = {c, slice("last3", -3, INT64_MAX), slice("all_but_last", 0, -1)};
  return g;
}

TEST(SymbolicShapes, ConcatAlongAndSlicesFromTheEndOfASymbolicAxis) {
  Graph g = concat_and_slices({DimExpr::constant(1), DimExpr::variable("seq"), DimExpr::constant(8)}, {{"seq", 2, 40}});
  infer_types(g);
  EXPECT_EQ(g.type_of(g.outputs[0]).str(), "float32[1, 2*seq, 8]");
  EXPECT_EQ(g.type_of(g.outputs[2]).str(), "float32[1, 2*seq - 1, 8]");
  auto ex = runtime::GraphExecutor::from_model_file(build(g).file, "concat_slices");
  for (int64_t seq : {40, 2, 3, 17}) {
    NDArray x = test::random_float32({1, seq, 8}, uint64_t(seq));
    std::vector<NDArray> got = ex.run({x});
    std::vector<NDArray> want =
        reference_run(concat_and_slices({DimExpr::constant(1), DimExpr::constant(seq), DimExpr::constant(8)}, {}), {x});
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].shape(), want[k].shape()) << "output " << k << ", seq = " << seq;
      EXPECT_TRUE(test::arrays_close(got[k], want[k], 0, 0)) << "output " << k << ", seq = " << seq;
    }
  }
}

TEST(SymbolicShapes, AClampAtTheSmallestValueIsNotAffine) {
  // Three from the end of [1, 2*seq, 8] is 2 at seq = 1: the shape is not affine over [1, 40].
  Graph g = concat_and_slices({DimExpr::constant(1), DimExpr::variable("seq"), DimExpr::constant(8)}, {{"seq", 1, 40}});
  EXPECT_THAT(test::error_text<ModelError>([&] { infer_types(g); }),
              ::testing::HasSubstr("node 'last3' (slice): dimension 1 is not affine in the shape variables (3 at the "
                                   "probes, but 2 at seq = 1)"));
}

}  // namespace
}  // namespace loom::graph

namespace loom::graph {
namespace {

// An embedding's rows for run-time token ids, expanded over heads with a symbolic target shape
// (an attribute over the shape variable: Node::sym_attrs).
Graph embed_and_expand(int64_t seq_value, bool symbolic) {
  Graph g;
  g.name = "embed_expand";
  if (symbolic) g.shape_vars = {{"seq", 1, 24}};
  DimExpr seq = symbolic ? DimExpr::variable("seq") : DimExpr::constant(seq_value);
  int ids = g.add_input("ids", {{}, DataType::Int(64), {DimExpr::constant(1), seq}});
  int table = g.add_constant("table", test::random_float32({10, 8}, 5));
  int e = g.add_op("gather", "e", {table, ids}, Attrs().set("axis", int64_t(0)));  // [1, seq, 8]
  int r = g.add_op("reshape", "r", {e});
  g.set_shape_attr(r, "shape", {DimExpr::constant(1), DimExpr::constant(1), seq, DimExpr::constant(8)});
  int x = g.add_op("expand", "x", {r});
  g.set_shape_attr(x, "shape", {DimExpr::constant(1), DimExpr::constant(3), seq, DimExpr::constant(8)});
  g.outputs = {x};
  return g;
}

TEST(SymbolicShapes, GatherOfRunTimeIdsAndExpandToASymbolicShape) {
  Graph g = embed_and_expand(0, true);
  infer_types(g);
  EXPECT_EQ(g.type_of(g.outputs[0]).str(), "float32[1, 3, seq, 8]");
  auto ex = runtime::GraphExecutor::from_model_file(build(g).file, "embed_expand");
  for (int64_t seq : {24, 1, 5}) {
    NDArray ids = NDArray::empty({1, seq}, DataType::Int(64));
    for (int64_t i = 0; i < seq; ++i) ids.set_from_double(i, double((i * 7) % 10));
    NDArray got = ex.run({ids})[0];
    NDArray want = reference_run(embed_and_expand(seq, false), {ids})[0];
    ASSERT_EQ(got.shape(), want.shape()) << "seq = " << seq;
    EXPECT_TRUE(test::arrays_close(got, want, 0, 0)) << "seq = " << seq;
  }
}

}  // namespace
}  // namespace loom::graph
