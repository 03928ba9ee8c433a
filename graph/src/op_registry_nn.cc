// Operator family: convolutions, dense layers, matrix products, BatchNorm, pools and softmax. Each operator: fusion
// pattern, input count, type inference, tensor expressions, reference implementation (op_registry.h).
#include <cmath>

#include "op_registry_util.h"
#include "op_schedules.h"

namespace loom::graph {

using ir::Expr;
using ir::Tensor;

void add_nn_ops(const AddOp& add) {
  OpDef& conv2d = add(
      {"conv2d", OpPattern::OutEWiseFusable, 2, 3,
       [](const Node& n, const std::vector<TensorType>& in) {
         DataType out_dtype = product_dtype(in);
         ops::Conv2dParams p = ConvAttrs::from(n);
         if (conv_layout(n).blocked()) {
           // Byte groups read the int8 input as uint8: only for an input known to be in [0, 127].
           if (ops::int8_conv_weight_group(in[1].shape) == 4 && n.attrs.get_int("input_nonnegative", 0) != 1 &&
               n.attrs.get_int("input_offset", 0) != 1)
             LOOM_THROW(TypeError, "byte-group int8 weights ", in[1].str(),
                        " read the input as uint8: they need attribute input_nonnegative = 1 (an input known to be in "
                        "[0, 127]) or input_offset = 1 (the input plus 128)");
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
         if (p.interleaved_groups && (p.groups <= 1 || out[1] != in[0].shape[1]))
           LOOM_THROW(ShapeError, "interleaved groups need several groups and as many output as input channels; ",
                      p.groups, " groups, ", in[0].shape[1], " -> ", out[1], " channels");
         if (in.size() == 3 && in[2].shape != Shape{out[1]})
           LOOM_THROW(ShapeError, "bias has shape ", shape_str(in[2].shape), ", expected [", out[1], "]");
         return TensorType{out, out_dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         if (conv_layout(n).blocked())
           return ops::conv2d_nchwc(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), ConvAttrs::from(n), name);
         return ops::conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), ConvAttrs::from(n), name);
       },
       ref::conv2d});
  conv2d.layer = WeightedLayer::Conv2d;
  conv2d.int8 = Int8Rule::Accumulate;
  conv2d.schedule_cpu = schedule_conv2d_cpu;
  conv2d.schedule_cuda = schedule_conv2d_cuda;
  // A 3x3 stride-1 float conv on NCHWc data as Winograd F(m x m, 3 x 3) (pass winograd_conv): input
  // [N, C/ib, H, W, ib], weights transformed [alpha^2, O/ob, C/ib, ib, ob], attributes pads and
  // tile (m); writes blocks of ob channels like the blocked conv2d it replaces.
  OpDef& winograd =
      add({"conv2d_winograd", OpPattern::OutEWiseFusable, 2, 3,
           [](const Node& n, const std::vector<TensorType>& in) {
             if (in[0].dtype != DataType::Float(32) || in[1].dtype != DataType::Float(32))
               LOOM_THROW(TypeError, "conv2d_winograd takes float32 data and weights, got ", in[0].str(), " and ",
                          in[1].str());
             Shape out = ops::conv2d_winograd_shape(in[0].shape, in[1].shape, ConvAttrs::from(n),
                                                    int(n.attrs.get_int("tile", 0)));
             if (in.size() == 3 && (in[2].shape != Shape{out[1] * out[4]} || in[2].dtype != DataType::Float(32)))
               LOOM_THROW(ShapeError, "bias is ", in[2].str(), ", expected float32[", out[1] * out[4], "]");
             return TensorType{out, DataType::Float(32)};
           },
           [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
             return ops::conv2d_winograd_nchwc(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), ConvAttrs::from(n),
                                               int(n.attrs.get_int("tile", 0)), name);
           },
           ref::conv2d_winograd});
  winograd.schedule_cpu = schedule_conv2d_winograd_cpu;
  OpDef& dense =
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
           },
           ref::dense});
  dense.layer = WeightedLayer::Dense;
  dense.int8 = Int8Rule::Accumulate;
  dense.schedule_cpu = schedule_dense_cpu;
  OpDef& matmul = add({"matmul", OpPattern::OutEWiseFusable, 2, 2,
                       [](const Node&, const std::vector<TensorType>& in) {
                         same_dtype(in);  // int8 x int8 (quantized models) accumulates in int32
                         DataType out = in[0].dtype == DataType::Int(8) ? DataType::Int(32) : in[0].dtype;
                         return TensorType{ops::matmul_shape(in[0].shape, in[1].shape), out};
                       },
                       [](const Node&, const std::vector<Tensor>& in, const std::string& name) {
                         return ops::batch_matmul(in[0], in[1], name);
                       },
                       ref::matmul});
  matmul.int8 = Int8Rule::Product;
  matmul.schedule_cpu = schedule_matmul_cpu;
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
       },
       ref::batch_norm});
  add({"softmax", OpPattern::Opaque, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_float(in[0], "input");
         int64_t r = static_cast<int64_t>(in[0].shape.size()), axis = n.attrs.get_int("axis", -1);
         if (axis < -r || axis >= r) LOOM_THROW(ShapeError, "axis ", axis, " out of range for rank ", r);
         return in[0];
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::softmax(in[0], static_cast<int>(n.attrs.get_int("axis", -1)), name);
       },
       ref::softmax});
  OpDef& max_pool = add({"max_pool2d", OpPattern::OutEWiseFusable, 1, 1,
                         [](const Node& n, const std::vector<TensorType>& in) {
                           return TensorType{ops::pool2d_shape(in[0].shape, PoolAttrs::from(n)), in[0].dtype};
                         },
                         [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
                           return ops::max_pool2d(in[0], PoolAttrs::from(n), name);
                         },
                         ref::max_pool2d});
  max_pool.layout_rule = LayoutRule::FollowsInput;
  max_pool.int8 = Int8Rule::ScaleInvariant;
  // Non-negative when its input is and every window holds an input element: its padding reads as
  // the type's minimum (-128), and a dilated window can lie wholly in a pad wider than
  // (kernel - 1) x dilation.
  max_pool.nonnegative = [](const Node& n, const std::function<bool(size_t)>& input) {
    const PoolAttrs p = PoolAttrs::from(n);
    if (p.ceil_mode) return false;
    for (size_t i = 0; i < 4; ++i)
      if (p.pads[i] > (p.kernel[i % 2] - 1) * p.dilations[i % 2]) return false;
    return input(0);
  };
  add({"avg_pool2d", OpPattern::OutEWiseFusable, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         expect_float(in[0], "input");
         return TensorType{ops::pool2d_shape(in[0].shape, PoolAttrs::from(n)), in[0].dtype};
       },
       [](const Node& n, const std::vector<Tensor>& in, const std::string& name) {
         return ops::avg_pool2d(in[0], PoolAttrs::from(n), name);
       },
       ref::avg_pool2d})
      .layout_rule = LayoutRule::FollowsInput;
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
       },
       ref::global_avg_pool2d})
      .layout_rule = LayoutRule::FollowsInput;
}

}  // namespace loom::graph
