// ONNX operator handlers: convolutions, GEMMs, normalization, pooling, softmax.
#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

std::vector<int64_t> auto_pads(Importer& im, const onnx::NodeProto& n, const Shape& in_hw,
                               const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                               const std::vector<int64_t>& dilations) {
  std::string mode = im.attr_string(n, "auto_pad", "NOTSET");
  std::vector<int64_t> pads = im.attr_ints(n, "pads", {0, 0, 0, 0});
  if (pads.size() != 4) im.unsupported(n, "only 2-D windows are supported (pads must have 4 values)");
  if (mode == "NOTSET") return pads;
  if (mode == "VALID") return {0, 0, 0, 0};
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER")
    im.unsupported(n, "auto_pad '" + mode + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  for (int d = 0; d < 2; ++d) {
    int64_t out = (in_hw[d] + strides[d] - 1) / strides[d];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + dilations[d] * (kernel[d] - 1) + 1 - in_hw[d]);
    int64_t small = total / 2, big = total - small;
    pads[d] = mode == "SAME_UPPER" ? small : big;
    pads[d + 2] = mode == "SAME_UPPER" ? big : small;
  }
  return pads;
}

void import_conv(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0), w = im.input(n, 1);
  const Shape& xs = im.type(x).shape;
  const Shape& ws = im.type(w).shape;
  if (xs.size() != 4 || ws.size() != 4)
    im.unsupported(n, "only 2-D convolutions (NCHW input, OIHW weights) are supported");
  std::vector<int64_t> kernel = im.attr_ints(n, "kernel_shape", {ws[2], ws[3]});
  if (kernel != std::vector<int64_t>{ws[2], ws[3]}) im.unsupported(n, "kernel_shape differs from the weights' shape");
  std::vector<int64_t> strides = im.attr_ints(n, "strides", {1, 1}), dil = im.attr_ints(n, "dilations", {1, 1});
  if (strides.size() != 2 || dil.size() != 2) im.unsupported(n, "strides and dilations must have 2 values");
  Attrs a;
  a.set("strides", strides).set("dilations", dil).set("groups", im.attr_int(n, "group", 1));
  a.set("pads", auto_pads(im, n, {xs[2], xs[3]}, kernel, strides, dil));
  std::vector<int> in{x, w};
  if (im.has_input(n, 2)) in.push_back(im.input(n, 2));
  im.output(n, im.add(n, "conv2d", in, a));
}

void import_gemm(Importer& im, const onnx::NodeProto& n) {
  int a = im.input(n, 0), b = im.input(n, 1);
  double alpha = im.attr_float(n, "alpha", 1.0), beta = im.attr_float(n, "beta", 1.0);
  if (im.attr_int(n, "transA", 0))
    a = im.add(n, "transpose", {a}, Attrs().set("perm", std::vector<int64_t>{1, 0}), "_transA");
  // dense wants weights as [N, K]: that is B transposed unless transB.
  if (!im.attr_int(n, "transB", 0))
    b = im.add(n, "transpose", {b}, Attrs().set("perm", std::vector<int64_t>{1, 0}), "_transB");
  if (alpha != 1.0) {
    NDArray s = NDArray::empty({}, im.type(b).dtype);
    s.set_from_double(0, alpha);
    b = im.add(n, "mul", {b, im.add_const(n, s, "_alpha")}, {}, "_alphaB");
  }
  std::vector<int> in{a, b};
  int c = -1;
  if (im.has_input(n, 2) && beta != 0.0) {
    c = im.input(n, 2);
    if (beta != 1.0) {
      NDArray s = NDArray::empty({}, im.type(c).dtype);
      s.set_from_double(0, beta);
      c = im.add(n, "mul", {c, im.add_const(n, s, "_beta")}, {}, "_betaC");
    }
    int64_t N = im.type(b).shape[0];
    if (im.type(c).shape == Shape{N}) {
      in.push_back(c);
      c = -1;
    }
  }
  int y = im.add(n, "dense", in);
  if (c >= 0) y = im.add(n, "add", {y, c}, {}, "_bias");
  im.output(n, y);
}

void import_matmul(Importer& im, const onnx::NodeProto& n) {
  int a = im.input(n, 0), b = im.input(n, 1);
  if (im.type(a).shape.size() == 2 && im.type(b).shape.size() == 2 && im.is_const(b)) {
    int bt = im.add(n, "transpose", {b}, Attrs().set("perm", std::vector<int64_t>{1, 0}), "_weightT");
    im.output(n, im.add(n, "dense", {a, bt}));
  } else {
    im.output(n, im.add(n, "matmul", {a, b}));
  }
}

