// The ONNX importer on malformed and unsupported models, built here with ONNX's protobuf classes:
// every case is a ModelError that names the node (or input) and what is wrong.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>
#include <tuple>

#include "common/error_text.h"
#include "loom/frontend/onnx.h"
#include "loom/runtime/error.h"
#include "onnx_model_builder.h"

namespace loom::frontend {
namespace {

// x: float[1, 4] -> Relu -> y, opset 13.
onnx::ModelProto relu_model() {
  onnx::ModelProto m = test::model_with_float_input("t", "x", {1, 4});
  auto* g = m.mutable_graph();
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->set_name("the_relu");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

std::string import_error(const onnx::ModelProto& m, const OnnxImportOptions& o = {}) {
  return test::error_text<ModelError>([&] { import_onnx_bytes(m.SerializeAsString(), "'m.onnx'", ".", o); });
}

TEST(OnnxErrors, TheBaseModelImports) {
  graph::Graph g = import_onnx_bytes(relu_model().SerializeAsString(), "m", ".");
  EXPECT_EQ(g.outputs.size(), 1u);
}

TEST(OnnxErrors, GarbageAndTruncatedFiles) {
  std::string msg =
      test::error_text<ModelError>([] { import_onnx_bytes("\x0a\xff\xff\xff garbage", "'g.onnx'", "."); });
  EXPECT_NE(msg.find("'g.onnx': not a valid ONNX model"), std::string::npos) << msg;
  msg = test::error_text<ModelError>([] { import_onnx_bytes("", "'e.onnx'", "."); });
  EXPECT_NE(msg.find("not a valid ONNX model"), std::string::npos) << msg;
  // A model with a weight, cut in the middle of it.
  onnx::ModelProto m = relu_model();
  auto* init = m.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(256);
  init->set_raw_data(std::string(1024, '\1'));
  std::string bytes = m.SerializeAsString();
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3}) {
    msg = test::error_text<ModelError>([&] { import_onnx_bytes(bytes.substr(0, cut), "'cut.onnx'", "."); });
    EXPECT_NE(msg, "<no error>") << "cut at " << cut;
    EXPECT_NE(msg.find("'cut.onnx'"), std::string::npos) << msg;
  }
  // Raw data of the wrong size.
  init->set_raw_data(std::string(100, '\1'));
  msg = import_error(m);
  EXPECT_NE(msg.find("initializer 'w': raw data has 100 bytes"), std::string::npos) << msg;
}

// Found by fuzz_onnx: a node without outputs (or with an empty first output name) was read at
// output 0 (out of range in protobuf's repeated field).
TEST(OnnxErrors, NodeWithoutOutputs) {
  onnx::ModelProto m = relu_model();
  m.mutable_graph()->mutable_node(0)->clear_output();
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("node 'the_relu' (Relu): the node has no output"), std::string::npos) << msg;
  m.mutable_graph()->mutable_node(0)->clear_name();
  msg = import_error(m);
  EXPECT_NE(msg.find("node '<unnamed>' (Relu): the node has no output"), std::string::npos) << msg;
  m.mutable_graph()->mutable_node(0)->add_output("");
  msg = import_error(m);
  EXPECT_NE(msg.find("the node has no output"), std::string::npos) << msg;
}

// Found by fuzz_onnx: a Concat without inputs read its first input's type.
TEST(OnnxErrors, ConcatWithoutInputs) {
  onnx::ModelProto m = relu_model();
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type("Concat");
  n->set_name("empty_concat");
  n->add_output("z");
  auto* a = n->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(0);
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("node 'empty_concat' (Concat)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs at least one input"), std::string::npos) << msg;
}

// relu_model() plus a ConstantOfShape node 'fill' of the constant shape `dims`.
onnx::ModelProto constant_of_shape_model(const std::vector<int64_t>& dims) {
  onnx::ModelProto m = relu_model();
  test::add_int64_initializer(m.mutable_graph(), "shape", dims);
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type("ConstantOfShape");
  n->set_name("fill");
  n->add_input("shape");
  n->add_output("z");
  return m;
}

