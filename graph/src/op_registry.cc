#include "loom/graph/op_registry.h"

#include "accel_ops.h"

#include <cmath>
#include <map>
#include <optional>

#include "loom/ops/layers.h"
#include "loom/runtime/error.h"

namespace loom::graph {

using ir::Expr;
using ir::Tensor;

const char* to_string(OpPattern p) {
  switch (p) {
    case OpPattern::ElemWise:
      return "elemwise";
    case OpPattern::Broadcast:
      return "broadcast";
    case OpPattern::Injective:
      return "injective";
    case OpPattern::CommReduce:
      return "reduce";
    case OpPattern::OutEWiseFusable:
      return "out-elemwise-fusable";
    case OpPattern::Opaque:
      return "opaque";
  }
  return "?";
}

namespace {

template <size_t N>
std::array<int64_t, N> fixed(const Attrs& a, const std::string& key, std::array<int64_t, N> def) {
  if (!a.has(key)) return def;
  auto v = a.get_ints(key);
  if (v.size() != N) LOOM_THROW(ModelError, "attribute '", key, "' must have ", N, " values, has ", v.size());
  std::array<int64_t, N> out{};
  std::copy(v.begin(), v.end(), out.begin());
  return out;
}

ops::Conv2dParams conv_params(const Node& n) {
  ops::Conv2dParams p;
  p.strides = fixed<2>(n.attrs, "strides", {1, 1});
  p.pads = fixed<4>(n.attrs, "pads", {0, 0, 0, 0});
  p.dilations = fixed<2>(n.attrs, "dilations", {1, 1});
  p.groups = n.attrs.get_int("groups", 1);
  p.oc_block = n.attrs.get_int("oc_block", 0);
  return p;
}

ops::Pool2dParams pool_params(const Node& n) {
  ops::Pool2dParams p;
  p.kernel = fixed<2>(n.attrs, "kernel", {1, 1});
  p.strides = fixed<2>(n.attrs, "strides", {1, 1});
  p.pads = fixed<4>(n.attrs, "pads", {0, 0, 0, 0});
  p.dilations = fixed<2>(n.attrs, "dilations", {1, 1});
  p.ceil_mode = n.attrs.get_int("ceil_mode", 0) != 0;
  p.count_include_pad = n.attrs.get_int("count_include_pad", 0) != 0;
  return p;
}

void expect_float(const TensorType& t, const char* what) {
  if (!t.dtype.is_float()) LOOM_THROW(TypeError, what, " must be floating point, is ", t.str());
}

void same_dtype(const std::vector<TensorType>& in) {
  for (auto& t : in)
    if (t.dtype != in[0].dtype)
      LOOM_THROW(TypeError, "inputs have different element types (", in[0].str(), ", ", t.str(), ")");
}

// conv2d/dense: float operands of one type give that type; int8 data and weights (with an
// int32 bias) accumulate and give int32.
DataType product_dtype(const std::vector<TensorType>& in) {
  if (in[0].dtype != DataType::Int(8)) {
    same_dtype(in);
    return in[0].dtype;
  }
  // int16 weights: the CPU's int16-pairs form (alter_layout packs int8 weights so).
  bool pairs = in[1].dtype == DataType::Int(16) && ops::int8_conv_weight_group(in[1].shape) == 2;
  if (in[1].dtype != DataType::Int(8) && !pairs)
    LOOM_THROW(TypeError, "int8 data needs int8 weights, got ", in[1].str());
  if (in.size() > 2 && in[2].dtype != DataType::Int(32))
    LOOM_THROW(TypeError, "int8 operands need an int32 bias, got ", in[2].str());
  return DataType::Int(32);
}

// An integer attribute in [lo, hi]; `def` if given and the attribute is absent.
int int_attr(const Node& n, const std::string& key, int64_t lo, int64_t hi, std::optional<int64_t> def = std::nullopt) {
  int64_t v = def && !n.attrs.has(key) ? *def : n.attrs.get_int(key);
  if (v < lo || v > hi) LOOM_THROW(ModelError, "attribute '", key, "' = ", v, " is out of range [", lo, ", ", hi, "]");
  return static_cast<int>(v);
}

void expect_dtype(const TensorType& t, DataType want, const char* what) {
  if (t.dtype != want) LOOM_THROW(TypeError, what, " must be ", want.str(), ", is ", t.str());
}

// Tensor expressions see placeholders with the graph's types, so re-inferring here would only
// repeat infer; compute functions just build.
std::map<std::string, OpDef> build_table() {
  std::map<std::string, OpDef> t;
  auto add = [&](OpDef d) { t.emplace(d.name, std::move(d)); };
  add_accel_ops(add);

  add({"conv2d", OpPattern::OutEWiseFusable, 2, 3,
       [](const Node& n, const std::vector<TensorType>& in) {
         DataType out_dtype = product_dtype(in);
         ops::Conv2dParams p = conv_params(n);
         if (n.attrs.get_string("layout", "NCHW") == "NCHWc") {
           // Byte groups read the int8 input as uint8: only for an input known to be in [0, 127].
           if (ops::int8_conv_weight_group(in[1].shape) == 4 && n.attrs.get_int("input_nonnegative", 0) != 1)
             LOOM_THROW(TypeError, "byte-group int8 weights ", in[1].str(),
                        " read the input as uint8: they need attribute input_nonnegative = 1 (an input known to be in "
                        "[0, 127])");
           Shape out = ops::conv2d_nchwc_shape(in[0].shape, in[1].shape, p);
           if (in.size() == 3 && in[2].shape != Shape{out[1] * out[4]})
             LOOM_THROW(ShapeError, "bias has shape ", shape_str(in[2].shape), ", expected [", out[1] * out[4], "]");
           return TensorType{out, out_dtype};
         }
         Shape w = in[1].shape;
         if (p.oc_block > 0) {
           if (w.size() != 5) LOOM_THROW(ShapeError, "packed weights must have rank 5, have ", shape_str(w));
           w = {w[0] * w[4], w[1], w[2], w[3]};
         }
         Shape out = ops::conv2d_shape(in[0].shape, w, p);
         if (in.size() == 3 && in[2].shape != Shape{out[1]})
           LOOM_THROW(ShapeError, "bias has shape ", shape_str(in[2].shape), ", expected [", out[1], "]");
         return TensorType{out, out_dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         if (n.attrs.get_string("layout", "NCHW") == "NCHWc")
           return ops::conv2d_nchwc(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), conv_params(n), name);
         return ops::conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), conv_params(n), name);
       }});
  add({"layout_transform", OpPattern::Injective, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         const Shape& x = in[0].shape;
         if (n.attrs.get_string("to") == "NCHWc") {
           int64_t b = n.attrs.get_int("block");
           if (x.size() != 4 || b <= 0 || x[1] % b != 0)
             LOOM_THROW(ShapeError, in[0].str(), " cannot be blocked by ", b, " channels");
           return TensorType{{x[0], x[1] / b, x[2], x[3], b}, in[0].dtype};
         }
         if (x.size() != 5) LOOM_THROW(ShapeError, "NCHWc -> NCHW needs a rank-5 input, got ", in[0].str());
         return TensorType{{x[0], x[1] * x[4], x[2], x[3]}, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return n.attrs.get_string("to") == "NCHWc" ? ops::to_nchwc(in[0], n.attrs.get_int("block"), name)
                                                    : ops::from_nchwc(in[0], name);
       }});
  add({"dense", OpPattern::OutEWiseFusable, 2, 3,
       [](const Node& n, const std::vector<TensorType>& in) {
         DataType out_dtype = product_dtype(in);
         int64_t b = n.attrs.get_int("n_block", 0);
         const Shape& x = in[0].shape;
         const Shape& w = in[1].shape;
         if (x.size() != 2) LOOM_THROW(ShapeError, "input must be 2-D, is ", shape_str(x));
         int64_t N = b > 0 ? (w.size() == 3 ? w[0] * w[2] : -1) : (w.size() == 2 ? w[0] : -1);
         int64_t K = b > 0 ? (w.size() == 3 ? w[1] : -1) : (w.size() == 2 ? w[1] : -1);
         if (N < 0) LOOM_THROW(ShapeError, "weights have shape ", shape_str(w), ", expected [N, K]");
         if (K != x[1]) LOOM_THROW(ShapeError, "input has ", x[1], " features, weights expect ", K);
         if (in.size() == 3 && in[2].shape != Shape{N})
           LOOM_THROW(ShapeError, "bias has shape ", shape_str(in[2].shape), ", expected [", N, "]");
         return TensorType{{x[0], N}, out_dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::dense(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), n.attrs.get_int("n_block", 0), name);
       }});
  add({"matmul", OpPattern::OutEWiseFusable, 2, 2,
       [](const Node&, const std::vector<TensorType>& in) {
         same_dtype(in);
         return TensorType{ops::matmul_shape(in[0].shape, in[1].shape), in[0].dtype};
       },
       [](const Node&, const std::vector<Tensor>& in, const std::string& name) {
         return ops::batch_matmul(in[0], in[1], name);
       }});
  add({"batch_norm", OpPattern::Broadcast, 5, 5,
       [](const Node&, const std::vector<TensorType>& in) {
         same_dtype(in);
         expect_float(in[0], "input");
         if (in[0].shape.size() < 2) LOOM_THROW(ShapeError, "input must have a channel axis, is ", in[0].str());
         for (int i = 1; i < 5; ++i)
           if (in[i].shape != Shape{in[0].shape[1]})
             LOOM_THROW(ShapeError, "per-channel input ", i, " has shape ", shape_str(in[i].shape), ", expected [",
                        in[0].shape[1], "]");
         return in[0];
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         double eps = n.attrs.get_float("epsilon", 1e-5);
         return ir::compute(in[0].shape(), ir::ComputeFn([&](const std::vector<ir::Var>& v) {
                              std::vector<Expr> idx(v.begin(), v.end());
                              Expr c = v[1];
                              Expr x = in[0](idx);
                              Expr inv = ir::make_one(x.type()) / ir::sqrt(in[4](c) + ir::make_const(x.type(), eps));
                              return (x - in[3](c)) * inv * in[1](c) + in[2](c);
                            }),
                            name, "broadcast");
       }});
  struct Bin {
    const char* name;
    ops::BinaryOp op;
  };
  for (Bin b :
       {Bin{"add", ops::BinaryOp::Add}, Bin{"sub", ops::BinaryOp::Sub}, Bin{"mul", ops::BinaryOp::Mul},
        Bin{"div", ops::BinaryOp::Div}, Bin{"maximum", ops::BinaryOp::Max}, Bin{"minimum", ops::BinaryOp::Min}}) {
    ops::BinaryOp op = b.op;
    add({b.name, OpPattern::Broadcast, 2, 2,
         [](const Node&, const std::vector<TensorType>& in) {
           same_dtype(in);
           return TensorType{ops::broadcast_shape(in[0].shape, in[1].shape), in[0].dtype};
         },
         [op](const Node&, const std::vector<Tensor>& in, const std::string& name) {
           return ops::binary(op, in[0], in[1], name);
         }});
  }
  using UnaryFn = std::function<Expr(const Node&, Expr)>;
  auto unary = [&](const std::string& name, bool float_only, UnaryFn f) {
    add({name, OpPattern::ElemWise, 1, 1,
         [float_only](const Node&, const std::vector<TensorType>& in) {
           if (float_only) expect_float(in[0], "input");
           return in[0];
         },
         [f](const Node& n, const std::vector<Tensor>& in, const std::string& nm) {
           return ops::unary(
               in[0], [&](Expr x) { return f(n, x); }, nm);
         }});
  };
  unary("relu", false, [](const Node&, Expr x) { return ir::max(x, ir::make_zero(x.type())); });
  unary("clip", false, [](const Node& n, Expr x) {
    Expr r = x;
    if (n.attrs.has("min")) r = ir::max(r, ir::make_const(x.type(), n.attrs.get_float("min")));
    if (n.attrs.has("max")) r = ir::min(r, ir::make_const(x.type(), n.attrs.get_float("max")));
    return r;
  });
  unary("leaky_relu", true, [](const Node& n, Expr x) {
    return ir::select(x > ir::make_zero(x.type()), x, x * ir::make_const(x.type(), n.attrs.get_float("alpha", 0.01)));
  });
  unary("sigmoid", true, [](const Node&, Expr x) { return ops::sigmoid(x); });
  unary("tanh", true, [](const Node&, Expr x) { return ir::tanh(x); });
  unary("exp", true, [](const Node&, Expr x) { return ir::exp(x); });
  unary("sqrt", true, [](const Node&, Expr x) { return ir::sqrt(x); });
  unary("neg", false, [](const Node&, Expr x) { return -x; });
  unary("abs", false, [](const Node&, Expr x) { return ir::abs(x); });
  unary("identity", false, [](const Node&, Expr x) { return x; });

