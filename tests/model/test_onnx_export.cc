// The ONNX exporter (frontend/onnx_export.h): a float graph written and read back computes what it
// did; a quantized graph written as QDQ computes Loom's int8 model's values when read back (the
// importer reads QuantizeLinear/DequantizeLinear as ONNX Runtime computes them, requantizing in
// float); graphs it cannot write are errors naming the node. ONNX Runtime itself runs the exports
// in the `loom export` tests (tests/tools) and in zoo_bench --int8.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <map>

#include "common/error_text.h"
#include "loom/frontend/load.h"
#include "loom/frontend/onnx.h"
#include "loom/frontend/onnx_export.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/passes.h"
#include "loom/graph/quantize.h"
#include "loom/graph/reference.h"

namespace loom::frontend {
namespace {

struct Agreement {
  double cosine = 0, max_error = 0, max_magnitude = 0;
  int64_t differing = 0, values = 0;  // elements that differ at all
};

Agreement agreement(const NDArray& want, const NDArray& got) {
  EXPECT_EQ(want.shape(), got.shape());
  Agreement a;
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double x = want.get_as_double(i), y = got.get_as_double(i);
    ab += x * y, aa += x * x, bb += y * y;
    a.max_error = std::max(a.max_error, std::fabs(x - y));
    a.max_magnitude = std::max(a.max_magnitude, std::fabs(x));
    a.differing += x != y;
  }
  a.values = want.numel();
  a.cosine = aa == 0 && bb == 0 ? 1 : ab / std::sqrt(aa * bb);
  return a;
}

std::vector<NDArray> random_input(const graph::Graph& g, uint64_t seed) {
  std::vector<NDArray> in;
  for (int id : g.inputs) {
    NDArray x = NDArray::empty(g.node(id).type.shape, g.node(id).type.dtype);
    x.fill_random(seed + uint64_t(id));
    in.push_back(x);
  }
  return in;
}

graph::Graph typed_builtin(const std::string& name) {
  graph::Graph g = graph::builtin_model(name, 1, 32);
  graph::infer_types(g);
  return g;
}

void expect_float_round_trip(const std::string& name) {
  graph::Graph g = typed_builtin(name);
  graph::Graph back = import_onnx_bytes(export_onnx(g), "'" + name + ".onnx'", ".");
  ASSERT_EQ(back.inputs.size(), g.inputs.size());
  ASSERT_EQ(back.output_names(), g.output_names());
  auto x = random_input(g, 7);
  auto want = graph::reference_run(g, x), got = graph::reference_run(back, x);
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    Agreement a = agreement(want[o], got[o]);
    EXPECT_LE(a.max_error, 1e-5 * std::max(1.0, a.max_magnitude)) << name << " output " << o;
  }
}

TEST(OnnxExport, FloatResNet18RoundTrips) { expect_float_round_trip("resnet18"); }
TEST(OnnxExport, FloatMobileNetV2RoundTrips) { expect_float_round_trip("mobilenet_v2"); }

// The QDQ export read back against the int8 graph it was written from, on inputs it was not
// calibrated on. With round_half_up the integers are Loom's exactly (the reference interpreter
// computes both with the same float layers); the default form rounds ties to even (ONNX) where
// Loom rounds them up: a residual add requantized by one bit ties on every odd sum, and those
// one-step differences carry through the layers after it.
void expect_qdq_matches(const std::string& name, const graph::QuantizeOptions& options) {
  graph::Graph g = typed_builtin(name);
  CalibrationSets sets = random_calibration_sets(g, 4, 1);
  graph::QuantizeResult q = graph::quantize(g, sets.calibration, options);
  ASSERT_GT(q.quantized_layers, 0);
  OnnxExportOptions exact;
  exact.round_half_up = true;
  graph::Graph ties_up = import_onnx_bytes(export_onnx(q.graph, q.scales, exact), "'" + name + "_exact.onnx'", ".");
  graph::Graph ties_even = import_onnx_bytes(export_onnx(q.graph, q.scales), "'" + name + "_qdq.onnx'", ".");
  for (const auto& x : sets.held_out) {
    auto want = graph::reference_run(q.graph, x);
    auto up = graph::reference_run(ties_up, x), even = graph::reference_run(ties_even, x);
    ASSERT_EQ(want.size(), up.size());
    for (size_t o = 0; o < want.size(); ++o) {
      Agreement a = agreement(want[o], up[o]);
      EXPECT_EQ(a.differing, 0) << name << ": " << a.differing << " of " << a.values << " differ, by up to "
                                << a.max_error;
      Agreement b = agreement(want[o], even[o]);
      EXPECT_GE(b.cosine, 0.99) << name;
      EXPECT_LE(b.max_error, 0.15 * b.max_magnitude) << name;
    }
  }
}

