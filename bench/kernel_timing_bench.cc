// Per-kernel times as `loom run --profile` reports them, in fresh processes: the first run of a
// just-loaded model against the same process's steady state (the baseline, measured in the same
// run). A process that starts its thread pool or touches its memory inside the first kernel shows
// it here as a first kernel many times its steady time, varying from process to process.
//
//   kernel_timing_bench [--model resnet18|mobilenet_v2|mlp] [--image 224] [--processes 12]
//                       [--threads 2] [--steady 5]
//
// Prints, per kernel position that matters (the first kernel, the slowest kernel, the whole run):
// the first run's median and worst over the processes, the steady median, and their ratios.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/graph/build.h"
#include "loom/graph/builtin_models.h"
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
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
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
      else
        throw std::invalid_argument("unknown option " + a);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_timing_bench: %s\n", e.what());
    return 2;
  }
  std::string path = (std::filesystem::temp_directory_path() / ("kernel_timing_" + std::to_string(getpid()) + ".loom"));
  runtime::save_model_file(path, graph::build(graph::builtin_model(model, 1, image)).file);
  std::printf("kernel_timing_bench: %s (%lld) on %s, %d threads, %d fresh processes\n", model.c_str(),
              (long long)image, bench::cpu_name().c_str(), threads, processes);
  std::vector<Sample> samples;
  for (int p = 0; p < processes; ++p) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {  // the child measures and writes its numbers: load, then first and steady times
      close(fds[0]);
      Sample s = measure(path, threads, steady_runs);
      std::vector<double> out = {s.load_ms, double(s.first.size())};
      out.insert(out.end(), s.first.begin(), s.first.end());
      out.insert(out.end(), s.steady.begin(), s.steady.end());
      ssize_t n = write(fds[1], out.data(), out.size() * sizeof(double));
      _exit(n == ssize_t(out.size() * sizeof(double)) ? 0 : 1);
    }
    close(fds[1]);
    std::vector<double> in(1 << 16);
    ssize_t got = 0, n;
    while ((n = read(fds[0], reinterpret_cast<char*>(in.data()) + got, in.size() * sizeof(double) - size_t(got))) > 0)
      got += n;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got < ssize_t(2 * sizeof(double))) {
      std::fprintf(stderr, "kernel_timing_bench: process %d failed\n", p);
      return 1;
    }
    Sample s;
    s.load_ms = in[0];
    size_t k = size_t(in[1]);
    s.first.assign(in.begin() + 2, in.begin() + 2 + long(k));
    s.steady.assign(in.begin() + 2 + long(k), in.begin() + 2 + long(2 * k));
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
    std::printf("  %-26s first run: median %8.3f ms, %8.3f to %8.3f; steady median %8.3f ms; first/steady median %.2fx, "
                "worst %.2fx\n",
                what, median(first), best, worst, median(steady), median(first) / median(steady),
                worst / median(steady));
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
