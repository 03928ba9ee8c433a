// Depthwise 3x3 conv2d, MobileNetV2's ten depthwise layers (batch 1, 224x224 network input): the
// kernel compiled models run (conv2d_nchwc with groups = channels on channel-blocked activations,
// ops::schedule_depthwise_nchwc_cpu) against oneDNN at 1 and 2 threads, measured in the same
// run. oneDNN is timed twice: the convolution alone on its own blocked layout (what a network
// keeping blocked activations pays; the ratio uses this) and with reorders from/to NCHW.
//   depthwise_bench [--reps R] [--threads 1,2]
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "baselines.h"
#include "loom/codegen/llvm.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/layers.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"
#include "tensor_compare.h"

using namespace loom;

namespace {

struct Layer {
  int channels, size, stride;
};

// Loom's depthwise kernel for one layer on block-`b` activations, checked against oneDNN.
struct LoomDepthwise {
  runtime::Module mod;
  NDArray x, w, y;
  int64_t out = 0;
};

LoomDepthwise build(const Layer& l, int b, const NDArray& x_nchw, const NDArray& w_oihw, int lanes) {
  DataType f32 = DataType::Float(32);
  const int C = l.channels, H = l.size;
  ir::Tensor X = ir::placeholder({1, C / b, H, H, b}, f32, "X"), W = ir::placeholder({C / b, 3, 3, b}, f32, "W");
  ops::Conv2dParams p;
  p.pads = {1, 1, 1, 1};
  p.strides = {l.stride, l.stride};
  p.groups = C;
  p.oc_block = b;
  ir::Tensor Y = ops::conv2d_nchwc(X, W, ir::Tensor(), p, "Y");
  schedule::Schedule s({Y});
  ops::schedule_depthwise_nchwc_cpu(s, Y, Y, lanes);
  LoomDepthwise d;
  d.out = ops::const_dim(Y, 2);
  d.mod = codegen::build_llvm({schedule::lower(s, {X, W, Y}, "dw")});
  d.x = bench::to_blocked(x_nchw, b);
  d.w = NDArray::empty({C / b, 3, 3, b}, f32);
  d.y = NDArray::zeros({1, C / b, d.out, d.out, b}, f32);
  for (int c = 0; c < C; ++c)
    for (int k = 0; k < 9; ++k) d.w.data<float>()[((c / b) * 9 + k) * b + c % b] = w_oihw.data<float>()[c * 9 + k];
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20;
  std::vector<int> thread_counts = {1, 2};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--reps")
      reps = std::stoi(v);
    else if (a == "--threads")
      thread_counts = bench::parse_int_list(v);
    else {
      std::fprintf(stderr, "usage: depthwise_bench [--reps R] [--threads 1,2]\n");
      return 2;
    }
  }
  const std::vector<Layer> layers = {{32, 112, 1}, {96, 112, 2}, {144, 56, 1}, {144, 56, 2}, {192, 28, 1},
                                     {192, 28, 2}, {384, 14, 1}, {576, 14, 1}, {576, 14, 2}, {960, 7, 1}};
  codegen::TargetInfo target = codegen::target_info();
  const int lanes = target.float32_lanes();
  std::printf("depthwise 3x3 conv2d, pad 1, MobileNetV2's layers, batch 1, fp32, best of %d\n", reps);
  std::printf("  loom target: %s\n  %s\n", codegen::host_target_description().c_str(),
              bench::onednn_description().c_str());
  std::printf("\n%-16s %7s %10s %12s %12s %12s\n", "layer", "threads", "loom GF/s", "onednn", "onednn+nchw",
              "loom/onednn");
  double sum_loom[2] = {0, 0}, sum_dnn[2] = {0, 0};
  for (const Layer& l : layers) {
    const int b = l.channels % lanes == 0 ? lanes : 8;
    DataType f32 = DataType::Float(32);
    NDArray x = NDArray::empty({1, l.channels, l.size, l.size}, f32), w = NDArray::empty({l.channels, 1, 3, 3}, f32);
    x.fill_random(1);
    w.fill_random(2);
    LoomDepthwise d = build(l, b, x, w, lanes);
    bench::OneDnnConv2d check(1, l.channels, l.size, l.size, l.channels, 3, 1, l.stride, w.data<float>(), l.channels);
    NDArray ref = NDArray::zeros({1, l.channels, d.out, d.out}, f32);
    check.run(x.data<float>(), ref.data<float>());
    d.mod.call("dw", {d.x, d.w, d.y});
    double err = bench::max_relative_error(bench::from_blocked(d.y), ref);
    if (err > 1e-5) {
      std::printf("FAILED: loom differs from oneDNN on %d channels at %d, stride %d (max relative error %.2e)\n",
                  l.channels, l.size, l.stride, err);
      return 1;
    }
    runtime::CompiledFn fn = d.mod.get_function("dw");
    void* args[3] = {d.x.raw_data(), d.w.raw_data(), d.y.raw_data()};
    char name[64];
    std::snprintf(name, sizeof name, "%dx%d s%d", l.channels, l.size, l.stride);
    for (size_t t = 0; t < thread_counts.size(); ++t) {
      int threads = thread_counts[t];
      runtime::set_num_threads(threads);
      bench::onednn_set_threads(threads);
      bench::OneDnnConv2d dnn(1, l.channels, l.size, l.size, l.channels, 3, 1, l.stride, w.data<float>(), l.channels);
      dnn.run(x.data<float>(), ref.data<float>());
      std::vector<double> best = bench::time_best_interleaved(
          reps, {[&] { fn(args); }, [&] { dnn.run_native(); }, [&] { dnn.run(x.data<float>(), ref.data<float>()); }});
      double t_loom = best[0], t_native = best[1], t_nchw = best[2];
      double g = bench::gflops(dnn.flops(), t_loom), gn = bench::gflops(dnn.flops(), t_native),
             gc = bench::gflops(dnn.flops(), t_nchw);
      std::printf("%-16s %7d %10.1f %12.1f %12.1f %12.2f\n", name, threads, g, gn, gc, g / gn);
      if (t < 2) sum_loom[t] += t_loom, sum_dnn[t] += t_native;
      std::fflush(stdout);
    }
  }
  for (size_t t = 0; t < thread_counts.size() && t < 2; ++t)
    std::printf("all layers, %d thread(s): loom %.3f ms, oneDNN %.3f ms, loom/oneDNN speed %.2f\n", thread_counts[t],
                sum_loom[t] * 1e3, sum_dnn[t] * 1e3, sum_dnn[t] / sum_loom[t]);
  return 0;
}
