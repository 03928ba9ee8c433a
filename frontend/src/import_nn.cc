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

// The axes [from, rank) of a tensor of rank r (a negative `from` counts from the end).
std::vector<int64_t> trailing_axes(Importer& im, const onnx::NodeProto& n, int64_t from, int64_t r) {
  if (from < -r || from >= r)
    im.unsupported(n, "axis " + std::to_string(from) + " out of range for rank " + std::to_string(r));
  std::vector<int64_t> axes;
  for (int64_t d = from < 0 ? from + r : from; d < r; ++d) axes.push_back(d);
  return axes;
}

// (x - mean) / sqrt(var + eps) over `axes`, as graph operators (reduce_mean, sub, mul, add,
// sqrt, reciprocal: each fuses with its neighbours); also returns the mean and 1/std.
struct Normalized {
  int y, mean, inv_std;
};
Normalized normalize(Importer& im, const onnx::NodeProto& n, int x, const std::vector<int64_t>& axes, double eps,
                     bool eps_after_sqrt = false) {
  DataType t = im.type(x).dtype;
  if (!t.is_float()) im.unsupported(n, "the input must be floating point, is " + im.type(x).str());
  Attrs red = Attrs().set("axes", axes).set("keepdims", int64_t(1));
  int mean = im.add(n, "reduce_mean", {x}, red, "_mean");
  int d = im.add(n, "sub", {x, mean}, {}, "_centered");
  int var = im.add(n, "reduce_mean", {im.add(n, "mul", {d, d}, {}, "_square")}, red, "_var");
  int std_dev =
      eps_after_sqrt
          ? im.add(n, "add", {im.add(n, "sqrt", {var}, {}, "_sqrt"), im.scalar(n, t, eps, "_eps")}, {}, "_std")
          : im.add(n, "sqrt", {im.add(n, "add", {var, im.scalar(n, t, eps, "_eps")}, {}, "_vareps")}, {}, "_std");
  int inv = im.add(n, "reciprocal", {std_dev}, {}, "_inv_std");
  return {im.add(n, "mul", {d, inv}, {}, "_normalized"), mean, inv};
}

void import_layer_norm(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  int64_t r = static_cast<int64_t>(im.type(x).shape.size());
  Normalized z =
      normalize(im, n, x, trailing_axes(im, n, im.attr_int(n, "axis", -1), r), im.attr_float(n, "epsilon", 1e-5));
  int y = im.add(n, "mul", {z.y, im.input(n, 1)}, {}, "_scaled");
  if (im.has_input(n, 2)) y = im.add(n, "add", {y, im.input(n, 2)}, {}, "_shifted");
  im.output(n, y);
  im.output(n, z.mean, 1);
  im.output(n, z.inv_std, 2);
}

// Per-channel scale and bias ([C]) shaped to broadcast over NC... .
int per_channel(Importer& im, const onnx::NodeProto& n, int i, int64_t rank) {
  int v = im.input(n, i);
  Shape s(size_t(rank - 1), 1);
  s[0] = im.type(v).numel();
  return im.add(n, "reshape", {v}, Attrs().set("shape", s), "_c" + std::to_string(i));
}

void import_instance_norm(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  int64_t r = static_cast<int64_t>(im.type(x).shape.size());
  if (r < 3) im.unsupported(n, "the input must be N, C and at least one spatial dimension");
  Normalized z = normalize(im, n, x, trailing_axes(im, n, 2, r), im.attr_float(n, "epsilon", 1e-5));
  int y = im.add(n, "mul", {z.y, per_channel(im, n, 1, r)}, {}, "_scaled");
  im.output(n, im.add(n, "add", {y, per_channel(im, n, 2, r)}, {}, "_shifted"));
}

void import_mvn(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  // ONNX's function body: (x - mean) / (sqrt(var) + 1e-9).
  im.output(n, normalize(im, n, x, im.attr_ints(n, "axes", {0, 2, 3}), 1e-9, true).y);
}

