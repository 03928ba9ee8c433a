// Concatenations written in place (pass concat_in_place, plan_memory's shared storage) and
// reshapes as views (reshape_in_place): which qualify, where their inputs land, that no kernel
// overwrites a value still to be read, and that compiled models give the interpreter's results.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "common/test_util.h"
#include "graph/memory_plan_check.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

int node_named(const Graph& g, const std::string& name) {
  for (size_t id = 0; id < g.nodes.size(); ++id)
    if (g.nodes[id].name == name) return int(id);
  ADD_FAILURE() << "no node '" << name << "' in\n" << g.str();
  return -1;
}

// The compiled model's outputs against the interpreter on the graph as built.
void expect_runs_like_the_interpreter(const Graph& g, const std::vector<NDArray>& inputs, const std::string& what,
                                      const PipelineOptions& pipeline = {}) {
  std::vector<NDArray> want = reference_run(g, inputs);
  BuildOptions bo;
  bo.pipeline = pipeline;
  std::vector<NDArray> got = runtime::GraphExecutor::from_model_file(build(g, bo).file, what).run(inputs);
  EXPECT_TRUE(test::all_arrays_close(got, want, 0, 1e-4)) << what;
}

// A DenseNet block: every layer reads the concat of all features before it (BN-ReLU, 3x3 conv).
struct DenseBlock {
  Graph g;
  std::vector<int> features;  // stem, then one per layer
  int64_t growth = 16, H = 5, W = 6;
  explicit DenseBlock(int layers) {
    int x = g.add_input("x", {{1, 8, H, W}, DataType::Float(32)});
    features.push_back(conv("stem", x, 8, 32, 1));
    for (int l = 0; l < layers; ++l) {
      int64_t c = 32 + growth * l;
      int in = l == 0 ? features[0] : g.add_op("concat", "cat" + std::to_string(l), features, axis(1));
      int bn = g.add_op("add", "shift" + std::to_string(l),
                        {g.add_op("mul", "scale" + std::to_string(l),
                                  {in, g.add_constant("g" + std::to_string(l),
                                                      test::random_float32({1, c, 1, 1}, 100 + l, 0.5, 1.5))}),
                         g.add_constant("b" + std::to_string(l), test::random_float32({1, c, 1, 1}, 200 + l))});
      features.push_back(
          conv("f" + std::to_string(l), g.add_op("relu", "act" + std::to_string(l), {bn}), c, growth, 300 + l));
    }
    g.outputs = {g.add_op("relu", "out", {g.add_op("concat", "cat_out", features, axis(1))})};
  }
  static Attrs axis(int64_t a) { return Attrs().set("axis", a); }
  int conv(const std::string& name, int in, int64_t c, int64_t o, uint64_t seed) {
    int w = g.add_constant(name + "_w", test::random_float32({o, c, 3, 3}, seed, -0.3, 0.3));
    return g.add_op("conv2d", name, {in, w}, Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}));
  }
  NDArray input() const { return test::random_float32({1, 8, H, W}, 7); }
};

