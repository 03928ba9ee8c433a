// What the memory-plan tests on random graphs share (passes/test_plan_memory.cc,
// passes/test_concat_in_place.cc): the graph's outputs, and when each value is read for the last time.
#pragma once
#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "loom/graph/passes.h"

namespace loom::test {

// The last of `values` and up to two random others (not the graph input, values[0]) become the
// graph's outputs; some of them are also read by later nodes.
inline void pick_random_outputs(graph::Graph& g, const std::vector<int>& values, std::mt19937_64& rng) {
  g.outputs = {values.back()};
  for (int k = 0; k < 2; ++k)
    if (int v = values[1 + rng() % (values.size() - 1)];
        std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end())
      g.outputs.push_back(v);
}

// The step of the plan at which each value is read for the last time: by a kernel, as a graph
// output (the plan's end), or through an in-place concat that holds it or an in-place reshape
// that views it (as long as the concat or the reshape).
inline std::map<int, size_t> last_reads(const graph::Graph& g, const graph::FusionPlan& plan) {
  std::map<int, size_t> last;
  for (size_t k = 0; k < plan.groups.size(); ++k)
    for (int in : plan.groups[k].inputs) last[in] = k;
  for (int out : g.outputs) last[out] = plan.groups.size();
  for (size_t k = plan.groups.size(); k-- > 0;) {  // outer concats and views first: they come later
    const graph::Node& n = g.node(plan.groups[k].output);
    if (graph::is_in_place(n))
      for (int in : n.inputs) last[in] = std::max(last[in], last[plan.groups[k].output]);
  }
  return last;
}

}  // namespace loom::test
