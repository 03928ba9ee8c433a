// Operators of the accelerator partition (passes/partition_accel.cc): the blocked layout the
// accelerator reads and writes, and the int8 layers it runs. Each has a tensor-expression
// definition, so the CPU can also compute them; they have no OpDef::reference: the reference for
// the accelerator's bit-exactness is the quantized graph before partitioning, on the CPU and in
// the naive interpreter.
//   accel_pack   {b, bi[, n_padded, c_padded]}  NCHW -> [N/b, C/bi, H, W, b, bi] (NC -> [N/b, C/bi, b, bi]),
//                zero-padding batch and channels to whole blocks
//   accel_unpack {[n, c]}                the inverse, cropping the padding
//   accel_dense  {shift, min, max}       (data [N/b, C/bi, b, bi], weight [O/bo, C/bi, bo, bi], bias) -> blocked int8
//   accel_conv2d {stride, pad, shift, min, max}  (data blocked, weight [O/bo, I/bi, KH, KW, bo, bi],
//                bias int32 [O/bo, b, bo] with the rounding folded in) -> blocked int8
//   accel_conv2d's weights may also be [O/bo, I/bi, P, KH, KW, bo, bi] with {digit_bits}: each
//   weight as P passes of signed digits (w = sum_p d_p 2^(p digit_bits)), wider weights than the
//   multipliers take.
//   Both take an optional fourth input, int32 shifts blocked like the bias: each output channel's
//   right shift (a per-channel power-of-two requantization; the shift attribute is then unused).
//   accel_add    {lshift_a, lshift_b, shift, min, max}  (a, b blocked int8, eye: the identity block
//                the accelerator widens int8 through, or [2, b, b]: a's and b's identities scaled
//                by 2^lshift_a and 2^lshift_b) -> requantize(add_shifted(a, b)), blocked int8
#include "accel_ops.h"
#include "loom/ops/conv_shape.h"
#include "loom/runtime/error.h"
#include "op_registry_util.h"
#include "op_schedules.h"

