// The built-in models compiled (also for an AVX2 target, and with conv tiles from the build
// options) against the naive interpreter.
#include <gtest/gtest.h>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

// Every built-in model, compiled and run by the executor, agrees with the naive interpreter
// (small images keep the interpreter fast).
TEST(BuiltinModels, CompiledMatchesTheNaiveInterpreter) {
  for (const std::string& name : builtin_model_names()) {
    Graph g = builtin_model(name, name == "mlp" ? 3 : 1, 64);
    BuildResult r = build(g);
    auto ex = runtime::GraphExecutor::from_model_file(r.file, name);
    NDArray x = test::random_float32(ex.input_spec(0).shape, 11);
    NDArray got = ex.run({x})[0], want = reference_run(g, {x})[0];
    ASSERT_EQ(got.shape(), want.shape()) << name;
    auto [err, scale] = test::max_error(got, want);
    EXPECT_GT(scale, 0.05) << name << ": outputs should not vanish";
    EXPECT_LE(err, 1e-4 * scale) << name;
    // BatchNorms are folded away and the plan reuses memory.
    for (auto& n : r.graph.nodes) EXPECT_NE(n.op, "batch_norm") << name;
    EXPECT_LT(r.memory.planned_bytes(), r.memory.unplanned_bytes) << name;
  }
  std::string msg = test::error_text<ModelError>([] { builtin_model("alexnet"); });
  EXPECT_NE(msg.find("no built-in model 'alexnet'"), std::string::npos) << msg;
}

// Schedules follow the target: compiled for an AVX2-only CPU (8 float lanes, 16 vector registers:
// channel blocks of 8, shorter register tiles), the models still match the interpreter. The code
// runs on this host whenever the host has AVX2 (AVX-512 hosts do).
TEST(BuiltinModels, CompiledForAnAvx2Target) {
  BuildOptions o;
  o.llvm.target_cpu = "znver3";
  EXPECT_EQ(codegen::target_info(o.llvm).float32_lanes(), 8);
  EXPECT_EQ(codegen::target_info(o.llvm).vector_registers, 16);
  for (const std::string& name : {std::string("resnet18"), std::string("mobilenet_v2")}) {
    Graph g = builtin_model(name, 1, 64);
    BuildResult r = build(g, o);
    bool blocked_by_8 = false;
    for (auto& n : r.graph.nodes)
      blocked_by_8 |=
          n.is_op() && n.op == "conv2d" && n.attrs.get_string("layout", "") == "NCHWc" && n.type.shape.back() == 8;
    EXPECT_TRUE(blocked_by_8) << name;
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) continue;
    auto ex = runtime::GraphExecutor::from_model_file(r.file, name);
    NDArray x = test::random_float32(ex.input_spec(0).shape, 12);
    NDArray got = ex.run({x})[0], want = reference_run(g, {x})[0];
    auto [err, scale] = test::max_error(got, want);
    EXPECT_LE(err, 1e-4 * scale) << name;
  }
}

// BuildOptions::conv_tile (what `loom compile --tuning-log` sets) is asked once per blocked conv
// kernel with the tuner's key; the tiles it returns are used (the model still matches the
// reference), and one that does not fit is an error naming the kernel.
TEST(BuiltinModels, ConvTilesComeFromTheBuildOptions) {
  Graph g = builtin_model("resnet18", 1, 64);
  BuildOptions o;
  o.pipeline.layout.winograd = false;  // the tiles are the direct conv's; Winograd takes the 3x3 stride-1 layers
  std::vector<ConvKernelKey> keys;
  o.conv_tile = [&](const ConvKernelKey& k) -> std::optional<ops::NchwcConvTile> {
    keys.push_back(k);
    return ops::NchwcConvTile{1, 3};  // one block x 3 columns: not what the default picks
  };
  BuildResult r = build(g, o);
  ASSERT_FALSE(keys.empty());
  bool saw_64 = false;
  for (auto& k : keys) {
    EXPECT_EQ(k.layer.batch, 1);
    EXPECT_EQ(k.layer.in_channels % k.block, 0);
    saw_64 |= k.layer == ops::Conv2dLayer{1, 64, 16, 16, 64, 3, 1, 1};
  }
  EXPECT_TRUE(saw_64);  // layer1's 3x3 convs at 64/4 = 16 pixels
  auto ex = runtime::GraphExecutor::from_model_file(r.file, "resnet18");
  NDArray x = test::random_float32(ex.input_spec(0).shape, 5);
  NDArray got = ex.run({x})[0], want = reference_run(g, {x})[0];
  auto [err, scale] = test::max_error(got, want);
  EXPECT_LE(err, 1e-4 * scale);
  o.conv_tile = [](const ConvKernelKey&) -> std::optional<ops::NchwcConvTile> { return ops::NchwcConvTile{3, 4}; };
  std::string msg = test::error_text<CodegenError>([&] { build(g, o); });
  EXPECT_NE(msg.find("tile of 3 blocks x 4 columns does not fit"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::graph