// Every concat of the block is in place and every feature lies at one offset of one storage, after
// the features before it; no kernel call copies a concat; the model computes what the interpreter does.
TEST(ConcatInPlace, DenseBlockFeaturesShareOneBufferInOrder) {
  DenseBlock block(4);
  Graph o = block.g;
  optimize(o);
  for (auto& n : o.nodes)
    if (n.is_op() && n.op == "concat") {
      EXPECT_TRUE(is_in_place_concat(n)) << n.name << " in\n" << o.str();
    }
  FusionPlan fusion = fuse_ops(o);
  MemoryPlan mem = plan_memory(o, fusion);
  const std::vector<std::string> names = {"stem", "f0", "f1", "f2", "f3"};
  // The features may reach the concat through a layout change of the stem (alter_layout's block);
  // each is the concat input in that position.
  const Node& cat_out = o.node(node_named(o, "cat_out"));
  ASSERT_EQ(cat_out.inputs.size(), names.size()) << o.str();
  uint64_t offset = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    int f = cat_out.inputs[k];
    EXPECT_EQ(mem.storage_of[f], mem.storage_of[node_named(o, "cat_out")]) << names[k] << "\n" << mem.str(o);
    EXPECT_EQ(mem.offset_of[f], offset) << names[k] << "\n" << mem.str(o);
    offset += o.type_of(f).nbytes();
  }
  for (int l = 1; l < 4; ++l) {
    int cat = node_named(o, "cat" + std::to_string(l));
    EXPECT_EQ(mem.storage_of[cat], mem.storage_of[node_named(o, "cat_out")]) << mem.str(o);
    EXPECT_EQ(mem.offset_of[cat], 0u) << mem.str(o);
  }
  // Each layer's BN-ReLU output dies at its conv: two storages take turns, as without the concats.
  std::set<int> act_storages;
  for (int l = 0; l < 4; ++l) act_storages.insert(mem.storage_of[node_named(o, "act" + std::to_string(l))]);
  EXPECT_LE(act_storages.size(), 2u) << mem.str(o);
  BuildResult r = build(block.g);
  size_t concat_groups = 0;
  for (auto& grp : r.fusion.groups) concat_groups += r.graph.node(grp.anchor).op == "concat";
  EXPECT_EQ(concat_groups, 4u) << r.fusion.str(r.graph);
  EXPECT_EQ(r.executor_graph.kernels.size(), r.fusion.groups.size() - concat_groups);
  for (auto& call : r.executor_graph.kernels) EXPECT_EQ(call.func.find("concat"), std::string::npos) << call.func;
  expect_runs_like_the_interpreter(block.g, {block.input()}, "dense block");
  PipelineOptions copies;
  copies.concat_in_place = false;
  expect_runs_like_the_interpreter(block.g, {block.input()}, "dense block, concats copied", copies);
}

// What stays a copy, and why: an input the caller owns, an input read twice, inputs strided in the
// output (a spatial concat of several channels), inputs at offsets that are no multiple of 64, an
// input that an earlier concat placed at another offset, and a second value at a place an earlier
// concat gave another (which another concat may still place). A concat of concats joins them. All
// compute what the interpreter does.
TEST(ConcatInPlace, ConcatsThatCannotShareStayCopies) {
  Graph g;
  const int64_t C = 16, H = 4, W = 4;
  int x = g.add_input("x", {{1, C, H, W}, DataType::Float(32)});
  auto unary = [&](const std::string& name, int in) { return g.add_op("relu", name, {in}); };
  auto cat = [&](const std::string& name, std::vector<int> in, int64_t axis = 1) {
    return g.add_op("concat", name, std::move(in), Attrs().set("axis", axis));
  };
  int a = unary("a", x), b = g.add_op("sigmoid", "b", {x}), c = g.add_op("tanh", "c", {x});
  int d = g.add_op("neg", "d", {x}), e = g.add_op("abs", "e", {x});
  std::vector<int> outs = {
      cat("cat_input", {x, a}),                                   // the caller's input
      cat("cat_twice", {b, b}),                                   // b at two offsets of one concat
      cat("cat_rows", {c, d}, 2),                                 // rows of 16 channels: strided
      cat("cat_ab", {a, b}),                                      // in place: a at 0, b after it
      cat("cat_ac", {a, c}),                                      // c where b already is
      cat("cat_ba", {b, a}),                                      // a and b swapped
      cat("cat_ch", {c, unary("h", x)}),                          // c, left out of cat_ac, placed by another concat
      cat("cat_nested", {cat("cat_de", {d, e}), unary("f", x)}),  // concats of concats
  };
  // NCHW values of 3 x 5 x 7 floats: the second input would start at byte 420.
  int y = g.add_input("y", {{1, 3, 5, 7}, DataType::Float(32)});
  outs.push_back(cat("cat_unaligned", {unary("ya", y), unary("yb", y)}));
  for (int& v : outs) v = unary(g.node(v).name + "_out", v);
  g.outputs = outs;
  // A value in a shared buffer and a concat of concats as outputs themselves.
  g.outputs.push_back(a);
  g.outputs.push_back(node_named(g, "cat_nested"));
  infer_types(g);
  Graph o = g;
  concat_in_place(o);
  std::map<std::string, bool> want = {
      {"cat_input", false}, {"cat_twice", false}, {"cat_rows", false}, {"cat_ab", true},     {"cat_ac", false},
      {"cat_ba", false},    {"cat_ch", true},     {"cat_de", true},    {"cat_nested", true}, {"cat_unaligned", false}};
  for (auto& [name, in_place] : want) EXPECT_EQ(is_in_place_concat(o.node(node_named(o, name))), in_place) << name;
  // A second run decides again: a mark it would not set goes; disabled, the pass clears them all.
  Graph again = o;
  again.node(node_named(again, "cat_twice")).attrs.set("in_place", int64_t(1));
  concat_in_place(again);
  EXPECT_FALSE(is_in_place_concat(again.node(node_named(again, "cat_twice"))));
  EXPECT_TRUE(is_in_place_concat(again.node(node_named(again, "cat_ab"))));
  concat_in_place(again, false);
  for (auto& n : again.nodes) EXPECT_FALSE(n.attrs.has("in_place")) << n.name;
  InPlaceRegions regions = in_place_regions(o);
  const int nested = node_named(o, "cat_nested");
  EXPECT_EQ(regions.region[size_t(node_named(o, "e"))], regions.region[size_t(nested)]);
  EXPECT_EQ(regions.offset[size_t(node_named(o, "e"))], uint64_t(C * H * W * 4));
  EXPECT_EQ(regions.offset[size_t(node_named(o, "f"))], uint64_t(2 * C * H * W * 4));
  EXPECT_EQ(regions.bytes.at(regions.region[size_t(nested)]), uint64_t(3 * C * H * W * 4));
  expect_runs_like_the_interpreter(g, {test::random_float32({1, C, H, W}, 1), test::random_float32({1, 3, 5, 7}, 2)},
                                   "concats that stay copies");
}