  // Power-of-two int8 quantization (ops/layers.h): value = integer * 2^exponent.
  add({"quantize", OpPattern::ElemWise, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_dtype(in[0], DataType::Float(32), "input");
         int_attr(n, "exponent", -64, 64);
         return TensorType{in[0].shape, DataType::Int(8)};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::quantize(in[0], int(n.attrs.get_int("exponent")), int(n.attrs.get_int("min", -128)),
                              int(n.attrs.get_int("max", 127)), name);
       }});
  add({"dequantize", OpPattern::ElemWise, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         if (in[0].dtype != DataType::Int(8) && in[0].dtype != DataType::Int(32))
           LOOM_THROW(TypeError, "input must be int8 or int32, is ", in[0].str());
         int_attr(n, "exponent", -64, 64);
         return TensorType{in[0].shape, DataType::Float(32)};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::dequantize(in[0], int(n.attrs.get_int("exponent")), name);
       }});
  add({"requantize", OpPattern::ElemWise, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_dtype(in[0], DataType::Int(32), "input");
         int_attr(n, "shift", -30, 30);
         int lo = int_attr(n, "min", -128, 127, -128), hi = int_attr(n, "max", -128, 127, 127);
         if (lo > hi) LOOM_THROW(ModelError, "empty clamp range [", lo, ", ", hi, "]");
         return TensorType{in[0].shape, DataType::Int(8)};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::requantize(in[0], int(n.attrs.get_int("shift")), int(n.attrs.get_int("min", -128)),
                                int(n.attrs.get_int("max", 127)), name);
       }});
  add({"requantize_channel", OpPattern::ElemWise, 2, 2,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_dtype(in[0], DataType::Int(32), "input");
         expect_dtype(in[1], DataType::Int(32), "multipliers");
         int_attr(n, "shift", 1, 62);
         int lo = int_attr(n, "min", -128, 127, -128), hi = int_attr(n, "max", -128, 127, 127);
         if (lo > hi) LOOM_THROW(ModelError, "empty clamp range [", lo, ", ", hi, "]");
         const Shape& s = in[0].shape;
         if (s.size() != 2 && s.size() != 4 && s.size() != 5)
           LOOM_THROW(ShapeError, "input must be NC, NCHW or NCHWc, is ", in[0].str());
         int64_t c = s[1] * (s.size() == 5 ? s[4] : 1);
         if (in[1].shape != Shape{c})
           LOOM_THROW(ShapeError, "multipliers ", in[1].str(), " must be one per channel (", c, ")");
         return TensorType{s, DataType::Int(8)};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::requantize_channel(in[0], in[1], int(n.attrs.get_int("shift")), int(n.attrs.get_int("min", -128)),
                                        int(n.attrs.get_int("max", 127)), name);
       }});
  add({"add_shifted", OpPattern::ElemWise, 2, 2,
       [](const Node& n, const std::vector<TensorType>& in) {
         for (auto& t : in)
           if (t.dtype != DataType::Int(8) && t.dtype != DataType::Int(32))
             LOOM_THROW(TypeError, "operands must be int8 or int32, got ", t.str());
         if (in[0].shape != in[1].shape)
           LOOM_THROW(ShapeError, "operands have shapes ", shape_str(in[0].shape), " and ", shape_str(in[1].shape));
         int_attr(n, "lshift_a", 0, 30, 0);
         int_attr(n, "lshift_b", 0, 30, 0);
         return TensorType{in[0].shape, DataType::Int(32)};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::add_shifted(in[0], in[1], int(n.attrs.get_int("lshift_a", 0)), int(n.attrs.get_int("lshift_b", 0)),
                                 name);
       }});
  add({"fake_quantize", OpPattern::ElemWise, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_dtype(in[0], DataType::Float(32), "input");
         int_attr(n, "exponent", -64, 64);
         if (n.attrs.get_int("min", -128) > n.attrs.get_int("max", 127)) LOOM_THROW(ModelError, "empty clamp range");
         return in[0];
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::fake_quantize(in[0], int(n.attrs.get_int("exponent")), int(n.attrs.get_int("min", -128)),
                                   int(n.attrs.get_int("max", 127)), name);
       }});

  add({"softmax", OpPattern::Opaque, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_float(in[0], "input");
         int64_t r = static_cast<int64_t>(in[0].shape.size()), axis = n.attrs.get_int("axis", -1);
         if (axis < -r || axis >= r) LOOM_THROW(ShapeError, "axis ", axis, " out of range for rank ", r);
         return in[0];
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::softmax(in[0], static_cast<int>(n.attrs.get_int("axis", -1)), name);
       }});
  add({"max_pool2d", OpPattern::OutEWiseFusable, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         return TensorType{ops::pool2d_shape(in[0].shape, pool_params(n)), in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::max_pool2d(in[0], pool_params(n), name);
       }});
  add({"avg_pool2d", OpPattern::OutEWiseFusable, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_float(in[0], "input");
         return TensorType{ops::pool2d_shape(in[0].shape, pool_params(n)), in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::avg_pool2d(in[0], pool_params(n), name);
       }});
  add({"global_avg_pool2d", OpPattern::OutEWiseFusable, 1, 1,
       [](const Node&, const std::vector<TensorType>& in) {
         expect_float(in[0], "input");
         if (in[0].shape.size() != 4 && in[0].shape.size() != 5)
           LOOM_THROW(ShapeError, "input must be NCHW or NCHWc, is ", in[0].str());
         Shape out = in[0].shape;
         out[2] = out[3] = 1;
         return TensorType{out, in[0].dtype};
       },
       [](const Node&, const std::vector<Tensor>& in, const std::string& name) {
         return ops::global_avg_pool2d(in[0], name);
       }});
  add({"reshape", OpPattern::Injective, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         Shape s = n.attrs.get_ints("shape");
         TensorType out{s, in[0].dtype};
         if (out.numel() != in[0].numel()) LOOM_THROW(ShapeError, "cannot reshape ", in[0].str(), " to ", shape_str(s));
         return out;
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::reshape(in[0], n.attrs.get_ints("shape"), name);
       }});
  add({"transpose", OpPattern::Injective, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         auto perm = n.attrs.get_ints("perm");
         if (perm.size() != in[0].shape.size())
           LOOM_THROW(ShapeError, "permutation of ", perm.size(), " axes for ", in[0].str());
         Shape out;
         std::vector<bool> seen(perm.size());
         for (int64_t p : perm) {
           if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p])
             LOOM_THROW(ShapeError, "invalid permutation");
           seen[p] = true;
           out.push_back(in[0].shape[p]);
         }
         return TensorType{out, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::transpose(in[0], n.attrs.get_ints("perm"), name);
       }});
  add({"concat", OpPattern::Injective, 1, 64,
       [](const Node& n, const std::vector<TensorType>& in) {
         same_dtype(in);
         int64_t r = static_cast<int64_t>(in[0].shape.size()), axis = n.attrs.get_int("axis");
         if (axis < 0) axis += r;
         if (axis < 0 || axis >= r) LOOM_THROW(ShapeError, "axis out of range for rank ", r);
         Shape out = in[0].shape;
         for (size_t i = 1; i < in.size(); ++i) {
           Shape a = in[i].shape, b = in[0].shape;
           if (a.size() != b.size())
             LOOM_THROW(ShapeError, "input ", i, " has rank ", a.size(), ", input 0 has ", b.size());
           a[axis] = b[axis] = 0;
           if (a != b)
             LOOM_THROW(ShapeError, "input ", i, " ", in[i].str(), " differs from input 0 ", in[0].str(), " off axis ",
                        axis);
           out[axis] += in[i].shape[axis];
         }
         return TensorType{out, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::concat(in, static_cast<int>(n.attrs.get_int("axis")), name);
       }});
  add({"pad", OpPattern::Injective, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         auto pads = n.attrs.get_ints("pads");
         size_t r = in[0].shape.size();
         if (pads.size() != 2 * r) LOOM_THROW(ShapeError, pads.size(), " pads for rank ", r);
         Shape out = in[0].shape;
         for (size_t d = 0; d < r; ++d) {
           if (pads[d] < 0 || pads[d + r] < 0) LOOM_THROW(ShapeError, "negative pads are not supported");
           if (__builtin_add_overflow(out[d], pads[d], &out[d]) || __builtin_add_overflow(out[d], pads[d + r], &out[d]))
             LOOM_THROW(ShapeError, "pads ", pads[d], " and ", pads[d + r], " overflow dimension ", d);
         }
         std::string mode = n.attrs.get_string("mode", "constant");
         if (mode != "constant" && mode != "reflect" && mode != "edge")
           LOOM_THROW(ModelError, "pad mode '", mode, "' is not supported (constant, reflect, edge)");
         return TensorType{out, in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         std::string mode = n.attrs.get_string("mode", "constant");
         ops::PadMode m = mode == "reflect" ? ops::PadMode::Reflect
                          : mode == "edge"  ? ops::PadMode::Edge
                                            : ops::PadMode::Constant;
         return ops::pad(in[0], n.attrs.get_ints("pads"), m, n.attrs.get_float("value", 0.0), name);
       }});
  add({"resize_nearest", OpPattern::Injective, 3, 3,
       [](const Node&, const std::vector<TensorType>& in) {
         if (in[0].shape.size() != 4) LOOM_THROW(ShapeError, "input must be NCHW, is ", in[0].str());
         if (in[1].shape.size() != 1 || in[2].shape.size() != 1) LOOM_THROW(ShapeError, "index maps must be 1-D");
         return TensorType{{in[0].shape[0], in[0].shape[1], in[1].shape[0], in[2].shape[0]}, in[0].dtype};
       },
       [](const Node&, const std::vector<Tensor>& in, const std::string& name) {
         return ops::resize_nearest(in[0], in[1], in[2], name);
       }});
  return t;
}

const std::map<std::string, OpDef>& table() {
  static const std::map<std::string, OpDef> t = build_table();
  return t;
}

}  // namespace

const OpDef& op_def(const std::string& name) {
  auto it = table().find(name);
  if (it == table().end()) {
    std::string have;
    for (auto& [k, v] : table()) have += (have.empty() ? "" : ", ") + k;
    LOOM_THROW(ModelError, "unknown graph operator '", name, "' (supported: ", have, ")");
  }
  return it->second;
}

bool has_op(const std::string& name) { return table().count(name) != 0; }

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (auto& [k, v] : table()) names.push_back(k);
  return names;
}

}  // namespace loom::graph
