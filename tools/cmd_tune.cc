// `loom tune`: searches the schedule knobs of an operator on this machine (tune/): measured runs
// guided by a learned cost model, within a trial count and a time budget; the best configuration
// goes to a tuning log (JSON lines; tune::best_from_log reads it back, `loom compile --tuning-log`
// uses it). `loom tune model NAME` tunes every distinct blocked conv2d kernel of a model.
#ifdef LOOM_HAVE_TUNE
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "cli.h"
#include "command.h"
#include "loom/codegen/llvm.h"
#include "loom/runtime/error.h"
#include "loom/runtime/thread_pool.h"
#include "loom/tune/apply_log.h"
#include "loom/tune/tuner.h"
#ifdef LOOM_HAVE_GRAPH
#include "loom/frontend/load.h"
#include "loom/graph/builtin_models.h"
#endif

namespace loom::tools {

namespace {

// Tunes one template, prints the outcome and appends it to `log` (if set).
// `key`: the target the measurement holds for (tune::target_key, tune::accel_target_key).
tune::TuneResult tune_one(const tune::Template& t, tune::TuneOptions o, const std::string& log, bool quiet,
                          const std::string& key) {
  const bool cycles = t.measure() == tune::Measure::Cycles;
  // What a trial is reported as: GFLOP/s on the CPU, simulated cycles on the accelerator.
  auto score = [&](const tune::Trial& tr) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(1);
    if (cycles)
      s << tr.cycles << " cycles";
    else
      s << tr.gflops << " GF/s";
    return s.str();
  };
  std::vector<tune::Config> space = t.space();
  std::cout << "tuning " << t.op() << " " << shape_str(t.shape()) << " on " << key << ": " << space.size()
            << " configurations, up to " << o.trials << " trials in " << o.budget_seconds << " s, "
            << (o.use_model && tune::cost_model_available() ? "cost model: gradient-boosted trees (XGBoost)"
                                                            : "random search")
            << "\n";
  // The bar redraws itself with carriage returns: only on a terminal, never into a pipe or a log.
  const bool bar = !quiet && isatty(STDERR_FILENO) == 1;
  if (bar)
    o.progress = [score](int done, int total, const tune::Trial&, const tune::Trial& best) {
      int width = 30, filled = total ? width * done / total : width;
      std::cerr << "\r[" << std::string(size_t(filled), '#') << std::string(size_t(width - filled), '.') << "] " << done
                << "/" << total << "  best " << score(best) << " (" << tune::config_str(best.config) << ")   "
                << std::flush;
    };
  tune::TuneResult r = tune::tune(t, o);
  if (bar) std::cerr << "\n";
  int failed = 0;
  for (auto& tr : r.trials) failed += !tr.ok;
  std::cout << std::fixed << std::setprecision(1) << "  default: " << score(r.default_trial) << " ("
            << tune::config_str(r.default_trial.config) << ")\n  tuned:   " << score(r.best) << " ("
            << tune::config_str(r.best.config) << "), " << std::setprecision(2)
            << r.best.gflops / r.default_trial.gflops << "x the default\n  " << r.trials.size() << " trials (" << failed
            << " failed) in " << std::setprecision(1) << r.wall_seconds << " s\n";
  for (auto& tr : r.trials)
    if (!tr.ok) std::cout << "  failed: " << tune::config_str(tr.config) << ": " << tr.error << "\n";
  if (!log.empty()) {
    tune::append_to_log(log, t, key, r);
    std::cout << "  appended to " << log << "\n";
  }
  return r;
}

// An accelerator conv tuned on `measure` ("rtl", or "perf": the performance model, with the RTL
// confirming the winner: the default and the best re-run on the RTL, and the log entry made from
// that, so `loom compile --tuning-log` finds it under the RTL's key). Returns the RTL's figures.
tune::TuneResult tune_accel_conv(const tune::Conv2dShape& shape, const accel::AccelConfig& config,
                                 const std::string& measure, const tune::TuneOptions& o, const std::string& log,
                                 bool quiet) {
  auto rtl = tune::make_accel_conv2d_template(shape, config, "rtl");
  if (measure == "rtl") return tune_one(*rtl, o, log, quiet, tune::accel_target_key(config, "rtl"));
  auto model = tune::make_accel_conv2d_template(shape, config, measure);
  tune::TuneResult r = tune_one(*model, o, "", quiet, tune::accel_target_key(config, measure));
  tune::TuneResult c = tune::confirm_on(*rtl, r, o);
  const tune::Trial& confirmed = c.trials.back();
  std::cout << "  on the RTL: default " << c.default_trial.cycles << " cycles (the model: " << r.default_trial.cycles
            << "), the model's best "
            << (confirmed.ok ? std::to_string(confirmed.cycles) : "failed (" + confirmed.error + ")")
            << " (the model: " << r.best.cycles << "); kept " << tune::config_str(c.best.config) << "\n";
  if (!log.empty()) {
    tune::append_to_log(log, *rtl, tune::accel_target_key(config, "rtl"), c);
    std::cout << "  appended the RTL's figures to " << log << "\n";
  }
  return c;
}

#ifdef LOOM_HAVE_GRAPH
// Tunes every distinct blocked conv2d kernel of `model`; prints their time before and after.
// `model_budget` (seconds, the model's build included) is shared out in proportion to each
// kernel's multiply-adds, at least 1 s a kernel and at most `o.budget_seconds`; each kernel's
// share comes from what is left when it starts (a kernel that overran, by its confirmation round
// or its compile, shortens the ones after it).
int tune_model(const std::string& model, int64_t batch, int64_t image, bool int8, const tune::TuneOptions& o,
               double model_budget, const std::string& log, bool quiet) {
  auto start = std::chrono::steady_clock::now();
  graph::Graph g = frontend::load_model(model, batch, image);
  if (int8) g = frontend::quantized_for_shapes(std::move(g));  // the model quantized for the CPU
  std::vector<graph::ConvKernelKey> keys = tune::model_conv_kernels(std::move(g));
  std::vector<std::unique_ptr<tune::Template>> templates;
  double all_flops = 0;
  for (const auto& key : keys) {
    templates.push_back(tune::conv_kernel_template(key, codegen::target_info()));
    all_flops += templates.back()->flops();
  }
  auto left = [&] {
    return model_budget - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::cout << model << (int8 ? " (int8)" : "") << ": " << keys.size() << " distinct blocked conv2d kernels, "
            << std::fixed << std::setprecision(0) << std::max(0.0, left()) << " s of the model budget left\n"
            << std::defaultfloat << std::setprecision(6);
  double t_default = 0, t_tuned = 0, wall = 0, flops_left = all_flops;
  for (auto& t : templates) {
    tune::TuneOptions share = o;
    share.budget_seconds = std::min(std::max(left() * t->flops() / flops_left, 1.0), o.budget_seconds);
    flops_left -= t->flops();
    tune::TuneResult r =
        tune_one(*t, share, log, quiet, tune::target_key(codegen::target_info(), runtime::num_threads()));
    t_default += t->flops() / (r.default_trial.gflops * 1e9);
    t_tuned += t->flops() / (r.best.gflops * 1e9);
    wall += r.wall_seconds;
  }
  std::cout << std::fixed << std::setprecision(3) << model << ": every conv kernel once, default " << t_default * 1e3
            << " ms, tuned " << t_tuned * 1e3 << " ms (" << std::setprecision(2)
            << (t_tuned > 0 ? t_default / t_tuned : 0) << "x) after " << std::setprecision(1) << wall
            << " s of tuning\n";
  return 0;
}

// Tunes every distinct accelerator conv of `model` by cycles on `measure` (rtl, or perf with the
// RTL confirming each winner).
int tune_accel_model(const std::string& model, int64_t batch, int64_t image, const accel::AccelConfig& config,
                     const std::string& measure, const tune::TuneOptions& o, const std::string& log, bool quiet) {
  // The model quantized to int8, as `loom compile --quantize int8 --target accel` partitions it.
  std::vector<ops::ConvShape> shapes =
      tune::model_accel_convs(frontend::quantized_for_shapes(frontend::load_model(model, batch, image)), config);
  std::cout << model << " (int8, accelerator config '" << config.name << "'): " << shapes.size()
            << " distinct accelerator conv2d kernels\n";
  uint64_t c_default = 0, c_tuned = 0;
  double wall = 0;
  for (const auto& shape : shapes) {
    tune::TuneResult r = tune_accel_conv(tune::accel_conv_shape(shape, config), config, measure, o, log, quiet);
    c_default += r.default_trial.cycles;
    c_tuned += r.best.cycles;
    wall += r.wall_seconds;
  }
  std::cout << std::fixed << model << ": every accelerator conv once, default " << c_default << " cycles, tuned "
            << c_tuned << " cycles (" << std::setprecision(3) << (c_tuned ? double(c_default) / double(c_tuned) : 0)
            << "x) after " << std::setprecision(1) << wall << " s of tuning\n";
  return 0;
}
#endif

int tune_cmd(const std::vector<std::string>& args) {
  CLI::App app{"Tune an operator's schedule on this machine: measured runs guided by a learned cost model (XGBoost)",
               "loom tune"};
  std::string op, log, model, target_name = "cpu", config_path, quantize, measure = "rtl";
  int size = 0, channels = 64, out_channels = 0, kernel = 3, stride = 1, pad = 1, threads = 0, block = 0,
      int8_group = 0;
  int64_t m = 0, n = 0, k = 0, batch = 1, image = 224;
  tune::TuneOptions o;
  double model_budget = 540;  // `loom tune model` within 10 minutes, the model's build included
  bool random_search = false, quiet = false;
  app.add_option(
         "op", op,
         "gemm, conv2d (NCHW), conv2d_nchwc (the blocked kernel models run), accel_conv2d (int8 on the accelerator, by "
         "RTL cycles), "
         "or model (every conv2d kernel of --model: blocked CPU kernels, or with --target accel its accelerator convs)")
      ->required()
      ->check(CLI::IsMember({"gemm", "conv2d", "conv2d_nchwc", "accel_conv2d", "model"}));
  app.add_option("--target", target_name,
                 "model: cpu (blocked conv2d kernels) or accel (the int8 model's accelerator convs)")
      ->check(CLI::IsMember({"cpu", "accel"}))
      ->capture_default_str();
  app.add_option("--measure", measure,
                 "accel_conv2d, model --target accel: measure on the RTL (rtl) or on the performance model (perf; the "
                 "RTL then confirms each winner, and the log gets the RTL's figures)")
      ->check(CLI::IsMember({"rtl", "perf"}))
      ->capture_default_str();
  app.add_option("--config", config_path,
                 "accel_conv2d, model --target accel: accelerator config JSON (default: the built-in default)")
      ->check(CLI::ExistingFile);
  number_option(app, "--size", size, "gemm: M = N = K (default 1024); conv2d: height and width (default 56)", 1, 8192);
  number_option(app, "--m", m, "gemm: rows of A (default --size)", 1, 16384);
  number_option(app, "--n", n, "gemm: columns of B (default --size)", 1, 16384);
  number_option(app, "--k", k, "gemm: the reduction (default --size)", 1, 16384);
  number_option(app, "--channels", channels, "conv2d: input channels", 1, 4096)->capture_default_str();
  number_option(app, "--out-channels", out_channels, "conv2d: output channels (default --channels)", 1, 4096);
  number_option(app, "--kernel", kernel, "conv2d: kernel height and width", 1, 11)->capture_default_str();
  number_option(app, "--stride", stride, "conv2d: stride", 1, 8)->capture_default_str();
  number_option(app, "--pad", pad, "conv2d: zero padding on every side", 0, 8)->capture_default_str();
  number_option(app, "--block", block, "conv2d_nchwc: channel block (default: the target's float lanes)", 1, 64);
  number_option(app, "--int8-group", int8_group,
                "conv2d_nchwc: the int8 convolution of quantized models, in int16 pairs (2) or byte groups (4, data in "
                "[0, 127]); 0: float32",
                0, 4)
      ->check(CLI::IsMember({0, 2, 4}))
      ->capture_default_str();
  app.add_option(
         "--quantize", quantize,
         "model --target cpu: tune the convolutions of the model quantized to int8 (as `loom compile --quantize int8`)")
      ->check(CLI::IsMember({"int8"}));
  app.add_option("--model", model, "model: a built-in model (resnet18, resnet50, mobilenet_v2) or an .onnx file");
  number_option(app, "--batch", batch, "model: batch size of a built-in model", 1, 1024)->capture_default_str();
  number_option(app, "--image", image, "model: image size of a built-in model", 32, 1024)->capture_default_str();
  number_option(app, "--trials", o.trials, "configurations to measure at most per operator (the default included)", 1,
                100000)
      ->capture_default_str();
  number_option(app, "--model-budget", model_budget,
                "model: wall-clock budget in seconds for the whole model, shared out by each kernel's work (each "
                "kernel at most --budget)",
                10.0, 86400.0)
      ->capture_default_str();
  number_option(app, "--budget", o.budget_seconds, "wall-clock budget in seconds per operator", 0.1, 86400.0)
      ->capture_default_str();
  number_option(app, "--repeats", o.repeats, "timed runs per configuration (the fastest counts)", 1, 1000)
      ->capture_default_str();
  number_option(app, "--threads", threads, "threads (default: all cores)", 1, 1024);
  number_option(app, "--seed", o.seed, "seed of the search and the random operands", 0, UINT64_MAX)
      ->capture_default_str();
  app.add_option("--log", log, "append the best configuration to this tuning log (JSON lines)")->check(output_file());
  app.add_flag("--random", random_search, "random search, without the cost model (to compare against)");
  app.add_flag("-q,--quiet", quiet, "no progress bar");
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (op == "model" && model.empty())
    LOOM_THROW(Error, "loom tune model needs --model NAME (a built-in model or an .onnx file)");
  if (op != "model" && !model.empty()) LOOM_THROW(Error, "--model is for `loom tune model`");
  if (op != "model" && target_name != "cpu") LOOM_THROW(Error, "--target is for `loom tune model`");
  if (!quantize.empty() && (op != "model" || target_name != "cpu"))
    LOOM_THROW(Error, "--quantize is for `loom tune model --target cpu` (--target accel always tunes the int8 model)");
  if (int8_group && op != "conv2d_nchwc") LOOM_THROW(Error, "--int8-group is for `loom tune conv2d_nchwc`");
  if (measure != "rtl" && op != "accel_conv2d" && !(op == "model" && target_name == "accel"))
    LOOM_THROW(Error, "--measure is for `loom tune accel_conv2d` and `loom tune model --target accel`");
  const accel::AccelConfig config =
      config_path.empty() ? accel::default_config() : accel::AccelConfig::load(config_path);
  if (threads) runtime::set_num_threads(threads);
  o.use_model = !random_search;
  codegen::TargetInfo target = codegen::target_info();
  if (op == "model") {
#ifdef LOOM_HAVE_GRAPH
    if (target_name == "accel") return tune_accel_model(model, batch, image, config, measure, o, log, quiet);
    return tune_model(model, batch, image, !quantize.empty(), o, model_budget, log, quiet);
#else
    LOOM_THROW(Error, "this loom was built without the model compiler (needs LLVM and libonnx-dev)");
#endif
  }
  std::unique_ptr<tune::Template> t;
  if (op == "accel_conv2d") {
    tune::Conv2dShape a;
    a.in_channels = channels;
    a.out_channels = out_channels ? out_channels : channels;
    a.height = a.width = size ? size : 56;
    a.kernel = kernel;
    a.stride = stride;
    a.pad = pad;
    tune_accel_conv(a, config, measure, o, log, quiet);
    return 0;
  }
  if (op == "gemm") {
    int64_t s = size ? size : 1024;
    t = tune::make_gemm_template(m ? m : s, n ? n : s, k ? k : s, target);
  } else {
    tune::Conv2dShape c;
    c.in_channels = channels;
    c.out_channels = out_channels ? out_channels : channels;
    c.height = c.width = size ? size : 56;
    c.kernel = kernel;
    c.stride = stride;
    c.pad = pad;
    if (op == "conv2d_nchwc")
      t = tune::make_conv2d_nchwc_template(c, block ? block : target.float32_lanes(), target, int8_group);
    else
      t = tune::make_conv2d_template(c, target);
  }
  tune_one(*t, o, log, quiet, tune::target_key(target, runtime::num_threads()));
  return 0;
}

}  // namespace

LOOM_REGISTER_COMMAND("tune",
                      "search an operator's schedule knobs on this machine (cost-model guided) and log the best",
                      tune_cmd);

}  // namespace loom::tools
#endif
