// `loom tune`: searches the schedule knobs of an operator on this machine (tune/): measured runs
// guided by a learned cost model, within a trial count and a time budget; the best configuration
// goes to a tuning log (JSON lines; tune::best_from_log reads it back).
#ifdef LOOM_HAVE_TUNE
#include <iomanip>
#include <iostream>

#include "cli.h"
#include "command.h"
#include "loom/codegen/llvm.h"
#include "loom/runtime/error.h"
#include "loom/runtime/thread_pool.h"
#include "loom/tune/tuner.h"

namespace loom::tools {

namespace {

int tune_cmd(const std::vector<std::string>& args) {
  CLI::App app{"Tune an operator's schedule on this machine: measured runs guided by a learned cost model (XGBoost)", "loom tune"};
  std::string op, log;
  int size = 0, channels = 64, out_channels = 0, kernel = 3, stride = 1, pad = 1, threads = 0;
  int64_t m = 0, n = 0, k = 0;
  tune::TuneOptions o;
  bool random_search = false, quiet = false;
  app.add_option("op", op, "operator: gemm or conv2d")->required()->check(CLI::IsMember({"gemm", "conv2d"}));
  number_option(app, "--size", size, "gemm: M = N = K (default 1024); conv2d: height and width (default 56)", 1, 8192);
  number_option(app, "--m", m, "gemm: rows of A (default --size)", 1, 16384);
  number_option(app, "--n", n, "gemm: columns of B (default --size)", 1, 16384);
  number_option(app, "--k", k, "gemm: the reduction (default --size)", 1, 16384);
  number_option(app, "--channels", channels, "conv2d: input channels", 1, 4096)->capture_default_str();
  number_option(app, "--out-channels", out_channels, "conv2d: output channels (default --channels)", 1, 4096);
  number_option(app, "--kernel", kernel, "conv2d: kernel height and width", 1, 11)->capture_default_str();
  number_option(app, "--stride", stride, "conv2d: stride", 1, 8)->capture_default_str();
  number_option(app, "--pad", pad, "conv2d: zero padding on every side", 0, 8)->capture_default_str();
  number_option(app, "--trials", o.trials, "configurations to measure at most (the default included)", 1, 100000)->capture_default_str();
  number_option(app, "--budget", o.budget_seconds, "wall-clock budget in seconds", 0.1, 86400.0)->capture_default_str();
  number_option(app, "--repeats", o.repeats, "timed runs per configuration (the median counts)", 1, 1000)->capture_default_str();
  number_option(app, "--threads", threads, "threads (default: all cores)", 1, 1024);
  number_option(app, "--seed", o.seed, "seed of the search and the random operands", 0, UINT64_MAX)->capture_default_str();
  app.add_option("--log", log, "append the best configuration to this tuning log (JSON lines)")->check(output_file());
  app.add_flag("--random", random_search, "random search, without the cost model (to compare against)");
  app.add_flag("-q,--quiet", quiet, "no progress bar");
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (threads) runtime::set_num_threads(threads);
  o.use_model = !random_search;
  codegen::TargetInfo target = codegen::target_info();
  std::unique_ptr<tune::Template> t;
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
    t = tune::make_conv2d_template(c, target);
  }
  const std::string key = tune::target_key(target, runtime::num_threads());
  std::vector<tune::Config> space = t->space();
  std::cout << "tuning " << t->op() << " " << shape_str(t->shape()) << " on " << key << ": " << space.size() << " configurations, up to "
            << o.trials << " trials in " << o.budget_seconds << " s, "
            << (o.use_model && tune::cost_model_available() ? "cost model: gradient-boosted trees (XGBoost)" : "random search") << "\n";
  if (!quiet)
    o.progress = [](int done, int total, const tune::Trial&, const tune::Trial& best) {
      int width = 30, filled = total ? width * done / total : width;
      std::cerr << "\r[" << std::string(size_t(filled), '#') << std::string(size_t(width - filled), '.') << "] " << done << "/" << total
                << "  best " << std::fixed << std::setprecision(1) << best.gflops << " GF/s (" << tune::config_str(best.config) << ")   "
                << std::flush;
    };
  tune::TuneResult r = tune::tune(*t, o);
  if (!quiet) std::cerr << "\n";
  int failed = 0;
  for (auto& tr : r.trials) failed += !tr.ok;
  std::cout << std::fixed << std::setprecision(1) << "  default: " << r.default_trial.gflops << " GF/s (" << tune::config_str(r.default_trial.config)
            << ")\n  tuned:   " << r.best.gflops << " GF/s (" << tune::config_str(r.best.config) << "), " << std::setprecision(2)
            << r.best.gflops / r.default_trial.gflops << "x the default\n  " << r.trials.size() << " trials (" << failed << " failed) in "
            << std::setprecision(1) << r.wall_seconds << " s\n";
  for (auto& tr : r.trials)
    if (!tr.ok) std::cout << "  failed: " << tune::config_str(tr.config) << ": " << tr.error << "\n";
  if (!log.empty()) {
    tune::append_to_log(log, *t, key, r);
    std::cout << "  appended to " << log << "\n";
  }
  return 0;
}

}  // namespace

LOOM_REGISTER_COMMAND("tune", "search an operator's schedule knobs on this machine (cost-model guided) and log the best", tune_cmd);

}  // namespace loom::tools
#endif
