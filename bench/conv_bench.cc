// fp32 conv2d NCHW 1x64x56x56, 64 output channels, 3x3, pad 1 (default): Loom's scheduled operator
// (ops::schedule_conv2d_nchw_cpu) vs oneDNN at 1 and 2 threads, NCHW in and out for both; and the
// kernel compiled models run (conv2d on NCHW8c activations with pre-packed weights,
// ops::schedule_conv2d_nchwc_cpu) on the same data, against the same oneDNN time; and the Winograd
// kernels F(2x2, 3x3) and F(4x4, 3x3) on those blocked activations, against the NCHWc kernel.
//   conv_bench [--size HW] [--channels C] [--reps R] [--threads 1,2] [--oc-block 16] [--x-block N]
//              [--asm FILE] [--window-outer 0|1] [--winograd 2,4] [--winograd-rows R]
// --asm writes the kernel's assembly, to see what a register tile compiles to (FILE.winogradM for
// the Winograd kernels); --winograd-rows: schedule_conv2d_winograd_cpu's fused_rows (0: unfused).
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "baselines.h"
#include "bench_util.h"
#include "loom/codegen/llvm.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/layers.h"
#include "loom/ops/nn.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"
#include "tensor_compare.h"

using namespace loom;

int main(int argc, char** argv) {
  int hw = 56, reps = 10, channels = 64, oc_block = 0, x_block = 0;
  std::vector<int> thread_counts = {1, 2};
  std::vector<int> winograd_tiles = {2, 4};
  int winograd_rows = -1;  // schedule_conv2d_winograd_cpu's fused_rows
  std::string asm_path;
  int window_outer = -1;
  try {
    for (int i = 1; i + 1 < argc; i += 2) {
      std::string a = argv[i], v = argv[i + 1];
      if (a == "--size")
        hw = bench::count_option(v, "--size", 4096);
      else if (a == "--oc-block")
        oc_block = v == "0" ? 0 : bench::count_option(v, "--oc-block", 4096);  // 0: the chosen tiling
      else if (a == "--x-block")
        x_block = v == "0" ? 0 : bench::count_option(v, "--x-block", 4096);
      else if (a == "--reps")
        reps = bench::count_option(v, "--reps", 100000);
      else if (a == "--asm")
        asm_path = v;
      else if (a == "--window-outer")
        window_outer = v == "1" ? 1 : 0;
      else if (a == "--threads")
        thread_counts = bench::parse_int_list(v);
      else if (a == "--channels")
        channels = bench::count_option(v, "--channels", 4096);
      else if (a == "--winograd") {
        winograd_tiles.clear();
        for (const std::string& t : bench::split_list(v))
          winograd_tiles.push_back(bench::count_option(t, "--winograd", 4));
      } else if (a == "--winograd-rows")
        winograd_rows = v == "0" ? 0 : bench::count_option(v, "--winograd-rows", 64);
      else {
        std::fprintf(
            stderr,
            "usage: conv_bench [--size HW] [--channels C] [--reps R] [--threads 1,2] [--oc-block 16] [--x-block N] "
            "[--asm FILE] [--window-outer 0|1] [--winograd 2,4] "
            "[--winograd-rows R]\n");
        return 2;
      }
    }
    // The blocked kernels take whole blocks of 8 channels; Winograd has tiles of 2 and 4.
    if (channels % 8) throw std::invalid_argument("--channels: " + std::to_string(channels) + " is no multiple of 8");
    if (oc_block && channels % oc_block)
      throw std::invalid_argument("--oc-block: " + std::to_string(oc_block) + " does not divide the " +
                                  std::to_string(channels) + " channels");
    for (int m : winograd_tiles)
      if (m != 2 && m != 4) throw std::invalid_argument("--winograd: tiles of " + std::to_string(m) + " (2 or 4)");
  } catch (const std::invalid_argument& e) {  // a count that is not one, an unsupported value
    std::fprintf(stderr, "conv_bench: %s\n", e.what());
    return 2;
  }
  // The register tile for the host's vectors unless --oc-block/--x-block override it.
  codegen::TargetInfo target = codegen::target_info();
  ops::ConvNchwTiling chosen = ops::conv_nchw_tiling_for(target.float32_lanes(), target.vector_registers, channels, hw);
  if (oc_block <= 0) oc_block = chosen.oc_block;
  if (x_block <= 0) x_block = chosen.x_block;
  if (window_outer < 0) window_outer = chosen.window_outer ? 1 : 0;
  std::printf("  loom kernel: schedule_conv2d_nchw_cpu, register tile %d output channels x %d columns, window %s\n",
              oc_block, x_block, window_outer ? "outer" : "inner");
  DataType f32 = DataType::Float(32);
  ir::Tensor X = ir::placeholder({1, channels, hw, hw}, f32, "X"),
             W = ir::placeholder({channels, channels, 3, 3}, f32, "W");
  ir::Tensor Y = ops::conv2d_nchw_packed(X, W, 1, 1, oc_block, "Y");
  schedule::Schedule s({Y});
  ops::schedule_conv2d_nchw_cpu(s, Y,
                                ops::ConvNchwTiling{oc_block, x_block, window_outer == 1, channels / oc_block < 8});
  ir::LoweredFunc fn = schedule::lower(s, {X, W, Y}, "conv2d");
  if (!asm_path.empty()) std::ofstream(asm_path) << codegen::emit_assembly({fn});
  runtime::Module mod = codegen::build_llvm({fn});

  NDArray x = NDArray::empty({1, channels, hw, hw}, f32), w = NDArray::empty({channels, channels, 3, 3}, f32),
          y = NDArray::zeros({1, channels, hw, hw}, f32), ref = NDArray::zeros({1, channels, hw, hw}, f32);
  x.fill_random(1);
  w.fill_random(2);
  bench::OneDnnConv2d onednn(1, channels, hw, hw, channels, 3, 1, 1, w.data<float>());
  std::printf("fp32 conv2d NCHW 1x%dx%dx%d -> %d channels, 3x3, pad 1, best of %d\n", channels, hw, hw, channels, reps);
  std::printf("  loom target: %s\n  %s\n", codegen::host_target_description().c_str(),
              bench::onednn_description().c_str());

  mod.call("conv2d", {x, w, y});
  onednn.run(x.data<float>(), ref.data<float>());
  double err = bench::max_relative_error(y, ref);
  std::printf("  max relative error vs oneDNN: %.2e\n", err);
  if (err > 1e-4) {
    std::printf("FAILED: loom result differs from oneDNN\n");
    return 1;
  }

  // The model path: activations in NCHW{b}c, weights packed [O/b, C/b, 3, 3, b, b] ahead of time
  // (graph pass alter_layout), so neither is timed, as in a compiled model. b is the block
  // alter_layout picks: the target's float lanes (16 with AVX-512, 8 with AVX2).
  const int b = channels % target.float32_lanes() == 0 ? target.float32_lanes() : 8;
  ir::Tensor Xc = ir::placeholder({1, channels / b, hw, hw, b}, f32, "Xc");
  ir::Tensor Wc = ir::placeholder({channels / b, channels / b, 3, 3, b, b}, f32, "Wc");
  ops::Conv2dParams cp;
  cp.pads = {1, 1, 1, 1};
  cp.oc_block = b;
  ir::Tensor Yc = ops::conv2d_nchwc(Xc, Wc, ir::Tensor(), cp, "Yc");
  schedule::Schedule sc({Yc});
  ops::schedule_conv2d_nchwc_cpu(sc, Yc, Yc, target.float32_lanes(), target.vector_registers);
  ops::NchwcConvTile ct = ops::nchwc_conv_tile(target.float32_lanes(), target.vector_registers, channels / b, b, hw);
  std::printf("  loom model kernel: schedule_conv2d_nchwc_cpu, %d blocks of %d channels x %d columns\n",
              ct.channel_blocks, b, ct.x_block);
  runtime::Module modc = codegen::build_llvm({schedule::lower(sc, {Xc, Wc, Yc}, "conv2d_nchwc")});
  NDArray xc = bench::to_blocked(x, b), wc = NDArray::empty({channels / b, channels / b, 3, 3, b, b}, f32),
          yc = NDArray::zeros({1, channels / b, hw, hw, b}, f32);
  for (int o = 0; o < channels; ++o)
    for (int c = 0; c < channels; ++c)
      for (int k = 0; k < 9; ++k)
        wc.data<float>()[((((o / b) * (channels / b) + c / b) * 9 + k) * b + c % b) * b + o % b] =
            w.data<float>()[(o * channels + c) * 9 + k];
  modc.call("conv2d_nchwc", {xc, wc, yc});
  double err_c = bench::max_relative_error(bench::from_blocked(yc), ref);
  std::printf("  max relative error of the model kernel vs oneDNN: %.2e\n", err_c);
  if (err_c > 1e-4) {
    std::printf("FAILED: loom's NCHWc result differs from oneDNN\n");
    return 1;
  }

  // Winograd F(m x m, 3 x 3) on the same blocked activations, weights transformed ahead of time
  // (graph pass winograd_conv), the model path's other kernel for these layers.
  std::vector<runtime::Module> wino_mods;
  std::vector<NDArray> wino_weights, wino_outs;
  for (int m : winograd_tiles) {
    int a = ops::winograd_alpha(m);
    ir::Tensor Uw = ir::placeholder({a * a, channels / b, channels / b, b, b}, f32, "U");
    ir::Tensor Yw = ops::conv2d_winograd_nchwc(Xc, Uw, ir::Tensor(), cp, m, "Yw");
    schedule::Schedule sw({Yw});
    ops::schedule_conv2d_winograd_cpu(sw, Yw, target.float32_lanes(), target.vector_registers, std::nullopt,
                                      winograd_rows);
    ir::LoweredFunc wfn = schedule::lower(sw, {Xc, Uw, Yw}, "conv2d_winograd");
    if (!asm_path.empty()) std::ofstream(asm_path + ".winograd" + std::to_string(m)) << codegen::emit_assembly({wfn});
    wino_mods.push_back(codegen::build_llvm({wfn}));
    wino_weights.push_back(ops::pack_winograd_weights(w, m, b, b));
    wino_outs.push_back(NDArray::zeros({1, channels / b, hw, hw, b}, f32));
    wino_mods.back().call("conv2d_winograd", {xc, wino_weights.back(), wino_outs.back()});
    double err_w = bench::max_relative_error(bench::from_blocked(wino_outs.back()), ref);
    std::printf("  winograd F(%dx%d, 3x3): max relative error vs oneDNN %.2e\n", m, m, err_w);
    if (err_w > (m == 2 ? 1e-4 : 1e-3)) {
      std::printf("FAILED: loom's Winograd result differs from oneDNN\n");
      return 1;
    }
  }

  runtime::CompiledFn conv = mod.get_function("conv2d"), conv_c = modc.get_function("conv2d_nchwc");
  std::vector<runtime::CompiledFn> wino_fns;
  std::vector<std::array<void*, 3>> wino_args;
  for (size_t i = 0; i < wino_mods.size(); ++i) {
    wino_fns.push_back(wino_mods[i].get_function("conv2d_winograd"));
    wino_args.push_back({xc.raw_data(), wino_weights[i].raw_data(), wino_outs[i].raw_data()});
  }
  void* args[3] = {x.raw_data(), w.raw_data(), y.raw_data()};
  void* args_c[3] = {xc.raw_data(), wc.raw_data(), yc.raw_data()};
  std::printf("\n%-8s %10s %10s %12s %12s %14s", "threads", "loom GF/s", "onednn", "loom/onednn", "nchwc GF/s",
              "nchwc/onednn");
  for (int m : winograd_tiles) std::printf("   F(%d) GF/s  F(%d)/nchwc", m, m);
  std::printf("\n");
  for (int threads : thread_counts) {
    runtime::set_num_threads(threads);
    bench::onednn_set_threads(threads);
    // oneDNN's convolution fixes its thread count when the primitive is created: make a new one.
    bench::OneDnnConv2d onednn(1, channels, hw, hw, channels, 3, 1, 1, w.data<float>());
    std::vector<std::function<void()>> kernels = {
        [&] { conv(args); }, [&] { onednn.run(x.data<float>(), ref.data<float>()); }, [&] { conv_c(args_c); }};
    for (size_t i = 0; i < wino_mods.size(); ++i) kernels.push_back([&, i] { wino_fns[i](wino_args[i].data()); });
    std::vector<double> best = bench::time_best_interleaved(reps, kernels);
    double t_loom = best[0], t_dnn = best[1], t_c = best[2];
    double g_loom = bench::gflops(onednn.flops(), t_loom), g_dnn = bench::gflops(onednn.flops(), t_dnn),
           g_c = bench::gflops(onednn.flops(), t_c);
    std::printf("%-8d %10.1f %10.1f %12.2f %12.1f %14.2f", threads, g_loom, g_dnn, g_loom / g_dnn, g_c, g_c / g_dnn);
    for (size_t i = 0; i < wino_mods.size(); ++i)
      std::printf("   %10.1f %11.2f", bench::gflops(onednn.flops(), best[3 + i]), t_c / best[3 + i]);
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
