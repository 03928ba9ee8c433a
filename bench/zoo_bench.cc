// ONNX models on the CPU: Loom against ONNX Runtime (the CPU build of onnxruntime-node, timed by
// bench/ort_latency.js; or, with --ort-python, the Python package timed by bench/ort_latency.py) on the same ONNX
// files, at 1 and 2 threads, interleaved (a round of Loom, a round of ONNX Runtime, three times) because the VM is
// noisy. Prints the CPU, each ratio (Loom / ONNX Runtime latency) of the fastest runs and of the medians, and their
// geometric means: on a shared VM interference only slows a run down, so the fastest runs are the steadier comparison.
//   zoo_bench [--models a.onnx,b.onnx] [--threads 1,2] [--reps 20] [--tuning-log FILE] [--no-winograd]
//             [--ort-python PYTHON] [--int8 [--pytorch PYTHON]]
// --int8: Loom's int8 model against ONNX Runtime on its QDQ export, PyTorch's int8 and Loom's float
// model (zoo_bench_int8.cc; --pytorch: the Python with torch, default /usr/bin/python3, "" for none).
// Models may take integer inputs (token ids: all ones) as well as float ones (element k: sin(k)).
// Each model's first output is compared with ONNX Runtime's on the same input (exit 1 past 1e-3 of its
// largest magnitude).
// --tuning-log: Loom compiles with the conv tiles `loom tune model` logged (as `loom compile
// --tuning-log`; the entries for the thread count the bench starts with). Default models: the exported torchvision
// ResNet-18 and MobileNetV2 of the test fixture (build/models). ONNX Runtime comes from $LOOM_ORT_DIR or build/ort
// (scripts/bootstrap.sh), or with --ort-python from that interpreter's `onnxruntime`. The runner scripts are read
// from $LOOM_BENCH_DIR, else this source tree's bench/ (a bundle from scripts/bundle_zoo_bench.sh sets it). Exit 1:
// an output differs; 2: a model Loom could not import, compile, load or run (skipped), or ONNX Runtime did not run.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "loom/codegen/llvm.h"
#include "loom/frontend/onnx.h"
#include "loom/graph/build.h"
#include "loom/runtime/env.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/thread_pool.h"
#include "zoo_runner.h"
#ifdef LOOM_HAVE_TUNE
#include "loom/tune/apply_log.h"
#endif

using namespace loom;

namespace {

// What the model tests allow against PyTorch (1e-4), with room for ten times as many layers.
constexpr double kTolerance = 1e-3;

using bench::ort_ms;
using bench::OrtRunner;

// Loom's first output against ONNX Runtime's (read from `ort_file`): the largest difference
// relative to ONNX Runtime's largest magnitude (-1: nothing to compare), and whether ONNX Runtime's output is one value
// throughout (a zero-initialized classifier's zeros), which no difference can reveal an error in.
struct OutputCheck {
  double error = -1;
  bool constant = false;
};

OutputCheck compare_with_ort(const NDArray& loom, const std::string& ort_file) {
  std::ifstream f(ort_file, std::ios::binary);
  std::vector<float> ort(size_t(loom.numel()));
  if (loom.dtype() != DataType::Float(32) ||
      !f.read(reinterpret_cast<char*>(ort.data()), std::streamsize(ort.size() * 4)))
    return {};
  double err = 0, scale = 0;
  bool constant = true;
  for (size_t i = 0; i < ort.size(); ++i) {
    err = std::max(err, std::fabs(double(loom.data<float>()[i]) - ort[i]));
    scale = std::max(scale, std::fabs(double(ort[i])));
    constant &= ort[i] == ort[0];
  }
  return {err / std::max(scale, 1e-30), constant};
}

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models = {LOOM_MODELS_DIR "/resnet18.onnx", LOOM_MODELS_DIR "/mobilenet_v2.onnx"};
  std::vector<int> threads = {1, 2};
  int reps = 20;
  std::string tuning_log;
  bool winograd = true;
  OrtRunner runner;
  bool int8 = false;
  std::string pytorch = "/usr/bin/python3";
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (i + 1 < argc && a == "--models")
        models = bench::split_list(argv[++i]);
      else if (i + 1 < argc && a == "--reps")
        reps = std::max(3, bench::count_option(argv[++i], "--reps", 100000));
      else if (i + 1 < argc && a == "--tuning-log")
        tuning_log = argv[++i];
      else if (a == "--int8")
        int8 = true;
      else if (i + 1 < argc && a == "--pytorch")
        pytorch = argv[++i];
      else if (a == "--no-winograd")
        winograd = false;
      else if (i + 1 < argc && a == "--ort-python")
        runner.python = argv[++i];
      else if (i + 1 < argc && a == "--threads") {
        threads.clear();
        for (auto& t : bench::split_list(argv[++i])) threads.push_back(bench::count_option(t, "--threads", 1024));
      } else {
        std::fprintf(stderr,
                     "usage: zoo_bench [--models a.onnx,b.onnx] [--threads 1,2] [--reps 20] [--tuning-log FILE] "
                     "[--no-winograd] [--ort-python PYTHON] [--int8 [--pytorch PYTHON]]\n");
        return 2;
      }
    }
  } catch (const std::invalid_argument& e) {  // a count that is not one
    std::fprintf(stderr, "zoo_bench: %s\n", e.what());
    return 2;
  }
  if (int8) {
    if (!tuning_log.empty() || !winograd) {
      std::fprintf(stderr, "zoo_bench: --int8 compiles with the defaults: no --tuning-log or --no-winograd\n");
      return 2;
    }
    return bench::int8_zoo_bench(models, threads, reps, runner, pytorch);
  }
