#include "loom/ops/quantized.h"

#include <algorithm>
#include <climits>

#include "loom/ir/intrinsics.h"
#include "loom/ops/conv_shape.h"

namespace loom::ops {

using namespace loom::ir;

namespace {

Expr i32(Expr e) { return cast(DataType::Int(32), std::move(e)); }

void require_multiple(const Tensor& t, int dim, int block, const char* what) {
  int64_t n = const_dim(t, dim);
  if (block <= 0 || n % block != 0)
    LOOM_THROW(ShapeError, what, ": dimension ", dim, " of '", t.name(), "' is ", n, ", not a multiple of the block ",
               block);
}

Tensor rank_check(const Tensor& t, int rank, const char* what) {
  if (t.ndim() != rank) LOOM_THROW(ShapeError, what, ": '", t.name(), "' must have rank ", rank, ", has ", t.ndim());
  return t;
}

// acc -> shift -> clamps -> int8, each an element-wise stage over the same shape.
// With `shifts` (int32, blocked like the bias), channel c shifts right by its own amount and
// rq.shift is unused.
QuantizedStages requantize(const Tensor& acc, const Requantize& rq, const std::string& name,
                           const Tensor& bias = Tensor(), const Tensor& shifts = Tensor()) {
  if (rq.shift < 0 || rq.shift > 31)
    LOOM_THROW(ShapeError, name, ": requantize shift must be in [0, 31], got ", rq.shift);
  // The clamps are ALU immediates and the result is int8: both bounds must be int8 values.
  if (rq.clip_lo < -128 || rq.clip_lo > 127 || rq.clip_hi < -128 || rq.clip_hi > 127 || rq.clip_lo > rq.clip_hi)
    LOOM_THROW(ShapeError, name, ": requantize clamp [", rq.clip_lo, ", ", rq.clip_hi,
               "] must be an int8 range within [-128, 127]");
  QuantizedStages q;
  q.acc = acc;
  auto elementwise = [&](const Tensor& in, const std::function<Expr(Expr)>& f, const std::string& n) {
    return compute(in.shape(),
                   ComputeFn([&](const std::vector<Var>& v) { return f(in(std::vector<Expr>(v.begin(), v.end()))); }),
                   n, "elemwise");
  };
  Tensor shifted = acc;
  const int r = acc.ndim();
  for (const auto& [what, per_channel] : {std::pair{"bias", bias}, std::pair{"shifts", shifts}})
    if (per_channel.defined() &&
        (per_channel.ndim() != 3 || per_channel.dtype() != DataType::Int(32) ||
         const_dim(per_channel, 0) != const_dim(acc, 1) || const_dim(per_channel, 1) != const_dim(acc, r - 2) ||
         const_dim(per_channel, 2) != const_dim(acc, r - 1)))
      LOOM_THROW(ShapeError, name, ": ", what, " '", per_channel.name(), "' must be int32 [", const_dim(acc, 1), ", ",
                 const_dim(acc, r - 2), ", ", const_dim(acc, r - 1), "] (output-channel blocks, batch, block)");
  if (bias.defined()) {
    q.biased = compute(acc.shape(), ComputeFn([&](const std::vector<Var>& v) {
                         return acc(std::vector<Expr>(v.begin(), v.end())) + bias(v[1], v[r - 2], v[r - 1]);
                       }),
                       name + "_bias", "elemwise");
    shifted = q.biased;
  }
  // Floor division by 2^shift is an arithmetic shift right.
  q.shifts = shifts;
  if (shifts.defined())
    q.shr = compute(acc.shape(), ComputeFn([&](const std::vector<Var>& v) {
                      return make_shift_right(shifted(std::vector<Expr>(v.begin(), v.end())),
                                              shifts(v[1], v[r - 2], v[r - 1]));
                    }),
                    name + "_shr", "elemwise");
  else
    q.shr = elementwise(
        shifted, [&](Expr x) { return x / (1 << rq.shift); }, name + "_shr");
  int lo = rq.relu ? std::max(0, rq.clip_lo) : rq.clip_lo;
  q.clip_lo = elementwise(
      q.shr, [&](Expr x) { return max(x, Expr(lo)); }, name + "_max");
  q.clip_hi = elementwise(
      q.clip_lo, [&](Expr x) { return min(x, Expr(rq.clip_hi)); }, name + "_min");
  q.out = elementwise(
      q.clip_hi, [&](Expr x) { return cast(DataType::Int(8), x); }, name);
  return q;
}

}  // namespace

Tensor pack_nchw(const Tensor& X, int b, int bi, const std::string& name) {
  rank_check(X, 4, "pack_nchw");
  require_multiple(X, 0, b, "pack_nchw");
  require_multiple(X, 1, bi, "pack_nchw");
  return compute(
      {Expr(int(const_dim(X, 0) / b)), Expr(int(const_dim(X, 1) / bi)), X.shape()[2], X.shape()[3], Expr(b), Expr(bi)},
      ComputeFn([&](const std::vector<Var>& v) { return X(v[0] * b + v[4], v[1] * bi + v[5], v[2], v[3]); }), name,
      "pack");
}

Tensor unpack_nchw(const Tensor& Xp, const std::string& name) {
  rank_check(Xp, 6, "unpack_nchw");
  int b = int(const_dim(Xp, 4)), bi = int(const_dim(Xp, 5));
  return compute(
      {Expr(int(const_dim(Xp, 0) * b)), Expr(int(const_dim(Xp, 1) * bi)), Xp.shape()[2], Xp.shape()[3]},
      ComputeFn([&](const std::vector<Var>& v) { return Xp(v[0] / b, v[1] / bi, v[2], v[3], v[0] % b, v[1] % bi); }),
      name, "unpack");
}

Tensor pack_oihw(const Tensor& W, int bo, int bi, const std::string& name) {
  rank_check(W, 4, "pack_oihw");
  require_multiple(W, 0, bo, "pack_oihw");
  require_multiple(W, 1, bi, "pack_oihw");
  return compute(
      {Expr(int(const_dim(W, 0) / bo)), Expr(int(const_dim(W, 1) / bi)), W.shape()[2], W.shape()[3], Expr(bo),
       Expr(bi)},
      ComputeFn([&](const std::vector<Var>& v) { return W(v[0] * bo + v[4], v[1] * bi + v[5], v[2], v[3]); }), name,
      "pack");
}

Tensor pack_nc(const Tensor& X, int b, int bi, const std::string& name) {
  rank_check(X, 2, "pack_nc");
  require_multiple(X, 0, b, "pack_nc");
  require_multiple(X, 1, bi, "pack_nc");
  return compute({Expr(int(const_dim(X, 0) / b)), Expr(int(const_dim(X, 1) / bi)), Expr(b), Expr(bi)},
                 ComputeFn([&](const std::vector<Var>& v) { return X(v[0] * b + v[2], v[1] * bi + v[3]); }), name,
                 "pack");
}

Tensor unpack_nc(const Tensor& Xp, const std::string& name) {
  rank_check(Xp, 4, "unpack_nc");
  int b = int(const_dim(Xp, 2)), bi = int(const_dim(Xp, 3));
  return compute({Expr(int(const_dim(Xp, 0) * b)), Expr(int(const_dim(Xp, 1) * bi))},
                 ComputeFn([&](const std::vector<Var>& v) { return Xp(v[0] / b, v[1] / bi, v[0] % b, v[1] % bi); }),
                 name, "unpack");
}

Tensor pack_oi(const Tensor& W, int bo, int bi, const std::string& name) { return pack_nc(W, bo, bi, name); }

Tensor pack_padded(const Tensor& X, int b, int bi, int64_t n_padded, int64_t c_padded, const std::string& name) {
  if (X.ndim() != 2 && X.ndim() != 4)
    LOOM_THROW(ShapeError, "pack_padded: '", X.name(), "' must be NC or NCHW, has rank ", X.ndim());
  int64_t n = const_dim(X, 0), c = const_dim(X, 1);
  if (b < 1 || bi < 1 || n_padded < n || c_padded < c || n_padded % b || c_padded % bi)
    LOOM_THROW(ShapeError, "pack_padded: '", X.name(), "' (", n, " x ", c, ") cannot be padded to ", n_padded, " x ",
               c_padded, " in blocks of ", b, " x ", bi);
  bool spatial = X.ndim() == 4;
  std::vector<Expr> shape = {Expr(int(n_padded / b)), Expr(int(c_padded / bi))};
  if (spatial) shape.insert(shape.end(), {X.shape()[2], X.shape()[3]});
  shape.insert(shape.end(), {Expr(b), Expr(bi)});
  return compute(shape, ComputeFn([&](const std::vector<Var>& v) {
                   size_t k = spatial ? 4 : 2;
                   Expr nn = v[0] * b + v[k], cc = v[1] * bi + v[k + 1];
                   std::vector<Expr> idx = {nn, cc};
                   if (spatial) idx.insert(idx.end(), {v[2], v[3]});
                   if (n_padded == n && c_padded == c) return X(idx);
                   return if_then_else(nn < int(n) && cc < int(c), X(idx), make_zero(X.dtype()));
                 }),
                 name, "pack");
}

Tensor unpack_cropped(const Tensor& Xp, int64_t n, int64_t c, const std::string& name) {
  if (Xp.ndim() != 4 && Xp.ndim() != 6)
    LOOM_THROW(ShapeError, "unpack_cropped: '", Xp.name(), "' must be blocked NC or NCHW, has rank ", Xp.ndim());
  bool spatial = Xp.ndim() == 6;
  size_t k = spatial ? 4 : 2;
  int b = int(const_dim(Xp, int(k))), bi = int(const_dim(Xp, int(k) + 1));
  if (n < 1 || c < 1 || n > const_dim(Xp, 0) * b || c > const_dim(Xp, 1) * bi)
    LOOM_THROW(ShapeError, "unpack_cropped: '", Xp.name(), "' holds ", const_dim(Xp, 0) * b, " x ",
               const_dim(Xp, 1) * bi, ", cannot crop to ", n, " x ", c);
  std::vector<Expr> shape = {Expr(int(n)), Expr(int(c))};
  if (spatial) shape.insert(shape.end(), {Xp.shape()[2], Xp.shape()[3]});
  return compute(shape, ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx = {v[0] / b, v[1] / bi};
                   if (spatial) idx.insert(idx.end(), {v[2], v[3]});
                   idx.insert(idx.end(), {v[0] % b, v[1] % bi});
                   return Xp(idx);
                 }),
                 name, "unpack");
}

