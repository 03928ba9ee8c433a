// Workloads shared by the lowering and codegen tests: each returns its inputs and outputs.
#pragma once
#include <vector>

#include "loom/ir/tensor.h"

namespace loom::test {

struct Workload {
  std::vector<ir::Tensor> inputs, outputs;
  std::vector<ir::Tensor> args() const {
    auto a = inputs;
    a.insert(a.end(), outputs.begin(), outputs.end());
    return a;
  }
};

inline Workload vector_add(int n, DataType t = DataType::Float(32)) {
  using namespace ir;
  Tensor A = placeholder({n}, t, "A"), B = placeholder({n}, t, "B");
  Tensor C = compute(
      {n}, [&](Var i) { return A(i) + B(i); }, "C");
  return {{A, B}, {C}};
}

inline Workload matmul(int n, int m, int k, DataType t = DataType::Float(32)) {
  using namespace ir;
  Tensor A = placeholder({n, k}, t, "A"), B = placeholder({k, m}, t, "B");
  IterVar r = reduce_axis(k, "k");
  Tensor C = compute(
      {n, m}, [&](Var i, Var j) { return sum(A(i, r) * B(r, j), {r}); }, "C");
  return {{A, B}, {C}};
}

// NCHW conv2d with zero padding computed by a separate (inlinable) stage.
inline Workload conv2d_nchw(int batch, int in_c, int hw, int out_c, int kernel, int stride, int pad,
                            DataType t = DataType::Float(32)) {
  using namespace ir;
  Tensor X = placeholder({batch, in_c, hw, hw}, t, "X");
  Tensor W = placeholder({out_c, in_c, kernel, kernel}, t, "W");
  int padded = hw + 2 * pad, out = (padded - kernel) / stride + 1;
  Tensor P = compute(
      {batch, in_c, padded, padded},
      [&](Var n, Var c, Var y, Var x) {
        Expr inside = y >= pad && y < hw + pad && x >= pad && x < hw + pad;
        return if_then_else(inside, X(n, c, y - pad, x - pad), make_zero(t));
      },
      "pad");
  IterVar rc = reduce_axis(in_c, "rc"), ry = reduce_axis(kernel, "ry"), rx = reduce_axis(kernel, "rx");
  Tensor Y = compute(
      {batch, out_c, out, out},
      [&](Var n, Var f, Var y, Var x) {
        return sum(P(n, rc, y * stride + ry->var, x * stride + rx->var) * W(f, rc, ry, rx), {rc, ry, rx});
      },
      "conv");
  return {{X, W}, {Y}};
}

inline Workload max_pool2d(int c, int hw, int kernel, int stride, DataType t = DataType::Float(32)) {
  using namespace ir;
  Tensor X = placeholder({c, hw, hw}, t, "X");
  int out = (hw - kernel) / stride + 1;
  IterVar ry = reduce_axis(kernel, "ry"), rx = reduce_axis(kernel, "rx");
  Tensor Y = compute(
      {c, out, out},
      [&](Var ch, Var y, Var x) {
        return max_reduce(X(ch, y * stride + ry->var, x * stride + rx->var), {ry, rx});
      },
      "pool");
  return {{X}, {Y}};
}

inline Workload relu(int n, int m, DataType t = DataType::Float(32)) {
  using namespace ir;
  Tensor X = placeholder({n, m}, t, "X");
  Tensor Y = compute(
      {n, m}, [&](Var i, Var j) { return max(X(i, j), make_zero(t)); }, "relu");
  return {{X}, {Y}};
}

// Row-wise softmax: max, exp-sum and normalise as separate reduction/element-wise stages.
inline Workload softmax(int n, int m) {
  using namespace ir;
  Tensor X = placeholder({n, m}, DataType::Float(32), "X");
  IterVar k1 = reduce_axis(m, "k1"), k2 = reduce_axis(m, "k2");
  Tensor mx = compute(
      {n}, [&](Var i) { return max_reduce(X(i, k1), {k1}); }, "row_max");
  Tensor e = compute(
      {n, m}, [&](Var i, Var j) { return exp(X(i, j) - mx(i)); }, "exp");
  Tensor s = compute(
      {n}, [&](Var i) { return sum(e(i, k2), {k2}); }, "row_sum");
  Tensor Y = compute(
      {n, m}, [&](Var i, Var j) { return e(i, j) / s(i); }, "softmax");
  return {{X}, {Y}};
}

}  // namespace loom::test
