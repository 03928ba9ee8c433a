// Models whose kernels run on more than one device: graph::build with BuildOptions::cuda puts a
// group on the GPU when the CUDA backend has a kernel for it and on the CPU otherwise (int8 data,
// the quantization operators), with the values that cross copied through the host; with
// BuildOptions::accel too, the accelerator's layers run there. Without a GPU the model runs as its
// executor graph says, CPU kernels from its kernel library and GPU kernels on the grid interpreter
// with device arrays of their own, so a missing copy shows as a wrong output; on a GPU the
// executor runs it. A placement moves named nodes, and names what it cannot move.
#include <cstring>

#include "common/error_text.h"
#include "common/test_util.h"
#include "loom/accel/config.h"
#include "loom/graph/build.h"
#include "loom/graph/quantize.h"
#include "loom/graph/reference.h"
#include "loom/ir/eval.h"
#include "loom/runtime/cuda.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/module.h"

namespace loom::graph {
namespace {

using runtime::KernelDevice;

// conv1 (float: the first conv stays float, but its group quantizes) -> relu -> conv2 -> relu ->
// max pool (int8 data, no quantization operator) -> conv3 -> relu (int8) -> global average pool ->
// dense -> softmax (float: dense layers kept float).
Graph net() {
  Graph g;
  g.name = "mixed";
  const int64_t C = 16;
  int x = g.add_input("x", {{1, C, 12, 12}, DataType::Float(32)});
  auto w = [&](const char* n, int64_t o, int64_t k, uint64_t seed) {
    return g.add_constant(n, test::random_float32({o, C, k, k}, seed, -0.3, 0.3));
  };
  Attrs same = Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  int c1 = g.add_op("conv2d", "conv1", {x, w("w1", C, 3, 1), g.add_constant("b1", test::random_float32({C}, 2))}, same);
  int c2 = g.add_op("conv2d", "conv2", {g.add_op("relu", "relu1", {c1}), w("w2", C, 3, 3)}, same);
  int pool2 = g.add_op("max_pool2d", "pool2", {g.add_op("relu", "relu2", {c2})},
                       Attrs().set("kernel", std::vector<int64_t>{2, 2}).set("strides", std::vector<int64_t>{2, 2}));
  int c3 = g.add_op("conv2d", "conv3", {pool2, w("w3", C, 1, 4)});
  int pool = g.add_op("global_avg_pool2d", "pool", {g.add_op("relu", "relu3", {c3})});
  int flat = g.add_op("reshape", "flatten", {pool}, Attrs().set("shape", Shape{1, C}));
  int fc = g.add_op("dense", "fc",
                    {flat, g.add_constant("wfc", test::random_float32({10, C}, 5, -0.5, 0.5)),
                     g.add_constant("bfc", test::random_float32({10}, 6))});
  g.outputs = {g.add_op("softmax", "prob", {fc})};
  return g;
}

Graph quantized() {
  Graph g = net();
  QuantizeOptions qo;
  qo.skip_dense = true;
  std::vector<std::vector<NDArray>> calib;
  for (uint64_t s = 0; s < 4; ++s) calib.push_back({test::random_float32({1, 16, 12, 12}, 100 + s)});
  return quantize(g, calib, qo).graph;
}

BuildResult build_mixed(const Graph& g, const std::map<std::string, KernelDevice>& placement = {},
                        bool with_accel = false) {
  BuildOptions o;
  o.cuda.emplace();
  o.placement = placement;
  if (with_accel) o.accel = accel::default_config();
  return build(g, o);
}

int kernels_on(const BuildResult& r, KernelDevice d) {
  int n = 0;
  for (auto& k : r.executor_graph.kernels) n += k.device == d;
  return n;
}

// The executor graph run as the runtime would: the host holds every value, the "GPU" its own copy
// of each, CPU kernels from the model's library on the host's, GPU kernels on the grid interpreter
// on the device's, and only the kernels' upload and download lists move data between the two.
std::vector<NDArray> run_on_host_and_grid(const BuildResult& r, const std::vector<NDArray>& inputs) {
  const runtime::ExecutorGraph& eg = r.executor_graph;
  std::vector<NDArray> host(eg.values.size()), dev(eg.values.size());
  for (size_t i = 0; i < eg.values.size(); ++i) {
    const auto& v = eg.values[i];
    host[i] = NDArray::zeros(v.shape, v.dtype);
    dev[i] = NDArray::zeros(v.shape, v.dtype);
    if (v.kind == runtime::ValueKind::Param)
      for (NDArray* a : {&host[i], &dev[i]})
        std::memcpy(a->raw_data(), r.file.params.get() + v.param_offset, v.nbytes());
  }
  for (size_t i = 0; i < eg.inputs.size(); ++i)
    std::memcpy(host[size_t(eg.inputs[i])].raw_data(), inputs[i].raw_data(), inputs[i].nbytes());
  runtime::Module lib;
  if (!r.file.library.empty()) lib = runtime::Module::load_from_memory(r.file.library, "library");
  auto copy = [](NDArray& to, const NDArray& from) { std::memcpy(to.raw_data(), from.raw_data(), from.nbytes()); };
  for (const runtime::KernelCall& call : eg.kernels) {
    std::vector<NDArray> args;
    if (call.device == KernelDevice::CPU) {
      for (int id : call.args) args.push_back(host[size_t(id)]);
      lib.call(call.func, args);
      continue;
    }
    EXPECT_EQ(call.device, KernelDevice::Cuda) << call.node;
    const ir::LoweredFunc* f = nullptr;
    for (auto& lf : r.cuda_funcs)
      if (lf.name == call.func) f = &lf;
    if (!f) {
      ADD_FAILURE() << "no GPU function " << call.func;
      return {};
    }
    for (int id : call.upload) copy(dev[size_t(id)], host[size_t(id)]);
    for (int id : call.args) args.push_back(dev[size_t(id)]);
    ir::interpret_grid(*f, args);
    for (int id : call.download) copy(host[size_t(id)], dev[size_t(id)]);
  }
  std::vector<NDArray> out;
  for (int id : eg.outputs) out.push_back(host[size_t(id)]);
  return out;
}

NDArray input(uint64_t seed) { return test::random_float32({1, 16, 12, 12}, seed); }

// What the CPU alone computes for the quantized model: int8 layers bit for bit like the GPU build's
// CPU kernels, float layers within rounding.
NDArray cpu_output(const Graph& q, const NDArray& x) {
  return runtime::GraphExecutor::from_model_file(build(q).file, "cpu").run({x})[0];
}

TEST(MixedDevices, Int8LayersFallBackToTheCpuWithCopiesAndTheModelMatchesTheCpuBuild) {
  Graph q = quantized();
  BuildResult r = build_mixed(q);
  EXPECT_GE(kernels_on(r, KernelDevice::Cuda), 1) << "the float tail";
  EXPECT_GE(kernels_on(r, KernelDevice::CPU), 2) << "the int8 layers (conv1 too: its group quantizes)";
  EXPECT_FALSE(r.file.library.empty());
  EXPECT_FALSE(r.file.cuda_program.empty());
  ASSERT_FALSE(r.cpu_fallback.empty());
  bool pool_int8 = false;
  for (const std::string& why : r.cpu_fallback)
    pool_int8 |= why.find("(max_pool2d): int8 data has no GPU kernels") != std::string::npos;
  EXPECT_TRUE(pool_int8) << "the int8 max pool, a group without a quantization operator";
  for (const std::string& why : r.cpu_fallback)
    EXPECT_TRUE(why.find("int8 data has no GPU kernels") != std::string::npos ||
                why.find("has no GPU kernel") != std::string::npos)
        << why;
  int uploads = 0, downloads = 0;
  for (auto& k : r.executor_graph.kernels) {
    if (k.device == KernelDevice::CPU) {
      EXPECT_TRUE(k.upload.empty() && k.download.empty()) << k.node;
    }
    uploads += int(k.upload.size());
    downloads += int(k.download.size());
  }
  EXPECT_GE(uploads, 1) << "what the CPU hands to the GPU";
  EXPECT_GE(downloads, 1) << "the output";
  for (uint64_t seed : {1, 2}) {
    NDArray x = input(seed);
    std::vector<NDArray> got = run_on_host_and_grid(r, {x});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(test::arrays_close(got[0], cpu_output(q, x), 0, 2e-2)) << "seed " << seed;
  }
}

TEST(MixedDevices, APlacementMovesNodesAndNamesWhatItCannotMove) {
  Graph q = quantized();
  BuildResult moved = build_mixed(q, {{"fc", KernelDevice::CPU}});
  bool fc_on_cpu = false;
  for (auto& k : moved.executor_graph.kernels)
    if (k.node.find("fc") != std::string::npos) fc_on_cpu = k.device == KernelDevice::CPU;
  EXPECT_TRUE(fc_on_cpu);
  NDArray x = input(3);
  std::vector<NDArray> got = run_on_host_and_grid(moved, {x});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(test::arrays_close(got[0], cpu_output(q, x), 0, 2e-2));

  // An int8 layer on the GPU, a misspelt node, a device that is not a target.
  BuildResult plain = build_mixed(q);
  ASSERT_FALSE(plain.cpu_fallback.empty());
  const std::string int8_node = plain.cpu_fallback[0].substr(0, plain.cpu_fallback[0].find_first_of("+ "));
  std::string err = test::error_text<ConfigError>([&] { build_mixed(q, {{int8_node, KernelDevice::Cuda}}); });
  EXPECT_NE(err.find("placement puts node '" + int8_node + "' (fused: " + int8_node + "+"), std::string::npos) << err;
  EXPECT_NE(err.find(") on cuda: operator 'quantize' has no GPU kernel"), std::string::npos) << err;
  err = test::error_text<ConfigError>([&] { build_mixed(q, {{"fcc", KernelDevice::CPU}}); });
  EXPECT_NE(err.find("placement names node 'fcc'"), std::string::npos) << err;
  EXPECT_NE(err.find("'fc'"), std::string::npos) << "the closest name: " << err;
  err = test::error_text<ConfigError>([&] {
    BuildOptions o;
    o.placement = {{"fc", KernelDevice::Cuda}};
    build(q, o);
  });
  EXPECT_NE(err.find("placement puts node 'fc' on cuda, which is not a target of this build"), std::string::npos)
      << err;
  err = test::error_text<ConfigError>([&] { build_mixed(q, {{"fc", KernelDevice::Accel}}, true); });
  EXPECT_NE(err.find("placement puts node 'fc' on accel: the accelerator runs the int8 layers"), std::string::npos)
      << err;
}

TEST(MixedDevices, PlacementFilesNameTheNodeAndTheDevice) {
  auto p = parse_placement(R"({"fc": "cpu", "conv1": "cuda", "conv2": "accel"})", "p.json");
  EXPECT_EQ(p.at("fc"), KernelDevice::CPU);
  EXPECT_EQ(p.at("conv1"), KernelDevice::Cuda);
  EXPECT_EQ(p.at("conv2"), KernelDevice::Accel);
  std::string err = test::error_text<ConfigError>([] { parse_placement(R"({"fc": "gpu"})", "p.json"); });
  EXPECT_NE(err.find("p.json: node 'fc': 'gpu' is not a device (cpu, cuda, accel)"), std::string::npos) << err;
  err = test::error_text<ConfigError>([] { parse_placement(R"(["fc"])", "p.json"); });
  EXPECT_NE(err.find("p.json: a placement is a JSON object"), std::string::npos) << err;
  err = test::error_text<ConfigError>([] { parse_placement("{", "p.json"); });
  EXPECT_NE(err.find("p.json: not JSON"), std::string::npos) << err;
}

// The accelerator's layers there, the float layers on the GPU, the int8 glue between on the CPU.
TEST(MixedDevices, CpuAcceleratorAndCudaInOneModel) {
  Graph q = quantized();
  BuildResult r = build_mixed(q, {}, true);
  EXPECT_GE(kernels_on(r, KernelDevice::Accel), 2) << "conv2 and conv3";
  EXPECT_GE(kernels_on(r, KernelDevice::Cuda), 1) << "the float tail";
  EXPECT_GE(kernels_on(r, KernelDevice::CPU), 1) << "the first conv with its quantization";
  EXPECT_FALSE(r.file.accel_image.empty());
  EXPECT_FALSE(r.file.cuda_program.empty());
  std::string why;
  if (!runtime::cuda_available(&why)) {
    std::string err =
        test::error_text<DeviceError>([&] { runtime::GraphExecutor::from_model_file(r.file, "'three.loom'"); });
    EXPECT_NE(err.find("'three.loom': its kernels run on a GPU"), std::string::npos) << err;
    GTEST_SKIP() << "the run needs a GPU: " << why;
  }
  runtime::ExecutorOptions eo;
  eo.accel_backend = "fsim";
  auto ex = runtime::GraphExecutor::from_model_file(r.file, "three", eo);
  EXPECT_TRUE(ex.uses_gpu() && ex.uses_accelerator());
  BuildOptions cpu_accel;
  cpu_accel.accel = accel::default_config();
  auto want_ex = runtime::GraphExecutor::from_model_file(build(q, cpu_accel).file, "cpu+accel", eo);
  for (uint64_t seed : {4, 5}) {
    NDArray x = input(seed);
    NDArray want = want_ex.run({x})[0];
    NDArray first = ex.run({x})[0];
    EXPECT_TRUE(test::arrays_close(first, want, 0, 2e-2)) << "seed " << seed;
    NDArray again = ex.run({x})[0];
    EXPECT_TRUE(ex.replayed_cuda_graph());
    EXPECT_TRUE(test::arrays_close(again, first, 0, 0));
  }
}

TEST(MixedDevices, OnTheGpuCpuAndCudaModelMatchesTheCpuBuild) {
  std::string why;
  if (!runtime::cuda_available(&why)) GTEST_SKIP() << why;
  Graph q = quantized();
  BuildResult r = build_mixed(q);
  auto ex = runtime::GraphExecutor::from_model_file(r.file, "mixed");
  EXPECT_TRUE(ex.uses_gpu());
  NDArray x = input(7);
  NDArray first = ex.run({x})[0];
  EXPECT_FALSE(ex.replayed_cuda_graph());
  EXPECT_TRUE(test::arrays_close(first, cpu_output(q, x), 0, 2e-2));
  NDArray again = ex.run({x})[0];
  EXPECT_TRUE(ex.replayed_cuda_graph());
  EXPECT_TRUE(test::arrays_close(again, first, 0, 0));
  std::vector<double> times = ex.run_profiled();
  EXPECT_EQ(times.size(), ex.kernels().size());
}

}  // namespace
}  // namespace loom::graph