namespace {

// A blocked int8 conv's accumulation: kernel [O/bo, I/bi, KH, KW, bo, bi], or with passes
// [O/bo, I/bi, P, KH, KW, bo, bi] into accumulators [N/b, P, O/bo, OH, OW, b, bo].
Tensor conv2d_int8_accumulate(const Tensor& data, const Tensor& kernel, int stride, int pad, bool passes,
                              const std::string& name) {
  const int kr = passes ? 7 : 6, ka = passes ? 3 : 2;  // the kernel's rank and its first spatial axis
  rank_check(data, 6, "conv2d_int8_blocked");
  rank_check(kernel, kr, "conv2d_int8_blocked");
  if (data.dtype() != DataType::Int(8) || kernel.dtype() != DataType::Int(8))
    LOOM_THROW(TypeError, "conv2d_int8_blocked '", name, "': data and kernel must be int8, got ", data.dtype().str(),
               " and ", kernel.dtype().str());
  if (const_dim(data, 1) != const_dim(kernel, 1) || const_dim(data, 5) != const_dim(kernel, kr - 1))
    LOOM_THROW(ShapeError, "conv2d_int8_blocked '", name, "': input channel blocks of '", data.name(), "' and '",
               kernel.name(), "' differ");
  if (stride <= 0 || pad < 0) LOOM_THROW(ShapeError, "conv2d_int8_blocked '", name, "': bad stride/padding");
  int64_t h = const_dim(data, 2), w = const_dim(data, 3), kh = const_dim(kernel, ka), kw = const_dim(kernel, ka + 1);
  int64_t oh = window_out(h, kh, stride, pad, pad), ow = window_out(w, kw, stride, pad, pad);
  if (oh <= 0 || ow <= 0)
    LOOM_THROW(ShapeError, "conv2d_int8_blocked '", name, "': kernel larger than the padded input");
  Tensor padded = data;
  if (pad > 0) {
    padded = compute({data.shape()[0], data.shape()[1], Expr(int(h + 2 * pad)), Expr(int(w + 2 * pad)), data.shape()[4],
                      data.shape()[5]},
                     ComputeFn([&](const std::vector<Var>& v) {
                       Expr inside = v[2] >= pad && v[2] < int(h) + pad && v[3] >= pad && v[3] < int(w) + pad;
                       return if_then_else(inside, data(v[0], v[1], v[2] - pad, v[3] - pad, v[4], v[5]),
                                           make_zero(DataType::Int(8)));
                     }),
                     name + "_pad", "pad");
  }
  IterVar ic = reduce_axis(data.shape()[1], "ic"), dy = reduce_axis(int(kh), "dy"), dx = reduce_axis(int(kw), "dx"),
          ici = reduce_axis(data.shape()[5], "ic_tns");
  std::vector<Expr> shape = {data.shape()[0], kernel.shape()[0], Expr(int(oh)),
                             Expr(int(ow)),   data.shape()[4],   kernel.shape()[kr - 2]};
  if (passes) shape.insert(shape.begin() + 1, kernel.shape()[2]);
  return compute(shape, ComputeFn([&](const std::vector<Var>& v) {
                   const size_t o = passes ? 1 : 0;  // the spatial and block axes after the pass axis
                   Expr x = padded(v[0], ic, v[2 + o] * stride + dy->var, v[3 + o] * stride + dx->var, v[4 + o], ici);
                   Expr k = passes ? kernel(v[2], ic, v[1], dy, dx, v[6], ici) : kernel(v[1], ic, dy, dx, v[5], ici);
                   return sum(i32(x) * i32(k), {ic, dy, dx, ici});
                 }),
                 name + "_acc", "conv2d");
}

}  // namespace

