// The ONNX importer's Resize: one resample_axis per resized axis, the innermost one first when the
// other axes grow (its gathers then run on the smaller tensor), and bilinear values that match a
// direct computation whatever the order.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>
#include <algorithm>
#include <cmath>

#include "loom/frontend/onnx.h"
#include "loom/graph/reference.h"
#include "onnx_model_builder.h"

namespace loom::frontend {
namespace {

// x: float[1, 2, h, w] -> Resize(linear, half_pixel, sizes [1, 2, oh, ow]) -> y, opset 13.
onnx::ModelProto resize_model(int64_t h, int64_t w, int64_t oh, int64_t ow) {
  onnx::ModelProto m = test::model_with_float_input("resize", "x", {1, 2, h, w});
  auto* g = m.mutable_graph();
  test::add_int64_initializer(g, "sizes", {1, 2, oh, ow});
  auto* n = g->add_node();
  n->set_op_type("Resize");
  n->set_name("the_resize");
  for (const char* i : {"x", "", "", "sizes"}) n->add_input(i);
  n->add_output("y");
  auto* mode = n->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("linear");
  g->add_output()->set_name("y");
  return m;
}

// The axes of the graph's resample_axis nodes, in the order they run.
std::vector<int64_t> resample_axes(const graph::Graph& g) {
  std::vector<int64_t> axes;
  for (int id : g.topological_order())
    if (g.node(id).is_op() && g.node(id).op == "resample_axis") axes.push_back(g.node(id).attrs.get_int("axis", -1));
  return axes;
}

// ONNX's linear half_pixel source coordinate, clamped taps.
float bilinear(const NDArray& x, int64_t c, int64_t oy, int64_t ox, int64_t oh, int64_t ow) {
  const int64_t h = x.shape()[2], w = x.shape()[3];
  auto taps = [](int64_t o, int64_t in, int64_t out, int64_t& i0, int64_t& i1, double& s) {
    double src = (double(o) + 0.5) * double(in) / double(out) - 0.5;
    double base = std::floor(src);
    s = src - base;
    i0 = std::clamp<int64_t>(int64_t(base), 0, in - 1);
    i1 = std::clamp<int64_t>(int64_t(base) + 1, 0, in - 1);
  };
  int64_t y0, y1, x0, x1;
  double sy, sx;
  taps(oy, h, oh, y0, y1, sy);
  taps(ox, w, ow, x0, x1, sx);
  const float* p = x.data<float>() + c * h * w;
  auto at = [&](int64_t y, int64_t xx) { return double(p[y * w + xx]); };
  return float((1 - sy) * ((1 - sx) * at(y0, x0) + sx * at(y0, x1)) + sy * ((1 - sx) * at(y1, x0) + sx * at(y1, x1)));
}

void expect_bilinear(const graph::Graph& g, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  NDArray x = NDArray::empty({1, 2, h, w}, DataType::Float(32));
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i * 37) % 23) - 11.0f;
  NDArray y = graph::reference_run(g, {x}).at(0);
  ASSERT_EQ(y.shape(), (graph::Shape{1, 2, oh, ow}));
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        ASSERT_NEAR(y.data<float>()[(c * oh + oy) * ow + ox], bilinear(x, c, oy, ox, oh, ow), 1e-4)
            << "at channel " << c << ", (" << oy << ", " << ox << ")";
}

TEST(OnnxResize, UpsamplingResamplesTheInnermostAxisFirst) {
  graph::Graph g = import_onnx_bytes(resize_model(3, 5, 12, 20).SerializeAsString(), "up", ".");
  EXPECT_EQ(resample_axes(g), (std::vector<int64_t>{3, 2}));
  expect_bilinear(g, 3, 5, 12, 20);
}

TEST(OnnxResize, DownsamplingResamplesTheInnermostAxisLast) {
  graph::Graph g = import_onnx_bytes(resize_model(12, 20, 3, 5).SerializeAsString(), "down", ".");
  EXPECT_EQ(resample_axes(g), (std::vector<int64_t>{2, 3}));
  expect_bilinear(g, 12, 20, 3, 5);
}

TEST(OnnxResize, OnlyTheInnermostAxisResampledOnce) {
  graph::Graph g = import_onnx_bytes(resize_model(4, 5, 4, 15).SerializeAsString(), "wide", ".");
  EXPECT_EQ(resample_axes(g), (std::vector<int64_t>{3}));
  expect_bilinear(g, 4, 5, 4, 15);
}

}  // namespace
}  // namespace loom::frontend
