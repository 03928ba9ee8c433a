// Pass: fold_constants. Operator nodes whose inputs are all constants are evaluated once, at
// compile time, with the naive tensor-expression reference, and become constants; those whose
// value depends on the shape variables stay operators.
#include <cstring>
#include <map>

#include "loom/graph/passes.h"
#include "loom/ir/eval.h"
#include "loom/runtime/error.h"

namespace loom::graph {

NDArray evaluate_constant_op(const Graph& g, int id) {
  const Node& n = g.node(id);
  std::vector<ir::Tensor> in;
  std::map<const ir::Operation*, NDArray> values;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Node& c = g.node(n.inputs[k]);
    if (!c.is_constant())
      LOOM_THROW(InternalError, "evaluate_constant_op: input ", k, " of '", n.name, "' is not constant");
    std::vector<ir::Expr> shape;
    for (int64_t d : c.type.shape) shape.push_back(ir::Expr(static_cast<int>(d)));
    in.push_back(ir::placeholder(shape, c.type.dtype, "c" + std::to_string(k)));
    values[in.back().op().get()] = c.value;
  }
  ir::Tensor out = op_def(n.op).compute(n, in, "folded");
  return ir::reference_eval({out}, values)[0];
}

NDArray transpose_constant(const NDArray& a, const std::vector<int64_t>& perm) {
  const size_t r = a.shape().size();
  std::vector<bool> seen(r, false);
  if (perm.size() != r) LOOM_THROW(InternalError, "transpose_constant: perm of ", perm.size(), " axes for ", r);
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(r) || seen[size_t(p)])
      LOOM_THROW(InternalError, "transpose_constant: perm is not a permutation of the ", r, " axes");
    seen[size_t(p)] = true;
  }
  Shape out_shape;
  for (int64_t p : perm) out_shape.push_back(a.shape()[size_t(p)]);
  NDArray out = NDArray::empty(out_shape, a.dtype());
  std::vector<int64_t> in_strides(r, 1);
  for (size_t d = r; d-- > 1;) in_strides[d - 1] = in_strides[d] * a.shape()[d];
  const int64_t bytes = a.dtype().bytes();
  const char* src = static_cast<const char*>(a.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  std::vector<int64_t> idx(r, 0);
  int64_t i = 0;  // the input element of output element j
  for (int64_t j = 0; j < out.numel(); ++j) {
    std::memcpy(dst + j * bytes, src + i * bytes, size_t(bytes));
    for (size_t d = r; d-- > 0;) {
      i += in_strides[size_t(perm[d])];
      if (++idx[d] < out_shape[d]) break;
      i -= idx[d] * in_strides[size_t(perm[d])];
      idx[d] = 0;
    }
  }
  return out;
}

void fold_constants(Graph& g, int64_t max_elements) {
  for (int id : g.topological_order()) {
    Node& n = g.node(id);
    if (!n.is_op() || n.inputs.empty()) continue;
    // A value of the shape variables (a table's rows at [past, past + seq)) is computed at run time.
    if (!n.type.is_static() || !n.sym_attrs.empty()) continue;
    bool all_const = true;
    for (int i : n.inputs) all_const &= g.node(i).is_constant();
    if (!all_const) continue;
    // A transposed constant of any size, natively: a language model's output projection, past the
    // evaluator's limit, was otherwise transposed at every run, and its dense layer could not pack
    // its weights.
    bool native = n.op == "transpose" && n.inputs.size() == 1;
    if (!native && n.type.numel() > max_elements) continue;
    NDArray v = native ? transpose_constant(g.node(n.inputs[0]).value, n.attrs.get_ints("perm", {}))
                       : evaluate_constant_op(g, id);
    n.kind = NodeKind::Constant;
    n.value = v;
    n.inputs.clear();
    n.op.clear();
    n.attrs = Attrs();
  }
  g.compact();
}

}  // namespace loom::graph