QuantizedStages conv2d_int8_blocked(const Tensor& data, const Tensor& kernel, int stride, int pad, const Requantize& rq,
                                    const std::string& name) {
  return requantize(conv2d_int8_accumulate(data, kernel, stride, pad, false, name), rq, name);
}

QuantizedStages conv2d_int8_blocked_passes(const Tensor& data, const Tensor& kernel, const Tensor& bias,
                                           const Tensor& shifts, int stride, int pad, int digit_bits,
                                           const Requantize& rq, const std::string& name) {
  if (digit_bits != 2 && digit_bits != 4)
    LOOM_THROW(ShapeError, "conv2d_int8_blocked '", name, "': digits of ", digit_bits, " bits (2 or 4)");
  Tensor passes = conv2d_int8_accumulate(data, kernel, stride, pad, true, name);
  const int P = int(const_dim(passes, 1));
  // The most significant pass first: c = (c << digit_bits) + pass p, down to pass 0.
  std::vector<Expr> shape = passes.shape();
  shape.erase(shape.begin() + 1);
  auto at = [](const std::vector<Var>& v, Expr p) {
    std::vector<Expr> idx(v.begin(), v.end());
    idx.insert(idx.begin() + 1, std::move(p));
    return idx;
  };
  if (P < 2) LOOM_THROW(ShapeError, "conv2d_int8_blocked '", name, "': passes need at least two digits");
  std::vector<Tensor> combine;
  Tensor c;  // the passes combined so far, the most significant first
  for (int p = P - 2; p >= 0; --p) {
    Tensor shifted = compute(shape, ComputeFn([&](const std::vector<Var>& v) {
                               Expr hi =
                                   c.defined() ? c(std::vector<Expr>(v.begin(), v.end())) : passes(at(v, Expr(P - 1)));
                               return make_shift_right(hi, Expr(-digit_bits));
                             }),
                             name + "_pass" + std::to_string(p + 1) + "_shl", "elemwise");
    c = compute(shape, ComputeFn([&](const std::vector<Var>& v) {
                  return shifted(std::vector<Expr>(v.begin(), v.end())) + passes(at(v, Expr(p)));
                }),
                name + "_pass" + std::to_string(p), "elemwise");
    combine.push_back(shifted);
    combine.push_back(c);
  }
  QuantizedStages q = requantize(c, rq, name, bias, shifts);
  q.passes = passes;
  q.combine = std::move(combine);
  return q;
}

