// zoo_bench --int8: Loom's int8 model of each ONNX network against the baselines a user would pick
// for int8 instead, in the same run: ONNX Runtime on the QDQ export of the same int8 network (the
// same scales and integers, frontend/onnx_export.h) and PyTorch's own int8 quantization of the
// same torchvision network where PyTorch has one (pytorch_latency.py); and Loom's float model,
// which the int8 model must beat. Rounds interleaved as in the float mode. Each export's first
// output from ONNX Runtime is compared with Loom's int8 model's (cosine, top-1).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/codegen/llvm.h"
#include "loom/frontend/load.h"
#include "loom/frontend/onnx.h"
#include "loom/frontend/onnx_export.h"
#include "loom/graph/build.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/thread_pool.h"
#include "zoo_runner.h"

namespace loom::bench {

namespace {

// The least cosine between ONNX Runtime's output on the export and Loom's int8 model's, as `loom
// export` checks it: rounding (halves to even against up) moves values by steps; a wrong scale or
// operator does far more.
constexpr double kMinCosine = 0.99;
constexpr int kCalibrationInputs = 8;

double cosine(const NDArray& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get_as_double(i), y = b[size_t(i)];
    ab += x * y, aa += x * x, bb += y * y;
  }
  return aa == 0 && bb == 0 ? 1 : aa == 0 || bb == 0 ? 0 : ab / std::sqrt(aa * bb);
}

double cosine(const NDArray& a, const NDArray& b) {
  std::vector<float> v(size_t(b.numel()));
  for (int64_t i = 0; i < b.numel(); ++i) v[size_t(i)] = float(b.get_as_double(i));
  return cosine(a, v);
}

// The class of the largest score of a [1, classes] output, or -1 for another shape.
int64_t top1(const std::vector<int64_t>& shape, const std::function<double(int64_t)>& at) {
  if (shape.size() != 2 || shape[0] != 1 || shape[1] < 2) return -1;
  int64_t best = 0;
  for (int64_t c = 1; c < shape[1]; ++c)
    if (at(c) > at(best)) best = c;
  return best;
}

// PyTorch's int8 form of a network of export_zoo_models.py, by its file's stem ("" for none).
std::string pytorch_int8_name(const std::string& stem) {
  for (const char* n : {"resnet18", "mobilenet_v2", "shufflenet_v2_x1_0", "bert_encoder"})
    if (stem == n) return stem + "_int8";
  return "";
}

double best(std::vector<double> v) { return v.empty() ? -1 : *std::min_element(v.begin(), v.end()); }
double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string ratio_text(double a, double b) {
  char buf[32];
  if (a > 0 && b > 0)
    std::snprintf(buf, sizeof buf, "%.2f", a / b);
  else
    std::snprintf(buf, sizeof buf, "n/a");
  return buf;
}

struct GeoMean {
  double log_sum = 0;
  int n = 0;
  void add(double a, double b) {
    if (a > 0 && b > 0) log_sum += std::log(a / b), ++n;
  }
  std::string str() const { return n ? ratio_text(std::exp(log_sum / n), 1) + " over " + std::to_string(n) : "n/a"; }
};

}  // namespace

