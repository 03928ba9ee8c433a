// Pass: fold_constants. Operator nodes whose inputs are all constants are evaluated once, at
// compile time, with the naive tensor-expression reference, and become constants.
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

void fold_constants(Graph& g, int64_t max_elements) {
  for (int id : g.topological_order()) {
    Node& n = g.node(id);
    if (!n.is_op() || n.inputs.empty()) continue;
    bool all_const = true;
    for (int i : n.inputs) all_const &= g.node(i).is_constant();
    if (!all_const || n.type.numel() > max_elements) continue;
    NDArray v = evaluate_constant_op(g, id);
    n.kind = NodeKind::Constant;
    n.value = v;
    n.inputs.clear();
    n.op.clear();
    n.attrs = Attrs();
  }
  g.compact();
}

}  // namespace loom::graph