// A ConstantOfShape whose value tensor is empty copied one element out of a 0-byte buffer.
TEST(OnnxErrors, ConstantOfShapeValueMustHoldOneElement) {
  onnx::ModelProto m = constant_of_shape_model({4});
  auto* n = m.mutable_graph()->mutable_node(m.graph().node_size() - 1);
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(0);
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("node 'fill' (ConstantOfShape)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("value must hold exactly one element, it has 0"), std::string::npos) << msg;
}

// Found by fuzz_onnx (UBSan): a negative dimension before two huge ones kept multiplying the
// element count past int64 after marking it unknown. A negative dimension is an error naming the
// node.
TEST(OnnxErrors, ConstantOfShapeNegativeThenHugeDimensions) {
  std::string msg = import_error(constant_of_shape_model({-3, int64_t(1) << 40, int64_t(1) << 40}));
  EXPECT_NE(msg.find("node 'fill' (ConstantOfShape)"), std::string::npos) << msg;
}

TEST(OnnxErrors, MissingInitializer) {
  onnx::ModelProto m = relu_model();
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type("Add");
  n->set_name("adder");
  n->add_input("y");
  n->add_input("bias");  // defined nowhere
  n->add_output("z");
  m.mutable_graph()->mutable_output(0)->set_name("z");
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("node 'adder' (Add): reads 'bias', which no input, initializer or earlier node defines"),
            std::string::npos)
      << msg;
}

TEST(OnnxErrors, UnsupportedOperatorAndAttribute) {
  onnx::ModelProto m = relu_model();
  m.mutable_graph()->mutable_node(0)->set_op_type("Frobnicate");
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("node 'the_relu' (Frobnicate): operator 'Frobnicate' is not supported (supported: "),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("Conv"), std::string::npos) << msg;

  m = relu_model();
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("frobnication");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(3);
  msg = import_error(m);
  EXPECT_NE(msg.find("(Relu): attribute 'frobnication' is not supported"), std::string::npos) << msg;

  m = relu_model();
  m.mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
  msg = import_error(m);
  EXPECT_NE(msg.find("domain 'com.microsoft'"), std::string::npos) << msg;
}

// A misspelt ONNX attribute is refused with the closest name the importer knows, and one of
// another type names the node and the key.
TEST(OnnxErrors, MisspeltAndIllTypedAttributesNameNodeAndKey) {
  onnx::ModelProto m = relu_model();
  auto* n = m.mutable_graph()->mutable_node(0);
  n->set_op_type("LeakyRelu");
  auto* a = n->add_attribute();
  a->set_name("alhpa");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.2f);
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("node 'the_relu' (LeakyRelu): attribute 'alhpa' is not supported (did you mean 'alpha'?)"),
            std::string::npos)
      << msg;

  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("0.2");
  msg = import_error(m);
  EXPECT_NE(msg.find("node 'the_relu' (LeakyRelu): attribute 'alpha' must be a float"), std::string::npos) << msg;
}

// Attributes a newer opset moved or never had are errors, not silently ignored: Squeeze and
// Unsqueeze's axes attribute from opset 13 (an input there), a DepthToSpace mode other than DCR/CRD.
TEST(OnnxErrors, AttributesOfAnotherFormAreRefused) {
  for (const char* op : {"Squeeze", "Unsqueeze"}) {
    onnx::ModelProto m = test::model_with_float_input("t", "x", {1, 4}, 13);
    auto* g = m.mutable_graph();
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name("squeezer");
    n->add_input("x");
    n->add_output("y");
    auto* a = n->add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(0);
    g->add_output()->set_name("y");
    std::string msg = import_error(m);
    EXPECT_NE(msg.find("node 'squeezer' (" + std::string(op) +
                       "): attribute 'axes' is opset 11's form; from opset 13 the axes are the second input"),
              std::string::npos)
        << msg;
  }
  onnx::ModelProto m = test::model_with_float_input("t", "x", {1, 8, 2, 2}, 13);
  auto* g = m.mutable_graph();
  auto* n = g->add_node();
  n->set_op_type("DepthToSpace");
  n->set_name("d2s");
  n->add_input("x");
  n->add_output("y");
  auto* b = n->add_attribute();
  b->set_name("blocksize");
  b->set_type(onnx::AttributeProto::INT);
  b->set_i(2);
  auto* mode = n->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("RDC");
  g->add_output()->set_name("y");
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("node 'd2s' (DepthToSpace): mode 'RDC' is not DCR or CRD"), std::string::npos) << msg;
}

