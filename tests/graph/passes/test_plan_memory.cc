// Pass plan_memory: buffers reused along a chain, and never while a value is still to be read
// (random graphs, checked by brute force).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "common/test_util.h"
#include "graph/memory_plan_check.h"
#include "loom/graph/passes.h"

namespace loom::graph {
namespace {

TEST(GraphPasses, MemoryPlanReusesBuffers) {
  // A chain of opaque kernels: each intermediate dies after its reader, so two buffers suffice.
  Graph g;
  int v = g.add_input("x", {{8, 256}, DataType::Float(32)});
  for (int i = 0; i < 6; ++i) v = g.add_op("softmax", "s" + std::to_string(i), {v}, Attrs().set("axis", int64_t(1)));
  g.outputs = {v};
  optimize(g);
  FusionPlan plan = fuse_ops(g);
  ASSERT_EQ(plan.groups.size(), 6u);
  MemoryPlan mem = plan_memory(g, plan);
  EXPECT_EQ(mem.unplanned_bytes, 6u * 8 * 256 * 4);
  EXPECT_EQ(mem.storage_bytes.size(), 2u) << mem.str(g);  // two buffers alternate
  EXPECT_EQ(mem.planned_bytes(), 2u * 8 * 256 * 4);
  // No kernel writes the storage it reads.
  for (auto& grp : plan.groups)
    for (int in : grp.inputs)
      if (mem.storage_of[in] >= 0) {
        EXPECT_NE(mem.storage_of[in], mem.storage_of[grp.output]);
      }
}

// The memory plan against a brute-force check on random graphs: walking the kernels in order,
// no kernel's output may take a storage buffer that holds a value still to be read (by a later
// kernel, or as a graph output), and every value fits its buffer.
TEST(GraphPasses, MemoryPlanNeverReusesALiveBuffer) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    Graph g;
    std::vector<int> values{g.add_input("x", {{2, 8 + int64_t(seed % 5) * 8}, DataType::Float(32)})};
    const int64_t cols = g.type_of(values[0]).shape[1];
    int nodes = 6 + int(rng() % 14);
    for (int i = 0; i < nodes; ++i) {
      int a = values[rng() % values.size()], b = values[rng() % values.size()];
      std::string name = "n" + std::to_string(i);
      switch (rng() % 4) {
        case 0:
          values.push_back(g.add_op("softmax", name, {a}, Attrs().set("axis", int64_t(1))));
          break;  // opaque
        case 1:
          values.push_back(g.add_op("add", name, {a, b}));
          break;
        case 2:
          values.push_back(g.add_op("relu", name, {a}));
          break;
        default:
          values.push_back(
              g.add_op("dense", name, {a, g.add_constant(name + "_w", test::random_float32({cols, cols}, seed))}));
      }
    }
    test::pick_random_outputs(g, values, rng);
    infer_types(g);
    FusionPlan plan = fuse_ops(g);
    MemoryPlan mem = plan_memory(g, plan);
    std::map<int, size_t> last_read = test::last_reads(g, plan);
    std::map<int, int> holder;  // storage -> the value it holds
    for (size_t k = 0; k < plan.groups.size(); ++k) {
      int out = plan.groups[k].output, s = mem.storage_of[out];
      ASSERT_GE(s, 0) << "seed " << seed;
      ASSERT_GE(mem.storage_bytes[size_t(s)], g.type_of(out).nbytes()) << "seed " << seed;
      if (auto it = holder.find(s); it != holder.end()) {
        int held = it->second;
        bool still_read = last_read.count(held) && last_read[held] >= k;
        EXPECT_FALSE(still_read) << "seed " << seed << ": kernel " << k << " writes storage " << s << " over '"
                                 << g.node(held).name << "', read until step " << last_read[held] << "\n"
                                 << plan.str(g) << mem.str(g);
      }
      holder[s] = out;
    }
  }
}

}  // namespace
}  // namespace loom::graph
