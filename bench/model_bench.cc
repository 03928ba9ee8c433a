// Whole models on the CPU: Loom's compiled built-in ResNet-18 and MobileNetV2 (batch 1, float32)
// against PyTorch running the same torchvision architectures, measured in the same run at 1 and
// 2 threads, plus compile time and the memory plan. resnet18_int8: every layer quantized to int8
// (Loom: graph::quantize, first conv included, calibrated on 4 random images; PyTorch: static
// quantization on its oneDNN engine).
//   model_bench [--models resnet18,mobilenet_v2,resnet18_int8] [--threads 1,2] [--reps 20] [--no-pytorch]
// PyTorch is timed by bench/pytorch_latency.py with Debian's /usr/bin/python3 (python3-torch).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/codegen/llvm.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/thread_pool.h"

using namespace loom;

namespace {

double pytorch_ms(const std::string& model, int threads, int reps) {
  std::string out = bench::command_output("/usr/bin/python3 " LOOM_BENCH_DIR "/pytorch_latency.py " + model + " 1 " +
                                          std::to_string(threads) + " " + std::to_string(reps) + " 2>/dev/null");
  try {
    return nlohmann::json::parse(out).at("median_ms").get<double>();
  } catch (const std::exception&) {
    return -1;
  }
}

// A built-in model, or "<model>_int8": the model with every conv2d/dense layer int8.
graph::Graph model_graph(const std::string& name) {
  const std::string suffix = "_int8";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return graph::builtin_model(name);
  graph::Graph g = graph::builtin_model(name.substr(0, name.size() - suffix.size()));
  std::vector<std::vector<NDArray>> calibration;
  for (int i = 0; i < 4; ++i) {
    NDArray x = NDArray::empty(g.node(g.inputs[0]).type.shape, DataType::Float(32));
    x.fill_random(100 + i);
    calibration.push_back({x});
  }
  graph::QuantizeOptions o;
  o.skip_first_conv = false;  // as PyTorch quantizes it
  return graph::quantize(g, calibration, o).graph;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models = {"resnet18", "mobilenet_v2", "resnet18_int8"};
  std::vector<int> threads = {1, 2};
  int reps = 20;
  bool with_pytorch = true;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--no-pytorch")
        with_pytorch = false;
      else if (i + 1 < argc && a == "--models")
        models = bench::split_list(argv[++i]);
      else if (i + 1 < argc && a == "--reps")
        reps = bench::count_option(argv[++i], "--reps", 100000);
      else if (i + 1 < argc && a == "--threads") {
        threads.clear();
        for (auto& t : bench::split_list(argv[++i])) threads.push_back(bench::count_option(t, "--threads", 1024));
      } else {
        std::fprintf(stderr,
                     "usage: model_bench [--models resnet18,mobilenet_v2,resnet18_int8] [--threads 1,2] [--reps 20] "
                     "[--no-pytorch]\n");
        return 2;
      }
    }
  } catch (const std::invalid_argument& e) {  // a count that is not one
    std::fprintf(stderr, "model_bench: %s\n", e.what());
    return 2;
  }
  std::printf("model_bench: batch 1, median of %d runs\n  cpu: %s\n  loom target: %s\n", reps,
              bench::cpu_name().c_str(), codegen::host_target_description().c_str());
  std::printf("%-14s %7s %12s %12s %8s\n", "model", "threads", "loom ms", "pytorch ms", "ratio");
  for (const std::string& name : models) {
    auto t0 = std::chrono::steady_clock::now();
    graph::Graph g;
    try {
      g = model_graph(name);
    } catch (const Error& e) {
      std::fprintf(stderr, "model_bench: %s (or one of them with the suffix _int8)\n", e.what());
      return 2;
    }
    graph::BuildResult r = graph::build(std::move(g));
    double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto ex = runtime::GraphExecutor::from_model_file(r.file, name);
    NDArray x = NDArray::empty(ex.input_spec(0).shape, ex.input_spec(0).dtype);
    x.fill_random(1);
    ex.set_input(0, x);
    for (int t : threads) {
      runtime::set_num_threads(t);
      for (int i = 0; i < runtime::GraphExecutor::kSettlingRuns; ++i) ex.run();
      std::vector<double> ms;
      for (int i = 0; i < reps; ++i) {
        auto s = std::chrono::steady_clock::now();
        ex.run();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
      }
      std::sort(ms.begin(), ms.end());
      double loom_ms = ms[ms.size() / 2];
      double torch_ms = with_pytorch ? pytorch_ms(name, t, reps) : -1;
      if (torch_ms > 0)
        std::printf("%-14s %7d %12.2f %12.2f %8.2f\n", name.c_str(), t, loom_ms, torch_ms, loom_ms / torch_ms);
      else
        std::printf("%-14s %7d %12.2f %12s %8s\n", name.c_str(), t, loom_ms, "n/a", "n/a");
    }
    std::printf(
        "  %s: compiled in %.2f s (%zu distinct kernels, %zu calls); intermediates %.1f MiB planned vs %.1f MiB "
        "unplanned\n",
        name.c_str(), compile_s, r.kernels.size(), r.executor_graph.kernels.size(),
        r.memory.planned_bytes() / 1048576.0, r.memory.unplanned_bytes / 1048576.0);
  }
  std::printf("ratio = Loom latency / PyTorch latency (below 1: Loom is faster)\n");
  return 0;
}
