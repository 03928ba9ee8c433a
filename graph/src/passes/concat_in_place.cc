// Pass: concat_in_place. A concatenation whose inputs can be written straight into its output gets
// the attribute in_place = 1 (see passes.h): each input is a contiguous range of the output (every
// dimension before the axis is 1) at an offset aligned as kernels take their buffers
// (runtime::kValueAlignment). Concats that share inputs share storage: DenseNet's concat of every earlier
// feature of a dense block puts each feature at one offset of one buffer per block.
//
// Positions are kept in a weighted union-find (a value's byte position relative to its set's
// root). A concat joins when its inputs' positions agree with what earlier concats fixed and the
// values that kernels write (the leaves: members that are not in-place concats) do not overlap.
#include <algorithm>
#include <numeric>

#include "loom/graph/op_registry.h"
#include "loom/graph/passes.h"
#include "loom/runtime/error.h"
#include "loom/runtime/executor_graph.h"

namespace loom::graph {

namespace {

bool is_concat(const Node& n) { return n.is_op() && n.op == "concat"; }
bool is_reshape(const Node& n) { return n.is_op() && n.op == "reshape"; }

class ConcatPlacer {
 public:
  explicit ConcatPlacer(const Graph& g)
      : g_(g),
        parent_(g.nodes.size()),
        rel_(g.nodes.size(), 0),
        member_(g.nodes.size(), false),
        in_place_(g.nodes.size(), false) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }

  // Why concat `id` (or reshape: its one input at offset 0) cannot be in place on its own terms;
  // empty if it can.
  std::string ineligible(int id) const {
    const Node& n = g_.node(id);
    if (is_reshape(n)) {
      if (!g_.type_of(id).is_static() || !g_.type_of(n.inputs[0]).is_static()) return "its shapes are symbolic";
      return not_a_cpu_kernels_output(n.inputs[0]);
    }
    const TensorType& t = g_.type_of(id);
    int64_t axis = n.attrs.get_int("axis");
    if (axis < 0) axis += static_cast<int64_t>(t.shape.size());
    for (int in : n.inputs)
      if (!g_.type_of(in).is_static())
        return "its inputs' shapes are symbolic: their offsets are known only at run time";
    for (int64_t d = 0; d < axis; ++d)
      if (t.shape[size_t(d)] != 1)
        return "its inputs are not contiguous in its output (dimension " + std::to_string(d) +
               " before the axis is not 1)";
    uint64_t offset = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Node& in = g_.node(n.inputs[k]);
      if (std::string why = not_a_cpu_kernels_output(n.inputs[k]); !why.empty()) return why;
      if (std::count(n.inputs.begin(), n.inputs.end(), n.inputs[k]) > 1) return "input '" + in.name + "' is read twice";
      if (offset % runtime::kValueAlignment)
        return "input '" + in.name + "' would start at byte " + std::to_string(offset) + ", not a multiple of " +
               std::to_string(runtime::kValueAlignment);
      offset += g_.type_of(n.inputs[k]).nbytes();
    }
    return {};
  }

  // Why the value `in` is not written by a kernel of the CPU's library; empty if it is.
  std::string not_a_cpu_kernels_output(int in) const {
    const Node& n = g_.node(in);
    if (!n.is_op()) return "input '" + n.name + "' is no kernel's output";
    if (op_def(n.op).device != runtime::KernelDevice::CPU) return "input '" + n.name + "' is made off the CPU";
    return {};
  }

  // Places concat `id`'s inputs in its storage; on a conflict with earlier placements, leaves
  // everything as it was and says why.
  std::string try_add(int id) {
    if (std::string why = ineligible(id); !why.empty()) return why;
    auto parent = parent_;
    auto rel = rel_;
    auto member = member_;
    std::string why = link_inputs(id);
    if (why.empty()) why = overlap(id);
    if (!why.empty()) {
      parent_ = std::move(parent);
      rel_ = std::move(rel);
      member_ = std::move(member);
      in_place_[size_t(id)] = false;
    }
    return why;
  }

  InPlaceRegions regions() {
    InPlaceRegions r;
    r.region.assign(g_.nodes.size(), -1);
    r.offset.assign(g_.nodes.size(), 0);
    std::map<int, int64_t> lowest;
    for (size_t v = 0; v < member_.size(); ++v)
      if (member_[v]) {
        auto [root, pos] = find(int(v));
        auto [it, fresh] = lowest.emplace(root, pos);
        if (!fresh) it->second = std::min(it->second, pos);
      }
    for (size_t v = 0; v < member_.size(); ++v)
      if (member_[v]) {
        auto [root, pos] = find(int(v));
        r.region[v] = root;
        r.offset[v] = uint64_t(pos - lowest[root]);
        uint64_t& bytes = r.bytes[root];
        bytes = std::max(bytes, r.offset[v] + g_.type_of(int(v)).nbytes());
      }
    return r;
  }

