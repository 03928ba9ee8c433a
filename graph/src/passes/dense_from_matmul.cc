// Pass: dense_from_matmul. A float matmul whose right operand is a constant matrix W [K, N] is a
// dense layer over the rows of its left operand x [..., K] (every Linear of a transformer as
// exported from PyTorch): reshape(dense(reshape(x, [rows, K]), Wᵀ[, b]), [..., N]). An add of a
// constant bias that broadcasts along the last axis only ([N] or [1, ..., 1, N]), when it is the
// matmul's only reader, becomes the dense layer's bias. As a dense layer it gets the packed-weight
// GEMM schedule on the CPU, int8 quantization and the accelerator partition.
#include <map>

#include "loom/graph/passes.h"

namespace loom::graph {

namespace {

bool float_constant(const Graph& g, int id) {
  return g.node(id).is_constant() && g.type_of(id).dtype == DataType::Float(32);
}

// The bias [N] a constant c adds along the last axis of a [..., N] value, or an undefined array.
NDArray last_axis_bias(const Graph& g, int c, int64_t n, size_t rank) {
  if (!float_constant(g, c)) return NDArray();
  const Shape& s = g.type_of(c).shape;
  if (s.empty() || s.size() > rank || s.back() != n) return NDArray();
  for (size_t d = 0; d + 1 < s.size(); ++d)
    if (s[d] != 1) return NDArray();
  NDArray b = NDArray::empty({n}, DataType::Float(32));
  for (int64_t i = 0; i < n; ++i) b.set_from_double(i, g.node(c).value.get_as_double(i));
  return b;
}

bool is_output(const Graph& g, int id) {
  for (int o : g.outputs)
    if (o == id) return true;
  return false;
}

// Wᵀ of constant W, made once per constant (layers that share weights keep sharing them).
int transposed(Graph& g, int w_id, std::map<int, int>& done) {
  auto it = done.find(w_id);
  if (it != done.end()) return it->second;
  const NDArray& w = g.node(w_id).value;
  int64_t K = w.shape()[0], N = w.shape()[1];
  NDArray wt = NDArray::empty({N, K}, w.dtype());
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) wt.set_from_double(j * K + k, w.get_as_double(k * N + j));
  return done[w_id] = g.add_constant(g.unique_name(g.node(w_id).name + "_T"), wt);
}

void rewrite(Graph& g, int id, const std::vector<std::vector<int>>& users, std::map<int, int>& transposes) {
  const Node mm = g.node(id);
  int x = mm.inputs[0];
  const Shape xs = g.type_of(x).shape, out = mm.type.shape;
  const Shape ws = g.type_of(mm.inputs[1]).shape;
  int64_t K = ws[0], N = ws[1];
  // The rows: the product of x's leading dimensions, symbolic where they are (one symbolic
  // factor at most: a product of two is not affine).
  const runtime::ShapeExpr xd = g.type_of(x).is_static() ? runtime::constant_shape(xs) : g.type_of(x).dims;
  runtime::DimExpr rows = runtime::DimExpr::constant(1);
  for (size_t d = 0; d + 1 < xd.size(); ++d) {
    if (!rows.is_constant() && !xd[d].is_constant()) return;
    rows = rows.is_constant() ? xd[d] * rows.offset : rows * xd[d].offset;
  }
  int x_rows = x;
  if (xs.size() != 2) {
    x_rows = g.add_op("reshape", g.unique_name(mm.name + "_rows"), {x});
    g.set_shape_attr(x_rows, "shape", {rows, runtime::DimExpr::constant(K)});
  }
  std::vector<int> in{x_rows, transposed(g, mm.inputs[1], transposes)};
  // The bias add, if it is the only reader.
  int replaced = id;
  if (users[size_t(id)].size() == 1 && !is_output(g, id)) {
    const Node& add = g.node(users[size_t(id)][0]);
    if (add.is_op() && add.op == "add" && add.type.shape == out) {
      int other = add.inputs[0] == id ? add.inputs[1] : add.inputs[0];
      NDArray b = last_axis_bias(g, other, N, out.size());
      if (b.defined()) {
        in.push_back(g.add_constant(g.unique_name(g.node(other).name + "_bias"), b));
        replaced = users[size_t(id)][0];
      }
    }
  }
  int y = g.add_op("dense", g.unique_name(mm.name + "_dense"), in);
  if (xs.size() != 2) {
    y = g.add_op("reshape", g.unique_name(mm.name + "_unrows"), {y});
    g.set_shape_attr(y, "shape", mm.type.is_static() ? runtime::constant_shape(out) : mm.type.dims);
  }
  g.replace_uses(replaced, y);
}

}  // namespace

void dense_from_matmul(Graph& g) {
  infer_types(g);
  auto users = g.users();
  std::map<int, int> transposes;
  size_t original = g.nodes.size();
  for (size_t id = 0; id < original; ++id) {
    const Node& n = g.nodes[id];
    if (!n.is_op() || n.op != "matmul" || !float_constant(g, n.inputs[1])) continue;
    if (g.type_of(n.inputs[0]).shape.size() < 2 || g.type_of(n.inputs[1]).shape.size() != 2) continue;
    rewrite(g, int(id), users, transposes);
  }
  eliminate_dead_nodes(g);
  infer_types(g);
}

}  // namespace loom::graph
