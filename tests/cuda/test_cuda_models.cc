// Models on the GPU: graph::build with BuildOptions::cuda puts every kernel into one CUDA program
// (the .loom file's CUDA section). Without a GPU the model's kernels run on the grid interpreter,
// wired as the executor graph says, against the naive graph interpreter; every kernel of ResNet-18
// and MobileNetV2 goes through NVRTC and ptxas. On a GPU the runtime-only executor runs them
// (from the second run on as one captured CUDA graph) against the same reference.
#include <cstring>
#include <fstream>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "common/test_util.h"
#include "cuda_cases.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/reference.h"
#include "loom/ir/eval.h"
#include "loom/runtime/cuda.h"
#include "loom/runtime/graph_executor.h"

namespace loom {
namespace {

graph::BuildResult build_cuda(const std::string& model, int64_t batch, int64_t image) {
  graph::BuildOptions o;
  o.cuda.emplace();
  return graph::build(graph::builtin_model(model, batch, image), o);
}

std::vector<NDArray> random_inputs(const graph::Graph& g, uint64_t seed) {
  std::vector<NDArray> in;
  for (int id : g.inputs) {
    NDArray a = NDArray::empty(g.type_of(id).shape, g.type_of(id).dtype);
    a.fill_random(seed++, -1, 1);
    in.push_back(a);
  }
  return in;
}

// The executor graph run with host arrays and each kernel on the grid interpreter.
std::vector<NDArray> run_on_grid(const graph::BuildResult& r, const std::vector<NDArray>& inputs) {
  const runtime::ExecutorGraph& eg = r.executor_graph;
  std::vector<NDArray> vals(eg.values.size());
  for (size_t i = 0; i < eg.values.size(); ++i) {
    const auto& v = eg.values[i];
    vals[i] = NDArray::zeros(v.shape, v.dtype);
    if (v.kind == runtime::ValueKind::Param)
      std::memcpy(vals[i].raw_data(), r.file.params.get() + v.param_offset, v.nbytes());
  }
  for (size_t i = 0; i < eg.inputs.size(); ++i) vals[size_t(eg.inputs[i])] = inputs[i].copy();
  for (auto& call : eg.kernels) {
    const ir::LoweredFunc* f = nullptr;
    for (auto& lf : r.cuda_funcs)
      if (lf.name == call.func) f = &lf;
    EXPECT_NE(f, nullptr) << call.func;
    std::vector<NDArray> args;
    for (int id : call.args) args.push_back(vals[size_t(id)]);
    ir::interpret_grid(*f, args);
  }
  std::vector<NDArray> out;
  for (int id : eg.outputs) out.push_back(vals[size_t(id)]);
  return out;
}

TEST(CudaModels, MlpKernelsAllRunOnCudaAndMatchTheReferenceOnTheGridInterpreter) {
  graph::BuildResult r = build_cuda("mlp", 2, 32);
  ASSERT_FALSE(r.cuda_funcs.empty());
  for (auto& k : r.executor_graph.kernels) EXPECT_EQ(k.device, runtime::KernelDevice::Cuda) << k.func;
  EXPECT_TRUE(r.file.library.empty());
  runtime::ModelFile back = runtime::parse_model_file(
      [&] {
        test::TestDir dir;
        std::string path = (dir.path() / "mlp.loom").string();
        runtime::save_model_file(path, r.file);
        std::ifstream f(path, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      }(),
      "mlp.loom");
  runtime::CudaProgram p = runtime::CudaProgram::deserialize(back.cuda_program, "mlp.loom");
  EXPECT_EQ(p.functions.size(), r.cuda_funcs.size());
  EXPECT_GT(p.cubin.size(), 0u);
  auto in = random_inputs(r.graph, 3);
  auto want = graph::reference_run(r.graph, in);
  auto got = run_on_grid(r, in);
  ASSERT_EQ(got.size(), want.size());
  auto e = test::max_error(got[0], want[0]);
  EXPECT_LE(e.err, 1e-4 * std::max(1.0, e.scale)) << e.err << " of " << e.scale;
}

TEST(CudaModels, EveryResnet18AndMobilenetV2KernelCompilesForSm90) {
  for (const char* model : {"resnet18", "mobilenet_v2"}) {
    graph::BuildResult r = build_cuda(model, 1, 224);
    runtime::CudaProgram p = runtime::CudaProgram::deserialize(r.file.cuda_program, model);
    size_t kernels = 0;
    for (auto& f : p.functions)
      for (auto& k : f.kernels) {
        ++kernels;
        EXPECT_GT(k.registers, 0) << model << " " << k.name;
      }
    EXPECT_GT(kernels, 10u) << model;
    std::cout << model << ": " << r.executor_graph.kernels.size() << " kernel calls, " << p.functions.size()
              << " functions, " << kernels << " CUDA kernels, cubin " << p.cubin.size() / 1024 << " KiB\n";
  }
}

TEST(CudaModels, WithoutAGpuLoadingTheModelIsADeviceErrorNamingIt) {
  std::string why;
  if (runtime::cuda_available(&why)) GTEST_SKIP() << "a GPU is here";
  graph::BuildResult r = build_cuda("mlp", 1, 32);
  std::string err =
      test::error_text<DeviceError>([&] { runtime::GraphExecutor::from_model_file(r.file, "'mlp.loom'"); });
  EXPECT_NE(err.find("'mlp.loom': its kernels run on a GPU"), std::string::npos) << err;
}

TEST(CudaModels, OnTheGpuResnet18MatchesTheReferenceAndReplaysAsAGraph) {
  std::string why;
  if (!runtime::cuda_available(&why)) GTEST_SKIP() << why;
  graph::BuildResult r = build_cuda("resnet18", 1, 64);
  auto ex = runtime::GraphExecutor::from_model_file(r.file, "resnet18");
  EXPECT_TRUE(ex.uses_gpu());
  auto in = random_inputs(r.graph, 5);
  auto want = graph::reference_run(r.graph, in);
  auto first = ex.run(in);
  EXPECT_FALSE(ex.replayed_cuda_graph());
  auto e = test::max_error(first[0], want[0]);
  EXPECT_LE(e.err, 1e-3 * std::max(1.0, e.scale)) << e.err << " of " << e.scale;
  auto second = ex.run(in);
  EXPECT_TRUE(ex.replayed_cuda_graph());
  EXPECT_TRUE(test::arrays_close(second[0], first[0], 0, 0));
}

}  // namespace
}  // namespace loom
