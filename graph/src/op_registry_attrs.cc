// The attribute schema of every operator that takes attributes (OpDef::attrs): name, kind,
// required or not, range, and what it means with its default. Graph::verify checks every node
// against its operator's schema, so a misspelt key or a value of the wrong kind is an error that
// names the node instead of a silently used default. An operator absent here takes none.
#include "op_registry_util.h"

namespace loom::graph {

namespace {

AttrSpec opt(const char* name, AttrKind kind, const char* help, double lo = -kAttrUnbounded,
             double hi = kAttrUnbounded) {
  return {name, kind, false, lo, hi, help};
}
AttrSpec req(const char* name, AttrKind kind, const char* help, double lo = -kAttrUnbounded,
             double hi = kAttrUnbounded) {
  return {name, kind, true, lo, hi, help};
}
AttrSpec flag(const char* name, const char* help) { return opt(name, AttrKind::Int, help, 0, 1); }

using K = AttrKind;

std::vector<AttrSpec> conv_attrs() {
  return {opt("strides", K::Ints, "[stride_h, stride_w], default [1, 1]"),
          opt("pads", K::Ints, "[top, left, bottom, right], default [0, 0, 0, 0]"),
          opt("dilations", K::Ints, "[dilation_h, dilation_w], default [1, 1]"),
          opt("groups", K::Int, "channel groups, default 1"),
          opt("oc_block", K::Int, "output channels per block of packed weights (alter_layout), default 0: unpacked", 0),
          flag("interleaved_groups", "group g holds channels g, g + groups, ... (interleave_narrow_groups), default 0"),
          opt("layout", K::String, "NCHW or NCHWc (channel blocks of oc_block; alter_layout), default NCHW"),
          flag("input_nonnegative", "the input is known to be in [0, 127] (int8 byte groups read it as uint8)"),
          flag("input_offset",
               "int8 byte groups read the signed input plus 128 as uint8; the bias holds -128 x the weights' sums")};
}

std::vector<AttrSpec> pool_attrs() {
  return {opt("kernel", K::Ints, "[kernel_h, kernel_w], default [1, 1]"),
          opt("strides", K::Ints, "[stride_h, stride_w], default [1, 1]"),
          opt("pads", K::Ints, "[top, left, bottom, right], default [0, 0, 0, 0]"),
          opt("dilations", K::Ints, "[dilation_h, dilation_w], default [1, 1]"),
          flag("ceil_mode", "round the output size up, default 0"),
          flag("count_include_pad", "average pooling divides by the whole window, pads included, default 0")};
}

// The int8 requantization that ends a quantized layer: shift right by `shift` (range per operator),
// round, clamp to [min, max].
std::vector<AttrSpec> requantize_attrs(double shift_lo, double shift_hi) {
  return {req("shift", K::Int, "right shift of the int32 accumulator", shift_lo, shift_hi),
          opt("min", K::Int, "lower clamp, default -128", -128, 127),
          opt("max", K::Int, "upper clamp, default 127", -128, 127)};
}

std::vector<AttrSpec> quantize_attrs() {
  return {req("exponent", K::Int, "scale 2^exponent", -64, 64),
          opt("min", K::Int, "lower clamp, default -128", -2147483648.0, 2147483647.0),
          opt("max", K::Int, "upper clamp, default 127", -2147483648.0, 2147483647.0)};
}

std::vector<AttrSpec> operator+(std::vector<AttrSpec> a, const std::vector<AttrSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

void add_attr_schemas(std::map<std::string, OpDef>& table) {
  auto set = [&](const std::string& op, std::vector<AttrSpec> attrs) {
    auto it = table.find(op);
    LOOM_CHECK(it != table.end(), "attribute schema for operator '", op, "', which is not registered");
    it->second.attrs = std::move(attrs);
  };
  const AttrSpec keepdims = flag("keepdims", "keep reduced axes as size 1, default 1");

  // nn
  set("conv2d", conv_attrs());
  set("conv2d_winograd", conv_attrs() + std::vector<AttrSpec>{req("tile", K::Int, "output tile m of F(m x m, 3 x 3)")});
  set("dense", {opt("n_block", K::Int, "output features per block of packed weights (alter_layout), default 0", 0)});
  set("batch_norm", {opt("epsilon", K::Float, "added to the variance, default 1e-5", 0)});
  set("softmax", {opt("axis", K::Int, "axis, negative counts from the end, default -1")});
  set("max_pool2d", pool_attrs());
  set("avg_pool2d", pool_attrs());

  // element-wise
  set("clip", {opt("min", K::Float, "lower bound, default none"), opt("max", K::Float, "upper bound, default none")});
  set("leaky_relu", {opt("alpha", K::Float, "slope below 0, default 0.01")});
  set("elu", {opt("alpha", K::Float, "default 1")});
  set("selu", {opt("alpha", K::Float, "default 1.6733"), opt("gamma", K::Float, "default 1.0507")});
  set("celu", {opt("alpha", K::Float, "default 1")});
  set("hard_sigmoid", {opt("alpha", K::Float, "default 0.2"), opt("beta", K::Float, "default 0.5")});
  set("thresholded_relu", {opt("alpha", K::Float, "threshold, default 1")});
  set("shrink", {opt("lambd", K::Float, "default 0.5"), opt("bias", K::Float, "default 0")});
  set("mod", {flag("fmod", "C fmod (sign of the dividend) instead of the divisor's sign, default 0")});
  set("is_inf", {flag("detect_positive", "default 1"), flag("detect_negative", "default 1")});

  // reductions
  for (auto& [name, def] : table)  // every reduce_<kind> of op_registry_reduce.cc
    if (name.rfind("reduce_", 0) == 0)
      def.attrs = {opt("axes", K::Ints, "axes to reduce, default (or empty) all"), keepdims};
  for (const char* kind : {"arg_max", "arg_min"})
    set(kind, {opt("axis", K::Int, "axis, default 0"), keepdims,
               flag("select_last_index", "the last extreme instead of the first, default 0")});

  // int8 quantization
  set("quantize", quantize_attrs());
  set("dequantize", {req("exponent", K::Int, "scale 2^exponent", -64, 64)});
  set("fake_quantize", quantize_attrs());
  set("requantize", requantize_attrs(-30, 30));        // negative: a left shift
  set("requantize_channel", requantize_attrs(1, 62));  // after the per-channel fixed-point multiplier
  set("add_shifted", {opt("lshift_a", K::Int, "left shift of operand a, default 0", 0, 30),
                      opt("lshift_b", K::Int, "left shift of operand b, default 0", 0, 30)});

  // the accelerator partition
  set("accel_pack", {req("b", K::Int, "rows per block (batch)", 1), req("bi", K::Int, "channels per block", 1),
                     opt("n_padded", K::Int, "rows after padding, default the input's", 1),
                     opt("c_padded", K::Int, "channels after padding, default the input's", 1)});
  set("accel_unpack",
      {opt("n", K::Int, "rows kept, default all", 1), opt("c", K::Int, "channels kept, default all", 1)});
  set("accel_dense", requantize_attrs(0, 31));
  set("accel_conv2d",
      std::vector<AttrSpec>{
          req("stride", K::Int, "stride in both dimensions", 1), req("pad", K::Int, "padding on every side", 0),
          opt("digit_bits", K::Int, "weights [O/bo, I/bi, P, kh, kw, bo, bi] in P passes of digits this wide", 2, 4)} +
          requantize_attrs(0, 31));
  set("accel_add", requantize_attrs(0, 31) +
                       std::vector<AttrSpec>{opt("lshift_a", K::Int, "left shift of operand a, default 0", 0, 14),
                                             opt("lshift_b", K::Int, "left shift of operand b, default 0", 0, 14)});

  // data movement
  set("cast", {req("to", K::String, "element type, e.g. float32, int8")});
  set("slice", {req("starts", K::Ints, "first index per axis"), req("ends", K::Ints, "end index per axis"),
                req("axes", K::Ints, "axes sliced"), req("steps", K::Ints, "step per axis")});
  set("gather", {opt("axis", K::Int, "axis, default 0")});
  set("gather_elements", {opt("axis", K::Int, "axis, default 0")});
  set("expand", {req("shape", K::Ints, "shape broadcast to")});
  set("tile", {req("repeats", K::Ints, "copies per axis", 0)});
  set("trilu", {opt("k", K::Int, "diagonal offset, default 0"), flag("upper", "keep the upper triangle, default 1")});
  set("cumsum", {opt("axis", K::Int, "axis, default 0"), flag("exclusive", "default 0"), flag("reverse", "default 0")});
  set("resample_axis", {req("axis", K::Int, "axis resampled")});
  set("top_k",
      {req("k", K::Int, "elements kept", 0), opt("axis", K::Int, "axis, default -1"),
       flag("largest", "the largest (1) or smallest (0), default 1"), req("output", K::String, "values or indices")});
  set("one_hot", {req("depth", K::Int, "classes", 1), opt("axis", K::Int, "axis of the new dimension, default -1")});
  set("scatter_elements", {opt("axis", K::Int, "axis, default 0"),
                           opt("reduction", K::String, "none, add, mul, max or min, default none")});
  set("scatter_nd", {opt("reduction", K::String, "none, add, mul, max or min, default none")});
  set("gather_nd", {opt("batch_dims", K::Int, "leading batch axes, default 0", 0)});
  set("einsum", {req("equation", K::String, "the Einstein summation, e.g. bij,bjk->bik")});

  // layouts and transforms
  set("layout_transform",
      {req("to", K::String, "NCHW or NCHWc"), opt("block", K::Int, "channels per block (NCHWc)", 1)});
  set("reshape", {req("shape", K::Ints, "the new shape"),
                  flag("in_place", "a view of its input's storage, no kernel (reshape_in_place), default 0")});
  set("transpose", {req("perm", K::Ints, "output axis k reads input axis perm[k]")});
  set("concat", {req("axis", K::Int, "axis joined"),
                 flag("in_place", "producers write into the output (concat_in_place), default 0")});
  set("pad", {req("pads", K::Ints, "[begin_0, ..., end_0, ...]"),
              opt("mode", K::String, "constant, reflect or edge, default constant"),
              opt("value", K::Float, "constant mode's value, default 0")});
}

}  // namespace loom::graph