TEST(OnnxErrors, GraphCycle) {
  onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  g->mutable_node(0)->set_input(0, "b");
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->set_name("other");
  n->add_input("y");
  n->add_output("b");
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
}

TEST(OnnxErrors, SymbolicShapesNeedAGivenShape) {
  onnx::ModelProto m = relu_model();
  auto* d = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
  d->set_dim_param("N");
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("input 'x': dimension 'N' is not static"), std::string::npos) << msg;
  OnnxImportOptions o;
  o.input_shapes["x"] = {3, 4};
  graph::Graph g = import_onnx_bytes(m.SerializeAsString(), "m", ".", o);
  EXPECT_EQ(g.node(g.inputs[0]).type.shape, (std::vector<int64_t>{3, 4}));
  o.input_shapes["x"] = {3, 4, 5};
  msg = import_error(m, o);
  EXPECT_NE(msg.find("has rank 3, the model's has rank 2"), std::string::npos) << msg;
}

// An operator imports from the oldest opset whose form the importer reads (Relu-6 on: Relu at
// opset 7 is the same operator as at 13); an older form, a newer opset and a model without a
// default-domain opset are errors that say which.
TEST(OnnxErrors, UnsupportedOpset) {
  onnx::ModelProto m = relu_model();
  m.mutable_opset_import(0)->set_version(7);
  EXPECT_EQ(import_onnx_bytes(m.SerializeAsString(), "'m.onnx'", ".").nodes.size(), 2u);
  m.mutable_opset_import(0)->set_version(5);
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("the form of 'Relu' in opset 5 is not supported (this importer reads it from opset 6 on"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("the_relu"), std::string::npos) << msg;
  m.mutable_opset_import(0)->set_version(19);
  msg = import_error(m);
  EXPECT_NE(msg.find("ONNX opset 19 is newer than this importer reads (up to 18"), std::string::npos) << msg;
  m.mutable_opset_import(0)->set_domain("ai.onnx.ml");
  msg = import_error(m);
  EXPECT_NE(msg.find("imports no opset of the default ONNX domain"), std::string::npos) << msg;
}

TEST(OnnxErrors, ShapeMismatchNamesTheNode) {
  onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(5);
  w->add_dims(3);
  for (int i = 0; i < 15; ++i) w->add_float_data(1.0f);
  auto* n = g->add_node();
  n->set_op_type("MatMul");
  n->set_name("mm");
  n->add_input("y");
  n->add_input("w");
  n->add_output("z");
  g->mutable_output(0)->set_name("z");
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("node 'mm' (MatMul)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 features, weights expect 5"), std::string::npos) << msg;
}

// Pads near 2^62 overflowed the Pad output size (signed overflow, found by fuzz_onnx); a huge
// but representable size is refused by the 2^40-element bound every inferred type is held to.
TEST(OnnxErrors, PadSizesThatOverflowOrExplode) {
  for (int64_t pad : {int64_t(1) << 62, int64_t(1) << 41}) {
    onnx::ModelProto m = relu_model();
    auto* g = m.mutable_graph();
    test::add_int64_initializer(g, "pads", {0, pad, 0, pad});
    auto* n = g->add_node();
    n->set_op_type("Pad");
    n->set_name("big_pad");
    n->add_input("y");
    n->add_input("pads");
    n->add_output("z");
    g->mutable_output(0)->set_name("z");
    std::string msg = import_error(m);
    EXPECT_NE(msg.find("big_pad"), std::string::npos) << msg;
    EXPECT_NE(msg.find(pad > (int64_t(1) << 61) ? "overflow" : "more than 2^40 elements"), std::string::npos) << msg;
  }
}

