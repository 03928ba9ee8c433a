// ONNX operator handlers: convolutions, GEMMs, normalization, pooling, softmax.
#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

// A window attribute (kernel_shape, strides, dilations, pads, output_padding) in its 2-D form: a
// 1-D window (N, C, W) is a 2-D one of height 1, so its values get a leading 1 (pads: 0 before
// and after; output_padding: 0).
std::vector<int64_t> window_attr(Importer& im, const onnx::NodeProto& n, const char* key, std::vector<int64_t> def,
                                 bool one_d) {
  std::vector<int64_t> v = im.attr_ints(n, key, {});
  if (v.empty()) return def;
  if (one_d && std::string(key) == "pads" && v.size() == 2) v = {0, v[0], 0, v[1]};
  if (one_d && v.size() == 1) v = {std::string(key) == "output_padding" ? 0 : 1, v[0]};
  bool step = std::string(key) == "strides" || std::string(key) == "dilations";
  if (v.size() != (std::string(key) == "pads" ? 4u : 2u))
    im.unsupported(n, std::string(key) + " must have one value per spatial dimension" +
                          (std::string(key) == "pads" ? " at each end" : ""));
  for (int64_t x : v)
    if (step ? x < 1 : x < 0)
      im.unsupported(n, std::string(key) + " " + shape_str(v) + " must be " + (step ? "positive" : "non-negative"));
  return v;
}

std::vector<int64_t> auto_pads(Importer& im, const onnx::NodeProto& n, const Shape& in_hw,
                               const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                               const std::vector<int64_t>& dilations, bool one_d) {
  std::string mode = im.attr_string(n, "auto_pad", "NOTSET");
  std::vector<int64_t> pads = window_attr(im, n, "pads", {0, 0, 0, 0}, one_d);
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

// A 1-D input or kernel (rank 3) as a 2-D one of height 1.
int as_2d(Importer& im, const onnx::NodeProto& n, int x, const std::string& suffix) {
  Shape s = im.type(x).shape;
  s.insert(s.begin() + 2, 1);
  return im.add(n, "reshape", {x}, Attrs().set("shape", s), suffix);
}
// The 2-D result of a 1-D window back to rank 3.
int as_1d(Importer& im, const onnx::NodeProto& n, int y) {
  Shape s = im.type(y).shape;
  return im.add(n, "reshape", {y}, Attrs().set("shape", Shape{s[0], s[1], s[3]}), "_1d");
}

}  // namespace

int add_conv(Importer& im, const onnx::NodeProto& n, int x, int w, int bias) {
  bool one_d = im.type(x).shape.size() == 3 && im.type(w).shape.size() == 3;
  if (one_d) {
    x = as_2d(im, n, x, "_x2d");
    w = as_2d(im, n, w, "_w2d");
  }
  Shape xs = im.type(x).shape, ws = im.type(w).shape;
  if (xs.size() != 4 || ws.size() != 4)
    im.unsupported(n, "only 1-D and 2-D convolutions (NCW/NCHW input, OIW/OIHW weights) are supported");
  std::vector<int64_t> kernel = window_attr(im, n, "kernel_shape", {ws[2], ws[3]}, one_d);
  if (kernel != std::vector<int64_t>{ws[2], ws[3]}) im.unsupported(n, "kernel_shape differs from the weights' shape");
  std::vector<int64_t> strides = window_attr(im, n, "strides", {1, 1}, one_d),
                       dil = window_attr(im, n, "dilations", {1, 1}, one_d);
  if (strides.size() != 2 || dil.size() != 2) im.unsupported(n, "strides and dilations must have 2 values");
  Attrs a;
  a.set("strides", strides).set("dilations", dil).set("groups", im.attr_int(n, "group", 1));
  a.set("pads", auto_pads(im, n, {xs[2], xs[3]}, kernel, strides, dil, one_d));
  std::vector<int> in{x, w};
  if (bias >= 0) in.push_back(bias);
  int y = im.add(n, "conv2d", in, a, one_d ? "_2d" : "");
  return one_d ? as_1d(im, n, y) : y;
}

