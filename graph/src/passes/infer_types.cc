// Pass: infer_types. Output type of every operator node from its inputs' types.
#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph {

void infer_types(Graph& g) {
  g.verify();
  for (int id : g.topological_order()) {
    Node& n = g.node(id);
    if (!n.is_op()) continue;
    const OpDef& def = op_def(n.op);
    int count = static_cast<int>(n.inputs.size());
    if (count < def.min_inputs || count > def.max_inputs)
      LOOM_THROW(ModelError, "node '", n.name, "' (", n.op, "): takes ", def.min_inputs,
                 def.min_inputs == def.max_inputs ? "" : " to " + std::to_string(def.max_inputs), " inputs, has ",
                 count);
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

}  // namespace loom::graph