// A Resize's index and weight tables are built at import: a dimension resized to 2^23 (tables of
// hundreds of MiB) is refused naming the node, one of 2^20 still imports; Reshape without its
// shape input is a missing input, not a read past the node's inputs.
TEST(OnnxErrors, HugeResizeAndMissingConstantInput) {
  for (int64_t length : {int64_t(1) << 23, int64_t(1) << 20}) {
    onnx::ModelProto m = relu_model();
    auto* g = m.mutable_graph();
    test::add_int64_initializer(g, "sizes", {1, length});
    auto* n = g->add_node();
    n->set_op_type("Resize");
    n->set_name("wide_resize");
    for (const char* in : {"y", "", "", "sizes"}) n->add_input(in);
    n->add_output("z");
    g->mutable_output(0)->set_name("z");
    if (length > (int64_t(1) << 22)) {
      std::string msg = import_error(m);
      EXPECT_NE(msg.find("wide_resize"), std::string::npos) << msg;
      EXPECT_NE(msg.find("above the 4194304 a resized dimension may have"), std::string::npos) << msg;
    } else {
      EXPECT_NO_THROW(import_onnx_bytes(m.SerializeAsString(), "'m.onnx'", ".", {}));
    }
  }
  onnx::ModelProto m = relu_model();
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type("Reshape");
  n->set_name("shapeless");
  n->add_input("y");
  n->add_output("z");
  m.mutable_graph()->mutable_output(0)->set_name("z");
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("shapeless"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing input 1"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::frontend

#include <fstream>

#include "common/temp_dir.h"
#include "loom/graph/passes.h"

namespace loom::frontend {
namespace {

// y = relu(x) + w with w in an external data file next to the model.
onnx::ModelProto external_model(const std::string& location, uint64_t offset) {
  onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  kv = w->add_external_data();
  kv->set_key("offset");
  kv->set_value(std::to_string(offset));
  kv = w->add_external_data();
  kv->set_key("length");
  kv->set_value("16");
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->set_name("plus_w");
  n->add_input("y");
  n->add_input("w");
  n->add_output("z");
  g->mutable_output(0)->set_name("z");
  return m;
}

TEST(OnnxExternalData, WeightsComeFromTheFileNextToTheModel) {
  test::TestDir dir;
  float data[6] = {99, 99, 1.5f, -2.0f, 3.25f, 4.0f};  // 8 bytes of something else first
  std::ofstream(dir.file("weights.bin"), std::ios::binary).write(reinterpret_cast<const char*>(data), sizeof data);
  std::ofstream(dir.file("m.onnx"), std::ios::binary) << external_model("weights.bin", 8).SerializeAsString();
  graph::Graph g = import_onnx(dir.file("m.onnx"));
  const NDArray* w = nullptr;
  for (auto& n : g.nodes)
    if (n.is_constant() && n.name == "w") w = &n.value;
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->numel(), 4);
  EXPECT_EQ(w->data<float>()[0], 1.5f);
  EXPECT_EQ(w->data<float>()[3], 4.0f);

  std::ofstream(dir.file("far.onnx"), std::ios::binary) << external_model("weights.bin", 16).SerializeAsString();
  std::string msg = test::error_text<ModelError>([&] { import_onnx(dir.file("far.onnx")); });
  EXPECT_NE(msg.find("initializer 'w': external data file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("shorter than offset 16"), std::string::npos) << msg;
  std::ofstream(dir.file("escape.onnx"), std::ios::binary) << external_model("../../etc/passwd", 0).SerializeAsString();
  msg = test::error_text<ModelError>([&] { import_onnx(dir.file("escape.onnx")); });
  EXPECT_NE(msg.find("must be a file next to the model"), std::string::npos) << msg;
  std::ofstream(dir.file("missing.onnx"), std::ios::binary) << external_model("nothing.bin", 0).SerializeAsString();
  msg = test::error_text<ModelError>([&] { import_onnx(dir.file("missing.onnx")); });
  EXPECT_NE(msg.find("cannot open external data file"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::frontend

namespace loom::frontend {
namespace {

TEST(OnnxErrors, ExtraOutputsAreNotProduced) {
  onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  auto* shape = g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_value(1);
  shape->add_dim()->set_dim_value(1);
  g->mutable_node(0)->set_op_type("MaxPool");  // its Indices output is never produced
  auto* k = g->mutable_node(0)->add_attribute();
  k->set_name("kernel_shape");
  k->set_type(onnx::AttributeProto::INTS);
  k->add_ints(1);
  k->add_ints(1);
  g->mutable_node(0)->add_output("mask");
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->set_name("reads_mask");
  n->add_input("mask");
  n->add_output("z");
  g->mutable_output(0)->set_name("z");
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("node 'reads_mask' (Relu): reads 'mask', an extra output of node 'the_relu' (MaxPool)"),
            std::string::npos)
      << msg;
}

TEST(OnnxErrors, DropoutMaskIsAllTrueAndTrainingIsRefused) {
  onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  g->mutable_node(0)->set_op_type("Dropout");
  g->mutable_node(0)->add_output("mask");
  g->add_output()->set_name("mask");
  graph::Graph imported = import_onnx_bytes(m.SerializeAsString(), "'m.onnx'", ".");
  const graph::Node& mask = imported.node(imported.outputs[1]);
  ASSERT_TRUE(mask.is_constant());
  EXPECT_EQ(mask.type.dtype, DataType::Bool());
  for (int64_t i = 0; i < mask.value.numel(); ++i) EXPECT_EQ(mask.value.get_as_double(i), 1.0);
  // training_mode true with a nonzero ratio drops at random: refused, naming why.
  g->mutable_node(0)->add_input("");
  g->mutable_node(0)->add_input("t");
  auto* t = g->add_initializer();
  t->set_name("t");
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("training_mode=true drops elements at random; only inference is supported"), std::string::npos)
      << msg;
}

// relu_model's node replaced by `op` on an input of `shape`, reading x and the given
// initializers (name, int64 values, dims), with integer attributes.
onnx::ModelProto one_node(const std::string& op, const std::vector<int64_t>& shape,
                          const std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>>>& inits,
                          const std::vector<std::pair<std::string, std::vector<int64_t>>>& attrs) {
  onnx::ModelProto m = relu_model();
  m.mutable_opset_import(0)->set_version(14);
  auto* g = m.mutable_graph();
  auto* dims = g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->Clear();
  for (int64_t d : shape) dims->add_dim()->set_dim_value(d);
  auto* n = g->mutable_node(0);
  n->set_op_type(op);
  for (auto& [name, values, tdims] : inits) {
    test::add_int64_initializer(g, name, values, tdims);
    n->add_input(name);
  }
  for (auto& [name, values] : attrs) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(values.size() == 1 ? onnx::AttributeProto::INT : onnx::AttributeProto::INTS);
    if (values.size() == 1)
      a->set_i(values[0]);
    else
      for (int64_t v : values) a->add_ints(v);
  }
  return m;
}

// Attribute and constant values that used to crash the importer (the review's inputs): each
// is a ModelError naming the node.
TEST(OnnxErrors, HostileValuesAreModelErrors) {
  struct Case {
    onnx::ModelProto m;
    std::string want;
  };
  std::vector<Case> cases = {
      {one_node("DepthToSpace", {1, 4, 2, 2}, {}, {{"blocksize", {int64_t(1) << 32}}}),
       "(DepthToSpace): the channels are not a multiple of blocksize^2"},
      {one_node("Conv", {1, 4, 3, 3}, {{"w", std::vector<int64_t>(4, 1), {1, 4, 1, 1}}}, {{"strides", {0, 0}}}),
       "(Conv): strides [0, 0] must be positive"},
      {one_node("Trilu", {4, 4}, {{"k", {}, {0}}}, {}), "(Trilu): input 1 ('k') must hold one value, holds 0"},
      {one_node("GatherElements", {1, 4}, {{"i", std::vector<int64_t>(12, 0), {3, 4}}}, {{"axis", {1}}}),
       "(GatherElements): indices int64[3, 4] are larger than the data float32[1, 4] on axis 0"},
      {one_node("Split", {1, 4}, {}, {{"num_outputs", {int64_t(4) << 30}}}), "differs from the node's outputs"},
  };
  for (auto& c : cases) {
    std::string msg = import_error(c.m);
    EXPECT_NE(msg.find("node 'the_relu' "), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.want), std::string::npos) << msg;
  }
}

// Operators on constants are evaluated at import: INT64_MIN / -1 wraps (no SIGFPE), and a
// division by zero is an error naming the node.
TEST(OnnxErrors, ConstantFoldingAtImportNamesTheNode) {
  for (auto [divisor, want] :
       {std::pair{int64_t(-1), std::string()}, std::pair{int64_t(0), std::string("(Div): evaluating it at import")}}) {
    onnx::ModelProto m = one_node("Div", {1}, {{"a", {INT64_MIN}, {1}}, {"b", {divisor}, {1}}}, {});
    auto* n = m.mutable_graph()->mutable_node(0);
    n->mutable_input()->erase(n->mutable_input()->begin());  // Div(a, b), not Div(x, a, b)
    m.mutable_graph()->mutable_output(0)->set_name("y");
    if (want.empty()) {
      graph::Graph g = import_onnx_bytes(m.SerializeAsString(), "'m.onnx'", ".");
      ASSERT_TRUE(g.node(g.outputs[0]).is_constant());
      EXPECT_EQ(g.node(g.outputs[0]).value.data<int64_t>()[0], INT64_MIN);
    } else {
      std::string msg = import_error(m);
      EXPECT_NE(msg.find(want), std::string::npos) << msg;
    }
  }
}

TEST(OnnxErrors, LeftOutOperatorsSayWhy) {
  for (auto [op, why] : {std::pair{"NonZero", "depends on the input values"}, std::pair{"Bernoulli", "random"},
                         std::pair{"SequenceEmpty", "sequence or optional"}, std::pair{"Loop", "control flow"}}) {
    onnx::ModelProto m = relu_model();
    m.mutable_graph()->mutable_node(0)->set_op_type(op);
    std::string msg = import_error(m);
    EXPECT_NE(msg.find(std::string("operator '") + op + "' is not supported: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
  }
}

TEST(OnnxErrors, ZeroDimensionAndBindingMistakes) {
  onnx::ModelProto m = relu_model();
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(0);
  std::string msg = import_error(m);
  EXPECT_NE(msg.find("input 'x': dimension 1 is 0: Loom tensors have no empty dimensions"), std::string::npos) << msg;
  OnnxImportOptions o;
  o.input_values["x"] = NDArray::zeros({1, 3}, DataType::Float(32));
  msg = import_error(relu_model(), o);
  EXPECT_NE(msg.find("input 'x': the value given is float32[1, 3], which the model's input shape does not allow"),
            std::string::npos)
      << msg;
  o.input_values["x"] = NDArray::zeros({1, 4}, DataType::Int(32));
  msg = import_error(relu_model(), o);
  EXPECT_NE(msg.find("the value given for input 'x' is int32[1, 4], the input is float32[1, 4]"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace loom::frontend
