// Operator family: int8 quantization with power-of-two steps (ops/layers.h): value = integer * 2^exponent. Each
// operator: fusion pattern, input count, type inference, tensor expressions, reference implementation (op_registry.h).
#include <cmath>

#include "op_registry_util.h"

namespace loom::graph {

using ir::Expr;
using ir::Tensor;

void add_quant_ops(const AddOp& add) {
  // Element-wise maps computed in their input's channel layout; a clamp with min >= 0 (a folded
  // ReLU) makes every output non-negative.
  auto follows_input = [](OpDef& d) { d.layout_rule = LayoutRule::FollowsInput; };
  auto follows_input_clamped = [](OpDef& d) {
    d.layout_rule = LayoutRule::FollowsInput;
    d.nonnegative = min_attr_nonnegative;
  };
  // quantize is monotone with 0 -> 0, so a non-negative float input (a ReLU's, a max pool's of one)
  // stays non-negative unless the clamp's upper bound is below 0. Not so for requantize: its
  // rounding add may wrap an int32 near the top of its range.
  auto quantize_nonnegative = [](const Node& n, const std::function<bool(size_t)>& input) {
    return n.attrs.get_int("min", -128) >= 0 || (n.attrs.get_int("max", 127) >= 0 && input(0));
  };
  OpDef& quantize =
      add({"quantize", OpPattern::ElemWise, 1, 1,
           [](const Node& n, const std::vector<TensorType>& in) {
             expect_dtype(in[0], DataType::Float(32), "input");
             int_attr(n, "exponent");
             return TensorType{in[0].shape, DataType::Int(8)};
           },
           [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
             return ops::quantize(in[0], int(n.attrs.get_int("exponent")), int(n.attrs.get_int("min", -128)),
                                  int(n.attrs.get_int("max", 127)), name);
           },
           ref::elementwise(ref::quantized_steps)});
  follows_input(quantize);
  quantize.nonnegative = quantize_nonnegative;
  follows_input(add({"dequantize", OpPattern::ElemWise, 1, 1,
                     [](const Node& n, const std::vector<TensorType>& in) {
                       if (in[0].dtype != DataType::Int(8) && in[0].dtype != DataType::Int(32))
                         LOOM_THROW(TypeError, "input must be int8 or int32, is ", in[0].str());
                       int_attr(n, "exponent");
                       return TensorType{in[0].shape, DataType::Float(32)};
                     },
                     [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
                       return ops::dequantize(in[0], int(n.attrs.get_int("exponent")), name);
                     },
                     ref::elementwise([](const Node& n, double x) {
                       return x * std::ldexp(1.0, int(n.attrs.get_int("exponent")));
                     })}));
  follows_input_clamped(add({"requantize", OpPattern::ElemWise, 1, 1,
                             [](const Node& n, const std::vector<TensorType>& in) {
                               expect_dtype(in[0], DataType::Int(32), "input");
                               int_attr(n, "shift");
                               int lo = int_attr(n, "min", -128), hi = int_attr(n, "max", 127);
                               if (lo > hi) LOOM_THROW(ModelError, "empty clamp range [", lo, ", ", hi, "]");
                               return TensorType{in[0].shape, DataType::Int(8)};
                             },
                             [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
                               return ops::requantize(in[0], int(n.attrs.get_int("shift")),
                                                      int(n.attrs.get_int("min", -128)),
                                                      int(n.attrs.get_int("max", 127)), name);
                             },
                             ref::elementwise(ref::requantized)}));
  follows_input_clamped(
      add({"requantize_channel", OpPattern::ElemWise, 2, 2,
           [](const Node& n, const std::vector<TensorType>& in) {
             expect_dtype(in[0], DataType::Int(32), "input");
             expect_dtype(in[1], DataType::Int(32), "multipliers");
             int_attr(n, "shift");
             int lo = int_attr(n, "min", -128), hi = int_attr(n, "max", 127);
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
             return ops::requantize_channel(in[0], in[1], int(n.attrs.get_int("shift")),
                                            int(n.attrs.get_int("min", -128)), int(n.attrs.get_int("max", 127)), name);
           },
           ref::requantize_channel}));
  add({"add_shifted", OpPattern::ElemWise, 2, 2,
       [](const Node& n, const std::vector<TensorType>& in) {
         for (auto& t : in)
           if (t.dtype != DataType::Int(8) && t.dtype != DataType::Int(32))
             LOOM_THROW(TypeError, "operands must be int8 or int32, got ", t.str());
         if (in[0].shape != in[1].shape)
           LOOM_THROW(ShapeError, "operands have shapes ", shape_str(in[0].shape), " and ", shape_str(in[1].shape));
         int_attr(n, "lshift_a", 0);
         int_attr(n, "lshift_b", 0);
         return TensorType{in[0].shape, DataType::Int(32)};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::add_shifted(in[0], in[1], int(n.attrs.get_int("lshift_a", 0)), int(n.attrs.get_int("lshift_b", 0)),
                                 name);
       },
       ref::add_shifted})
      .layout_rule = LayoutRule::Broadcasting;
  follows_input(add({"fake_quantize", OpPattern::ElemWise, 1, 1,
                     [](const Node& n, const std::vector<TensorType>& in) {
                       expect_dtype(in[0], DataType::Float(32), "input");
                       int_attr(n, "exponent");
                       if (n.attrs.get_int("min", -128) > n.attrs.get_int("max", 127))
                         LOOM_THROW(ModelError, "empty clamp range");
                       return in[0];
                     },
                     [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
                       return ops::fake_quantize(in[0], int(n.attrs.get_int("exponent")),
                                                 int(n.attrs.get_int("min", -128)), int(n.attrs.get_int("max", 127)),
                                                 name);
                     },
                     ref::elementwise([](const Node& n, double x) {
                       return double(static_cast<float>(ref::quantized_steps(n, x) *
                                                        std::ldexp(1.0, int(n.attrs.get_int("exponent")))));
                     })}));
}

}  // namespace loom::graph
