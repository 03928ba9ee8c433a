// Pass: fuse_ops. Groups operator nodes into kernels (TVM's FuseOps rules, greedily along the
// topological order; see passes.h). A group has one output; all its other nodes are read only
// inside it.
#include <algorithm>
#include <set>
#include <sstream>

#include "loom/graph/passes.h"

namespace loom::graph {

namespace {

bool can_join(OpPattern group, OpPattern node) {
  // A reduction takes in the element-wise kernel it reads (LayerNorm's (x - mean)^2 is summed as it
  // is computed, never stored).
  if (node == OpPattern::CommReduce) return group <= OpPattern::Broadcast;
  if (node <= OpPattern::Broadcast)
    return group <= OpPattern::Injective || group == OpPattern::OutEWiseFusable || group == OpPattern::CommReduce;
  if (node == OpPattern::Injective) return group <= OpPattern::Injective;
  return false;
}

// Whether node `id` is the only reader among `readers` (the users of one value).
bool read_only_by(const std::vector<int>& readers, int id) {
  return std::all_of(readers.begin(), readers.end(), [&](int u) { return u == id; });
}

// A kernel that takes in nodes of pattern `p`: an out-element-wise-fusable or reduction kernel keeps
// its pattern (its anchor's schedule drives it), others take the strongest.
void take_in(FusedGroup& grp, OpPattern p) {
  if (grp.pattern != OpPattern::OutEWiseFusable && grp.pattern != OpPattern::CommReduce)
    grp.pattern = std::max(grp.pattern, p);
}

// The groups that make `id` the far end of a diamond from the output of group `gi` (x = conv(...);
// y = x * sigmoid(x): SiLU, hardswish, GELU): every other reader of that output lies in a group of
// element-wise/broadcast nodes whose value only `id` reads. Those side groups, or nothing when
// there is no such diamond. Merging them with `gi` and `id` cannot make a cycle: the only value
// that leaves any of them is the one `id` reads.
std::vector<int> diamond_sides(const FusionPlan& plan, const std::vector<int>& group_of,
                               const std::vector<std::vector<int>>& users, const std::set<int>& graph_outputs, int gi,
                               int id) {
  const FusedGroup& grp = plan.groups[size_t(gi)];
  std::vector<int> sides;
  for (int u : users[grp.output]) {
    if (u == id) continue;
    int si = group_of[u];
    if (si < 0 || si == gi) return {};
    const FusedGroup& side = plan.groups[size_t(si)];
    if (!read_only_by(users[side.output], id) || graph_outputs.count(side.output) ||
        side.pattern > OpPattern::Broadcast || !can_join(grp.pattern, side.pattern))
      return {};
    if (std::find(sides.begin(), sides.end(), si) == sides.end()) sides.push_back(si);
  }
  return sides;
}

}  // namespace

FusionPlan fuse_ops(const Graph& g) {
  auto users = g.users();
  std::vector<int> group_of(g.nodes.size(), -1);
  std::set<int> graph_outputs(g.outputs.begin(), g.outputs.end());
  FusionPlan plan;
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    if (!n.is_op()) continue;
    // An in-place concat runs no kernel: nothing may be computed in its group.
    OpPattern p = is_in_place_concat(n) ? OpPattern::Opaque : op_def(n.op).pattern;
    int joined = -1;
    // A diamond closes here: its producer's kernel takes in the side kernels and this node.
    for (int in : n.inputs) {
      int gi = group_of[in];
      if (gi < 0 || plan.groups[size_t(gi)].output != in || graph_outputs.count(in) ||
          !can_join(plan.groups[size_t(gi)].pattern, p))
        continue;
      std::vector<int> sides = diamond_sides(plan, group_of, users, graph_outputs, gi, id);
      if (sides.empty()) continue;
      // Side nodes after the producer's: each reads the producer's output or values from outside.
      std::sort(sides.begin(), sides.end());
      FusedGroup& grp = plan.groups[size_t(gi)];
      for (int si : sides) {
        FusedGroup& side = plan.groups[size_t(si)];
        for (int v : side.nodes) group_of[v] = gi;
        grp.nodes.insert(grp.nodes.end(), side.nodes.begin(), side.nodes.end());
        take_in(grp, side.pattern);
        side.nodes.clear();  // merged; dropped below
      }
      joined = gi;
      break;
    }
    // Else the kernel of an input it alone reads.
    for (size_t k = 0; joined < 0 && k < n.inputs.size(); ++k) {
      int in = n.inputs[k], gi = group_of[in];
      if (gi >= 0 && plan.groups[size_t(gi)].output == in && read_only_by(users[in], id) && !graph_outputs.count(in) &&
          can_join(plan.groups[size_t(gi)].pattern, p))
        joined = gi;
    }
    if (joined >= 0) {
      FusedGroup& grp = plan.groups[joined];
      grp.nodes.push_back(id);
      grp.output = id;
      take_in(grp, p);
    } else {
      FusedGroup grp;
      grp.nodes = {id};
      grp.anchor = grp.output = id;
      grp.pattern = p;
      plan.groups.push_back(grp);
      joined = static_cast<int>(plan.groups.size()) - 1;
    }
    group_of[id] = joined;
  }
  plan.groups.erase(
      std::remove_if(plan.groups.begin(), plan.groups.end(), [](const FusedGroup& grp) { return grp.nodes.empty(); }),
      plan.groups.end());
  // The anchor is the node with the strongest pattern (its schedule drives the kernel); inputs are
  // the values read from outside, in first-read order.
  for (FusedGroup& grp : plan.groups) {
    std::set<int> inside(grp.nodes.begin(), grp.nodes.end());
    for (int id : grp.nodes) {
      if (op_def(g.node(id).op).pattern > op_def(g.node(grp.anchor).op).pattern) grp.anchor = id;
      for (int in : g.node(id).inputs)
        if (!inside.count(in) && std::find(grp.inputs.begin(), grp.inputs.end(), in) == grp.inputs.end())
          grp.inputs.push_back(in);
    }
  }
  // Execution order: a group runs when its output's turn comes in the topological order.
  std::vector<int> position(g.nodes.size());
  auto order = g.topological_order();
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  std::stable_sort(plan.groups.begin(), plan.groups.end(),
                   [&](const FusedGroup& a, const FusedGroup& b) { return position[a.output] < position[b.output]; });
  return plan;
}

std::string FusionPlan::str(const Graph& g) const {
  std::ostringstream os;
  for (size_t i = 0; i < groups.size(); ++i) {
    const FusedGroup& grp = groups[i];
    os << "kernel " << i << " [" << to_string(grp.pattern) << "]:";
    for (int id : grp.nodes) os << " " << g.node(id).op << (id == grp.anchor && grp.nodes.size() > 1 ? "*" : "");
    os << "  -> %" << grp.output << " " << g.type_of(grp.output).str() << "\n";
  }
  return os.str();
}

}  // namespace loom::graph
