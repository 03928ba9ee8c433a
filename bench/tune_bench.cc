// Auto-tuning on ResNet-18's convolutions (batch 1, 224x224, fp32 NCHW): for every distinct conv
// layer, `loom tune`'s search (tune/, cost-model guided) within a per-layer trial count and time
// budget, then the default schedule, the tuned one and oneDNN timed in the same run at the
// current thread count. Prints per-layer GFLOP/s and ratios, the FLOP-weighted totals and the
// whole tuning wall time.
//   tune_bench [--trials 24] [--budget 30] [--reps 10] [--threads N] [--layers c2,c5] [--log F] [--layout nchw|nchwc]
// --layout nchwc tunes the kernel compiled models run (channel-blocked activations, packed
// weights; c1's 3 input channels have no block and are skipped) and times oneDNN on its own
// blocked layout without reorders, as a network that keeps blocked activations runs it.
// --accel CONFIG (default, 1x32x32, batch2 or a config file) tunes the int8 layers on the
// accelerator instead, measured in cycles of the RTL simulation: default vs tuned cycles per
// layer and for the whole network (each layer times its repeats), the tuned kernels' output
// checked bit for bit against the functional simulator's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "baselines.h"
#include "loom/codegen/accel.h"
#include "loom/codegen/llvm.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/thread_pool.h"
#include "loom/tune/tuner.h"
#include "tensor_compare.h"

using namespace loom;