// A graph that claims a concat is in place where it cannot be (edited after the pass) is an error
// naming the concat, not a memory plan that overlaps values.
TEST(ConcatInPlace, AConcatMarkedInPlaceThatCannotBeIsAnError) {
  Graph g;
  int x = g.add_input("x", {{1, 16, 2, 2}, DataType::Float(32)});
  int a = g.add_op("relu", "a", {x});
  int twice = g.add_op("concat", "twice", {a, a}, Attrs().set("axis", int64_t(1)).set("in_place", int64_t(1)));
  g.outputs = {g.add_op("relu", "out", {twice})};
  infer_types(g);
  try {
    plan_memory(g, fuse_ops(g));
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("concat 'twice'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("read twice"), std::string::npos) << e.what();
  }
}

// The memory plan with in-place concats against a byte-level check on random graphs: walking the
// kernels in order, no kernel may write bytes of a value still to be read (a value an in-place
// concat holds is read as long as the concat is), and every value lies inside its storage. A
// few of the graphs are also compiled and run against the interpreter.
TEST(ConcatInPlace, MemoryPlanNeverOverwritesALiveValue) {
  size_t graphs_with_concats = 0, graphs_with_views = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    Graph g;
    std::vector<int> values{g.add_input("x", {{1, 16}, DataType::Float(32)})};
    int nodes = 6 + int(rng() % 14);
    for (int i = 0; i < nodes; ++i) {
      auto pick = [&] { return values[rng() % values.size()]; };
      int a = pick(), b = pick();
      std::string name = "n" + std::to_string(i);
      switch (rng() % 5) {
        case 0:
          values.push_back(g.add_op("softmax", name, {a}, Attrs().set("axis", int64_t(1))));
          break;  // opaque
        case 1:
          values.push_back(g.node(a).type.shape == g.node(b).type.shape ? g.add_op("add", name, {a, b})
                                                                        : g.add_op("relu", name, {a}));
          break;
        case 2:
          values.push_back(rng() % 2 ? g.add_op("relu", name, {a})
                                     : g.add_op("reshape", name, {a}, Attrs().set("shape", g.node(a).type.shape)));
          break;
        default: {
          std::vector<int> in = {a, b};
          if (rng() % 2) in.push_back(pick());
          values.push_back(g.add_op("concat", name, in, Attrs().set("axis", int64_t(1))));
        }
      }
      g.outputs = {values.back()};
      infer_types(g);  // the next node's choice reads the types
    }
    test::pick_random_outputs(g, values, rng);
    Graph o = g;
    concat_in_place(o);
    FusionPlan plan = fuse_ops(o);
    reshape_in_place(o, plan);
    MemoryPlan mem = plan_memory(o, plan);
    std::map<int, size_t> last_read = test::last_reads(o, plan);
    struct Held {
      int value;
      uint64_t begin, end;
    };
    std::map<int, std::vector<Held>> held;  // storage -> the values kernels wrote there
    size_t concats = 0, views = 0;
    for (size_t k = 0; k < plan.groups.size(); ++k) {
      int out = plan.groups[k].output, s = mem.storage_of[out];
      ASSERT_GE(s, 0) << "seed " << seed;
      uint64_t begin = mem.offset_of[out], end = begin + o.type_of(out).nbytes();
      ASSERT_LE(end, mem.storage_bytes[size_t(s)]) << "seed " << seed << "\n" << mem.str(o);
      if (is_in_place_concat(o.node(out))) {  // written by its inputs' kernels: they lie in it, in order
        ++concats;
        uint64_t at = begin;
        for (int in : o.node(out).inputs) {
          EXPECT_EQ(mem.storage_of[in], s) << "seed " << seed << ": input '" << o.node(in).name << "'\n" << mem.str(o);
          EXPECT_EQ(mem.offset_of[in], at) << "seed " << seed << ": input '" << o.node(in).name << "'\n" << mem.str(o);
          at += o.type_of(in).nbytes();
        }
        continue;
      }
      if (is_in_place_reshape(o.node(out))) {  // a view: its input's bytes
        ++views;
        const int in = o.node(out).inputs[0];
        EXPECT_EQ(mem.storage_of[in], s) << "seed " << seed << ": reshape '" << o.node(out).name << "'\n" << mem.str(o);
        EXPECT_EQ(mem.offset_of[in], begin) << "seed " << seed << ": reshape '" << o.node(out).name << "'\n"
                                            << mem.str(o);
        continue;
      }
      for (const Held& h : held[s]) {
        bool overlaps = h.begin < end && begin < h.end;
        EXPECT_FALSE(overlaps && last_read[h.value] >= k)
            << "seed " << seed << ": kernel " << k << " writes storage " << s << " over '" << o.node(h.value).name
            << "', read until step " << last_read[h.value] << "\n"
            << plan.str(o) << mem.str(o);
      }
      held[s].push_back({out, begin, end});
    }
    graphs_with_concats += concats > 0;
    graphs_with_views += views > 0;
    if (seed <= 10 && concats + views > 0)
      expect_runs_like_the_interpreter(g, {test::random_float32({1, 16}, seed)},
                                       "random graph, seed " + std::to_string(seed));
  }
  EXPECT_GE(graphs_with_concats, 20u);  // the check saw shared buffers, not only copies
  EXPECT_GE(graphs_with_views, 5u);     // and reshapes as views
}

