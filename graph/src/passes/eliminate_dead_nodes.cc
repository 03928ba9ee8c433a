// Pass: eliminate_dead_nodes. Keeps the inputs and what the outputs depend on.
#include "loom/graph/passes.h"

namespace loom::graph {

void eliminate_dead_nodes(Graph& g) { g.compact(); }

}  // namespace loom::graph