TEST(OnnxExport, QdqResNet18MatchesTheInt8Model) { expect_qdq_matches("resnet18", {}); }

// ReLU6's clamp (a uint8 Clip), depthwise convolutions, residual adds without ReLU (zero point 128).
TEST(OnnxExport, QdqMobileNetV2MatchesTheInt8Model) { expect_qdq_matches("mobilenet_v2", {}); }

// Per-channel power-of-two weight steps (DequantizeLinear along axis 0, requantize_channel).
TEST(OnnxExport, QdqPerChannelWeightsMatchTheInt8Model) {
  graph::QuantizeOptions o;
  o.weight_exponents = graph::QuantizeOptions::WeightExponents::PerChannel;
  expect_qdq_matches("resnet18", o);
}

// Per-channel fixed-point multipliers: the export carries each channel's scale; exact ties need
// power-of-two scales, so round_half_up refuses them.
TEST(OnnxExport, QdqFixedPointChannelsAgreeAndRefuseExactTies) {
  graph::Graph g = typed_builtin("mobilenet_v2");
  CalibrationSets sets = random_calibration_sets(g, 4, 1);
  graph::QuantizeOptions o;
  o.per_channel = true;
  graph::QuantizeResult q = graph::quantize(g, sets.calibration, o);
  graph::Graph back = import_onnx_bytes(export_onnx(q.graph, q.scales), "'m.onnx'", ".");
  auto want = graph::reference_run(q.graph, sets.held_out[0]), got = graph::reference_run(back, sets.held_out[0]);
  EXPECT_GE(agreement(want[0], got[0]).cosine, 0.99);
  OnnxExportOptions exact;
  exact.round_half_up = true;
  std::string msg = test::error_text<ModelError>([&] { export_onnx(q.graph, q.scales, exact); });
  EXPECT_NE(msg.find("with round_half_up, the accumulator's scale"), std::string::npos) << msg;
  EXPECT_NE(msg.find("is not a power of two"), std::string::npos) << msg;
}

// The classifier quantized too (dense as Gemm with an int32 bias) and the first convolution.
TEST(OnnxExport, QdqEveryLayerInt8MatchesTheInt8Model) {
  graph::QuantizeOptions o;
  o.skip_first_conv = false;
  expect_qdq_matches("resnet18", o);
}

// A residual add of operands at different exponents: each operand dequantized at its own scale (the
// sum's exponent plus its shift), either way round; exact against the graph.
TEST(OnnxExport, QdqAddOfOperandsAtDifferentScales) {
  for (bool first_coarser : {true, false}) {
    graph::Graph g;
    int x = g.add_input("x", {{1, 64}, DataType::Float(32)});
    int y = g.add_input("y", {{1, 64}, DataType::Float(32)});
    const int ea = first_coarser ? -4 : -6, eb = first_coarser ? -6 : -4;
    int qa = g.add_op("quantize", "qa", {x}, graph::Attrs().set("exponent", int64_t(ea)));
    int qb = g.add_op("quantize", "qb", {y}, graph::Attrs().set("exponent", int64_t(eb)));
    int sum = g.add_op("add_shifted", "sum", {qa, qb},
                       graph::Attrs().set("lshift_a", int64_t(ea + 6)).set("lshift_b", int64_t(eb + 6)));
    int rq = g.add_op("requantize", "sum_rq", {sum}, graph::Attrs().set("shift", int64_t(1)));
    g.outputs = {g.add_op("dequantize", "out", {rq}, graph::Attrs().set("exponent", int64_t(-5)))};
    graph::infer_types(g);
    graph::QuantizedScales scales;
    scales.exponents = {{"qa", ea}, {"qb", eb}, {"sum_rq", -5}};
    OnnxExportOptions exact;
    exact.round_half_up = true;
    graph::Graph back = import_onnx_bytes(export_onnx(g, scales, exact), "'add.onnx'", ".");
    std::vector<NDArray> in = {NDArray::empty({1, 64}, DataType::Float(32)),
                               NDArray::empty({1, 64}, DataType::Float(32))};
    for (int64_t k = 0; k < 64; ++k) {
      in[0].set_from_double(k, 0.11 * double(k % 17) - 0.9);
      in[1].set_from_double(k, 0.07 * double(k % 13) - 0.4);
    }
    Agreement a = agreement(graph::reference_run(g, in)[0], graph::reference_run(back, in)[0]);
    EXPECT_EQ(a.differing, 0) << "first operand coarser " << first_coarser << ": up to " << a.max_error;
  }
}