// A reshape that is a kernel of its own (a dense layer's rows back to tokens, read by two slices,
// as a transformer's fused QKV projection) is a view of the dense output: same storage, same
// offset, no kernel; one whose input the caller owns, or that an in-place concat reads, stays a
// copy. The compiled models compute what the interpreter does, with and without views.
TEST(ReshapeInPlace, AReshapeOfItsOwnIsAView) {
  Graph g;
  int x = g.add_input("x", {{1, 6, 32}, DataType::Float(32)});
  int rows = g.add_op("reshape", "rows", {x}, Attrs().set("shape", Shape{6, 32}));
  int w = g.add_constant("w", test::random_float32({32, 96}, 1, -0.3, 0.3));
  int proj = g.add_op("matmul", "proj", {rows, w});
  int tokens = g.add_op("reshape", "tokens", {proj}, Attrs().set("shape", Shape{1, 6, 96}));
  auto slice = [&](const std::string& name, int64_t begin) {
    return g.add_op("slice", name, {tokens},
                    Attrs()
                        .set("starts", std::vector<int64_t>{begin})
                        .set("ends", std::vector<int64_t>{begin + 32})
                        .set("axes", std::vector<int64_t>{2})
                        .set("steps", std::vector<int64_t>{1}));
  };
  int q = slice("q", 0), k = slice("k", 32);
  g.outputs = {g.add_op("mul", "qk", {q, k})};
  BuildResult r = build(g);
  const Graph& o = r.graph;
  const int view = node_named(o, "tokens");
  ASSERT_GE(view, 0);
  EXPECT_TRUE(is_in_place_reshape(o.node(view))) << r.fusion.str(o);
  const int in = o.node(view).inputs[0];
  EXPECT_EQ(r.memory.storage_of[view], r.memory.storage_of[in]) << r.memory.str(o);
  EXPECT_EQ(r.memory.offset_of[view], r.memory.offset_of[in]) << r.memory.str(o);
  for (auto& call : r.executor_graph.kernels)
    EXPECT_EQ(call.node.find("tokens"), std::string::npos) << "a kernel computes the view: " << call.node;
  // The input's reshape (the caller owns x) stays whatever fusion made of it: no view.
  const int rows_node = node_named(o, "rows");
  if (rows_node >= 0) EXPECT_FALSE(is_in_place_reshape(o.node(rows_node)));
  const NDArray input = test::random_float32({1, 6, 32}, 2);
  expect_runs_like_the_interpreter(g, {input}, "reshape view");
  PipelineOptions copies;
  copies.concat_in_place = false;
  expect_runs_like_the_interpreter(g, {input}, "reshape copied", copies);
}