namespace loom::graph {

namespace {

void expect_rank(const TensorType& t, size_t rank, const char* what) {
  if (t.shape.size() != rank) LOOM_THROW(ShapeError, what, " must have rank ", rank, ", is ", t.str());
}

void expect_type(const TensorType& t, DataType d, const char* what) {
  if (t.dtype != d) LOOM_THROW(TypeError, what, " must be ", d.str(), ", is ", t.str());
}

// The optional shifts input: one right shift per output channel, blocked like the bias.
void expect_channel_shifts(const std::vector<TensorType>& in) {
  if (in.size() < 4) return;
  expect_type(in[3], DataType::Int(32), "shifts");
  if (in[3].shape != in[2].shape)
    LOOM_THROW(ShapeError, "shifts ", in[3].str(), " must be shaped as the bias ", in[2].str());
}

ops::Requantize requantize_of(const Node& n) {
  return {int(n.attrs.get_int("shift")), false, int(n.attrs.get_int("min", -128)), int(n.attrs.get_int("max", 127))};
}

}  // namespace

void add_accel_ops(const AddOp& add) {
  add({"accel_pack", OpPattern::Injective, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         if (in[0].shape.size() != 4 && in[0].shape.size() != 2)
           LOOM_THROW(ShapeError, "input must be NCHW or NC, is ", in[0].str());
         int64_t b = n.attrs.get_int("b"), bi = n.attrs.get_int("bi");
         int64_t np = n.attrs.get_int("n_padded", in[0].shape[0]), cp = n.attrs.get_int("c_padded", in[0].shape[1]);
         if (b < 1 || bi < 1 || np < in[0].shape[0] || cp < in[0].shape[1] || np % b || cp % bi)
           LOOM_THROW(ShapeError, "input ", in[0].str(), " padded to ", np, " x ", cp,
                      " is not a whole number of blocks ", b, "x", bi);
         Shape out = {np / b, cp / bi};
         if (in[0].shape.size() == 4) out.insert(out.end(), {in[0].shape[2], in[0].shape[3]});
         out.insert(out.end(), {b, bi});
         return TensorType{out, in[0].dtype};
       },
       [](const Node& n, const std::vector<ir::Tensor>& in, const std::string& name) {
         return ops::pack_padded(in[0], int(n.attrs.get_int("b")), int(n.attrs.get_int("bi")),
                                 n.attrs.get_int("n_padded", ops::const_dim(in[0], 0)),
                                 n.attrs.get_int("c_padded", ops::const_dim(in[0], 1)), name);
       },
       nullptr});  // no reference of its own: the same graph on the CPU is the accelerator's
  add({"accel_unpack", OpPattern::Injective, 1, 1,
       [](const Node& n, const std::vector<TensorType>& in) {
         const Shape& s = in[0].shape;
         if (s.size() != 6 && s.size() != 4)
           LOOM_THROW(ShapeError, "input must be blocked NCHW or NC (rank 6 or 4), is ", in[0].str());
         size_t k = s.size() - 2;
         int64_t nb = n.attrs.get_int("n", s[0] * s[k]), cb = n.attrs.get_int("c", s[1] * s[k + 1]);
         if (nb < 1 || cb < 1 || nb > s[0] * s[k] || cb > s[1] * s[k + 1])
           LOOM_THROW(ShapeError, "cannot crop ", in[0].str(), " to ", nb, " x ", cb);
         Shape out = {nb, cb};
         if (s.size() == 6) out.insert(out.end(), {s[2], s[3]});
         return TensorType{out, in[0].dtype};
       },
       [](const Node& n, const std::vector<ir::Tensor>& in, const std::string& name) {
         int r = in[0].ndim(), k = r - 2;
         return ops::unpack_cropped(in[0], n.attrs.get_int("n", ops::const_dim(in[0], 0) * ops::const_dim(in[0], k)),
                                    n.attrs.get_int("c", ops::const_dim(in[0], 1) * ops::const_dim(in[0], k + 1)),
                                    name);
       },
       nullptr});  // no reference of its own: the same graph on the CPU is the accelerator's
  OpDef& dense_op =
      add({"accel_dense", OpPattern::Opaque, 3, 4,
           [](const Node&, const std::vector<TensorType>& in) {
             expect_rank(in[0], 4, "data");
             expect_rank(in[1], 4, "weight");
             expect_rank(in[2], 3, "bias");
             expect_type(in[0], DataType::Int(8), "data");
             expect_type(in[1], DataType::Int(8), "weight");
             expect_type(in[2], DataType::Int(32), "bias");
             const Shape &x = in[0].shape, &w = in[1].shape;
             if (x[1] != w[1] || x[3] != w[3])
               LOOM_THROW(ShapeError, "data ", in[0].str(), " and weight ", in[1].str(), " differ in input blocks");
             if (in[2].shape != Shape{w[0], x[2], w[2]})
               LOOM_THROW(ShapeError, "bias ", in[2].str(), " must be [", w[0], ", ", x[2], ", ", w[2], "]");
             expect_channel_shifts(in);
             return TensorType{{x[0], w[0], x[2], w[2]}, DataType::Int(8)};
           },
           [](const Node& n, const std::vector<ir::Tensor>& in, const std::string& name) {
             return accel_dense_stages(n, in, name).out;
           },
           nullptr});  // no reference of its own: the same graph on the CPU is the accelerator's
  dense_op.device = runtime::KernelDevice::Accel;
  dense_op.schedule_accel = schedule_accel_dense;
  OpDef& conv2d_op =
      add({"accel_conv2d", OpPattern::Opaque, 3, 4,
           [](const Node& n, const std::vector<TensorType>& in) {
             const bool passes = n.attrs.has("digit_bits");
             expect_rank(in[0], 6, "data");
             expect_rank(in[1], passes ? 7 : 6, passes ? "weight in passes" : "weight");
             expect_rank(in[2], 3, "bias");
             expect_type(in[0], DataType::Int(8), "data");
             expect_type(in[1], DataType::Int(8), "weight");
             expect_type(in[2], DataType::Int(32), "bias");
             const Shape &x = in[0].shape, &w = in[1].shape;
             const size_t k = passes ? 3 : 2, bo = w.size() - 2;  // the kernel's first spatial axis, its output block
             int64_t stride = n.attrs.get_int("stride"), pad = n.attrs.get_int("pad");
             if (x[1] != w[1] || x[5] != w.back())
               LOOM_THROW(ShapeError, "data ", in[0].str(), " and weight ", in[1].str(), " differ in input blocks");
             if (passes && w[2] < 2) LOOM_THROW(ShapeError, "weight ", in[1].str(), " has fewer than two passes");
             if (in[2].shape != Shape{w[0], x[4], w[bo]})
               LOOM_THROW(ShapeError, "bias ", in[2].str(), " must be [", w[0], ", ", x[4], ", ", w[bo], "]");
             expect_channel_shifts(in);
             if (stride < 1 || pad < 0) LOOM_THROW(ShapeError, "stride ", stride, " / padding ", pad, " out of range");
             int64_t oh = ops::window_out(x[2], w[k], stride, pad, pad),
                     ow = ops::window_out(x[3], w[k + 1], stride, pad, pad);
             if (oh < 1 || ow < 1)
               LOOM_THROW(ShapeError, "kernel ", w[k], "x", w[k + 1], " larger than the padded input");
             return TensorType{{x[0], w[0], oh, ow, x[4], w[bo]}, DataType::Int(8)};
           },
           [](const Node& n, const std::vector<ir::Tensor>& in, const std::string& name) {
             return accel_conv2d_stages(n, in, name).out;
           },
           nullptr});  // no reference of its own: the same graph on the CPU is the accelerator's
  conv2d_op.device = runtime::KernelDevice::Accel;
  conv2d_op.schedule_accel = schedule_accel_conv2d;
  OpDef& add_op = add({"accel_add", OpPattern::Opaque, 3, 3,
                       [](const Node& n, const std::vector<TensorType>& in) {
                         expect_rank(in[0], 6, "a");
                         expect_type(in[0], DataType::Int(8), "a");
                         expect_type(in[1], DataType::Int(8), "b");
                         expect_type(in[2], DataType::Int(8), "eye");
                         if (in[0].shape != in[1].shape)
                           LOOM_THROW(ShapeError, "operands ", in[0].str(), " and ", in[1].str(), " differ");
                         const int64_t blk = in[0].shape[5];
                         if (in[2].shape != Shape{blk, blk} && in[2].shape != Shape{2, blk, blk})
                           LOOM_THROW(ShapeError, "eye ", in[2].str(),
                                      " must be a square block of the channel block, or two of them");
                         return in[0];
                       },
                       [](const Node& n, const std::vector<ir::Tensor>& in, const std::string& name) {
                         return accel_add_stages(n, in, name).q.out;
                       },
                       nullptr});  // no reference of its own: the same graph on the CPU is the accelerator's
  add_op.device = runtime::KernelDevice::Accel;
  add_op.schedule_accel = schedule_accel_add;
}

