// Per-kernel times as `loom run --profile` reports them, in fresh processes: the first run of a
// just-loaded model against the same process's steady state (the baseline, measured in the same
// run). A process that starts its thread pool or touches its memory inside the first kernel shows
// it here as a first kernel many times its steady time, varying from process to process.
//
//   kernel_timing_bench [--model resnet18|mobilenet_v2|mlp] [--image 224] [--int8] [--processes 12]
//                       [--threads 2] [--steady 5]
//
// Prints, per kernel position that matters (the first kernel, the slowest kernel, the whole run):
// the first run's median and worst over the processes, the steady median, and their ratios.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/thread_pool.h"

using namespace loom;

namespace {

// What one process measured: load time, the first run's kernel times, the steady run's.
struct Sample {
  double load_ms = 0;
  std::vector<double> first, steady;
};

Sample measure(const std::string& path, int threads, int steady_runs) {
  runtime::set_num_threads(threads);
  Sample s;
  auto t0 = std::chrono::steady_clock::now();
  auto ex = runtime::GraphExecutor::load(path);
  s.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < ex.num_inputs(); ++i) {
    NDArray a = NDArray::empty(ex.input_spec(i).shape, ex.input_spec(i).dtype);
    a.fill_random(1 + i);
    ex.set_input(i, a);
  }
  s.first = ex.run_profiled();
  for (int r = 1; r < steady_runs; ++r) ex.run();
  s.steady = ex.run_profiled();
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "resnet18";
  int64_t image = 224;
  int processes = 12, threads = 2, steady_runs = 5;
  bool int8 = false;
  std::string measure_path;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--int8") {
        int8 = true;
        continue;
      }
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      std::string v = argv[++i];
      if (a == "--model")
        model = v;
      else if (a == "--image")
        image = bench::count_option(v, "--image", 1024);
      else if (a == "--processes")
        processes = bench::count_option(v, "--processes", 1000);
      else if (a == "--threads")
        threads = bench::count_option(v, "--threads", 256);
      else if (a == "--steady")
        steady_runs = bench::count_option(v, "--steady", 1000);
      else if (a == "--measure")
        measure_path = v;
      else
        throw std::invalid_argument("unknown option " + a);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_timing_bench: %s\n", e.what());
    return 2;
  }
  if (!measure_path.empty()) {  // one fresh process: its numbers on stdout
    Sample s = measure(measure_path, threads, steady_runs);
    std::printf("%.17g %zu", s.load_ms, s.first.size());
    for (double v : s.first) std::printf(" %.17g", v);
    for (double v : s.steady) std::printf(" %.17g", v);
    std::printf("\n");
    return 0;
  }
  std::string path = (std::filesystem::temp_directory_path() / ("kernel_timing_" + std::to_string(getpid()) + ".loom"));
  graph::Graph g = graph::builtin_model(model, 1, image);
  if (int8) {
    std::vector<std::vector<NDArray>> calibration(2);
    for (size_t s = 0; s < calibration.size(); ++s)
      for (int in : g.inputs) {
        NDArray a = NDArray::empty(g.node(in).type.shape, g.node(in).type.dtype);
        a.fill_random(100 + s);
        calibration[s].push_back(a);
      }
    g = graph::quantize(std::move(g), calibration).graph;
  }
  runtime::save_model_file(path, graph::build(g).file);
  std::printf("kernel_timing_bench: %s (%lld%s) on %s, %d threads, %d fresh processes\n", model.c_str(),
              (long long)image, int8 ? ", int8" : "", bench::cpu_name().c_str(), threads, processes);
  // Each process is this program started again (--measure): a fork of this one would inherit a
  // thread pool whose workers it does not have.
  std::vector<Sample> samples;
  for (int p = 0; p < processes; ++p) {
    std::string cmd = "'" + std::string(argv[0]) + "' --measure '" + path + "' --threads " + std::to_string(threads) +
                      " --steady " + std::to_string(steady_runs);
    std::stringstream out(bench::command_output(cmd));
    Sample s;
    size_t k = 0;
    if (!(out >> s.load_ms >> k) || k == 0) {
      std::fprintf(stderr, "kernel_timing_bench: process %d failed (%s)\n", p, cmd.c_str());
      return 1;
    }
    s.first.resize(k);
    s.steady.resize(k);
    for (double& v : s.first) out >> v;
    for (double& v : s.steady) out >> v;
    if (!out) {
      std::fprintf(stderr, "kernel_timing_bench: process %d printed too few times\n", p);
      return 1;
    }
    samples.push_back(s);
  }
  std::filesystem::remove(path);
  const size_t kernels = samples[0].first.size();
  // The slowest kernel of the steady state, and the whole run.
  size_t slowest = 0;
  for (size_t k = 0; k < kernels; ++k)
    if (samples[0].steady[k] > samples[0].steady[slowest]) slowest = k;
  auto row = [&](const char* what, auto pick) {
    std::vector<double> first, steady;
    for (const Sample& s : samples) {
      first.push_back(pick(s.first) * 1e3);
      steady.push_back(pick(s.steady) * 1e3);
    }
    double worst = *std::max_element(first.begin(), first.end()), best = *std::min_element(first.begin(), first.end());
    std::printf(
        "  %-26s first run: median %8.3f ms, %8.3f to %8.3f; steady median %8.3f ms; first/steady median %.2fx, "
        "worst %.2fx\n",
        what, median(first), best, worst, median(steady), median(first) / median(steady), worst / median(steady));
  };
  row("first kernel", [](const std::vector<double>& t) { return t[0]; });
  std::string name = "slowest kernel (#" + std::to_string(slowest + 1) + ")";
  row(name.c_str(), [&](const std::vector<double>& t) { return t[slowest]; });
  row("whole run", [](const std::vector<double>& t) {
    double sum = 0;
    for (double v : t) sum += v;
    return sum;
  });
  std::vector<double> loads;
  for (const Sample& s : samples) loads.push_back(s.load_ms);
  std::printf("  load (pool started, fork-join measured): median %.1f ms\n", median(loads));
  return 0;
}