// A view of a graph output, and a view of that view (itself an output): both in the output's
// storage at its offset, no kernel for either; the outputs come back as the interpreter's.
TEST(ReshapeInPlace, ViewsOfOutputsAndOfViews) {
  Graph g;
  int x = g.add_input("x", {{1, 64}, DataType::Float(32)});
  int a = g.add_op("softmax", "a", {x}, Attrs().set("axis", int64_t(1)));
  int v1 = g.add_op("reshape", "v1", {a}, Attrs().set("shape", Shape{1, 64}));
  int v2 = g.add_op("reshape", "v2", {v1}, Attrs().set("shape", Shape{1, 64}));
  int s1 = g.add_op("softmax", "s1", {v1}, Attrs().set("axis", int64_t(1)));
  int s2 = g.add_op("relu", "s2", {v1});
  g.outputs = {a, v2, s1, s2};
  BuildResult r = build(g);
  const Graph& o = r.graph;
  const int out = node_named(o, "a");
  for (const char* name : {"v1", "v2"}) {
    const int v = node_named(o, name);
    ASSERT_GE(v, 0);
    EXPECT_TRUE(is_in_place_reshape(o.node(v))) << name << "\n" << r.fusion.str(o);
    EXPECT_EQ(r.memory.storage_of[v], r.memory.storage_of[out]) << name << "\n" << r.memory.str(o);
    EXPECT_EQ(r.memory.offset_of[v], r.memory.offset_of[out]) << name << "\n" << r.memory.str(o);
  }
  for (auto& call : r.executor_graph.kernels)
    EXPECT_TRUE(call.node.find("v1") == std::string::npos && call.node.find("v2") == std::string::npos) << call.node;
  expect_runs_like_the_interpreter(g, {test::random_float32({1, 64}, 4)}, "views of an output");
}