namespace {

// Packed weights [O/b, C/b, k, k, b, b] back to OIHW.
NDArray unpack_weights(const NDArray& w) {
  const auto& s = w.shape();
  int64_t ob = s[0], ib = s[1], kk = s[2] * s[3], bi = s[4], bo = s[5];
  NDArray out = NDArray::empty({ob * bo, ib * bi, s[2], s[3]}, DataType::Float(32));
  for (int64_t i = 0; i < ob * ib * kk * bi * bo; ++i) {
    int64_t o = i % bo, c = i / bo % bi, k = i / bo / bi % kk, cbk = i / bo / bi / kk % ib, obk = i / bo / bi / kk / ib;
    out.data<float>()[((obk * bo + o) * (ib * bi) + cbk * bi + c) * kk + k] = w.data<float>()[i];
  }
  return out;
}

struct Layer {
  const char* name;
  tune::Conv2dShape shape;
};

// in_channels, height, out_channels, kernel, stride, pad
Layer layer(const char* name, int64_t c, int64_t hw, int64_t o, int64_t k, int64_t s, int64_t p) {
  tune::Conv2dShape sh;
  sh.in_channels = c, sh.height = sh.width = hw, sh.out_channels = o, sh.kernel = k, sh.stride = s, sh.pad = p;
  return {name, sh};
}

// `only` is ",c2,c5," (--layers) or empty: every layer. (Appending, not "," + name + ",": GCC 12
// warned -Wrestrict on that concatenation, a false positive.)
bool selected(const std::string& only, const char* name) {
  std::string key = ",";
  key.append(name).append(",");
  return only.empty() || only.find(key) != std::string::npos;
}

// How often ResNet-18 runs each layer (c2..c11; c1 has 3 input channels, no whole block).
int repeats(const std::string& name) {
  return name == "c2" ? 4 : name == "c5" || name == "c8" || name == "c11" ? 3 : 1;
}

int accel_bench(const std::vector<Layer>& layers, const std::string& only, const std::string& config,
                const tune::TuneOptions& o, const std::string& log) {
  accel::AccelConfig cfg = std::filesystem::exists(config)
                               ? accel::AccelConfig::load(config)
                               : accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + config + ".json");
  const double peak = double(cfg.batch) * cfg.block_in * cfg.block_out;
  std::printf(
      "ResNet-18 int8 conv layers on the accelerator (config '%s', %.0f MACs/cycle), RTL cycles, up to %d trials / "
      "%.0f s per layer, %s\n\n",
      cfg.name.c_str(), peak, o.trials, o.budget_seconds,
      tune::cost_model_available() ? "cost model: XGBoost" : "random search (no XGBoost)");
  std::printf("%-5s %-22s %7s %10s %10s %8s %7s %7s %8s\n", "layer", "shape", "trials", "default", "tuned", "default/",
              "util%", "util%", "tune s");
  std::printf("%-5s %-22s %7s %10s %10s %8s %7s %7s %8s\n", "", "", "", "cycles", "cycles", "tuned", "default", "tuned",
              "");
  double total_def = 0, total_tuned = 0, total_tune = 0;
  for (const Layer& L : layers) {
    if (!selected(only, L.name)) continue;
    const tune::Conv2dShape& s = L.shape;
    if (s.in_channels % cfg.block_in || s.out_channels % cfg.block_out) continue;  // c1
    const tune::Conv2dShape& a = s;
    auto t = tune::make_accel_conv2d_template(a, cfg, "rtl");
    tune::TuneResult r = tune::tune(*t, o);
    total_tune += r.wall_seconds;
    if (!log.empty()) tune::append_to_log(log, *t, tune::accel_target_key(cfg, "rtl"), r);
    // The tuned kernel on the functional simulator: the RTL's output must be the same bits.
    const tune::Config& c = r.best.config;
    ops::AccelOperator op = tune::accel_conv2d_operator(a, cfg, c);
    std::vector<NDArray> args = op.random_args(o.seed);
    codegen::build_accel(op.func, cfg).run(*make_accel_device("fsim", cfg.to_json()), args);
    NDArray rtl = t->simulate(c, o.seed).output;
    if (std::memcmp(rtl.raw_data(), args.back().raw_data(), size_t(rtl.nbytes())) != 0) {
      std::printf("FAILED: %s tuned kernel on the RTL differs from the functional simulator\n", L.name);
      return 1;
    }
    double macs = t->flops() / 2;
    int rep = repeats(L.name);
    total_def += double(r.default_trial.cycles) * rep, total_tuned += double(r.best.cycles) * rep;
    std::ostringstream shape;
    shape << s.in_channels << "->" << s.out_channels << " " << s.height << "x" << s.width << " " << s.kernel << "x"
          << s.kernel << " s" << s.stride;
    std::printf("%-5s %-22s %7zu %10llu %10llu %8.3f %7.1f %7.1f %8.1f   %s\n", L.name, shape.str().c_str(),
                r.trials.size(), (unsigned long long)r.default_trial.cycles, (unsigned long long)r.best.cycles,
                double(r.default_trial.cycles) / double(r.best.cycles),
                100 * macs / (peak * double(r.default_trial.cycles)), 100 * macs / (peak * double(r.best.cycles)),
                r.wall_seconds, tune::config_str(c).c_str());
    std::fflush(stdout);
  }
  std::printf(
      "\nResNet-18 convs (each layer times its repeats): default %.3f M cycles, tuned %.3f M cycles, default/tuned "
      "%.3fx\n",
      total_def / 1e6, total_tuned / 1e6, total_def / total_tuned);
  std::printf("tuning wall time: %.1f s for all layers\n", total_tune);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tune::TuneOptions o;
  o.trials = 24;
  o.budget_seconds = 30;
  int reps = 10, threads = 0;
  std::string only, log, layout = "nchw", accel_config;
  for (int i = 1; i < argc; i += 2) {
    // Every option takes a value: a lone one (e.g. --help) prints the usage instead of benching.
    std::string a = argv[i], v = i + 1 < argc ? argv[i + 1] : "";
    if (v.empty()) a = "";
    if (a == "--trials")
      o.trials = std::stoi(v);
    else if (a == "--budget")
      o.budget_seconds = std::stod(v);
    else if (a == "--reps")
      reps = std::stoi(v);
    else if (a == "--threads")
      threads = std::stoi(v);
    else if (a == "--layers")
      only = "," + v + ",";
    else if (a == "--log")
      log = v;
    else if (a == "--layout" && (v == "nchw" || v == "nchwc"))
      layout = v;
    else if (a == "--accel")
      accel_config = v;
    else {
      std::fprintf(stderr,
                   "usage: tune_bench [--trials 24] [--budget 30] [--reps 10] [--threads N] [--layers c2,c5] [--log F] "
                   "[--layout nchw|nchwc]"
                   " [--accel default|1x32x32|batch2|config.json]\n");
      return 2;
    }
  }
  std::vector<Layer> layers = {
      layer("c1", 3, 224, 64, 7, 2, 3),    layer("c2", 64, 56, 64, 3, 1, 1),   layer("c3", 64, 56, 128, 3, 2, 1),
      layer("c4", 64, 56, 128, 1, 2, 0),   layer("c5", 128, 28, 128, 3, 1, 1), layer("c6", 128, 28, 256, 3, 2, 1),
      layer("c7", 128, 28, 256, 1, 2, 0),  layer("c8", 256, 14, 256, 3, 1, 1), layer("c9", 256, 14, 512, 3, 2, 1),
      layer("c10", 256, 14, 512, 1, 2, 0), layer("c11", 512, 7, 512, 3, 1, 1),
  };
  // A name in --layers that is no layer (a typo) would time nothing and print NaN ratios.
  for (size_t at = 1; at < only.size(); at = only.find(',', at) + 1) {
    std::string name = only.substr(at, only.find(',', at) - at);
    if (std::none_of(layers.begin(), layers.end(), [&](const Layer& L) { return name == L.name; })) {
      std::fprintf(stderr, "tune_bench: --layers names '%s', which is not a layer (c1 ... c11)\n", name.c_str());
      return 2;
    }
  }
  if (!accel_config.empty()) try {
      return accel_bench(layers, only, accel_config, o, log);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tune_bench: %s\n", e.what());
      return 2;
    }
  if (threads > 0) runtime::set_num_threads(threads);
  threads = runtime::num_threads();
  bench::onednn_set_threads(threads);
  codegen::TargetInfo target = codegen::target_info();
  const bool blocked = layout == "nchwc";
  const int64_t block = target.float32_lanes();
  std::printf("ResNet-18 conv layers (batch 1, 224x224, fp32 %s), %d threads, up to %d trials / %.0f s per layer, %s\n",
              blocked ? "NCHWc, the model kernels; oneDNN on its blocked layout" : "NCHW", threads, o.trials,
              o.budget_seconds, tune::cost_model_available() ? "cost model: XGBoost" : "random search (no XGBoost)");
  std::printf("  loom target: %s\n  %s\n\n", codegen::host_target_description().c_str(),
              bench::onednn_description().c_str());
  std::printf("%-5s %-22s %7s %9s %9s %9s %8s %8s %8s\n", "layer", "shape", "trials", "default", "tuned", "onednn",
              "tuned/", "tuned/", "tune s");
  std::printf("%-5s %-22s %7s %9s %9s %9s %8s %8s %8s\n", "", "", "", "GF/s", "GF/s", "GF/s", "default", "onednn", "");
  double total_tune = 0, t_def = 0, t_tuned = 0, t_dnn = 0;
  for (const Layer& L : layers) {
    if (!selected(only, L.name)) continue;
    if (blocked && L.shape.in_channels % block != 0) continue;  // c1: models keep it unblocked
    auto t = blocked ? tune::make_conv2d_nchwc_template(L.shape, block, target)
                     : tune::make_conv2d_template(L.shape, target);
    tune::TuneResult r = tune::tune(*t, o);
    total_tune += r.wall_seconds;
    if (!log.empty()) tune::append_to_log(log, *t, tune::target_key(target, threads), r);
    // The three kernels timed with the same method, in interleaved rounds (best of reps).
    std::vector<NDArray> args = t->arguments(7);
    std::vector<void*> ptrs;
    for (auto& a : args) ptrs.push_back(a.raw_data());
    runtime::Module md = t->build(r.default_trial.config), mt = t->build(r.best.config);
    runtime::CompiledFn fd = md.get_function("kernel"), ft = mt.get_function("kernel");
    const tune::Conv2dShape& s = L.shape;
    NDArray x = blocked ? bench::from_blocked(args[0]) : args[0], w = blocked ? unpack_weights(args[1]) : args[1];
    bench::OneDnnConv2d dnn(s.batch, s.in_channels, s.height, s.width, s.out_channels, s.kernel, s.pad, s.stride,
                            w.data<float>());
    NDArray ref = NDArray::zeros({s.batch, s.out_channels, s.out_height(), s.out_width()}, DataType::Float(32));
    dnn.run(x.data<float>(), ref.data<float>());
    ft(ptrs.data());
    NDArray got = blocked ? bench::from_blocked(args[2]) : args[2];
    double err = bench::max_relative_error(got, ref);
    if (err > 1e-4) {
      std::printf("FAILED: %s tuned result differs from oneDNN (relative error %.2e)\n", L.name, err);
      return 1;
    }
    std::vector<double> best = bench::time_best_interleaved(reps, {[&] { fd(ptrs.data()); }, [&] { ft(ptrs.data()); },
                                                                   [&] {
                                                                     if (blocked)
                                                                       dnn.run_native();
                                                                     else
                                                                       dnn.run(x.data<float>(), ref.data<float>());
                                                                   }});
    double sd = best[0], st = best[1], sn = best[2];
    // The tuner kept the default: the two columns timed one kernel twice, so any difference
    // between them is the machine's noise. Report both as the better of the two samples.
    if (r.best.config == r.default_trial.config) sd = st = std::min(sd, st);
    t_def += sd, t_tuned += st, t_dnn += sn;
    double f = t->flops();
    std::ostringstream shape;
    shape << s.in_channels << "->" << s.out_channels << " " << s.height << "x" << s.width << " " << s.kernel << "x"
          << s.kernel << " s" << s.stride;
    std::printf("%-5s %-22s %7zu %9.1f %9.1f %9.1f %8.2f %8.2f %8.1f   %s\n", L.name, shape.str().c_str(),
                r.trials.size(), bench::gflops(f, sd), bench::gflops(f, st), bench::gflops(f, sn), sd / st, sn / st,
                r.wall_seconds, tune::config_str(r.best.config).c_str());
    std::fflush(stdout);
  }
  std::printf(
      "\nall layers once: default %.3f ms, tuned %.3f ms, oneDNN %.3f ms; tuned/default %.2fx, tuned/oneDNN %.2fx\n",
      t_def * 1e3, t_tuned * 1e3, t_dnn * 1e3, t_def / t_tuned, t_dnn / t_tuned);
  std::printf("tuning wall time: %.1f s for all layers (%d threads)\n", total_tune, threads);
  return 0;
}
