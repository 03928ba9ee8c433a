// Pass: infer_types. Output type of every operator node from its inputs' types.
#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph {

void infer_types(Graph& g) {
  g.verify();
  for (int id : g.topological_order()) {
    Node& n = g.node(id);
    if (!n.is_op()) continue;
    const OpDef& def = op_def(n.op);  // registered, with as many inputs as it takes: verify()
    std::vector<TensorType> in;
    for (int i : n.inputs) in.push_back(g.type_of(i));
    try {
      n.type = def.infer_checked(n, in);
    } catch (const Error& e) {
      std::string types;
      for (auto& t : in) types += (types.empty() ? "" : ", ") + t.str();
      LOOM_THROW(ModelError, "node '", n.name, "' (", n.op, ") with inputs ", types, ": ", e.what());
    }
    n.typed = true;
  }
}

void verify_types(const Graph& g) {
  g.verify();
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    if (!n.is_op() || !n.typed) continue;
    std::vector<TensorType> in;
    for (int i : n.inputs) {
      if (!g.node(i).typed)
        LOOM_THROW(ModelError, "node '", n.name, "' (", n.op, ") is typed but its input '", g.node(i).name, "' is not");
      in.push_back(g.node(i).type);
    }
    TensorType inferred;
    try {
      inferred = op_def(n.op).infer_checked(n, in);
    } catch (const Error& e) {
      LOOM_THROW(ModelError, "node '", n.name, "' (", n.op, "): its inputs and attributes no longer type: ", e.what());
    }
    if (!(inferred == n.type))
      LOOM_THROW(ModelError, "node '", n.name, "' (", n.op, ") says its type is ", n.type.str(),
                 " but its inputs give ", inferred.str());
  }
}

}  // namespace loom::graph
