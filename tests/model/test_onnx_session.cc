// frontend::OnnxSession: a model whose operators read input values at compile time (Reshape's
// shape, ReduceSum's axes) runs with every input given at run time, compiled once per distinct
// value and kept; the outputs are checked against a direct computation of the same arithmetic.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "common/error_text.h"
#include "loom/frontend/session.h"
#include "onnx_model_builder.h"

namespace loom::frontend {
namespace {

namespace fs = std::filesystem;

void add_int64_input(onnx::GraphProto* g, const std::string& name, int64_t length) {
  auto* in = g->add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::INT64);
  tt->mutable_shape()->add_dim()->set_dim_value(length);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> inputs,
                          const std::string& output) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(output + "_node");
  for (const auto& i : inputs) n->add_input(i);
  n->add_output(output);
  return n;
}

// x: float[2, 3, 4] -> Reshape(shape: int64[2]) -> [ReduceSum(axes: int64[1], keepdims 0)] -> y
std::string write_model(const std::string& name, bool reduce, int64_t shape_length = 2) {
  onnx::ModelProto m = test::model_with_float_input(name, "x", {2, 3, 4});
  auto* g = m.mutable_graph();
  add_int64_input(g, "shape", shape_length);
  add_node(g, "Reshape", {"x", "shape"}, reduce ? "r" : "y");
  if (reduce) {
    add_int64_input(g, "axes", 1);
    auto* keep = add_node(g, "ReduceSum", {"r", "axes"}, "y")->add_attribute();
    keep->set_name("keepdims");
    keep->set_type(onnx::AttributeProto::INT);
    keep->set_i(0);
  }
  g->add_output()->set_name("y");
  fs::path path = fs::path(::testing::TempDir()) / (name + ".onnx");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path.string();
}

NDArray x_value() {
  NDArray x = NDArray::empty({2, 3, 4}, DataType::Float(32));
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i * 7) % 11) - 5.0f;
  return x;
}

NDArray ints(std::vector<int64_t> v) {
  NDArray a = NDArray::empty({int64_t(v.size())}, DataType::Int(64));
  std::copy(v.begin(), v.end(), a.data<int64_t>());
  return a;
}

void expect_reshaped(OnnxSession& s, std::vector<int64_t> shape, std::vector<int64_t> want_shape) {
  NDArray x = x_value();
  NDArray y = s.run({x, ints(shape)}).at(0);
  ASSERT_EQ(y.shape(), want_shape);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y.data<float>()[i], x.data<float>()[i]) << "at " << i;
}

TEST(OnnxSession, AShapeGivenAtRunTimeIsCompiledOncePerValue) {
  OnnxSession s(write_model("reshape_at_run", false));
  EXPECT_EQ(s.input_names(), (std::vector<std::string>{"x", "shape"}));
  EXPECT_EQ(s.value_inputs(), (std::vector<std::string>{"shape"}));
  EXPECT_EQ(s.compilations(), 0u);
  EXPECT_THROW(s.executor(), ModelError);
  EXPECT_THROW(s.get_output(0), ModelError);
  expect_reshaped(s, {6, 4}, {6, 4});
  expect_reshaped(s, {4, -1}, {4, 6});
  expect_reshaped(s, {0, 12}, {2, 12});  // 0 copies x's dimension
  EXPECT_EQ(s.compilations(), 3u);
  expect_reshaped(s, {6, 4}, {6, 4});  // kept: no compilation
  expect_reshaped(s, {4, -1}, {4, 6});
  EXPECT_EQ(s.compilations(), 3u);
  EXPECT_EQ(s.cached(), 3u);
}

TEST(OnnxSession, TheLeastRecentlyUsedCompilationIsDropped) {
  OnnxSessionOptions o;
  o.max_compiled = 2;
  OnnxSession s(write_model("reshape_lru", false), o);
  expect_reshaped(s, {6, 4}, {6, 4});
  expect_reshaped(s, {4, 6}, {4, 6});
  expect_reshaped(s, {6, 4}, {6, 4});    // {4, 6} is now the least recently used
  expect_reshaped(s, {12, 2}, {12, 2});  // drops {4, 6}
  EXPECT_EQ(s.compilations(), 3u);
  EXPECT_EQ(s.cached(), 2u);
  expect_reshaped(s, {6, 4}, {6, 4});  // still kept
  EXPECT_EQ(s.compilations(), 3u);
  expect_reshaped(s, {4, 6}, {4, 6});  // compiled again
  EXPECT_EQ(s.compilations(), 4u);
  // A compilation that drops the last run's model takes its outputs with it.
  OnnxSessionOptions one;
  one.max_compiled = 1;
  OnnxSession single(write_model("reshape_lru_one", false), one);
  expect_reshaped(single, {6, 4}, {6, 4});
  single.set_input("shape", ints({4, 6}));
  single.prepare();
  EXPECT_EQ(single.cached(), 1u);
  EXPECT_THROW(single.get_output(0), ModelError);
  EXPECT_THROW(single.executor(), ModelError);
}

