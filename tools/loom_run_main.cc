// loom-run: runs a compiled model (.loom) with the runtime alone — what a deployment machine (a
// GPU box, a board's host) builds with -DLOOM_RUNTIME_ONLY=ON. No compiler, no LLVM, no CLI11.
//
//   loom-run MODEL.loom [--input X.npy]... [--output Y.npy]... [--expect WANT.npy]... [--rtol R]
//            [--repeat N] [--backend NAME] [--config BOARD.json] [--no-cuda-graph] [--profile]
//
// --config: an accelerator config file with this machine's backend sections ("zynq": {"uio": ...},
// "xrt": {"xclbin": ...}); its fields must equal those the model was compiled for.
// Without --input the inputs are reproducible random values in [-1, 1]. --expect compares each
// output with a reference (max |got - want| <= rtol x max |want|; exit 1 if not). --repeat times N
// runs after the first (GPU models replay one captured CUDA graph from the second run on).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/runtime/accel_device.h"
#include "loom/runtime/accel_image.h"
#include "loom/runtime/cuda.h"
#include "loom/runtime/env.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/model_file.h"
#include "loom/runtime/npy.h"
#include "loom/runtime/thread_pool.h"

using namespace loom;

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "loom-run: %s\nusage: loom-run MODEL.loom [--input X.npy]... [--output Y.npy]... [--expect WANT.npy]... "
               "[--rtol R] [--repeat N] [--backend NAME] [--config BOARD.json] [--no-cuda-graph] [--profile]\n",
               why);
  return 2;
}

// The model's accelerator config with the backend sections (object-valued entries) of the config
// file `path`, whose other fields must equal the model's.
std::string with_backend_sections(const runtime::ModelFile& file, const std::string& model, const std::string& path) {
  if (file.accel_image.empty()) throw Error("--config: '" + model + "' has no accelerator kernels");
  nlohmann::json config = nlohmann::json::parse(runtime::AccelImage::parse(file.accel_image, model).config_json);
  std::ifstream in(path);
  if (!in) throw Error("--config: cannot open '" + path + "'");
  nlohmann::json given = nlohmann::json::parse(in, nullptr, false);
  if (!given.is_object()) throw Error("--config: '" + path + "' is not a JSON object");
  for (auto& [key, value] : given.items()) {
    if (value.is_object()) {
      // (A runtime without backends says so when the model opens its device.)
      if (!accel_backends().empty()) check_backend_section(key, "'" + path + "'");
      config[key] = value;
    } else if (!config.contains(key) || config[key] != value)
      throw Error("--config: '" + path + "' gives " + key + " = " + value.dump() + ", and '" + model +
                  "' was compiled with " + (config.contains(key) ? config[key].dump() : "no such field"));
  }
  return config.dump();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage("no model");
  std::string model = argv[1];
  std::vector<std::string> inputs, outputs, expects;
  double rtol = 1e-4;
  int repeat = 0;
  bool profile = false;
  runtime::ExecutorOptions eo;
  std::string config_file;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--input")
        inputs.push_back(value());
      else if (a == "--output")
        outputs.push_back(value());
      else if (a == "--expect")
        expects.push_back(value());
      else if (a == "--rtol") {
        rtol = std::stod(value());
        if (!(rtol >= 0 && rtol <= 1)) throw Error("--rtol must be in [0, 1], got " + std::string(argv[i]));
      } else if (a == "--repeat") {
        repeat = std::stoi(value());
        if (repeat < 0 || repeat > 1000000)
          throw Error("--repeat must be in [0, 1000000], got " + std::string(argv[i]));
      } else if (a == "--backend")
        eo.accel_backend = value();
      else if (a == "--config")
        config_file = value();
      else if (a == "--no-cuda-graph")
        eo.cuda_graphs = false;
      else if (a == "--profile")
        profile = true;
      else
        return usage(("unknown option " + a).c_str());
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }
  try {
    auto t0 = std::chrono::steady_clock::now();
    runtime::ModelFile file = runtime::load_model_file(model);
    if (!config_file.empty()) eo.accel_config_json = with_backend_sections(file, model, config_file);
    auto ex = runtime::GraphExecutor::from_model_file(file, "'" + model + "'", eo);
    double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %zu kernels, loaded in %.3f s", model.c_str(), ex.kernels().size(), load_s);
    if (ex.uses_gpu()) {
      const auto& gpu = runtime::cuda_device_info();
      std::printf(" on %s (%s)", gpu.name.c_str(), gpu.arch().c_str());
    }
    std::printf("\n");
    if (!inputs.empty() && inputs.size() != ex.num_inputs())
      throw Error("the model takes " + std::to_string(ex.num_inputs()) + " inputs, got " +
                  std::to_string(inputs.size()));
    for (size_t i = 0; i < ex.num_inputs(); ++i) {
      if (!inputs.empty()) {
        ex.set_input(i, runtime::read_npy(inputs[i]));
      } else {
        NDArray a = NDArray::empty(ex.input_spec(i).shape, ex.input_spec(i).dtype);
        a.fill_random(1 + i, -1, 1);
        ex.set_input(i, a);
      }
    }
    t0 = std::chrono::steady_clock::now();
    ex.run();
    double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("first run: %.3f ms\n", first_ms);
    if (repeat > 0) {
      ex.run();  // captures the CUDA graph (GPU models)
      t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < repeat; ++r) ex.run();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / repeat;
      std::printf("steady state: %.3f ms per run (mean of %d%s, inputs and outputs copied each run)\n", ms, repeat,
                  ex.replayed_cuda_graph() ? ", CUDA graph replayed" : "");
      if (runtime::num_threads() > 1)
        std::printf("threads: %d, parallel loops from %lld work (fork-join %.2f us measured%s)\n",
                    runtime::num_threads(), (long long)runtime::min_parallel_work(), runtime::fork_join_ns() / 1e3,
                    runtime::env::text("LOOM_MIN_PARALLEL_WORK") ? "; LOOM_MIN_PARALLEL_WORK set" : "");
    }
    if (profile) {  // each kernel alone, slowest first
      std::vector<double> t = ex.run_profiled();
      std::vector<size_t> order(t.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t[a] > t[b]; });
      for (size_t k : order)
        std::printf("  %9.3f ms  %s (%s)\n", t[k] * 1e3, ex.kernels()[k].func.c_str(), ex.kernels()[k].node.c_str());
    }
    int bad = 0;
    for (size_t i = 0; i < ex.num_outputs(); ++i) {
      NDArray got = ex.get_output(i);
      if (i < outputs.size()) runtime::write_npy(outputs[i], got);
      if (i < expects.size()) {
        NDArray want = runtime::read_npy(expects[i]);
        if (want.shape() != got.shape())
          throw Error("output " + std::to_string(i) + " has another shape than " + expects[i]);
        double err = 0, scale = 0;
        for (int64_t k = 0; k < got.numel(); ++k) {
          err = std::max(err, std::fabs(got.get_as_double(k) - want.get_as_double(k)));
          scale = std::max(scale, std::fabs(want.get_as_double(k)));
        }
        bool ok = err <= rtol * std::max(scale, 1e-30);
        bad += !ok;
        std::printf("output %zu vs %s: max error %.3g of %.3g (%s)\n", i, expects[i].c_str(), err, scale,
                    ok ? "ok" : "MISMATCH");
      }
    }
    return bad ? 1 : 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "loom-run: %s\n", e.what());
    return 1;
  }
}