QuantizedStages conv2d_int8_blocked(const Tensor& data, const Tensor& kernel, const Tensor& bias, int stride, int pad,
                                    const Requantize& rq, const std::string& name) {
  QuantizedStages q = conv2d_int8_blocked(data, kernel, stride, pad, rq, name);
  return requantize(q.acc, rq, name, bias);
}

QuantizedStages dense_int8_blocked(const Tensor& data, const Tensor& weight, const Tensor& bias, const Requantize& rq,
                                   const std::string& name) {
  QuantizedStages q = dense_int8_blocked(data, weight, rq, name);
  return requantize(q.acc, rq, name, bias);
}

QuantizedStages conv2d_int8_blocked(const Tensor& data, const Tensor& kernel, const Tensor& bias, const Tensor& shifts,
                                    int stride, int pad, const Requantize& rq, const std::string& name) {
  QuantizedStages q = conv2d_int8_blocked(data, kernel, stride, pad, rq, name);
  return requantize(q.acc, rq, name, bias, shifts);
}

QuantizedStages dense_int8_blocked(const Tensor& data, const Tensor& weight, const Tensor& bias, const Tensor& shifts,
                                   const Requantize& rq, const std::string& name) {
  QuantizedStages q = dense_int8_blocked(data, weight, rq, name);
  return requantize(q.acc, rq, name, bias, shifts);
}

