// Graph integrity: Graph::verify (structure), verify_types (each typed node's type is what its
// operator infers now), and PipelineOptions::verify_each, which names the pass that broke a graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::graph {
namespace {

// x[1, 3, 8, 8] -> conv (8 channels, 3x3, pad 1) -> relu -> output.
struct SmallNet {
  Graph g;
  int x, w, conv, relu;
  SmallNet() {
    x = g.add_input("x", {{1, 3, 8, 8}, DataType::Float(32)});
    w = g.add_constant("w", test::random_float32({8, 3, 3, 3}, 1, -0.3, 0.3));
    conv = g.add_op("conv2d", "conv", {x, w}, Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}));
    relu = g.add_op("relu", "act", {conv});
    g.outputs = {relu};
  }
};

// LOOM_VERIFY_EACH as the test suite sets it, unset for one scope.
struct VerifyEachUnset {
  std::optional<std::string> saved;
  VerifyEachUnset() {
    if (const char* v = std::getenv("LOOM_VERIFY_EACH")) saved = v;
    unsetenv("LOOM_VERIFY_EACH");
  }
  ~VerifyEachUnset() {
    if (saved) setenv("LOOM_VERIFY_EACH", saved->c_str(), 1);
  }
};

TEST(GraphVerify, StructuralErrorsNameTheNodeAndWhatIsWrong) {
  struct Case {
    const char* name;
    std::function<void(SmallNet&)> plant;
    const char* expected;
  };
  const Case cases[] = {
      {"edge to no node", [](SmallNet& n) { n.g.node(n.relu).inputs = {42}; },
       "node 'act' reads a node that does not exist"},
      {"cycle", [](SmallNet& n) { n.g.node(n.conv).inputs[0] = n.relu; }, "the graph has a cycle through node"},
      {"input left out of the list", [](SmallNet& n) { n.g.inputs.clear(); },
       "input node 'x' is not in the graph's input list"},
      {"input listed twice", [](SmallNet& n) { n.g.inputs.push_back(n.x); }, "input 'x' is listed twice"},
      {"constant that reads a node", [](SmallNet& n) { n.g.node(n.w).inputs = {n.x}; },
       "node 'w' is a constant but reads other nodes"},
      {"constant whose value is not its type", [](SmallNet& n) { n.g.node(n.w).type.shape[0] = 16; },
       "constant 'w' holds float32[8, 3, 3, 3] but its type says float32[16, 3, 3, 3]"},
      {"unregistered operator", [](SmallNet& n) { n.g.node(n.relu).op = "relu6x"; },
       "node 'act': unknown graph operator 'relu6x' (supported: "},
      {"operator with too many inputs", [](SmallNet& n) { n.g.node(n.relu).inputs.push_back(n.x); },
       "node 'act' (relu): takes 1 inputs, has 2"},
      {"output that is no node", [](SmallNet& n) { n.g.outputs = {99}; }, "an output refers to a missing node"},
  };
  SmallNet clean;
  clean.g.verify();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SmallNet n;
    c.plant(n);
    std::string error = test::error_text<ModelError>([&] { n.g.verify(); });
    EXPECT_NE(error.find(c.expected), std::string::npos) << error << "\n" << n.g.str();
  }
}

