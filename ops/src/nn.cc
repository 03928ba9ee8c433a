#include "loom/ops/nn.h"

#include "loom/ops/conv_shape.h"

namespace loom::ops {

using namespace loom::ir;

int64_t const_dim(const Tensor& t, int d) {
  if (d < 0 || d >= t.ndim()) LOOM_THROW(ShapeError, "tensor '", t.name(), "' has no dimension ", d);
  auto* c = as_const_int(t.shape()[d]);
  if (!c) LOOM_THROW(ShapeError, "tensor '", t.name(), "': dimension ", d, " must be a constant");
  return *c;
}

static void expect_rank(const Tensor& t, int rank, const char* op) {
  if (t.ndim() != rank) LOOM_THROW(ShapeError, op, ": '", t.name(), "' must have rank ", rank, ", has ", t.ndim());
}

Tensor matmul(const Tensor& A, const Tensor& B, const std::string& name) {
  expect_rank(A, 2, "matmul");
  expect_rank(B, 2, "matmul");
  if (const_dim(A, 1) != const_dim(B, 0))
    LOOM_THROW(ShapeError, "matmul '", name, "': inner dimensions differ ('", A.name(), "' has ", const_dim(A, 1),
               ", '", B.name(), "' has ", const_dim(B, 0), ")");
  IterVar k = reduce_axis(A.shape()[1], "k");
  return compute(
      {A.shape()[0], B.shape()[1]}, [&](Var i, Var j) { return sum(A(i, k) * B(k, j), {k}); }, name, "matmul");
}

Tensor matmul_dot_k(const Tensor& A, const Tensor& B, int lanes, const std::string& name) {
  expect_rank(A, 2, "matmul_dot_k");
  expect_rank(B, 2, "matmul_dot_k");
  const int64_t K = const_dim(A, 1);
  if (K != const_dim(B, 0) || const_dim(B, 1) != 1 || lanes < 1 || K % lanes != 0)
    LOOM_THROW(ShapeError, "matmul_dot_k '", name, "': needs A [M, K], B [K, 1] with K a multiple of ", lanes,
               ", got '", A.name(), "' ", const_dim(A, 0), " x ", K, " and '", B.name(), "' ", const_dim(B, 0), " x ",
               const_dim(B, 1));
  IterVar ko = reduce_axis(int(K / lanes), "ko");
  Tensor P = compute(
      {A.shape()[0], Expr(lanes)},
      [&](Var i, Var l) { return sum(A(i, ko->var * lanes + l) * B(ko->var * lanes + l, 0), {ko}); }, name + "_partial",
      "dot_partial");
  IterVar l = reduce_axis(lanes, "l");
  return compute(
      {A.shape()[0], Expr(1)}, [&](Var i, Var) { return sum(P(i, l), {l}); }, name, "matmul");
}

Tensor matmul_packed(const Tensor& A, const Tensor& B, int nr, const std::string& name) {
  expect_rank(A, 2, "matmul_packed");
  expect_rank(B, 2, "matmul_packed");
  int64_t K = const_dim(A, 1), N = const_dim(B, 1);
  if (K != const_dim(B, 0)) LOOM_THROW(ShapeError, "matmul_packed '", name, "': inner dimensions differ");
  if (nr <= 0) LOOM_THROW(ShapeError, "matmul_packed '", name, "': packing width ", nr, " must be positive");
  // Panels of nr columns; a last partial panel is zero-padded (the tail columns of C are cut off).
  int64_t panels = (N + nr - 1) / nr;
  Tensor Bp = compute(
      {Expr(int(panels)), Expr(int(K)), Expr(nr)},
      [&](Var jo, Var k, Var ji) {
        Expr j = jo * nr + ji;
        return N % nr == 0 ? B(k, j) : if_then_else(j < int(N), B(k, j), make_zero(B.dtype()));
      },
      B.name() + "_packed", "pack");
  IterVar k = reduce_axis(A.shape()[1], "k");
  if (N % nr == 0)
    return compute(
        {A.shape()[0], B.shape()[1]}, [&](Var i, Var j) { return sum(A(i, k) * Bp(j / nr, k, j % nr), {k}); }, name,
        "matmul");
  // A partial last panel: the product over whole panels (its padding columns are zeros of Bp), C
  // its first N columns. A register tile of the last panel then computes whole vectors like the
  // others; computed into C's own shape it needed a guard per lane, and that one panel cost as
  // much as a quarter of the product.
  Tensor Cp = compute(
      {A.shape()[0], Expr(int(panels * nr))}, [&](Var i, Var j) { return sum(A(i, k) * Bp(j / nr, k, j % nr), {k}); },
      name + "_panels", "matmul_panels");
  return compute(
      {A.shape()[0], B.shape()[1]}, [&](Var i, Var j) { return Cp(i, j); }, name, "matmul");
}

Tensor pad_nchw(const Tensor& X, int pad, const std::string& name) {
  expect_rank(X, 4, "pad_nchw");
  int64_t h = const_dim(X, 2), w = const_dim(X, 3);
  return compute(
      {X.shape()[0], X.shape()[1], Expr(int(h + 2 * pad)), Expr(int(w + 2 * pad))},
      [&](Var n, Var c, Var y, Var x) {
        Expr inside = y >= pad && y < int(h) + pad && x >= pad && x < int(w) + pad;
        return if_then_else(inside, X(n, c, y - pad, x - pad), make_zero(X.dtype()));
      },
      name, "pad");
}

Tensor conv2d_nchw(const Tensor& X, const Tensor& W, int stride, int pad, const std::string& name) {
  expect_rank(X, 4, "conv2d_nchw");
  expect_rank(W, 4, "conv2d_nchw");
  if (const_dim(X, 1) != const_dim(W, 1))
    LOOM_THROW(ShapeError, "conv2d '", name, "': input has ", const_dim(X, 1), " channels but weights '", W.name(),
               "' expect ", const_dim(W, 1));
  if (stride <= 0 || pad < 0)
    LOOM_THROW(ShapeError, "conv2d '", name, "': stride must be positive and padding non-negative");
  int64_t kh = const_dim(W, 2), kw = const_dim(W, 3);
  int64_t oh = window_out(const_dim(X, 2), kh, stride, pad, pad),
          ow = window_out(const_dim(X, 3), kw, stride, pad, pad);
  if (oh <= 0 || ow <= 0) LOOM_THROW(ShapeError, "conv2d '", name, "': kernel larger than the padded input");
  Tensor P = pad > 0 ? pad_nchw(X, pad, name + "_pad") : X;
  IterVar rc = reduce_axis(X.shape()[1], "rc"), ry = reduce_axis(int(kh), "ry"), rx = reduce_axis(int(kw), "rx");
  return compute(
      {X.shape()[0], W.shape()[0], Expr(int(oh)), Expr(int(ow))},
      [&](Var n, Var f, Var y, Var x) {
        return sum(P(n, rc, y * stride + ry->var, x * stride + rx->var) * W(f, rc, ry, rx), {rc, ry, rx});
      },
      name, "conv2d");
}

Tensor conv2d_nchw_packed(const Tensor& X, const Tensor& W, int stride, int pad, int oc_block,
                          const std::string& name) {
  expect_rank(W, 4, "conv2d_nchw_packed");
  int64_t O = const_dim(W, 0), C = const_dim(W, 1), kh = const_dim(W, 2), kw = const_dim(W, 3);
  if (oc_block <= 0 || O % oc_block != 0)
    LOOM_THROW(ShapeError, "conv2d '", name, "': ", O, " output channels are not a multiple of the block ", oc_block);
  Tensor Wp = compute({Expr(int(O / oc_block)), Expr(int(C)), Expr(int(kh)), Expr(int(kw)), Expr(oc_block)},
                      ComputeFn([&](const std::vector<Var>& v) { return W(v[0] * oc_block + v[4], v[1], v[2], v[3]); }),
                      W.name() + "_packed", "pack");
  // Reuse the plain definition's shape checks, then read the packed weights instead.
  Tensor plain = conv2d_nchw(X, W, stride, pad, name);
  Tensor P = pad > 0 ? plain.op()->input_tensors()[0] : X;
  IterVar rc = reduce_axis(int(C), "rc"), ry = reduce_axis(int(kh), "ry"), rx = reduce_axis(int(kw), "rx");
  return compute(
      plain.shape(),
      [&](Var n, Var f, Var y, Var x) {
        return sum(P(n, rc, y * stride + ry->var, x * stride + rx->var) * Wp(f / oc_block, rc, ry, rx, f % oc_block),
                   {rc, ry, rx});
      },
      name, "conv2d");
}

Tensor max_pool2d(const Tensor& X, int kernel, int stride, const std::string& name) {
  int r = X.ndim();
  if (r != 3 && r != 4) LOOM_THROW(ShapeError, "max_pool2d: '", X.name(), "' must be CHW or NCHW");
  int64_t oh = (const_dim(X, r - 2) - kernel) / stride + 1, ow = (const_dim(X, r - 1) - kernel) / stride + 1;
  if (oh <= 0 || ow <= 0) LOOM_THROW(ShapeError, "max_pool2d '", name, "': window larger than the input");
  IterVar ry = reduce_axis(kernel, "ry"), rx = reduce_axis(kernel, "rx");
  std::vector<Expr> shape(X.shape().begin(), X.shape().end() - 2);
  shape.push_back(int(oh));
  shape.push_back(int(ow));
  return compute(shape, ComputeFn([&](const std::vector<Var>& v) {
                   std::vector<Expr> idx(v.begin(), v.end() - 2);
                   idx.push_back(v[r - 2] * stride + ry->var);
                   idx.push_back(v[r - 1] * stride + rx->var);
                   return max_reduce(X(idx), {ry, rx});
                 }),
                 name, "pool");
}

Tensor relu(const Tensor& X, const std::string& name) {
  return compute(X.shape(), ComputeFn([&](const std::vector<Var>& v) {
                   return max(X(std::vector<Expr>(v.begin(), v.end())), make_zero(X.dtype()));
                 }),
                 name, "elemwise");
}

Tensor softmax(const Tensor& X, const std::string& name) {
  expect_rank(X, 2, "softmax");
  if (!X.dtype().is_float()) LOOM_THROW(TypeError, "softmax: '", X.name(), "' must be floating point");
  Expr n = X.shape()[0], m = X.shape()[1];
  IterVar k1 = reduce_axis(m, "k1"), k2 = reduce_axis(m, "k2");
  Tensor mx = compute(
      {n}, [&](Var i) { return max_reduce(X(i, k1), {k1}); }, name + "_max");
  Tensor e = compute(
      {n, m}, [&](Var i, Var j) { return exp(X(i, j) - mx(i)); }, name + "_exp");
  Tensor s = compute(
      {n}, [&](Var i) { return sum(e(i, k2), {k2}); }, name + "_sum");
  return compute(
      {n, m}, [&](Var i, Var j) { return e(i, j) / s(i); }, name);
}

}  // namespace loom::ops