std::vector<int32_t> rounding_bias(const std::vector<int32_t>& bias, int shift) {
  std::vector<int32_t> out = bias;
  if (shift <= 0) return out;
  for (auto& b : out) b = int32_t(std::clamp<int64_t>(int64_t(b) + (int64_t(1) << (shift - 1)), INT32_MIN, INT32_MAX));
  return out;
}

QuantizedStages dense_int8_blocked(const Tensor& data, const Tensor& weight, const Requantize& rq,
                                   const std::string& name) {
  rank_check(data, 4, "dense_int8_blocked");
  rank_check(weight, 4, "dense_int8_blocked");
  if (data.dtype() != DataType::Int(8) || weight.dtype() != DataType::Int(8))
    LOOM_THROW(TypeError, "dense_int8_blocked '", name, "': data and weight must be int8");
  if (const_dim(data, 1) != const_dim(weight, 1) || const_dim(data, 3) != const_dim(weight, 3))
    LOOM_THROW(ShapeError, "dense_int8_blocked '", name, "': input blocks of '", data.name(), "' and '", weight.name(),
               "' differ");
  IterVar ic = reduce_axis(data.shape()[1], "ic"), ici = reduce_axis(data.shape()[3], "ic_tns");
  Tensor acc = compute({data.shape()[0], weight.shape()[0], data.shape()[2], weight.shape()[2]},
                       ComputeFn([&](const std::vector<Var>& v) {
                         return sum(i32(data(v[0], ic, v[2], ici)) * i32(weight(v[1], ic, v[3], ici)), {ic, ici});
                       }),
                       name + "_acc", "dense");
  return requantize(acc, rq, name);
}

QuantizedStages add_int8(const Tensor& a, const Tensor& b, const Requantize& rq, const std::string& name) {
  if (a.ndim() != b.ndim())
    LOOM_THROW(ShapeError, "add_int8 '", name, "': ranks of '", a.name(), "' and '", b.name(), "' differ");
  for (int d = 0; d < a.ndim(); ++d)
    if (const_dim(a, d) != const_dim(b, d))
      LOOM_THROW(ShapeError, "add_int8 '", name, "': dimension ", d, " of '", a.name(), "' and '", b.name(),
                 "' differ");
  Tensor acc = compute(a.shape(), ComputeFn([&](const std::vector<Var>& v) {
                         std::vector<Expr> idx(v.begin(), v.end());
                         return i32(a(idx)) + i32(b(idx));
                       }),
                       name + "_acc", "elemwise");
  return requantize(acc, rq, name);
}

}  // namespace loom::ops

