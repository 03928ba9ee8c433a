// The auto-tuner: searches a template's configurations by compiling and timing them, guided by a
// learned cost model (gradient-boosted trees, XGBoost) fitted to the measurements so far, within a
// trial count and a time budget. Every configuration's output is checked against the default
// configuration's, so a schedule that computes something else is reported, never chosen.
//
//   TuneOptions o;  o.trials = 48;  o.budget_seconds = 60;
//   TuneResult r = tune(*make_gemm_template(1024, 1024, 1024, codegen::target_info()), o);
//   append_to_log("tune.jsonl", *t, target_key(target, threads), r);  // best_from_log reads it back
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loom/tune/template.h"

namespace loom::tune {

struct Trial {
  Config config;
  double seconds = 0;   // the fastest of the timed runs
  double gflops = 0;    // GFLOP/s; for cycle-measured templates operations per cycle (flops / cycles)
  uint64_t cycles = 0;  // cycle-measured templates: the simulated run's cycles
  bool ok = false;
  std::string error;  // build failure or wrong result
};

struct TuneOptions {
  int trials = 48;              // configurations measured at most (the default one included)
  double budget_seconds = 120;  // wall-clock budget, build and measurement included
  // Timed runs per configuration; the fastest is kept (another process or a frequency step only
  // ever slows a run down, and the benches compare best-of times too).
  int repeats = 5;
  double min_run_seconds = 2e-3;  // each timed run repeats the kernel until it lasts this long
  int batch = 4;                  // configurations measured per cost-model round
  int initial = 8;                // random configurations measured before the model is used
  bool use_model = true;          // false: random search (for comparing the model against)
  // The fastest `confirm` configurations and the default are timed again, alternately, before one
  // is chosen (it must beat the default by 3%): single measurements on a shared machine vary a
  // lot, and a configuration that won by noise must not replace the default. Each candidate
  // gets about `confirm_seconds` of runs in that round (decided by a few runs, a strided 1x1
  // conv's sub-millisecond winner ran slower than its default).
  int confirm = 3;
  double confirm_seconds = 0.15;
  // In that round every call starts with the kernel's constant operands (the arguments between the
  // first input and the output: a conv's or dense layer's weights) flushed from every cache level,
  // as in a model, where each layer's weights come from memory or L3: tiles that won with hot
  // weights made DenseNet-121 slower (docs/results.md). Only the calls are timed.
  bool cold_confirm = true;
  uint64_t seed = 1;
  std::function<void(int done, int total, const Trial& last, const Trial& best)> progress;
};

struct TuneResult {
  std::vector<Trial> trials;  // in measurement order; trials[0] is the default configuration
  Trial best, default_trial;  // as re-timed in the confirmation round
  double wall_seconds = 0;
  bool used_model = false;  // false when XGBoost is not available (random search)
};

TuneResult tune(const Template& t, const TuneOptions& options = {});

// Times one configuration (fastest of `repeats` runs), or for a cycle-measured template simulates
// it once, and checks its output against `reference` (relative error 1e-4; cycle-measured integer
// kernels bit for bit) when given.
Trial measure(const Template& t, const Config& c, const TuneOptions& options, const NDArray* reference = nullptr,
              NDArray* output = nullptr);

// The default and the best configuration of `r` (a search measured elsewhere: on the
// accelerator's performance model) measured again on `reference` (the RTL): the result's best is
// the better of the two there, so a log entry made from it holds for that backend.
TuneResult confirm_on(const Template& reference, const TuneResult& r, const TuneOptions& options = {});

// The tuning log: JSON lines {"op", "shape", "target", "config", "gflops", "seconds", "default_gflops"},
// one per tuned task; later lines for the same key supersede earlier ones only if faster.
void append_to_log(const std::string& path, const Template& t, const std::string& target, const TuneResult& r);
// A tuning log read once (the model compiler looks up every kernel in it): the fastest entry per
// (op, shape, target). RuntimeError if the file cannot be read, ConfigError naming the line of a
// malformed entry.
class TuningLog {
 public:
  explicit TuningLog(const std::string& path);
  std::optional<Config> best(const std::string& op, const std::vector<int64_t>& shape, const std::string& target) const;
  // The targets (machine and thread count) the log has entries of (op, shape) for.
  std::vector<std::string> targets(const std::string& op, const std::vector<int64_t>& shape) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::map<std::tuple<std::string, std::vector<int64_t>, std::string>, std::pair<double, Config>> best_;
};
// The best configuration logged for (op, shape, target), if any (reads the whole log).
std::optional<Config> best_from_log(const std::string& path, const std::string& op, const std::vector<int64_t>& shape,
                                    const std::string& target);

// Whether the learned cost model is compiled in (libxgboost).
bool cost_model_available();

}  // namespace loom::tune
