// ONNX operator handlers: linear quantization (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear) and the integer and quantized products (MatMulInteger, ConvInteger,
// QLinearMatMul, QLinearConv), composed of graph operators: the products are int32 matmul and
// conv2d of the operands less their zero points; requantization is float32, as ONNX Runtime's.
// Types and shapes are copied out of the graph: im.type's reference moves when a node is added.
#include <optional>

#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

const DataType kF32 = DataType::Float(32), kI32 = DataType::Int(32);

int cast(Importer& im, const onnx::NodeProto& n, int v, DataType t) {
  return im.type(v).dtype == t ? v : im.add(n, "cast", {v}, Attrs().set("to", t.str()), "_to_" + t.str());
}

std::string input_str(Importer& im, const onnx::NodeProto& n, int i) {
  return "input " + std::to_string(i) + " ('" + n.input(i) + "', " + im.type(im.input(n, i)).str() + ")";
}

// Input i, a scale or zero point of a tensor of shape x, shaped to broadcast against x (and
// against a product whose trailing axes are x's from `axis` on): one element is per tensor; a
// 1-D tensor of x's extent along `axis` (where one is given) is per axis. -1 if absent.
int param(Importer& im, const onnx::NodeProto& n, int i, const Shape& x, std::optional<int64_t> axis) {
  if (!im.has_input(n, i)) return -1;
  int v = im.input(n, i);
  TensorType t = im.type(v);
  auto reshaped = [&](Shape s) {
    return t.shape == s ? v : im.add(n, "reshape", {v}, Attrs().set("shape", s), "_in" + std::to_string(i));
  };
  if (t.numel() == 1) return reshaped({});
  int64_t r = static_cast<int64_t>(x.size()), a = !axis ? -1 : *axis < 0 ? *axis + r : *axis;
  if (a < 0 || a >= r || t.shape != Shape{x[size_t(a)]})
    im.unsupported(
        n, input_str(im, n, i) + " must be a scalar" +
               (axis ? " or 1-D with one element per index of axis " + std::to_string(*axis) + " of " + shape_str(x)
                     : ""));
  Shape s(size_t(r - a), 1);
  s[0] = x[size_t(a)];
  return reshaped(s);
}

int scale(Importer& im, const onnx::NodeProto& n, int i, const Shape& x, std::optional<int64_t> axis) {
  if (im.type(im.input(n, i)).dtype != kF32) im.unsupported(n, input_str(im, n, i) + ": a scale must be float32");
  return param(im, n, i, x, axis);
}

bool is_8bit(DataType t) { return t == DataType::UInt(8) || t == DataType::Int(8); }

// Integer input i (uint8 or int8; int32 too where int32_ok) less its zero point (input z, of
// input i's type, or absent: 0), as int32.
int centered(Importer& im, const onnx::NodeProto& n, int i, int z, std::optional<int64_t> axis, bool int32_ok = false) {
  int x = im.input(n, i);
  TensorType t = im.type(x);
  if (!is_8bit(t.dtype) && !(int32_ok && t.dtype == kI32))
    im.unsupported(n, input_str(im, n, i) + " must be uint8 or int8" + (int32_ok ? " or int32" : ""));
  if (im.has_input(n, z) && im.type(im.input(n, z)).dtype != t.dtype)
    im.unsupported(n, "zero point " + input_str(im, n, z) + " must have the type of " + input_str(im, n, i));
  int zp = param(im, n, z, t.shape, axis);
  int xi = cast(im, n, x, kI32);
  return zp < 0 ? xi : im.add(n, "sub", {xi, cast(im, n, zp, kI32)}, {}, "_centered" + std::to_string(i));
}

// saturate(round_half_to_even(v) + zero point) in type q (uint8 or int8), v float32 and zp a
// float32 node (-1: none).
int saturate(Importer& im, const onnx::NodeProto& n, int v, int zp, DataType q) {
  int y = im.add(n, "round", {v}, {}, "_round");
  if (zp >= 0) y = im.add(n, "add", {y, zp}, {}, "_shifted");
  bool u = q == DataType::UInt(8);
  y = im.add(n, "clip", {y}, Attrs().set("min", u ? 0.0 : -128.0).set("max", u ? 255.0 : 127.0), "_saturated");
  return cast(im, n, y, q);
}