void import_batchnorm(Importer& im, const onnx::NodeProto& n) {
  if (im.attr_int(n, "training_mode", 0)) im.unsupported(n, "training_mode=1 is not supported (inference only)");
  std::vector<int> in;
  for (int i = 0; i < 5; ++i) in.push_back(im.input(n, i));
  im.output(n, im.add(n, "batch_norm", in, Attrs().set("epsilon", im.attr_float(n, "epsilon", 1e-5))));
}

// Softmax, and LogSoftmax as the log of it (`log`).
void import_softmax_or_log(Importer& im, const onnx::NodeProto& n, bool log) {
  auto finish = [&](int y) { return log ? im.add(n, "log", {y}, {}, "_log") : y; };
  int x = im.input(n, 0);
  Shape s = im.type(x).shape;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t axis = im.attr_int(n, "axis", im.opset() >= 13 ? -1 : 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) im.unsupported(n, "axis out of range");
  if (im.opset() >= 13 || axis == r - 1) {
    im.output(n, finish(im.add(n, "softmax", {x}, Attrs().set("axis", axis))));
    return;
  }
  // Before opset 13, softmax works on the input flattened to 2-D at `axis`.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= s[d];
  int flat = im.add(n, "reshape", {x}, Attrs().set("shape", Shape{outer, inner}), "_2d");
  int sm = finish(im.add(n, "softmax", {flat}, Attrs().set("axis", int64_t(1)), "_softmax"));
  im.output(n, im.add(n, "reshape", {sm}, Attrs().set("shape", s)));
}
void import_softmax(Importer& im, const onnx::NodeProto& n) { import_softmax_or_log(im, n, false); }
void import_log_softmax(Importer& im, const onnx::NodeProto& n) { import_softmax_or_log(im, n, true); }

Attrs pool_attrs(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  const Shape& xs = im.type(x).shape;
  if (xs.size() != 4) im.unsupported(n, "only 2-D pooling of NCHW tensors is supported");
  std::vector<int64_t> kernel = im.attr_ints(n, "kernel_shape", {});
  if (kernel.size() != 2) im.unsupported(n, "kernel_shape must have 2 values");
  std::vector<int64_t> strides = im.attr_ints(n, "strides", {1, 1}), dil = im.attr_ints(n, "dilations", {1, 1});
  if (im.attr_int(n, "storage_order", 0)) im.unsupported(n, "storage_order=1 (column major) is not supported");
  Attrs a;
  a.set("kernel", kernel)
      .set("strides", strides)
      .set("dilations", dil)
      .set("ceil_mode", im.attr_int(n, "ceil_mode", 0));
  a.set("pads", auto_pads(im, n, {xs[2], xs[3]}, kernel, strides, dil));
  return a;
}

void import_maxpool(Importer& im, const onnx::NodeProto& n) {
  im.output(n, im.add(n, "max_pool2d", {im.input(n, 0)}, pool_attrs(im, n)));
}

void import_avgpool(Importer& im, const onnx::NodeProto& n) {
  Attrs a = pool_attrs(im, n);
  a.set("count_include_pad", im.attr_int(n, "count_include_pad", 0));
  im.output(n, im.add(n, "avg_pool2d", {im.input(n, 0)}, a));
}

void import_global_avgpool(Importer& im, const onnx::NodeProto& n) {
  im.output(n, im.add(n, "global_avg_pool2d", {im.input(n, 0)}));
}

}  // namespace

void add_nn_handlers(HandlerTable& t) {
  t["Conv"] = {{"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"}, import_conv, 1};
  t["Gemm"] = {{"alpha", "beta", "transA", "transB"}, import_gemm, 7};
  t["MatMul"] = {{}, import_matmul, 1};
  t["BatchNormalization"] = {{"epsilon", "momentum", "training_mode"}, import_batchnorm, 9};
  t["Softmax"] = {{"axis"}, import_softmax, 1};
  t["LogSoftmax"] = {{"axis"}, import_log_softmax, 1};
  t["MaxPool"] = {
      {"kernel_shape", "strides", "pads", "dilations", "ceil_mode", "auto_pad", "storage_order"}, import_maxpool, 8};
  t["AveragePool"] = {{"kernel_shape", "strides", "pads", "dilations", "ceil_mode", "auto_pad", "count_include_pad"},
                      import_avgpool,
                      7};
  t["GlobalAveragePool"] = {{}, import_global_avgpool, 1};
}

}  // namespace loom::frontend::onnx_detail
