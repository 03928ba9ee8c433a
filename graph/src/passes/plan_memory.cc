// Pass: plan_memory. Static storage for the kernels' outputs. Walking the kernels in execution
// order, a kernel's output takes the smallest free storage that fits (or grows the largest free
// one, or makes a new one), and storage returns to the free list after its value's last reader.
// Graph outputs are never reused. The values an in-place concat joins (a region) share one storage,
// taken when the first of them is written and returned after the last read of any.
#include <algorithm>
#include <sstream>

#include "loom/graph/passes.h"
#include "loom/runtime/executor_graph.h"

namespace loom::graph {

uint64_t MemoryPlan::planned_bytes() const {
  uint64_t total = 0;
  for (uint64_t b : storage_bytes) total += b;
  return total;
}

MemoryPlan plan_memory(const Graph& g, const FusionPlan& fusion) {
  MemoryPlan plan;
  plan.storage_of.assign(g.nodes.size(), -1);
  plan.offset_of.assign(g.nodes.size(), 0);
  // Storage is planned per owner: a value, or the region of an in-place concat its value lies in.
  const InPlaceRegions regions = in_place_regions(g);
  plan.region_of = regions.region;
  auto shared = [&](int id) { return regions.region[size_t(id)] >= 0; };
  auto owner = [&](int id) { return shared(id) ? regions.region[size_t(id)] : id; };
  std::vector<int> last_use(g.nodes.size(), -1), storage_of_owner(g.nodes.size(), -1);
  const int end = static_cast<int>(fusion.groups.size());  // graph outputs live to the end
  for (int k = 0; k < end; ++k)
    for (int in : fusion.groups[size_t(k)].inputs) last_use[owner(in)] = std::max(last_use[owner(in)], k);
  for (int o : g.outputs) last_use[owner(o)] = end;
  std::vector<int> free_list;
  // The smallest free storage that fits, else the largest free one grown, else a new one.
  auto take = [&](uint64_t need) {
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
    return best;
  };
  for (int k = 0; k < end; ++k) {
    const int out = fusion.groups[size_t(k)].output, own = owner(out);
    plan.unplanned_bytes += runtime::aligned_bytes(g.type_of(out).nbytes());
    if (storage_of_owner[own] < 0) {  // a value of its own, or the first of its region written
      storage_of_owner[own] =
          take(runtime::aligned_bytes(shared(out) ? regions.bytes.at(own) : g.type_of(out).nbytes()));
      if (last_use[own] < 0) free_list.push_back(storage_of_owner[own]);  // never read (dead output of a kernel)
    }
    plan.storage_of[out] = storage_of_owner[own];
    plan.offset_of[out] = shared(out) ? regions.offset[size_t(out)] : 0;
    for (int in : fusion.groups[size_t(k)].inputs)
      if (last_use[owner(in)] == k && plan.storage_of[in] >= 0 &&
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
      os << "  %" << id << " " << g.type_of(static_cast<int>(id)).str() << " -> storage " << storage_of[id]
         << (offset_of[id] ? " + " + std::to_string(offset_of[id]) : std::string()) << "\n";
  return os.str();
}

}  // namespace loom::graph