// saturate(round(v) + input z) in input z's type (uint8 when absent, as ONNX's default).
int quantize(Importer& im, const onnx::NodeProto& n, int v, int z, const Shape& x, std::optional<int64_t> axis) {
  DataType q = im.has_input(n, z) ? im.type(im.input(n, z)).dtype : DataType::UInt(8);
  if (!is_8bit(q)) im.unsupported(n, "zero point " + input_str(im, n, z) + " must be uint8 or int8");
  int zp = param(im, n, z, x, axis);
  return saturate(im, n, v, zp < 0 ? -1 : cast(im, n, zp, kF32), q);
}

// QuantizeLinear: saturate(round(x / scale) + zero point), per tensor or along `axis`; int32 x
// is divided in float32.
void import_quantize(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  TensorType t = im.type(x);
  if (t.dtype != kF32 && t.dtype != kI32) im.unsupported(n, input_str(im, n, 0) + " must be float32 or int32");
  int64_t axis = im.attr_int(n, "axis", 1);
  int v = im.add(n, "div", {cast(im, n, x, kF32), scale(im, n, 1, t.shape, axis)}, {}, "_scaled");
  im.output(n, quantize(im, n, v, 2, t.shape, axis));
}

// DequantizeLinear: (x - zero point) * scale, the difference in int32 (exact).
void import_dequantize(Importer& im, const onnx::NodeProto& n) {
  int64_t axis = im.attr_int(n, "axis", 1);
  Shape x = im.type(im.input(n, 0)).shape;
  int c = cast(im, n, centered(im, n, 0, 2, axis, true), kF32);
  im.output(n, im.add(n, "mul", {c, scale(im, n, 1, x, axis)}));
}

// DynamicQuantizeLinear as ONNX's function body: the range [min(x, 0), max(x, 0)] mapped to
// [0, 255]; the zero point is round(clip(-min / scale, 0, 255)).
void import_dynamic_quantize(Importer& im, const onnx::NodeProto& n) {
  int x = im.input(n, 0);
  if (im.type(x).dtype != kF32) im.unsupported(n, input_str(im, n, 0) + " must be float32");
  int zero = im.scalar(n, kF32, 0, "_zero");
  auto extreme = [&](const std::string& op) {  // with 0, as a rank-0 tensor
    int r = im.add(n, "reduce_" + op, {x}, Attrs().set("keepdims", int64_t(1)), "_" + op);
    r = im.add(n, "reshape", {r}, Attrs().set("shape", Shape{}), "_" + op + "_scalar");
    return im.add(n, op == "min" ? "minimum" : "maximum", {r, zero}, {}, "_" + op + "_with_zero");
  };
  int lo = extreme("min"), hi = extreme("max");
  int y_scale =
      im.add(n, "div", {im.add(n, "sub", {hi, lo}, {}, "_range"), im.scalar(n, kF32, 255, "_qmax")}, {}, "_y_scale");
  int zp = im.add(n, "sub", {zero, im.add(n, "div", {lo, y_scale}, {}, "_min_scaled")}, {}, "_zero_point_fp");
  zp = im.add(n, "round", {im.add(n, "clip", {zp}, Attrs().set("min", 0.0).set("max", 255.0), "_zp_clipped")}, {},
              "_zp_rounded");
  int v = im.add(n, "div", {x, y_scale}, {}, "_scaled");
  im.output(n, saturate(im, n, v, zp, DataType::UInt(8)));
  im.output(n, y_scale, 1);
  im.output(n, cast(im, n, zp, DataType::UInt(8)), 2);
}

// The axis of input i's rows (k = 2) or columns (k = 1); a vector has none: its parameters are
// per tensor.
std::optional<int64_t> matrix_axis(Importer& im, const onnx::NodeProto& n, int i, int64_t k) {
  int64_t r = static_cast<int64_t>(im.type(im.input(n, i)).shape.size());
  return r > 1 ? std::optional<int64_t>(r - k) : std::nullopt;
}