// An output that shares its bytes with an in-place view of it, or with the in-place concat that
// holds it, cannot be carried into an input (its own buffer would leave them on the old storage):
// carry refuses it, naming why. Built with concats and reshapes copied, it carries: the second
// run reads the first run's output as its input.
TEST(ReshapeInPlace, CarryRefusesAnOutputSharingItsStorage) {
  for (const char* holder : {"view", "concat"}) {
    SCOPED_TRACE(holder);
    Graph g;
    int x = g.add_input("x", {{1, 64}, DataType::Float(32)});
    int past = g.add_input("past", {{1, 64}, DataType::Float(32)});
    int present = g.add_op("softmax", "present", {g.add_op("add", "sum", {x, past})}, Attrs().set("axis", int64_t(1)));
    int other = g.add_op("softmax", "other", {x}, Attrs().set("axis", int64_t(1)));
    int held = std::string(holder) == "view"
                   ? g.add_op("reshape", "held", {present}, Attrs().set("shape", Shape{1, 64}))
                   : g.add_op("concat", "held", {present, other}, Attrs().set("axis", int64_t(1)));
    g.outputs = {present, g.add_op("softmax", "reader", {held}, Attrs().set("axis", int64_t(1))),
                 g.add_op("relu", "reader2", {held})};
    BuildResult placed = build(g);
    EXPECT_TRUE(placed.executor_graph.values[size_t(placed.executor_graph.outputs[0])].in_place_region)
        << placed.memory.str(placed.graph);
    runtime::GraphExecutor ex = runtime::GraphExecutor::from_model_file(placed.file, holder);
    try {
      ex.carry(0, 1);
      ADD_FAILURE() << "carried an output in an in-place region";
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("shares its storage with an in-place concat or reshape"), std::string::npos)
          << e.what();
    }
    BuildOptions bo;
    bo.pipeline.concat_in_place = false;
    runtime::GraphExecutor copies = runtime::GraphExecutor::from_model_file(build(g, bo).file, holder);
    copies.carry(0, 1);
    NDArray in = test::random_float32({1, 64}, 5), zero = NDArray::zeros({1, 64}, DataType::Float(32));
    copies.set_input(0, in);
    copies.set_input(1, zero);
    copies.run();
    NDArray first = copies.get_output(0);
    copies.advance_carried();  // the second run's past is the first run's present
    copies.run();
    EXPECT_TRUE(test::arrays_close(copies.get_output(0), reference_run(g, {in, first})[0], 1e-6, 1e-6));
  }
}

TEST(ReshapeInPlace, ReshapesInConcatsAndOfInputsStayCopies) {
  Graph g;
  int x = g.add_input("x", {{1, 64}, DataType::Float(32)});
  int a = g.add_op("softmax", "a", {x}, Attrs().set("axis", int64_t(1)));
  int view = g.add_op("reshape", "view", {a}, Attrs().set("shape", Shape{1, 64}));
  int b = g.add_op("softmax", "b", {view}, Attrs().set("axis", int64_t(1)));
  int c = g.add_op("softmax", "c", {view}, Attrs().set("axis", int64_t(1)));
  int of_input = g.add_op("reshape", "of_input", {x}, Attrs().set("shape", Shape{1, 64}));
  int d = g.add_op("softmax", "d", {of_input}, Attrs().set("axis", int64_t(1)));
  int e = g.add_op("softmax", "e", {of_input}, Attrs().set("axis", int64_t(1)));
  int in_cat = g.add_op("reshape", "in_cat", {b}, Attrs().set("shape", Shape{1, 64}));
  int cat = g.add_op("concat", "cat", {in_cat, c, d, e}, Attrs().set("axis", int64_t(1)));
  g.outputs = {g.add_op("softmax", "out", {cat}, Attrs().set("axis", int64_t(1))), in_cat};
  infer_types(g);
  Graph o = g;
  concat_in_place(o);
  FusionPlan plan = fuse_ops(o);
  reshape_in_place(o, plan);
  std::set<std::string> alone;  // reshapes that are groups of their own, each checked
  for (const FusedGroup& grp : plan.groups) {
    const Node& n = o.node(grp.anchor);
    if (n.op != "reshape") continue;
    EXPECT_EQ(grp.nodes.size(), 1u) << n.name << "\n" << plan.str(o);
    alone.insert(n.name);
    EXPECT_EQ(is_in_place_reshape(n), n.name == "view") << n.name << "\n" << plan.str(o);
  }
  EXPECT_EQ(alone, (std::set<std::string>{"view", "of_input", "in_cat"})) << plan.str(o);
  reshape_in_place(o, plan, false);
  for (const Node& n : o.nodes) EXPECT_FALSE(is_in_place_reshape(n)) << n.name << ": disabled, no marks";
  expect_runs_like_the_interpreter(g, {test::random_float32({1, 64}, 3)}, "views and copies");
}

}  // namespace
}  // namespace loom::graph
