// Power-of-two int8 quantization stages for whole models (see layers.h).
#include <cmath>

#include "loom/ops/layers.h"
#include "loom/ops/nn.h"
#include "loom/runtime/error.h"

namespace loom::ops {

using namespace loom::ir;

namespace {

Expr pow2(DataType t, int e) { return make_const(t, std::ldexp(1.0, e)); }

// Integer power of two as an int32 constant; shifts beyond 30 would overflow int32.
Expr pow2_int(int e, const std::string& what) {
  if (e < 0 || e > 30) LOOM_THROW(ModelError, what, ": shift ", e, " out of range [0, 30]");
  return make_const(DataType::Int(32), double(int64_t(1) << e));
}

void check_range(int lo, int hi, const std::string& name) {
  if (lo > hi || lo < -128 || hi > 127)
    LOOM_THROW(ModelError, name, ": int8 clamp [", lo, ", ", hi, "] is not within [-128, 127]");
}

// round(x * 2^-e) clamped to [lo, hi], as float (exact: scaling by a power of two).
Expr rounded_steps(Expr x, int exponent, int lo, int hi) {
  DataType t = x.type();
  Expr v = call_intrinsic(t, "round", {x * pow2(t, -exponent)});
  return min(max(v, make_const(t, lo)), make_const(t, hi));
}

}  // namespace

Tensor quantize(const Tensor& X, int exponent, int lo, int hi, const std::string& name) {
  check_range(lo, hi, name);
  if (!X.dtype().is_float()) LOOM_THROW(TypeError, name, ": quantize needs a float input, got ", X.dtype().str());
  return unary(
      X, [&](Expr x) { return cast(DataType::Int(8), rounded_steps(x, exponent, lo, hi)); }, name);
}

Tensor dequantize(const Tensor& X, int exponent, const std::string& name) {
  if (X.dtype().is_float()) LOOM_THROW(TypeError, name, ": dequantize needs an integer input, got ", X.dtype().str());
  DataType f = DataType::Float(32);
  return unary(
      X, [&](Expr x) { return cast(f, x) * pow2(f, exponent); }, name);
}

Tensor requantize(const Tensor& X, int shift, int lo, int hi, const std::string& name) {
  check_range(lo, hi, name);
  if (X.dtype() != DataType::Int(32))
    LOOM_THROW(TypeError, name, ": requantize needs an int32 input, got ", X.dtype().str());
  return unary(
      X,
      [&](Expr x) {
        // Right: floor division is the arithmetic shift. Left: the input is
        // clamped to int8 first (the result clamps there anyway), so it cannot wrap.
        Expr v = shift > 0 ? (x + pow2_int(shift - 1, name)) / pow2_int(shift, name)
                 : shift < 0
                     ? min(max(x, make_const(x.type(), -128)), make_const(x.type(), 127)) * pow2_int(-shift, name)
                     : x;
        v = min(max(v, make_const(v.type(), lo)), make_const(v.type(), hi));
        return cast(DataType::Int(8), v);
      },
      name);
}

Tensor add_shifted(const Tensor& A, const Tensor& B, int la, int lb, const std::string& name) {
  // The same extents, constant or symbolic (a decoder's residual add over its tokens).
  bool same = A.ndim() == B.ndim();
  for (int d = 0; same && d < A.ndim(); ++d) same = same_extent(A.shape()[size_t(d)], B.shape()[size_t(d)]);
  if (!same)
    LOOM_THROW(ShapeError, name, ": operands have shapes ", shape_str(max_shape_of(A)), " and ",
               shape_str(max_shape_of(B)));
  if (A.dtype().is_float() || B.dtype().is_float()) LOOM_THROW(TypeError, name, ": add_shifted needs integer operands");
  DataType i32 = DataType::Int(32);
  Expr ka = pow2_int(la, name), kb = pow2_int(lb, name);
  return compute(A.shape(), ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx(v.begin(), v.end());
                   Expr a = cast(i32, A(idx)), b = cast(i32, B(idx));
                   return (la ? a * ka : a) + (lb ? b * kb : b);
                 }),
                 name, "elemwise");
}

Tensor requantize_channel(const Tensor& X, const Tensor& M, int shift, int lo, int hi, const std::string& name) {
  check_range(lo, hi, name);
  if (X.dtype() != DataType::Int(32) || M.dtype() != DataType::Int(32))
    LOOM_THROW(TypeError, name, ": requantize_channel needs int32 values and multipliers, got ", X.dtype().str(),
               " and ", M.dtype().str());
  if (shift < 1 || shift > 62)
    LOOM_THROW(ModelError, name, ": requantize_channel shift ", shift, " out of range [1, 62]");
  int r = X.ndim();
  if (r != 2 && r != 4 && r != 5)
    LOOM_THROW(ShapeError, name, ": requantize_channel needs NC, NCHW or NCHWc values, got rank ", r);
  int64_t channels = const_dim(X, 1) * (r == 5 ? const_dim(X, 4) : 1);
  if (M.ndim() != 1 || const_dim(M, 0) != channels)
    LOOM_THROW(ShapeError, name, ": ", channels, " channels need ", channels, " multipliers, got ",
               shape_str(shape_of(M)));
  DataType i64 = DataType::Int(64);
  return compute(X.shape(), ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx(v.begin(), v.end());
                   Expr c = r == 5 ? v[1] * int(const_dim(X, 4)) + v[4] : Expr(v[1]);
                   Expr p = cast(i64, X(idx)) * cast(i64, M(c)) + make_const(i64, double(int64_t(1) << (shift - 1)));
                   Expr q = p / make_const(i64, double(int64_t(1) << shift));  // floor division: the arithmetic shift
                   q = min(max(q, make_const(i64, lo)), make_const(i64, hi));
                   return cast(DataType::Int(8), q);
                 }),
                 name, "elemwise");
}

Tensor fake_quantize(const Tensor& X, int exponent, int lo, int hi, const std::string& name) {
  if (!X.dtype().is_float()) LOOM_THROW(TypeError, name, ": fake_quantize needs a float input, got ", X.dtype().str());
  if (lo > hi) LOOM_THROW(ModelError, name, ": empty clamp range [", lo, ", ", hi, "]");
  return unary(
      X, [&](Expr x) { return rounded_steps(x, exponent, lo, hi) * pow2(x.type(), exponent); }, name);
}

}  // namespace loom::ops