 private:
  std::pair<int, int64_t> find(int v) const {
    int64_t pos = 0;
    while (parent_[size_t(v)] != v) {
      pos += rel_[size_t(v)];
      v = parent_[size_t(v)];
    }
    return {v, pos};
  }

  // pos(a) = pos(b) + d, or why not.
  std::string link(int a, int b, int64_t d) {
    auto [ra, pa] = find(a);
    auto [rb, pb] = find(b);
    if (ra == rb)
      return pa == pb + d ? std::string()
                          : "input '" + g_.node(a).name + "' already lies at another offset of a shared buffer";
    parent_[size_t(ra)] = rb;
    rel_[size_t(ra)] = pb + d - pa;
    return {};
  }

  std::string link_inputs(int id) {
    in_place_[size_t(id)] = member_[size_t(id)] = true;
    int64_t offset = 0;
    for (int in : g_.node(id).inputs) {
      if (std::string why = link(in, id, offset); !why.empty()) return why;
      member_[size_t(in)] = true;
      offset += int64_t(g_.type_of(in).nbytes());
    }
    return {};
  }

  // The leaves sharing concat `id`'s storage must not overlap: each kernel writes its own bytes.
  std::string overlap(int id) const {
    const int root = find(id).first;
    std::vector<std::pair<int64_t, int>> leaves;
    for (size_t v = 0; v < member_.size(); ++v)
      if (member_[v] && !in_place_[v] && find(int(v)).first == root) leaves.push_back({find(int(v)).second, int(v)});
    std::sort(leaves.begin(), leaves.end());
    for (size_t k = 1; k < leaves.size(); ++k)
      if (leaves[k - 1].first + int64_t(g_.type_of(leaves[k - 1].second).nbytes()) > leaves[k].first)
        return "values '" + g_.node(leaves[k - 1].second).name + "' and '" + g_.node(leaves[k].second).name +
               "' would overlap in the shared buffer";
    return {};
  }

  const Graph& g_;
  std::vector<int> parent_;
  std::vector<int64_t> rel_;    // byte position relative to the parent
  std::vector<bool> member_;    // placed in some shared storage
  std::vector<bool> in_place_;  // an in-place concat (not a leaf)
};

}  // namespace

bool is_in_place_concat(const Node& n) { return is_concat(n) && n.attrs.get_int("in_place", 0); }
bool is_in_place_reshape(const Node& n) { return is_reshape(n) && n.attrs.get_int("in_place", 0); }
bool is_in_place(const Node& n) { return is_in_place_concat(n) || is_in_place_reshape(n); }

void concat_in_place(Graph& g, bool enabled) {
  for (Node& n : g.nodes)
    if (is_concat(n)) n.attrs.erase("in_place");  // marks of an earlier run are decided again
  if (!enabled) return;
  ConcatPlacer placer(g);
  for (int id : g.topological_order())
    if (is_concat(g.node(id)) && placer.try_add(id).empty()) g.node(id).attrs.set("in_place", int64_t(1));
}

InPlaceRegions in_place_regions(const Graph& g) {
  ConcatPlacer placer(g);
  for (int id : g.topological_order())
    if (is_in_place(g.node(id)))
      if (std::string why = placer.try_add(id); !why.empty())
        LOOM_THROW(ModelError, g.node(id).op, " '", g.node(id).name, "' is marked in_place but cannot be: ", why);
  return placer.regions();
}

void reshape_in_place(Graph& g, const FusionPlan& fusion, bool enabled) {
  for (Node& n : g.nodes)
    if (is_reshape(n)) n.attrs.erase("in_place");
  if (!enabled) return;
  // Values an in-place concat places stay out: a view of one would take a second offset.
  std::vector<bool> concat_member(g.nodes.size(), false);
  for (size_t id = 0; id < g.nodes.size(); ++id)
    if (is_in_place_concat(g.nodes[id])) {
      concat_member[id] = true;
      for (int in : g.nodes[id].inputs) concat_member[size_t(in)] = true;
    }
  const auto users = g.users();
  ConcatPlacer placer(g);
  for (const FusedGroup& grp : fusion.groups) {
    if (grp.nodes.size() != 1 || !is_reshape(g.node(grp.anchor))) continue;
    const int id = grp.anchor, in = g.node(id).inputs[0];
    if (concat_member[size_t(id)] || concat_member[size_t(in)]) continue;
    // Read on the CPU only: other devices' copies are made per value.
    bool cpu_readers = true;
    for (int u : users[size_t(id)])
      cpu_readers = cpu_readers && g.node(u).is_op() && op_def(g.node(u).op).device == runtime::KernelDevice::CPU;
    if (cpu_readers && placer.try_add(id).empty()) g.node(id).attrs.set("in_place", int64_t(1));
  }
}

}  // namespace loom::graph