namespace {

void import_conv(Importer& im, const onnx::NodeProto& n) {
  im.output(n, add_conv(im, n, im.input(n, 0), im.input(n, 1), im.has_input(n, 2) ? im.input(n, 2) : -1));
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
// x - log(sum(exp(x))) over `axis`: LogSoftmax without the underflow of log(softmax(x)) (a
// probability below float's range would give -inf).
int log_softmax(Importer& im, const onnx::NodeProto& n, int x, int64_t axis, const std::string& suffix) {
  Attrs a = Attrs().set("axes", std::vector<int64_t>{axis}).set("keepdims", int64_t(1));
  return im.add(n, "sub", {x, im.add(n, "reduce_log_sum_exp", {x}, a, suffix + "_lse")}, {}, suffix);
}

void import_softmax_or_log(Importer& im, const onnx::NodeProto& n, bool log) {
  auto op = [&](int x, int64_t axis, const std::string& suffix) {
    return log ? log_softmax(im, n, x, axis, suffix) : im.add(n, "softmax", {x}, Attrs().set("axis", axis), suffix);
  };
  int x = im.input(n, 0);
  Shape s = im.type(x).shape;
  int64_t r = static_cast<int64_t>(s.size());
  int64_t axis = im.attr_int(n, "axis", im.opset() >= 13 ? -1 : 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) im.unsupported(n, "axis out of range");
  if (im.opset() >= 13 || axis == r - 1) {
    im.output(n, op(x, axis, ""));
    return;
  }
  // Before opset 13, softmax works on the input flattened to 2-D at `axis`.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= s[d];
  int flat = im.add(n, "reshape", {x}, Attrs().set("shape", Shape{outer, inner}), "_2d");
  int sm = op(flat, 1, "_2d_out");
  im.output(n, im.add(n, "reshape", {sm}, Attrs().set("shape", s)));
}
void import_softmax(Importer& im, const onnx::NodeProto& n) { import_softmax_or_log(im, n, false); }
void import_log_softmax(Importer& im, const onnx::NodeProto& n) { import_softmax_or_log(im, n, true); }

Attrs pool_attrs(Importer& im, const onnx::NodeProto& n, const Shape& xs, bool one_d) {
  if (xs.size() != 4) im.unsupported(n, "only 1-D and 2-D pooling of NCW/NCHW tensors is supported");
  std::vector<int64_t> kernel = window_attr(im, n, "kernel_shape", {}, one_d);
  if (kernel.size() != 2) im.unsupported(n, "kernel_shape must have one value per spatial dimension");
  std::vector<int64_t> strides = window_attr(im, n, "strides", {1, 1}, one_d),
                       dil = window_attr(im, n, "dilations", {1, 1}, one_d);
  if (im.attr_int(n, "storage_order", 0)) im.unsupported(n, "storage_order=1 (column major) is not supported");
  Attrs a;
  a.set("kernel", kernel)
      .set("strides", strides)
      .set("dilations", dil)
      .set("ceil_mode", im.attr_int(n, "ceil_mode", 0));
  a.set("pads", auto_pads(im, n, {xs[2], xs[3]}, kernel, strides, dil, one_d));
  return a;
}

// MaxPool, AveragePool (count_include_pad) of 1-D or 2-D windows.
void import_pool(Importer& im, const onnx::NodeProto& n, bool max) {
  int x = im.input(n, 0);
  bool one_d = im.type(x).shape.size() == 3;
  if (one_d) x = as_2d(im, n, x, "_x2d");
  Attrs a = pool_attrs(im, n, im.type(x).shape, one_d);
  if (!max) a.set("count_include_pad", im.attr_int(n, "count_include_pad", 0));
  int y = im.add(n, max ? "max_pool2d" : "avg_pool2d", {x}, a, one_d ? "_2d" : "");
  im.output(n, one_d ? as_1d(im, n, y) : y);
}
void import_maxpool(Importer& im, const onnx::NodeProto& n) { import_pool(im, n, true); }
void import_avgpool(Importer& im, const onnx::NodeProto& n) { import_pool(im, n, false); }

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
  int arg = im.add(n, "arg_max", {x}, Attrs().set("axis", axis).set("keepdims", int64_t(1)), "_arg");
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
  // Window positions more than C - 1 channels away only ever add padding zeros: left out.
  std::vector<int64_t> pads(2 * s.size(), 0);
  pads[1] = std::min((size - 1) / 2, s[1] - 1);
  pads[s.size() + 1] = std::min(size - 1 - (size - 1) / 2, s[1] - 1);
  int padded = im.add(n, "pad", {sq}, Attrs().set("pads", pads).set("mode", "constant").set("value", 0.0), "_pad");
  int sum = -1;
  for (int64_t k = 0; k < pads[1] + pads[s.size() + 1] + 1; ++k) {
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

// ConvTranspose as a convolution: the input with stride-1 zeros between its elements, padded
// by dilation*(kernel-1) minus the transposed convolution's pads, convolved with the kernel
// flipped and its in/out channels swapped (per group). 1-D inputs are 2-D with height 1.
void import_conv_transpose(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0), w = im.input(n, 1);
  Shape xs = im.type(x).shape, ws = im.type(w).shape;
  bool one_d = xs.size() == 3 && ws.size() == 3;
  if (one_d) {
    xs.insert(xs.begin() + 2, 1);
    ws.insert(ws.begin() + 2, 1);
    x = im.add(n, "reshape", {x}, Attrs().set("shape", xs), "_x2d");
    w = im.add(n, "reshape", {w}, Attrs().set("shape", ws), "_w2d");
  }
  if (xs.size() != 4 || ws.size() != 4)
    im.unsupported(n, "only 1-D and 2-D transposed convolutions (NCHW input, IOHW weights) are supported");
  std::vector<int64_t> strides = window_attr(im, n, "strides", {1, 1}, one_d),
                       dil = window_attr(im, n, "dilations", {1, 1}, one_d),
                       out_pad = window_attr(im, n, "output_padding", {0, 0}, one_d);
  int64_t g = im.attr_int(n, "group", 1), cin = xs[1];
  if (g < 1 || cin % g || ws[0] != cin)
    im.unsupported(n, "weights " + shape_str(ws) + " do not match the input's channels");
  std::vector<int64_t> kernel = {ws[2], ws[3]}, pads(4, 0);
  if (auto p = im.attr_ints(n, "pads", {}); !p.empty()) {
    if (one_d && p.size() == 2) p = {0, p[0], 0, p[1]};
    if (p.size() != 4) im.unsupported(n, "pads must have two values per spatial dimension");
    pads = p;
  }
  std::string auto_pad = im.attr_string(n, "auto_pad", "NOTSET");
  std::vector<int64_t> out_shape = im.attr_ints(n, "output_shape", {});
  if (one_d && out_shape.size() == 1) out_shape.insert(out_shape.begin(), 1);
  if (!out_shape.empty() && out_shape.size() != 2 && out_shape.size() != 4)
    im.unsupported(n, "output_shape must give the spatial size (or the whole shape)");
  if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // The pads that give the requested size (the input times the stride for SAME_*).
    for (int d = 0; d < 2; ++d) {
      int64_t full = strides[d] * (xs[d + 2] - 1) + out_pad[d] + (kernel[d] - 1) * dil[d] + 1;
      int64_t want = out_shape.empty() ? xs[d + 2] * strides[d] : out_shape[size_t(out_shape.size() - 2 + d)];
      int64_t total = full - want;  // negative: the output grows past the last input's reach
      pads[d] = auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;  // as ONNX's reference does
      pads[d + 2] = total - pads[d];
    }
  } else if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    im.unsupported(n, "auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  // Zeros between the input's elements: [N,C,H,1,W,1] padded to [N,C,H,s,W,s], cut to (H-1)s+1.
  if (strides[0] > 1 || strides[1] > 1) {
    int spread = im.add(n, "reshape", {x}, Attrs().set("shape", Shape{xs[0], xs[1], xs[2], 1, xs[3], 1}), "_spread");
    std::vector<int64_t> zp(12, 0);
    zp[6 + 3] = strides[0] - 1;
    zp[6 + 5] = strides[1] - 1;
    int zeros = im.add(n, "pad", {spread}, Attrs().set("pads", zp).set("mode", "constant").set("value", 0.0), "_zeros");
    int64_t h = xs[2] * strides[0], wd = xs[3] * strides[1];
    int flat = im.add(n, "reshape", {zeros}, Attrs().set("shape", Shape{xs[0], xs[1], h, wd}), "_dilated");
    Attrs cut = Attrs()
                    .set("starts", Shape{0, 0})
                    .set("ends", Shape{h - strides[0] + 1, wd - strides[1] + 1})
                    .set("axes", Shape{2, 3})
                    .set("steps", Shape{1, 1});
    x = im.add(n, "slice", {flat}, cut, "_upsampled");
  }
  // The kernel: [g, Cin/g, Cout/g, kh, kw] -> [g, Cout/g, Cin/g, kh, kw] -> [Cout, Cin/g, kh, kw], flipped.
  int64_t cout_g = ws[1];
  int wg = im.add(n, "reshape", {w}, Attrs().set("shape", Shape{g, cin / g, cout_g, ws[2], ws[3]}), "_wgroups");
  int wt = im.add(n, "transpose", {wg}, Attrs().set("perm", std::vector<int64_t>{0, 2, 1, 3, 4}), "_wswap");
  int wr = im.add(n, "reshape", {wt}, Attrs().set("shape", Shape{g * cout_g, cin / g, ws[2], ws[3]}), "_woihw");
  Attrs flip = Attrs()
                   .set("starts", Shape{-1, -1})
                   .set("ends", Shape{INT64_MIN, INT64_MIN})
                   .set("axes", Shape{2, 3})
                   .set("steps", Shape{-1, -1});
  int wf = im.add(n, "slice", {wr}, flip, "_wflip");
  // Convolution pads: dilation*(kernel-1) less the transposed pads (plus output_padding at the
  // end); negative ones crop the result instead.
  std::vector<int64_t> conv_pads(4), crop(4);
  for (int d = 0; d < 2; ++d) {
    int64_t edge = dil[d] * (kernel[d] - 1);
    int64_t before = edge - pads[d], after = edge - pads[d + 2] + out_pad[d];
    conv_pads[d] = std::max<int64_t>(before, 0);
    conv_pads[d + 2] = std::max<int64_t>(after, 0);
    crop[d] = std::max<int64_t>(-before, 0);
    crop[d + 2] = std::max<int64_t>(-after, 0);
  }
  Attrs a = Attrs().set("strides", Shape{1, 1}).set("dilations", dil).set("groups", g).set("pads", conv_pads);
  std::vector<int> in{x, wf};
  if (im.has_input(n, 2)) in.push_back(im.input(n, 2));
  int y = im.add(n, "conv2d", in, a, "_conv");
  if (crop[0] || crop[1] || crop[2] || crop[3]) {
    Shape ys = im.type(y).shape;
    Attrs c = Attrs()
                  .set("starts", Shape{crop[0], crop[1]})
                  .set("ends", Shape{ys[2] - crop[2], ys[3] - crop[3]})
                  .set("axes", Shape{2, 3})
                  .set("steps", Shape{1, 1});
    y = im.add(n, "slice", {y}, c, "_crop");
  }
  if (one_d) {
    Shape ys = im.type(y).shape;
    y = im.add(n, "reshape", {y}, Attrs().set("shape", Shape{ys[0], ys[1], ys[3]}), "_1d");
  }
  im.output(n, im.add(n, "identity", {y}));
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
  int log_prob = log_softmax(im, n, x, 1, "_log_prob");
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
  t["ConvTranspose"] = {
      {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"},
      import_conv_transpose,
      1};
  t["LRN"] = {{"alpha", "beta", "bias", "size"}, import_lrn, 1};
}

}  // namespace loom::frontend::onnx_detail