TEST(OnnxSession, InputsReadAsValuesOnlyOnceEarlierOnesAreKnownJoinTheKey) {
  OnnxSession s(write_model("reshape_reduce", true));
  // Reshape stops the import without values; ReduceSum's axes are found at the first run.
  EXPECT_EQ(s.value_inputs(), (std::vector<std::string>{"shape"}));
  NDArray x = x_value();
  for (int64_t axis : {0, 1}) {
    NDArray y = s.run({x, ints({6, 4}), ints({axis})}).at(0);
    EXPECT_EQ(s.value_inputs(), (std::vector<std::string>{"axes", "shape"}));
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{axis == 0 ? 4 : 6}));
    for (int64_t k = 0; k < y.numel(); ++k) {
      float want = 0;
      for (int64_t j = 0; j < (axis == 0 ? 6 : 4); ++j) want += x.data<float>()[axis == 0 ? j * 4 + k : k * 4 + j];
      EXPECT_FLOAT_EQ(y.data<float>()[k], want) << "axis " << axis << ", element " << k;
    }
  }
  EXPECT_EQ(s.compilations(), 2u);
}

TEST(OnnxSession, AModelWhoseShapesAreStaticCompilesOnceWhenMade) {
  onnx::ModelProto m = test::model_with_float_input("relu", "x", {2, 3, 4});
  add_node(m.mutable_graph(), "Relu", {"x"}, "y");
  m.mutable_graph()->add_output()->set_name("y");
  fs::path path = fs::path(::testing::TempDir()) / "relu.onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  OnnxSession s(path.string());
  EXPECT_EQ(s.compilations(), 1u);
  EXPECT_TRUE(s.value_inputs().empty());
  for (int rep = 0; rep < 3; ++rep) {
    NDArray x = x_value();
    x.data<float>()[0] = float(rep) - 1;
    NDArray y = s.run({x}).at(0);
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y.data<float>()[i], std::max(x.data<float>()[i], 0.0f));
  }
  EXPECT_EQ(s.compilations(), 1u);
}

TEST(OnnxSession, BadValuesAndMissingInputsAreClearErrors) {
  OnnxSession s(write_model("reshape_errors", false));
  s.set_input("x", x_value());
  EXPECT_NE(test::error_text<ModelError>([&] { s.run(); }).find("input 'shape' is not set"), std::string::npos);
  EXPECT_NE(test::error_text<ModelError>([&] {
              s.set_input("shapes", ints({6, 4}));
            }).find("no input 'shapes' (its inputs: 'x', 'shape')"),
            std::string::npos);
  s.set_input("shape", ints({5, 5}));  // 25 elements, x has 24
  std::string why = test::error_text<ModelError>([&] { s.run(); });
  EXPECT_NE(why.find("Reshape"), std::string::npos) << why;
  NDArray floats = NDArray::zeros({2}, DataType::Float(32));
  s.set_input("shape", floats);
  why = test::error_text<ModelError>([&] { s.run(); });
  EXPECT_NE(why.find("the value given for input 'shape'"), std::string::npos) << why;
  EXPECT_EQ(s.compilations(), 0u);
  EXPECT_THROW(s.get_output(0), ModelError);
}

TEST(OnnxSession, AValueFromALargeInputIsAPlainModelError) {
  // Compiling per value suits a shape, not data: a root of more than 64 elements is refused.
  std::string path = write_model("reshape_long_shape", false, 65);
  try {
    OnnxSession s(path);
    FAIL() << "a 65-element shape input was taken as a value input";
  } catch (const InputValuesNeeded& e) {
    FAIL() << "taken as a value input: " << e.what();
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("depends on the model's inputs"), std::string::npos) << e.what();
  }
}

TEST(OnnxSession, TheImportNamesTheInputsItNeeds) {
  try {
    import_onnx(write_model("reshape_needs", true));
    FAIL() << "imported without the shape's value";
  } catch (const InputValuesNeeded& e) {
    EXPECT_EQ(e.inputs, (std::vector<std::string>{"shape"}));
    EXPECT_NE(std::string(e.what()).find("computed from the model's input 'shape'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::frontend
