// One compiled model for every length against one compiled model per length: an ONNX model with a
// named dimension (`seq`) compiled once with it as a shape variable, and once per length with it
// fixed; at each length, the outputs are compared and the median latencies printed with their
// ratio (goal: within 10%, docs/dynamic_shapes.md).
//
//   dynamic_shapes_bench MODEL.onnx [--var seq=1..512] [--lengths 16,128,512] [--reps 20] [--threads N]
//                        [--profile: time per kind of kernel, both models]
//
// scripts/export_zoo_models.py OUTDIR --only bert_encoder_seq writes the BERT-base-width encoder
// with a dynamic sequence axis.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "bench_util.h"
#include "loom/frontend/onnx.h"
#include "loom/graph/build.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/thread_pool.h"

using namespace loom;

namespace {

// Median milliseconds of each executor's runs, alternated run by run so that both see the same
// machine (a shared VM's speed drifts).
std::pair<double, double> median_ms(runtime::GraphExecutor& a, runtime::GraphExecutor& b, int reps) {
  a.run();  // warm
  b.run();
  std::vector<double> ta, tb;
  auto time = [](runtime::GraphExecutor& ex) {
    auto t0 = std::chrono::steady_clock::now();
    ex.run();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int r = 0; r < reps; ++r) {
    ta.push_back(time(a));
    tb.push_back(time(b));
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

// Seconds per operator kind (the kernels' node names' ops joined), summed over a profiled run.
std::map<std::string, double> by_kernel(runtime::GraphExecutor& ex) {
  std::vector<double> t = ex.run_profiled();
  std::map<std::string, double> sum;
  for (size_t k = 0; k < t.size(); ++k) {
    std::string f = ex.kernels()[k].func;
    f = f.substr(f.find('_') + 1);  // the ops, without the kernel's number
    sum[f] += t[k];
  }
  return sum;
}

runtime::GraphExecutor compiled(const graph::Graph& g) {
  return runtime::GraphExecutor::from_model_file(graph::build(g).file, g.name);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, var = "seq=1..512", lengths_text = "16,128,512";
  int reps = 20, threads = 0;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--var" && i + 1 < argc)
      var = argv[++i];
    else if (a == "--lengths" && i + 1 < argc)
      lengths_text = argv[++i];
    else if (a == "--reps" && i + 1 < argc)
      reps = bench::count_option(argv[++i], "--reps", 100000);
    else if (a == "--threads" && i + 1 < argc)
      threads = bench::count_option(argv[++i], "--threads", 1024);
    else if (a == "--profile")
      profile = true;
    else if (model.empty() && a[0] != '-')
      model = a;
    else {
      std::fprintf(stderr,
                   "usage: dynamic_shapes_bench MODEL.onnx [--var seq=1..512] [--lengths 16,128,512] "
                   "[--reps 20] [--threads N] [--profile]\n");
      return 2;
    }
  }
  if (model.empty()) {
    std::fprintf(stderr, "dynamic_shapes_bench: give an ONNX model with a named dimension\n");
    return 2;
  }
  if (threads) runtime::set_num_threads(threads);
  auto eq = var.find('='), dots = var.find("..");
  if (eq == std::string::npos || dots == std::string::npos) {
    std::fprintf(stderr, "dynamic_shapes_bench: --var must be NAME=MIN..MAX\n");
    return 2;
  }
  graph::ShapeVar sv{var.substr(0, eq), std::stoll(var.substr(eq + 1, dots - eq - 1)),
                     std::stoll(var.substr(dots + 2))};
  try {
    frontend::OnnxImportOptions dyn;
    dyn.shape_vars = {sv};
    auto t0 = std::chrono::steady_clock::now();
    graph::Graph g = frontend::import_onnx(model, dyn);
    runtime::GraphExecutor symbolic = compiled(g);
    double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const runtime::ArgSpec& in = symbolic.input_spec(0);
    std::printf("dynamic_shapes_bench: %s, %s in [%lld, %lld], input %s; %s, %d thread(s), %d reps\n", model.c_str(),
                sv.name.c_str(), (long long)sv.min, (long long)sv.max, in.str().c_str(), bench::cpu_name().c_str(),
                runtime::num_threads(), reps);
    std::printf("compiled once in %.2f s\n", compile_s);
    std::printf("%8s %14s %14s %8s %12s\n", sv.name.c_str(), "one file (ms)", "per length", "ratio", "max |diff|");
    for (const std::string& text : bench::split_list(lengths_text)) {
      int64_t len = std::stoll(text);
      std::vector<int64_t> shape = runtime::eval_shape(in.dims, {{sv.name, len}});
      NDArray x = NDArray::empty(shape, in.dtype);
      x.fill_random(uint64_t(len), -1, 1);
      frontend::OnnxImportOptions fixed;
      fixed.input_shapes[in.name] = shape;
      runtime::GraphExecutor per_length = compiled(frontend::import_onnx(model, fixed));
      symbolic.set_input(0, x);
      per_length.set_input(0, x);
      auto [a, b] = median_ms(symbolic, per_length, reps);
      NDArray ya = symbolic.get_output(0), yb = per_length.get_output(0);
      double diff = 0, scale = 0;
      for (int64_t i = 0; i < yb.numel(); ++i) {
        diff = std::max(diff, std::fabs(ya.get_as_double(i) - yb.get_as_double(i)));
        scale = std::max(scale, std::fabs(yb.get_as_double(i)));
      }
      if (ya.shape() != yb.shape() || diff > 1e-4 * scale) {
        std::printf("%8lld: outputs differ (max |diff| %.3g of %.3g)\n", (long long)len, diff, scale);
        return 1;
      }
      std::printf("%8lld %14.3f %14.3f %8.2f %12.2g\n", (long long)len, a, b, a / b, diff);
      if (profile) {
        std::map<std::string, double> pa = by_kernel(symbolic), pb = by_kernel(per_length);
        for (auto& [f, sec] : pa)
          std::printf("    %-48s %10.3f ms %10.3f ms\n", f.c_str(), sec * 1e3, pb.count(f) ? pb[f] * 1e3 : 0.0);
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "dynamic_shapes_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
