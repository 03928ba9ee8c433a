// The model compiler's parallel loops carry their work (graph::BuildOptions::parallel_work_hints):
// the library calls loom_parallel_for_work, and the model computes the same whatever the host's
// threshold makes serial (LOOM_MIN_PARALLEL_WORK from 0 to past every loop), at 1 and 2 threads;
// a recurrent step's dense calls loom_parallel_for_alternating.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/temp_dir.h"
#include "common/test_util.h"
#include "loom/graph/build.h"
#include "loom/graph/reference.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/thread_pool.h"

namespace loom::graph {
namespace {

// conv 3x3 (16 -> 32) + ReLU, conv 1x1 (32 -> 16), + the input: kernels with loops of thousands of
// stores (hinted) and a few below the floor.
Graph residual_block() {
  Graph g;
  int x = g.add_input("x", {{1, 16, 28, 28}, DataType::Float(32)});
  Attrs pad1 = Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  int c1 =
      g.add_op("conv2d", "c1", {x, g.add_constant("w1", test::random_float32({32, 16, 3, 3}, 1, -0.2, 0.2))}, pad1);
  int r = g.add_op("relu", "r", {c1});
  int c2 = g.add_op("conv2d", "c2", {r, g.add_constant("w2", test::random_float32({16, 32, 1, 1}, 2, -0.2, 0.2))});
  g.outputs = {g.add_op("add", "sum", {c2, x})};
  return g;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `got` against the reference within `rtol`, and bit for bit against the first result checked
// (each output element is computed by one iteration, whichever thread or order runs it).
void expect_reference_and_same_bits(const std::vector<NDArray>& got, const std::vector<NDArray>& want, double rtol,
                                    std::vector<NDArray>& first, const std::string& what) {
  EXPECT_TRUE(test::all_arrays_close(got, want, 0, rtol)) << what;
  if (first.empty())
    first = got;
  else
    EXPECT_TRUE(test::all_arrays_close(got, first, 0, 0)) << what;
}

TEST(ParallelWork, ModelKernelsAskTheRuntime) {
  Graph g = residual_block();
  std::vector<NDArray> inputs = {test::random_float32({1, 16, 28, 28}, 3)};
  std::vector<NDArray> want = reference_run(g, inputs);
  test::TestDir dir;

  BuildOptions hinted;
  hinted.llvm.dump_asm_path = dir.file("hinted.s");
  runtime::ModelFile file = build(g, hinted).file;
  EXPECT_EQ(hinted.min_parallel_work, runtime::kMinParallelWorkFloor);
  EXPECT_NE(read_file(hinted.llvm.dump_asm_path).find("loom_parallel_for_work"), std::string::npos);

  BuildOptions fixed;
  fixed.parallel_work_hints = false;
  fixed.llvm.dump_asm_path = dir.file("fixed.s");
  build(g, fixed);
  std::string fixed_asm = read_file(fixed.llvm.dump_asm_path);
  EXPECT_EQ(fixed_asm.find("loom_parallel_for_work"), std::string::npos);
  EXPECT_NE(fixed_asm.find("loom_parallel_for"), std::string::npos);

  std::vector<NDArray> first;
  for (int threads : {1, 2})
    for (const char* min_work : {"0", "1024", "20000", "1000000000000"}) {
      ::setenv("LOOM_MIN_PARALLEL_WORK", min_work, 1);
      runtime::set_num_threads(threads);  // a new pool reads it
      std::string what = std::to_string(threads) + " threads, LOOM_MIN_PARALLEL_WORK=" + min_work;
      expect_reference_and_same_bits(runtime::GraphExecutor::from_model_file(file, what).run(inputs), want, 1e-4, first,
                                     what);
    }
  ::unsetenv("LOOM_MIN_PARALLEL_WORK");
  runtime::set_num_threads(0);
}

// Recurrent steps: h = tanh(dense(h, W)) three times over one W of 1 MB. Each step's dense reads
// all of W on one row: its loop over output groups alternates direction from call to call
// (loom_parallel_for_alternating); every run matches the reference, and the runs, forwards or
// backwards, at 1 and 2 threads, agree bit for bit.
TEST(ParallelWork, RecurrentStepsAlternateTheirOrder) {
  Graph g;
  const int64_t width = 512;
  int h = g.add_input("h", {{1, width}, DataType::Float(32)});
  int w = g.add_constant("w", test::random_float32({width, width}, 4, -0.05, 0.05));
  for (int step = 0; step < 3; ++step)
    h = g.add_op("tanh", "t" + std::to_string(step), {g.add_op("dense", "d" + std::to_string(step), {h, w})});
  g.outputs = {h};
  std::vector<NDArray> inputs = {test::random_float32({1, width}, 5)};
  std::vector<NDArray> want = reference_run(g, inputs);
  test::TestDir dir;
  BuildOptions options;
  options.llvm.dump_asm_path = dir.file("steps.s");
  runtime::ModelFile file = build(g, options).file;
  EXPECT_NE(read_file(options.llvm.dump_asm_path).find("loom_parallel_for_alternating"), std::string::npos);
  ::setenv("LOOM_MIN_PARALLEL_WORK", "0", 1);  // the steps' loops parallel at 2 threads
  std::vector<NDArray> first;
  for (int threads : {1, 2}) {
    runtime::set_num_threads(threads);
    runtime::GraphExecutor exec = runtime::GraphExecutor::from_model_file(file, "recurrent steps");
    for (int run = 0; run < 2; ++run) {
      expect_reference_and_same_bits(exec.run(inputs), want, 1e-5, first,
                                     std::to_string(threads) + " threads, run " + std::to_string(run));
    }
  }
  ::unsetenv("LOOM_MIN_PARALLEL_WORK");
  runtime::set_num_threads(0);
}

}  // namespace
}  // namespace loom::graph
