// CPU schedules of the graph's kernels (schedule_cpu_nn.cc): the conv tile hook asked only for
// kernels that write their conv, dense tiles that prefetch the next weights.
#include <gtest/gtest.h>

#include <fstream>

#include "common/temp_dir.h"
#include "common/test_util.h"
#include "loom/codegen/llvm.h"
#include "loom/graph/build.h"
#include "loom/graph/passes.h"
#include "loom/graph/reference.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/runtime/graph_executor.h"

namespace loom::graph {
namespace {

// Builds `g` for the CPU into `built`; returns its kernels' LLVM IR.
std::string build_with_llvm_ir(const Graph& g, BuildResult& built) {
  test::TestDir dir;
  BuildOptions options;
  options.llvm.dump_ir_path = dir.file("kernels.ll");
  built = build(g, options);
  std::ifstream ll(dir.file("kernels.ll"));
  return std::string((std::istreambuf_iterator<char>(ll)), std::istreambuf_iterator<char>());
}

// The conv tile hook (a tuning log) is asked only for kernels that write their conv: a
// squeeze-and-excitation block's 1x1 conv on pooled features, whose epilogue multiplies it into
// the feature map, is not (the tuner measured the conv alone; its tile recomputed the conv per tile
// of the map). Tiles that fit the 14x14 conv but not the SE kernel leave the model's output right.
TEST(GraphPasses, ConvTilesAreAskedOnlyForKernelsWritingTheirConv) {
  Graph g;
  int x = g.add_input("x", {{1, 32, 14, 14}, DataType::Float(32)});
  int c1 =
      g.add_op("relu", "c1_relu",
               {g.add_op("conv2d", "c1", {x, g.add_constant("w1", test::random_float32({32, 32, 3, 3}, 41, -0.2, 0.2))},
                         Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}))});
  int pooled = g.add_op("global_avg_pool2d", "pool", {c1});
  int se =
      g.add_op("conv2d", "se", {pooled, g.add_constant("w2", test::random_float32({32, 32, 1, 1}, 42, -0.5, 0.5))});
  g.outputs = {g.add_op("mul", "scale", {c1, g.add_op("hard_sigmoid", "gate", {se})})};
  BuildOptions bo;
  bo.pipeline.layout.winograd = false;
  std::vector<ConvKernelKey> asked;
  bo.conv_tile = [&](const ConvKernelKey& k) -> std::optional<ops::NchwcConvTile> {
    asked.push_back(k);
    return ops::NchwcConvTile{1, 7, -1};
  };
  auto ex = runtime::GraphExecutor::from_model_file(build(g, bo).file, "se");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].layer.kernel, 3);
  NDArray in = test::random_float32({1, 32, 14, 14}, 43);
  NDArray got = ex.run({in})[0], want = reference_run(g, {in})[0];
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << i;
}

// A dense layer of several block groups: its row tiles prefetch the next group's weights
// (pragma prefetch, prefetch_ahead), which must change no result. Against loops written here, at
// row counts that fill the tiles (24: whole tiles of 6 or 8 rows, AVX2's or AVX-512's), give one
// tile (5 rows: a prefetch distance of 1), or leave a partial tile (20), whose row tiles run in
// their own loop inside each group (partition_loops leaves every whole tile unguarded) and fetch
// between its whole tiles (pragma prefetch_across); one whole tile and a partial one (the tile's
// rows + 3; the tile has 6 or 8 rows on these targets) fetch nothing: partitioning leaves no loop
// of tiles there. The reduction (40) is
// unrolled by 4.
TEST(GraphPasses, DenseTilesPrefetchTheNextWeights) {
  const int64_t tile_rows =
      ops::gemm_tiling_for(codegen::target_info().float32_lanes(), codegen::target_info().vector_registers).mr;
  ASSERT_GT(tile_rows, 3) << "one whole tile and 3 rows must leave a partial tile";
  const int64_t one_tile_and_part = tile_rows + 3;
  for (int64_t rows : {int64_t{24}, int64_t{5}, int64_t{20}, one_tile_and_part}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    const int64_t K = 40, N = 96;
    NDArray w = test::random_float32({K, N}, 1), b = test::random_float32({N}, 2);
    Graph g;
    int x = g.add_input("x", {{rows, K}, DataType::Float(32)});
    int mm = g.add_op("matmul", "proj", {x, g.add_constant("w", w)});
    g.outputs = {g.add_op("add", "bias", {mm, g.add_constant("b", b)})};
    BuildResult built;
    std::string ir = build_with_llvm_ir(g, built);
    EXPECT_EQ(ir.find("@llvm.prefetch") != std::string::npos, rows != one_tile_and_part);
    NDArray in = test::random_float32({rows, K}, 3);
    NDArray got = runtime::GraphExecutor::from_model_file(built.file, "dense").run({in})[0];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t n = 0; n < N; ++n) {
        double want = b.get_as_double(n);
        for (int64_t k = 0; k < K; ++k) want += in.get_as_double(r * K + k) * w.get_as_double(k * N + n);
        ASSERT_NEAR(got.get_as_double(r * N + n), want, 1e-4) << "row " << r << " column " << n;
      }
  }
}

// Attention's products of activations with ragged column counts (a ViT's 197 tokens, a Swin
// window's 49) are built with the target's vector width: the last column tile a vector of the
// columns it has (197 = 6 x 32 + 5: 5 lanes, which fit one register of 256 bits or more) and none
// of an odd width past one register (49 = 32 + 17: 16 and 1, never 17 lanes).
TEST(GraphPasses, RaggedAttentionProductsTakeTheTargetsVectors) {
  const int vector_bits = codegen::target_info().vector_bits;
  for (int64_t n : {197, 49}) {
    SCOPED_TRACE(std::to_string(n) + " columns");
    Graph g;
    int q = g.add_input("q", {{2, n, 32}, DataType::Float(32)});
    int kt = g.add_input("kt", {{2, 32, n}, DataType::Float(32)});
    g.outputs = {g.add_op("matmul", "scores", {q, kt})};
    BuildResult built;
    std::string ir = build_with_llvm_ir(g, built);
    const int lanes = vector_bits / 32, tail = int(n % (2 * lanes));
    if (tail > 1 && tail <= lanes) EXPECT_NE(ir.find("<" + std::to_string(tail) + " x float>"), std::string::npos);
    if (tail > lanes) EXPECT_EQ(ir.find("<" + std::to_string(tail) + " x float>"), std::string::npos);
    NDArray a = test::random_float32({2, n, 32}, 5), b = test::random_float32({2, 32, n}, 6);
    NDArray got = runtime::GraphExecutor::from_model_file(built.file, "scores").run({a, b})[0];
    NDArray want = reference_run(g, {a, b})[0];
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.get_as_double(i), want.get_as_double(i), 1e-4) << i;
  }
}

}  // namespace
}  // namespace loom::graph