void import_global_maxpool(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  int64_t r = static_cast<int64_t>(im.type(x).shape.size());
  Attrs a = Attrs().set("axes", trailing_axes(im, n, 2, r)).set("keepdims", int64_t(1));
  im.output(n, im.add(n, "reduce_max", {x}, a));
}

// Hardmax: 1 at the first maximum along `axis`, 0 elsewhere (arg_max compared with positions).
void import_hardmax(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape s = im.type(x).shape;
  int64_t r = static_cast<int64_t>(s.size()), axis = im.attr_int(n, "axis", -1);
  if (axis < -r || axis >= r) im.unsupported(n, "axis out of range");
  if (axis < 0) axis += r;
  int arg = im.add(n, "arg_max", {x}, Attrs().set("kind", "max").set("axis", axis).set("keepdims", int64_t(1)), "_arg");
  Shape ps(size_t(r), 1);
  ps[size_t(axis)] = s[size_t(axis)];
  NDArray pos = folded_const(ps, DataType::Int(64), im.where(n));
  for (int64_t i = 0; i < pos.numel(); ++i) pos.set_from_double(i, double(i));
  int hit = im.add(n, "equal", {arg, im.add_const(n, pos, "_positions")}, {}, "_hit");
  im.output(n, im.add(n, "cast", {hit}, Attrs().set("to", im.type(x).dtype.str())));
}

// LRN across channels: x / (bias + alpha / size * sum of x^2 over `size` neighbouring channels)^beta.
void import_lrn(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  Shape s = im.type(x).shape;
  DataType t = im.type(x).dtype;
  int64_t size = im.attr_int(n, "size", 0);
  if (size < 1) im.unsupported(n, "size must be positive");
  if (s.size() < 3) im.unsupported(n, "the input must be N, C and spatial dimensions");
  int sq = im.add(n, "mul", {x, x}, {}, "_square");
  std::vector<int64_t> pads(2 * s.size(), 0);
  pads[1] = (size - 1) / 2;
  pads[s.size() + 1] = size - 1 - pads[1];
  int padded = im.add(n, "pad", {sq}, Attrs().set("pads", pads).set("mode", "constant").set("value", 0.0), "_pad");
  int sum = -1;
  for (int64_t k = 0; k < size; ++k) {
    Attrs a = Attrs().set("starts", Shape{k}).set("ends", Shape{k + s[1]}).set("axes", Shape{1}).set("steps", Shape{1});
    int part = im.add(n, "slice", {padded}, a, "_window" + std::to_string(k));
    sum = sum < 0 ? part : im.add(n, "add", {sum, part}, {}, "_sum" + std::to_string(k));
  }
  double alpha = im.attr_float(n, "alpha", 1e-4), beta = im.attr_float(n, "beta", 0.75),
         bias = im.attr_float(n, "bias", 1.0);
  int base = im.add(n, "add",
                    {im.add(n, "mul", {sum, im.scalar(n, t, alpha / double(size), "_alpha")}, {}, "_scaled"),
                     im.scalar(n, t, bias, "_bias")},
                    {}, "_base");
  int den = im.add(n, "pow", {base, im.scalar(n, t, beta, "_beta")}, {}, "_den");
  im.output(n, im.add(n, "div", {x, den}));
}