// The matrix product of inputs a and b less their zero points (per tensor, or per row of a and
// per column of b), in int32.
int int_matmul(Importer& im, const onnx::NodeProto& n, int a, int a_zp, int b, int b_zp) {
  return im.add(
      n, "matmul",
      {centered(im, n, a, a_zp, matrix_axis(im, n, a, 2)), centered(im, n, b, b_zp, matrix_axis(im, n, b, 1))});
}

// ConvInteger, QLinearConv: the convolution of inputs x and w less their zero points (per tensor,
// w's also per output channel) in int32, with Conv's attributes. Padding is 0 after centering,
// so it pads x with its zero point, as ONNX specifies.
int int_conv(Importer& im, const onnx::NodeProto& n, int x, int x_zp, int w, int w_zp, int bias) {
  return add_conv(im, n, centered(im, n, x, x_zp, std::nullopt), centered(im, n, w, w_zp, 0), bias);
}

// QLinearMatMul, QLinearConv: the int32 product `acc` of inputs 0 and 3 requantized in float32:
// saturate(round(acc * (scale 1 * scale 4 / scale 6)) + zero point 7). Scale 1 is per tensor or
// per row of input 0; scale 4 per tensor or along axis4 of a tensor of shape s4; y's per tensor.
int requantize(Importer& im, const onnx::NodeProto& n, int acc, Shape s4, std::optional<int64_t> axis4) {
  Shape a = im.type(im.input(n, 0)).shape, y = im.type(acc).shape;
  int m = im.add(n, "mul", {scale(im, n, 1, a, matrix_axis(im, n, 0, 2)), scale(im, n, 4, s4, axis4)}, {}, "_in_scale");
  m = im.add(n, "div", {m, scale(im, n, 6, y, std::nullopt)}, {}, "_multiplier");
  int v = im.add(n, "mul", {cast(im, n, acc, kF32), m}, {}, "_rescaled");
  return quantize(im, n, v, 7, y, std::nullopt);
}

void import_matmul_integer(Importer& im, const onnx::NodeProto& n) { im.output(n, int_matmul(im, n, 0, 2, 1, 3)); }

void import_conv_integer(Importer& im, const onnx::NodeProto& n) { im.output(n, int_conv(im, n, 0, 2, 1, 3, -1)); }

void import_qlinear_matmul(Importer& im, const onnx::NodeProto& n) {
  int acc = int_matmul(im, n, 0, 2, 3, 5);
  im.output(n, requantize(im, n, acc, im.type(im.input(n, 3)).shape, matrix_axis(im, n, 3, 1)));
}

// The bias is int32, added to the product before requantization.
void import_qlinear_conv(Importer& im, const onnx::NodeProto& n) {
  int bias = im.has_input(n, 8) ? im.input(n, 8) : -1;
  if (bias >= 0 && im.type(bias).dtype != kI32) im.unsupported(n, "the bias " + input_str(im, n, 8) + " must be int32");
  int acc = int_conv(im, n, 0, 2, 3, 5, bias);
  im.output(n, requantize(im, n, acc, im.type(acc).shape, 1));
}

}  // namespace

void add_quant_handlers(HandlerTable& t) {
  t["QuantizeLinear"] = {{"axis"}, import_quantize, 10};  // axis: since opset 13
  t["DequantizeLinear"] = {{"axis"}, import_dequantize, 10};
  t["DynamicQuantizeLinear"] = {{}, import_dynamic_quantize, 11};
  t["MatMulInteger"] = {{}, import_matmul_integer, 10};
  t["QLinearMatMul"] = {{}, import_qlinear_matmul, 10};
  std::vector<std::string> conv_attrs{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"};
  t["ConvInteger"] = {conv_attrs, import_conv_integer, 10};
  t["QLinearConv"] = {conv_attrs, import_qlinear_conv, 10};
}

}  // namespace loom::frontend::onnx_detail