namespace loom::ops {

AddWidenStages add_int8_widening(const Tensor& a, const Tensor& b, const Tensor& eye, const Requantize& rq,
                                 const std::string& name, const AddShifts& shifts) {
  if (shifts.lshift_a < 0 || shifts.lshift_a > 14 || shifts.lshift_b < 0 || shifts.lshift_b > 14)
    LOOM_THROW(ShapeError, "add_int8_widening '", name, "': operand shifts ", shifts.lshift_a, "/", shifts.lshift_b,
               " out of [0, 14] (they are 16-bit ALU multiply immediates)");
  if (shifts.round && (rq.shift < 1 || rq.shift > 15))
    LOOM_THROW(ShapeError, "add_int8_widening '", name,
               "': a rounded requantization needs a shift in [1, 15] (2^(shift-1) is a 16-bit ALU immediate), got ",
               rq.shift);
  add_int8(a, b, rq, name);  // the same shape checks
  // [b, b], or [2, b, b]: the operands' scaled blocks.
  const bool scaled_eyes = eye.ndim() == 3;
  if ((eye.ndim() != 2 && !scaled_eyes) || (scaled_eyes && const_dim(eye, 0) != 2) ||
      const_dim(eye, eye.ndim() - 2) != const_dim(eye, eye.ndim() - 1) ||
      const_dim(eye, eye.ndim() - 1) != const_dim(a, a.ndim() - 1))
    LOOM_THROW(ShapeError, "add_int8_widening '", name, "': '", eye.name(),
               "' must be a square block as wide as the last dimension of '", a.name(), "' (",
               const_dim(a, a.ndim() - 1), "), or two of them");
  if (scaled_eyes && (shifts.lshift_a > kMaxEyeShift || shifts.lshift_b > kMaxEyeShift))
    LOOM_THROW(ShapeError, "add_int8_widening '", name, "': operand shifts ", shifts.lshift_a, "/", shifts.lshift_b,
               " beyond ", kMaxEyeShift, " cannot be scaled identities in int8");
  if (a.dtype() != DataType::Int(8) || b.dtype() != DataType::Int(8) || eye.dtype() != DataType::Int(8))
    LOOM_THROW(TypeError, "add_int8_widening '", name, "': operands and '", eye.name(), "' must be int8");
  auto widen = [&](const Tensor& x, int block, const std::string& n) {
    IterVar k = reduce_axis(x.shape().back(), "k");
    return compute(x.shape(), ComputeFn([&](const std::vector<Var>& v) {
                     std::vector<Expr> idx(v.begin(), v.end());
                     idx.back() = k->var;
                     Expr e = scaled_eyes ? eye(Expr(block), v.back(), k->var) : eye(v.back(), k->var);
                     return sum(i32(x(idx)) * i32(e), {k});
                   }),
                   n, "widen");
  };
  AddWidenStages st;
  st.widen_a = widen(a, 0, name + "_wa");
  st.widen_b = widen(b, 1, name + "_wb");
  auto elementwise = [&](const std::function<Expr(const std::vector<Expr>&)>& f, const std::string& n) {
    return compute(a.shape(),
                   ComputeFn([&](const std::vector<Var>& v) { return f(std::vector<Expr>(v.begin(), v.end())); }), n,
                   "elemwise");
  };
  Tensor lhs = st.widen_a, rhs = st.widen_b;
  if (shifts.lshift_a && !scaled_eyes)
    st.scale.push_back(lhs =
                           elementwise([&, t = lhs](auto& i) { return t(i) * (1 << shifts.lshift_a); }, name + "_sa"));
  if (shifts.lshift_b && !scaled_eyes)
    st.scale.push_back(rhs =
                           elementwise([&, t = rhs](auto& i) { return t(i) * (1 << shifts.lshift_b); }, name + "_sb"));
  Tensor acc = elementwise([&](auto& i) { return lhs(i) + rhs(i); }, name + "_acc");
  Tensor shifted = acc;
  if (shifts.round)
    shifted = st.rounded = elementwise([&](auto& i) { return acc(i) + (1 << (rq.shift - 1)); }, name + "_round");
  st.q = requantize(shifted, rq, name);
  st.q.acc = acc;
  return st;
}

std::vector<int8_t> identity_block(int n) {
  std::vector<int8_t> m(size_t(n) * n, 0);
  for (int i = 0; i < n; ++i) m[size_t(i) * n + i] = 1;
  return m;
}

std::vector<int8_t> scaled_identity_blocks(int n, int lshift_a, int lshift_b) {
  if (lshift_a < 0 || lshift_a > kMaxEyeShift || lshift_b < 0 || lshift_b > kMaxEyeShift)
    LOOM_THROW(ShapeError, "scaled_identity_blocks: shifts ", lshift_a, "/", lshift_b, " outside [0, ", kMaxEyeShift,
               "] (2^7 is beyond int8)");
  std::vector<int8_t> m(size_t(2) * n * n, 0);
  for (int i = 0; i < n; ++i) {
    m[size_t(i) * n + i] = int8_t(1 << lshift_a);
    m[size_t(n) * n + size_t(i) * n + i] = int8_t(1 << lshift_b);
  }
  return m;
}

}  // namespace loom::ops
