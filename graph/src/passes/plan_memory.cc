// Pass: plan_memory. Static storage for the kernels' outputs. Walking the kernels in execution
// order, a kernel's output takes the smallest free storage that fits (or grows the largest free
// one, or makes a new one), and storage returns to the free list after its value's last reader.
// Graph outputs are never reused.
#include <algorithm>
#include <sstream>

#include "loom/graph/passes.h"

namespace loom::graph {

uint64_t MemoryPlan::planned_bytes() const {
  uint64_t total = 0;
  for (uint64_t b : storage_bytes) total += b;
  return total;
}

MemoryPlan plan_memory(const Graph& g, const FusionPlan& fusion) {
  MemoryPlan plan;
  plan.storage_of.assign(g.nodes.size(), -1);
  std::vector<int> last_use(g.nodes.size(), -1);
  for (size_t k = 0; k < fusion.groups.size(); ++k)
    for (int in : fusion.groups[k].inputs) last_use[in] = static_cast<int>(k);
  for (int o : g.outputs) last_use[o] = static_cast<int>(fusion.groups.size());  // live to the end
  std::vector<int> free_list;
  for (size_t k = 0; k < fusion.groups.size(); ++k) {
    int out = fusion.groups[k].output;
    uint64_t need = (g.type_of(out).nbytes() + 63) / 64 * 64;
    plan.unplanned_bytes += need;
    int best = -1;
    for (int s : free_list)
      if (plan.storage_bytes[s] >= need && (best < 0 || plan.storage_bytes[s] < plan.storage_bytes[best])) best = s;
    if (best < 0 && !free_list.empty()) {
      best = *std::max_element(free_list.begin(), free_list.end(),
                               [&](int a, int b) { return plan.storage_bytes[a] < plan.storage_bytes[b]; });
      plan.storage_bytes[best] = need;
    }
    if (best >= 0) {
      free_list.erase(std::find(free_list.begin(), free_list.end(), best));
    } else {
      best = static_cast<int>(plan.storage_bytes.size());
      plan.storage_bytes.push_back(need);
    }
    plan.storage_of[out] = best;
    if (last_use[out] < 0) free_list.push_back(best);  // never read (dead output of a kernel)
    for (int in : fusion.groups[k].inputs)
      if (last_use[in] == static_cast<int>(k) && plan.storage_of[in] >= 0 &&
          std::find(free_list.begin(), free_list.end(), plan.storage_of[in]) == free_list.end())
        free_list.push_back(plan.storage_of[in]);
  }
  return plan;
}

std::string MemoryPlan::str(const Graph& g) const {
  std::ostringstream os;
  os << storage_bytes.size() << " storage buffers, " << planned_bytes() << " bytes planned vs " << unplanned_bytes
     << " bytes with one buffer per temporary\n";
  for (size_t id = 0; id < storage_of.size(); ++id)
    if (storage_of[id] >= 0)
      os << "  %" << id << " " << g.type_of(static_cast<int>(id)).str() << " -> storage " << storage_of[id] << "\n";
  return os.str();
}

}  // namespace loom::graph