// Attributes follow their operator's schema (OpDef::attrs): a misspelt key, a value of another
// kind, a required attribute left out and a number out of range are errors naming node and key,
// not defaults silently used; infer_types (what a hand-built graph goes through) checks them too.
TEST(GraphVerify, AttributesFollowTheOperatorsSchema) {
  struct Case {
    const char* name;
    std::function<void(SmallNet&)> plant;
    const char* expected;
  };
  const Case cases[] = {
      {"misspelt key",
       [](SmallNet& n) {
         n.g.node(n.conv).attrs.set("stride", std::vector<int64_t>{2, 2});
       },
       "node 'conv' (conv2d): unknown attribute 'stride' (did you mean 'strides'?); conv2d takes strides, pads, "},
      {"key on an operator that takes none", [](SmallNet& n) { n.g.node(n.relu).attrs.set("alpha", 0.1); },
       "node 'act' (relu): unknown attribute 'alpha'; relu takes no attributes"},
      {"string for an integer", [](SmallNet& n) { n.g.node(n.conv).attrs.set("groups", std::string("2")); },
       "node 'conv' (conv2d): attribute 'groups' is a string, conv2d takes an integer"},
      {"float for a list of integers", [](SmallNet& n) { n.g.node(n.conv).attrs.set("pads", 1.0); },
       "node 'conv' (conv2d): attribute 'pads' is a float, conv2d takes a list of integers"},
      {"flag out of range", [](SmallNet& n) { n.g.node(n.conv).attrs.set("interleaved_groups", int64_t{2}); },
       "node 'conv' (conv2d): attribute 'interleaved_groups' = 2 is out of range [0, 1]"},
      {"required attribute missing",
       [](SmallNet& n) {
         n.g.node(n.relu).op = "concat";
         n.g.node(n.relu).inputs = {n.conv, n.conv};
       },
       "node 'act' (concat): attribute 'axis' (an integer) is required"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SmallNet n;
    c.plant(n);
    std::string error = test::error_text<ModelError>([&] { n.g.verify(); });
    EXPECT_NE(error.find(c.expected), std::string::npos) << error;
    EXPECT_EQ(error, test::error_text<ModelError>([&] { infer_types(n.g); }));
  }
  // An integer stands where a float is expected (clip bounds), as Attrs::get_float reads it.
  SmallNet ok;
  ok.g.node(ok.relu).op = "clip";
  ok.g.node(ok.relu).attrs.set("min", int64_t{0}).set("max", 6.0);
  infer_types(ok.g);
}

TEST(GraphVerify, StaleTypesNameTheNodeAndBothTypes) {
  SmallNet n;
  infer_types(n.g);
  verify_types(n.g);
  // A pass that changes a conv's stride without inferring again.
  n.g.node(n.conv).attrs.set("strides", std::vector<int64_t>{2, 2});
  std::string error = test::error_text<ModelError>([&] { verify_types(n.g); });
  EXPECT_NE(error.find("node 'conv' (conv2d) says its type is float32[1, 8, 8, 8] but its inputs give "
                       "float32[1, 8, 4, 4]"),
            std::string::npos)
      << error;
  // A data type that a pass changed by hand.
  SmallNet retyped;
  infer_types(retyped.g);
  retyped.g.node(retyped.relu).type.dtype = DataType::Int(8);
  error = test::error_text<ModelError>([&] { verify_types(retyped.g); });
  EXPECT_NE(error.find("node 'act' (relu) says its type is int8[1, 8, 8, 8] but its inputs give float32[1, 8, 8, 8]"),
            std::string::npos)
      << error;
  // Attributes that no longer type at all.
  SmallNet bad;
  infer_types(bad.g);
  bad.g.node(bad.conv).attrs.set("groups", int64_t(2));
  error = test::error_text<ModelError>([&] { verify_types(bad.g); });
  EXPECT_NE(error.find("node 'conv' (conv2d): its inputs and attributes no longer type"), std::string::npos) << error;
}

// A planted pass that moves an edge: with verify_each the error names that pass and the node;
// without it nothing names the pass (the graph fails later, or not at all).
TEST(GraphVerify, VerifyEachNamesThePassThatBrokeAnEdge) {
  VerifyEachUnset unset;
  auto planted = [](SmallNet& n) {
    PipelineOptions po;
    po.extra_passes.push_back({"planted_edge_swap", "fold_constants", [relu = n.relu, x = n.x](Graph& g) {
                                 g.node(relu).inputs[0] = x;  // relu reads the image instead of the conv
                               }});
    return po;
  };
  {
    SmallNet n;
    PipelineOptions po = planted(n);
    po.verify_each = true;
    std::string error = test::error_text<ModelError>([&] { optimize(n.g, po); });
    EXPECT_NE(error.find("graph 'model' is broken after pass 'planted_edge_swap': node 'act' (relu) says its type "
                         "is float32[1, 8, 8, 8] but its inputs give float32[1, 3, 8, 8]"),
              std::string::npos)
        << error;
  }
  {
    SmallNet n;
    PipelineOptions po = planted(n);
    std::string error = test::error_text<ModelError>([&] { optimize(n.g, po); });
    EXPECT_EQ(error.find("planted_edge_swap"), std::string::npos) << error;
  }
  {  // LOOM_VERIFY_EACH=1 does what verify_each does.
    setenv("LOOM_VERIFY_EACH", "1", 1);
    SmallNet n;
    std::string error = test::error_text<ModelError>([&] { optimize(n.g, planted(n)); });
    unsetenv("LOOM_VERIFY_EACH");
    EXPECT_NE(error.find("after pass 'planted_edge_swap'"), std::string::npos) << error;
  }
}

TEST(GraphVerify, ExtraPassesRunWhereAskedAndAnUnknownAnchorIsNamed) {
  SmallNet n;
  std::vector<std::string> order;
  PipelineOptions po;
  po.extra_passes.push_back({"mine", "alter_layout", [&](Graph&) { order.push_back("mine"); }});
  po.on_pass = [&](const std::string& pass, const Graph&) { order.push_back(pass); };
  optimize(n.g, po);
  auto at = std::find(order.begin(), order.end(), "mine");
  ASSERT_NE(at, order.end());
  ASSERT_NE(at, order.begin());
  EXPECT_EQ(*(at - 1), "alter_layout");  // on_pass of alter_layout, then the extra pass
  EXPECT_EQ(*(at + 1), "mine");          // and its own on_pass
  SmallNet m;
  PipelineOptions bad;
  bad.extra_passes.push_back({"mine", "alter_layouts", [](Graph&) {}});
  std::string error = test::error_text<ConfigError>([&] { optimize(m.g, bad); });
  EXPECT_NE(error.find("pass 'mine' is to run after 'alter_layouts', which is no graph pass; the graph passes: "
                       "infer_types, simplify_inference"),
            std::string::npos)
      << error;
}

// Every built-in pass leaves the built-in models whole.
TEST(GraphVerify, EveryPassLeavesTheBuiltinModelsWhole) {
  for (const char* name : {"resnet18", "mobilenet_v2", "mlp"}) {
    SCOPED_TRACE(name);
    Graph g = builtin_model(name, 1, 64);
    PipelineOptions po;
    po.verify_each = true;
    std::vector<std::string> seen;
    po.on_pass = [&](const std::string& pass, const Graph&) { seen.push_back(pass); };
    optimize(g, po);
    EXPECT_EQ(seen, graph_pass_names());
    verify_types(g);
  }
}

}  // namespace
}  // namespace loom::graph