#ifndef LOOM_HAVE_TUNE
  if (!tuning_log.empty()) {
    std::fprintf(stderr, "zoo_bench: --tuning-log needs a build with the tuner\n");
    return 2;
  }
#endif
  std::printf(
      "zoo_bench: batch as exported, %d runs per side (3 interleaved rounds): fastest, and median\n  cpu: %s\n  "
      "loom target: %s\n",
      reps, bench::cpu_name().c_str(), codegen::host_target_description().c_str());
  std::printf("%-34s %7s %10s %10s %8s %10s %10s %8s\n", "model", "threads", "loom best", "ort best", "ratio",
              "loom p50", "ort p50", "ratio");
  double log_sum = 0, log_sum_median = 0;
  int ratios = 0;
  // Loom's fastest run per model at each thread count: more threads must never be slower.
  std::vector<std::string> slower_with_more_threads;
  std::map<int, std::vector<double>> fork_join_us;  // per thread count, one a model
  std::string ort_version = "?";
  std::vector<std::string> wrong;         // outputs farther from ONNX Runtime's than kTolerance
  std::vector<std::string> skipped;       // models Loom could not import, compile, load or run
  std::vector<std::string> no_reference;  // models the ONNX Runtime runner did not run, or of constant output
  auto skip = [&](const std::string& path, const std::string& why) {
    std::fprintf(stderr, "zoo_bench: %s: %s (skipped)\n", path.c_str(), why.c_str());
    skipped.push_back(path.substr(path.find_last_of('/') + 1));
  };
  for (const std::string& path : models) {
    graph::Graph g;
    try {
      g = frontend::import_onnx(path, {});
    } catch (const Error& e) {
      skip(path, e.what());
      continue;
    }
    graph::BuildOptions bo;
    bo.pipeline.layout.winograd = winograd;
#ifdef LOOM_HAVE_TUNE
    tune::LogUse use;
#endif
    graph::BuildResult r;
    try {  // an unreadable or malformed tuning log, a model Loom cannot compile
#ifdef LOOM_HAVE_TUNE
      if (!tuning_log.empty()) use = tune::apply_log(bo, std::make_shared<const tune::TuningLog>(tuning_log));
#endif
      r = graph::build(std::move(g), bo);
    } catch (const Error& e) {
      skip(path, e.what());
      continue;
    }
    std::optional<runtime::GraphExecutor> loaded;
    try {  // a compiled model the runtime refuses
      loaded.emplace(runtime::GraphExecutor::from_model_file(r.file, path));
    } catch (const Error& e) {
      skip(path, e.what());
      continue;
    }
    runtime::GraphExecutor& ex = *loaded;
    std::string why;
    std::string shapes = bench::set_bench_inputs(ex, &why);
    if (shapes.empty()) {
      skip(path, why);
      continue;
    }
    std::string name = path.substr(path.find_last_of('/') + 1);
#ifdef LOOM_HAVE_TUNE
    if (!tuning_log.empty())
      std::printf("%s: %d of %d conv kernels from the tuning log\n", name.c_str(), use.cpu->found, use.cpu->looked_up);
#endif
    // The same input through both: Loom's first output against ONNX Runtime's.
    try {
      ex.run();
    } catch (const Error& e) {
      skip(path, e.what());
      continue;
    }
    std::string ort_out = "/tmp/loom_zoo_bench_" + std::to_string(::getpid()) + ".f32";
    bool ort_ran = ort_ms(runner, path, 1, 1, shapes, &ort_version, ort_out).median_ms > 0;
    OutputCheck check = ort_ran ? compare_with_ort(ex.get_output(0), ort_out) : OutputCheck{};
    std::remove(ort_out.c_str());
    if (!ort_ran) {
      std::fprintf(stderr, "zoo_bench: %s: ONNX Runtime did not run it (%s)\n", name.c_str(), runner.command().c_str());
      no_reference.push_back(name);
    } else if (check.constant) {
      std::fprintf(stderr,
                   "zoo_bench: %s: ONNX Runtime's first output is one value throughout, so comparing checks "
                   "nothing (a zero-initialized classifier? scripts/export_zoo_models.py initializes its heads)\n",
                   name.c_str());
      no_reference.push_back(name);
    } else if (check.error >= 0) {
      std::printf("%s: max |error| vs ONNX Runtime %.2e of the largest magnitude\n", name.c_str(), check.error);
      if (check.error > kTolerance) wrong.push_back(name);
    }
    double previous_ms = 0;
    int previous_threads = 0;
    for (int t : threads) {
      runtime::set_num_threads(t);
      for (int i = 0; i < runtime::GraphExecutor::kSettlingRuns; ++i) ex.run();
      if (t > 1) fork_join_us[t].push_back(runtime::fork_join_ns() / 1e3);
      std::vector<double> loom, ort, ort_best;
      for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < (reps + 2) / 3; ++i) {
          auto s = std::chrono::steady_clock::now();
          ex.run();
          loom.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
        }
        bench::Times o = ort_ms(runner, path, t, (reps + 2) / 3, shapes, &ort_version);
        if (o.median_ms > 0) ort.push_back(o.median_ms), ort_best.push_back(o.min_ms);
      }
      std::sort(loom.begin(), loom.end());
      std::sort(ort.begin(), ort.end());
      std::sort(ort_best.begin(), ort_best.end());
      double lm = loom[loom.size() / 2], om = ort.empty() ? -1 : ort[ort.size() / 2];
      double lb = loom.front(), ob = ort_best.empty() ? -1 : ort_best.front();
      if (previous_threads && t > previous_threads && lb > previous_ms)
        slower_with_more_threads.push_back(name + " (" + std::to_string(t) + " threads " + fixed2(lb) + " ms vs " +
                                           std::to_string(previous_threads) + " threads " + fixed2(previous_ms) +
                                           " ms, fastest runs)");
      previous_ms = lb;
      previous_threads = t;
      if (om > 0) {
        std::printf("%-34s %7d %10.2f %10.2f %8.2f %10.2f %10.2f %8.2f\n", name.c_str(), t, lb, ob, lb / ob, lm, om,
                    lm / om);
        log_sum += std::log(lb / ob);
        log_sum_median += std::log(lm / om);
        ++ratios;
      } else {
        std::printf("%-34s %7d %10.2f %10s %8s %10.2f %10s %8s\n", name.c_str(), t, lb, "n/a", "n/a", lm, "n/a", "n/a");
      }
    }
  }
  // Each model's pool measured its own (runtime::min_parallel_work).
  for (auto& [t, us] : fork_join_us) {
    if (us.empty()) continue;
    auto [lo, hi] = std::minmax_element(us.begin(), us.end());
    std::printf("%d threads: fork-join %.2f-%.2f us measured, parallel loops from %lld-%lld work%s\n", t, *lo, *hi,
                (long long)runtime::parallel_work_threshold(*lo * 1e3),
                (long long)runtime::parallel_work_threshold(*hi * 1e3),
                runtime::env::text("LOOM_MIN_PARALLEL_WORK") ? " (LOOM_MIN_PARALLEL_WORK set: not used)" : "");
  }
  if (threads.size() > 1) {
    std::printf("more threads slower than fewer: %s\n", slower_with_more_threads.empty() ? "none" : "");
    for (const std::string& m : slower_with_more_threads) std::printf("  %s\n", m.c_str());
  }
  if (ratios)
    std::printf(
        "geometric mean of %d ratios: %.2f of the fastest runs, %.2f of the medians (Loom / ONNX Runtime %s; below "
        "1: Loom is faster)\n",
        ratios, std::exp(log_sum / ratios), std::exp(log_sum_median / ratios), ort_version.c_str());
  else if (runner.python.empty())
    std::printf(
        "ONNX Runtime not found (scripts/bootstrap.sh installs onnxruntime-node into build/ort, or set "
        "LOOM_ORT_DIR)\n");
  else
    std::printf("ONNX Runtime not found: '%s -c \"import onnxruntime\"' must work\n", runner.python.c_str());
  char tolerance[16];
  std::snprintf(tolerance, sizeof tolerance, "%.0e", kTolerance);
  bench::print_failed(
      std::string("outputs differ from ONNX Runtime's by more than ") + tolerance + " of their largest magnitude",
      wrong);
  bench::print_failed("Loom could not run", skipped);
  bench::print_failed("no ONNX Runtime output to check against (none, or one value throughout)", no_reference);
  // 1: a wrong output (whatever else failed); 2: a model not measured on one side.
  if (!wrong.empty()) return 1;
  return skipped.empty() && no_reference.empty() ? 0 : 2;
}