int int8_zoo_bench(const std::vector<std::string>& models, const std::vector<int>& threads, int reps,
                   const OrtRunner& runner, const std::string& pytorch) {
  std::printf(
      "zoo_bench --int8: batch as exported, %d runs per side (3 interleaved rounds), fastest runs in ms\n  cpu: %s\n  "
      "loom target: %s\n  loom int8: power-of-two scales, %s calibration on %d normal(0, 1) inputs (or the "
      "distribution the model records), first convolution float\n",
      reps, cpu_name().c_str(), codegen::host_target_description().c_str(),
      graph::to_string(graph::QuantizeOptions().mode), kCalibrationInputs);
  std::printf("%-22s %3s %9s %9s %6s %9s %6s %9s %6s\n", "model", "thr", "loom int8", "ort qdq", "ratio", "torch i8",
              "ratio", "loom f32", "i8/f32");
  std::string ort_version = "?", torch_version = "?";
  GeoMean vs_ort, vs_torch, vs_float;
  std::vector<std::string> wrong, skipped, slower;
  for (const std::string& path : models) {
    const std::string file = path.substr(path.find_last_of('/') + 1);
    const std::string stem = file.substr(0, file.find('.'));
    std::optional<runtime::GraphExecutor> fex, iex;
    std::string qdq = "/tmp/loom_zoo_int8_" + std::to_string(::getpid()) + "_" + stem + ".onnx";
    double int8_vs_float = 0;
    std::string shapes, why;
    try {
      graph::Graph g = frontend::import_onnx(path, {});
      fex.emplace(runtime::GraphExecutor::from_model_file(graph::build(g, {}).file, path));
      frontend::CalibrationSets sets = frontend::random_calibration_sets(g, kCalibrationInputs, 0);
      graph::QuantizeResult q = graph::quantize(std::move(g), sets.calibration);
      std::string bytes = frontend::export_onnx(q.graph, q.scales);
      std::ofstream(qdq, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
      iex.emplace(runtime::GraphExecutor::from_model_file(graph::build(q.graph, {}).file, path + " (int8)"));
      shapes = set_bench_inputs(*fex, &why);
      if (!shapes.empty()) set_bench_inputs(*iex, &why);
    } catch (const Error& e) {
      why = e.what();
    }
    if (shapes.empty()) {
      std::fprintf(stderr, "zoo_bench: %s: %s (skipped)\n", file.c_str(), why.c_str());
      skipped.push_back(stem);
      std::remove(qdq.c_str());
      continue;
    }
    // The same input through all three: ONNX Runtime's output on the export against Loom's int8.
    fex->run();
    iex->run();
    NDArray y = iex->get_output(0);
    int8_vs_float = cosine(y, fex->get_output(0));
    std::string out = "/tmp/loom_zoo_int8_" + std::to_string(::getpid()) + ".f32";
    bool ort_ran = ort_ms(runner, qdq, 1, 1, shapes, &ort_version, out).median_ms > 0;
    std::vector<float> ort_y = ort_ran ? read_f32(out, size_t(y.numel())) : std::vector<float>{};
    std::remove(out.c_str());
    if (ort_y.empty()) {
      std::fprintf(stderr, "zoo_bench: %s: ONNX Runtime did not run the export %s\n", stem.c_str(), qdq.c_str());
      skipped.push_back(stem);
      continue;
    }
    const double c = cosine(y, ort_y);
    int64_t t_loom = top1(y.shape(), [&](int64_t k) { return y.get_as_double(k); });
    int64_t t_ort = top1(y.shape(), [&](int64_t k) { return double(ort_y[size_t(k)]); });
    std::printf(
        "%s: ONNX Runtime on the QDQ export vs Loom int8: cosine %.6f%s; Loom int8 vs Loom float: cosine %.4f\n",
        stem.c_str(), c,
        t_loom < 0        ? ""
        : t_loom == t_ort ? ", same top-1"
                          : ", top-1 DIFFERS",
        int8_vs_float);
    if (c < kMinCosine) wrong.push_back(stem);  // top-1 is reported: random weights' logits are near-ties
    const std::string torch_name = pytorch.empty() ? "" : pytorch_int8_name(stem);
    for (int t : threads) {
      runtime::set_num_threads(t);
      for (int i = 0; i < runtime::GraphExecutor::kSettlingRuns; ++i) iex->run(), fex->run();
      std::vector<double> li, lf, ob, tb;
      auto time_runs = [&](runtime::GraphExecutor& ex, std::vector<double>& into) {
        for (int i = 0; i < (reps + 2) / 3; ++i) {
          auto s = std::chrono::steady_clock::now();
          ex.run();
          into.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
        }
      };
      for (int round = 0; round < 3; ++round) {
        time_runs(*iex, li);
        time_runs(*fex, lf);
        Times o = ort_ms(runner, qdq, t, (reps + 2) / 3, shapes, &ort_version);
        if (o.min_ms > 0) ob.push_back(o.min_ms);
        if (!torch_name.empty()) {
          Times p = pytorch_ms(pytorch, torch_name, t, (reps + 2) / 3, &torch_version);
          if (p.min_ms > 0) tb.push_back(p.min_ms);
        }
      }
      // A baseline that never ran is a measurement missing, not a ratio left out.
      if (ob.empty()) skipped.push_back(stem + " (ONNX Runtime at " + std::to_string(t) + " threads)");
      if (!torch_name.empty() && tb.empty())
        skipped.push_back(stem + " (PyTorch int8 through " + pytorch + " at " + std::to_string(t) + " threads)");
      const double i8 = best(li), f32 = best(lf), ort = best(ob), pt = best(tb);
      std::printf("%-22s %3d %9.2f %9.2f %6s %9s %6s %9.2f %6s   (p50 loom int8 %.2f, float %.2f)\n", stem.c_str(), t,
                  i8, ort, ratio_text(i8, ort).c_str(), pt > 0 ? ratio_text(pt, 1).c_str() : "n/a",
                  ratio_text(i8, pt).c_str(), f32, ratio_text(i8, f32).c_str(), median(li), median(lf));
      vs_ort.add(i8, ort);
      vs_torch.add(i8, pt);
      vs_float.add(i8, f32);
      if (ort > 0 && i8 > ort) slower.push_back(stem + " at " + std::to_string(t) + " threads: ONNX Runtime");
      if (pt > 0 && i8 > pt) slower.push_back(stem + " at " + std::to_string(t) + " threads: PyTorch int8");
      if (i8 >= f32) slower.push_back(stem + " at " + std::to_string(t) + " threads: Loom's float model");
    }
    std::remove(qdq.c_str());
  }
  std::printf(
      "geometric means of the fastest runs (Loom int8 / other; below 1: Loom int8 is faster): ONNX Runtime %s "
      "%s, PyTorch int8 (%s) %s, Loom float %s\n",
      ort_version.c_str(), vs_ort.str().c_str(), torch_version.c_str(), vs_torch.str().c_str(), vs_float.str().c_str());
  std::printf("Loom int8 slower than: %s\n", slower.empty() ? "none" : "");
  for (const std::string& s : slower) std::printf("  %s\n", s.c_str());
  print_failed("ONNX Runtime's output on the export differs from Loom's int8 model beyond rounding", wrong);
  print_failed("not measured", skipped);
  if (!wrong.empty()) return 1;
  return skipped.empty() ? 0 : 2;
}

}  // namespace loom::bench