// NegativeLogLikelihoodLoss of log-probabilities x [N, C, d...] and targets [N, d...]:
// -x[n, target, d...] * weight[target], 0 where the target is ignore_index; reduced by
// `reduction` (none, sum, or mean: the sum over the sum of the weights taken).
int nll_loss(Importer& im, const onnx::NodeProto& n, int x, int target, int weight) {
  Shape xs = im.type(x).shape, ts = im.type(target).shape;
  DataType t = im.type(x).dtype;
  if (xs.size() < 2 || ts.size() != xs.size() - 1)
    im.unsupported(n, "the input must be [N, C, d...] and the target [N, d...]");
  std::string reduction = im.attr_string(n, "reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    im.unsupported(n, "reduction '" + reduction + "' is not one of none, sum, mean");
  int valid = -1;
  if (im.attr(n, "ignore_index")) {
    int ignore = im.scalar(n, im.type(target).dtype, double(im.attr_int(n, "ignore_index", 0)), "_ignore");
    valid = im.add(n, "logical_not", {im.add(n, "equal", {target, ignore}, {}, "_ignored")}, {}, "_valid");
    target = im.add(n, "where", {valid, target, im.scalar(n, im.type(target).dtype, 0, "_zero_index")}, {}, "_target");
  }
  Shape picked_shape = ts;
  picked_shape.insert(picked_shape.begin() + 1, 1);
  int index = im.add(n, "reshape", {target}, Attrs().set("shape", picked_shape), "_index");
  int picked = im.add(n, "gather_elements", {x, index}, Attrs().set("axis", int64_t(1)), "_picked");
  picked = im.add(n, "reshape", {picked}, Attrs().set("shape", ts), "_picked_flat");
  // The weight of each element: weight[target], zeroed where ignored; none: all ones.
  int w = weight >= 0 ? im.add(n, "gather", {weight, target}, Attrs().set("axis", int64_t(0)), "_weight") : -1;
  if (valid >= 0) {
    int v = im.add(n, "cast", {valid}, Attrs().set("to", t.str()), "_valid_weight");
    w = w >= 0 ? im.add(n, "mul", {w, v}, {}, "_kept_weight") : v;
  }
  int loss = im.add(n, "neg", {w >= 0 ? im.add(n, "mul", {picked, w}, {}, "_weighted") : picked}, {}, "_loss");
  if (reduction == "none") return loss;
  // A sum over everything, as a rank-0 tensor.
  auto total = [&](int v, const std::string& suffix) {
    int s = im.add(n, "reduce_sum", {v}, Attrs().set("keepdims", int64_t(1)), suffix);
    return im.add(n, "reshape", {s}, Attrs().set("shape", Shape{}), suffix + "_scalar");
  };
  int sum = total(loss, "_sum");
  if (reduction == "sum") return sum;
  int count = w >= 0 ? total(w, "_weight_sum") : im.scalar(n, t, double(im.type(loss).numel()), "_count");
  return im.add(n, "div", {sum, count}, {}, "_mean");
}

void import_nll_loss(Importer& im, const onnx::NodeProto& n) {
  int w = im.has_input(n, 2) ? im.input(n, 2) : -1;
  im.output(n, nll_loss(im, n, im.input(n, 0), im.input(n, 1), w));
}

// SoftmaxCrossEntropyLoss: NLL of log_softmax over axis 1 (also the second output).
void import_sce_loss(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  int log_prob =
      im.add(n, "log", {im.add(n, "softmax", {x}, Attrs().set("axis", int64_t(1)), "_softmax")}, {}, "_log_prob");
  int w = im.has_input(n, 2) ? im.input(n, 2) : -1;
  im.output(n, nll_loss(im, n, log_prob, im.input(n, 1), w));
  im.output(n, log_prob, 1);
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
  t["GlobalMaxPool"] = {{}, import_global_maxpool, 1};
  t["LayerNormalization"] = {{"axis", "epsilon", "stash_type"}, import_layer_norm, 17};
  t["InstanceNormalization"] = {{"epsilon"}, import_instance_norm, 6};
  t["MeanVarianceNormalization"] = {{"axes"}, import_mvn, 9};
  t["Hardmax"] = {{"axis"}, import_hardmax, 13};
  t["NegativeLogLikelihoodLoss"] = {{"reduction", "ignore_index"}, import_nll_loss, 12};
  t["SoftmaxCrossEntropyLoss"] = {{"reduction", "ignore_index"}, import_sce_loss, 12};
  t["LRN"] = {{"alpha", "beta", "bias", "size"}, import_lrn, 1};
}

}  // namespace loom::frontend::onnx_detail