// The export writes the standard QDQ groups ONNX Runtime fuses into int8 kernels: every int8
// conv and Gemm reads DequantizeLinear'd input, int8 weights and int32 bias, and its output goes to a
// QuantizeLinear alone.
TEST(OnnxExport, QdqGroupsAreTheStandardForm) {
  graph::Graph g = typed_builtin("resnet18");
  CalibrationSets sets = random_calibration_sets(g, 2, 0);
  graph::QuantizeResult q = graph::quantize(g, sets.calibration);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(export_onnx(q.graph, q.scales)));
  std::map<std::string, const onnx::NodeProto*> producer;
  std::map<std::string, std::vector<const onnx::NodeProto*>> readers;
  std::map<std::string, int> initializer_type;
  for (const auto& t : m.graph().initializer()) initializer_type[t.name()] = t.data_type();
  for (const auto& n : m.graph().node()) {
    for (const auto& o : n.output()) producer[o] = &n;
    for (const auto& i : n.input()) readers[i].push_back(&n);
  }
  int groups = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Conv" && n.op_type() != "Gemm") continue;
    const onnx::NodeProto* x = producer.count(n.input(0)) ? producer[n.input(0)] : nullptr;
    if (!x || x->op_type() != "DequantizeLinear") continue;  // a float layer
    ASSERT_EQ(n.input_size(), 3) << n.name();
    const onnx::NodeProto* w = producer[n.input(1)];
    const onnx::NodeProto* b = producer[n.input(2)];
    ASSERT_TRUE(w && w->op_type() == "DequantizeLinear") << n.name();
    ASSERT_TRUE(b && b->op_type() == "DequantizeLinear") << n.name();
    EXPECT_EQ(initializer_type[w->input(0)], onnx::TensorProto::INT8) << n.name();
    EXPECT_EQ(initializer_type[b->input(0)], onnx::TensorProto::INT32) << n.name();
    const auto& r = readers[n.output(0)];
    ASSERT_EQ(r.size(), 1u) << n.name();
    EXPECT_EQ(r[0]->op_type(), "QuantizeLinear") << n.name();
    ++groups;
  }
  EXPECT_EQ(groups, q.quantized_layers);
}

TEST(OnnxExport, GraphsItCannotWriteAreErrorsNamingTheNode) {
  // A quantized graph without its scales.
  graph::Graph g = typed_builtin("resnet18");
  CalibrationSets sets = random_calibration_sets(g, 2, 0);
  graph::QuantizeResult q = graph::quantize(g, sets.calibration);
  std::string msg = test::error_text<ModelError>([&] { export_onnx(q.graph); });
  EXPECT_NE(msg.find("has no scale in the quantizer's scales"), std::string::npos) << msg;
  EXPECT_NE(msg.find("export: node '"), std::string::npos) << msg;
  // An operator with no ONNX form here.
  graph::Graph r;
  int x = r.add_input("x", {{1, 4}, DataType::Float(32)});
  r.outputs = {r.add_op("top_k", "the_top", {x}, graph::Attrs().set("k", int64_t(2)).set("output", "values"))};
  graph::infer_types(r);
  msg = test::error_text<ModelError>([&] { export_onnx(r); });
  EXPECT_NE(msg.find("node 'the_top' (top_k): operator 'top_k' has no ONNX form"), std::string::npos) << msg;
  // A built graph's packed convolution.
  graph::Graph c;
  int in = c.add_input("x", {{1, 8, 4, 4}, DataType::Float(32)});
  int w = c.add_constant("w", NDArray::zeros({8, 4, 1, 1}, DataType::Float(32)));
  c.outputs = {c.add_op("conv2d", "packed", {in, w},
                        graph::Attrs().set("groups", int64_t(2)).set("interleaved_groups", int64_t(1)))};
  graph::infer_types(c);
  msg = test::error_text<ModelError>([&] { export_onnx(c); });
  EXPECT_NE(msg.find("node 'packed' (conv2d): the convolution is in a packed layout"), std::string::npos) << msg;
  // Shape variables.
  graph::Graph s = typed_builtin("mlp");
  s.shape_vars.push_back({"n", 1, 4});
  msg = test::error_text<ModelError>([&] { export_onnx(s); });
  EXPECT_NE(msg.find("shape variables"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::frontend