ops::AddWidenStages accel_add_stages(const Node& n, const std::vector<ir::Tensor>& in, const std::string& name) {
  int shift = int(n.attrs.get_int("shift"));
  ops::AddShifts sh{int(n.attrs.get_int("lshift_a", 0)), int(n.attrs.get_int("lshift_b", 0)), shift > 0};
  return ops::add_int8_widening(in[0], in[1], in[2], requantize_of(n), name, sh);
}

ops::QuantizedStages accel_dense_stages(const Node& n, const std::vector<ir::Tensor>& in, const std::string& name) {
  if (in.size() > 3) return ops::dense_int8_blocked(in[0], in[1], in[2], in[3], requantize_of(n), name);
  return ops::dense_int8_blocked(in[0], in[1], in[2], requantize_of(n), name);
}

ops::QuantizedStages accel_conv2d_stages(const Node& n, const std::vector<ir::Tensor>& in, const std::string& name) {
  const int stride = int(n.attrs.get_int("stride")), pad = int(n.attrs.get_int("pad"));
  if (n.attrs.has("digit_bits"))
    return ops::conv2d_int8_blocked_passes(in[0], in[1], in[2], in.size() > 3 ? in[3] : ir::Tensor(), stride, pad,
                                           int(n.attrs.get_int("digit_bits")), requantize_of(n), name);
  if (in.size() > 3) return ops::conv2d_int8_blocked(in[0], in[1], in[2], in[3], stride, pad, requantize_of(n), name);
  return ops::conv2d_int8_blocked(in[0], in[1], in[2], stride, pad, requantize_of(n), name);
}

}  // namespace loom::graph
