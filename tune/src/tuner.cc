#include "loom/tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"
#include "loom/runtime/thread_pool.h"
#include "loom/tune/cost_model.h"

namespace loom::tune {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// NaN anywhere (std::max would skip it) counts as an infinite error.
double max_relative_error(const NDArray& got, const NDArray& want) {
  double scale = 0, err = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = std::fabs(want.get_as_double(i) - got.get_as_double(i));
    if (std::isnan(d)) return INFINITY;
    scale = std::max(scale, std::fabs(want.get_as_double(i)));
    err = std::max(err, d);
  }
  return scale > 0 ? err / scale : err;
}

// Every cache line of [data, data + bytes) written back and dropped from every level.
void evict_from_caches(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  for (size_t off = 0; off < bytes; off += 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_clflush(p + off);
#elif defined(__aarch64__)
    asm volatile("dc civac, %0" : : "r"(p + off) : "memory");
#endif
  }
}

void memory_fence() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_mfence();
#elif defined(__aarch64__)
  asm volatile("dsb ish" : : : "memory");
#endif
}

// Starts an empty parallel loop: the pool's sleeping workers are notified and wake while the
// caller goes on (it runs the loop's iterations itself; waiting for the workers instead cost up to
// a millisecond a call on a loaded machine, where a woken thread waits for a core).
void wake_workers() {
  loom_parallel_for(
      runtime::num_threads(), [](int64_t, int64_t, void*) -> int32_t { return 0; }, nullptr);
}

// A configuration replaces the default only with a real lead: among equally fast candidates the
// noise of single timings would otherwise pick a random one.
constexpr double kRequiredLead = 1.03;

// One configuration compiled, with its arguments, ready to call (measure and the confirmation round).
struct Loaded {
  runtime::Module module;
  runtime::CompiledFn fn;
  std::vector<NDArray> args;
  std::vector<void*> ptrs;
  Loaded(const Template& t, const Config& c, uint64_t seed)
      : module(t.build(c)), fn(module.get_function("kernel")), args(t.arguments(seed)) {
    for (auto& a : args) ptrs.push_back(a.raw_data());
  }
  int32_t call() { return fn(ptrs.data()); }
  // Flushes the constant operands (every argument but the first input and the output) from the
  // caches, so the next call reads them from memory.
  void evict_constants() const {
    for (size_t i = 1; i + 1 < args.size(); ++i) evict_from_caches(args[i].raw_data(), args[i].nbytes());
    memory_fence();
  }
};

// Seconds per call of `call`, over `inner` calls in a row.
template <typename F>
double seconds_per_call(F&& call, int inner) {
  auto s = Clock::now();
  for (int i = 0; i < inner; ++i) call();
  return since(s) / inner;
}

double fastest(const std::vector<double>& runs) { return *std::min_element(runs.begin(), runs.end()); }

}  // namespace

bool cost_model_available() { return CostModel::available(); }

// A cycle-measured configuration: one simulated run; integer outputs must equal the reference.
static Trial simulate(const Template& t, const Config& c, const TuneOptions& o, const NDArray* reference,
                      NDArray* output) {
  Trial trial;
  trial.config = c;
  try {
    Simulated run = t.simulate(c, o.seed);
    if (reference) {
      double err = max_relative_error(run.output, *reference);
      if (!(err == 0))
        LOOM_THROW(RuntimeError, "wrong result: differs from the default configuration's (relative error ", err, ")");
    }
    if (output) *output = run.output;
    trial.cycles = run.cycles;
    trial.gflops = t.flops() / double(run.cycles);
    trial.ok = true;
  } catch (const std::exception& e) {
    trial.error = e.what();
  }
  return trial;
}

Trial measure(const Template& t, const Config& c, const TuneOptions& o, const NDArray* reference, NDArray* output) {
  if (t.measure() == Measure::Cycles) return simulate(t, c, o, reference, output);
  Trial trial;
  trial.config = c;
  try {
    Loaded k(t, c, o.seed);
    auto call = [&] {
      loom_set_last_error("");
      if (k.call() != 0) LOOM_THROW(RuntimeError, "kernel failed: ", loom_get_last_error());
    };
    call();  // warm-up, and the result to check
    if (reference) {
      // Floats may round differently per schedule; integers (int8 kernels) must agree exactly.
      double err = max_relative_error(k.args.back(), *reference), tolerance = reference->dtype().is_float() ? 1e-4 : 0;
      if (!(err <= tolerance))
        LOOM_THROW(RuntimeError, "wrong result: relative error ", err, " against the default configuration");
    }
    if (output) *output = k.args.back().copy();
    // Each timed run repeats the kernel until it lasts min_run_seconds (short kernels are timed
    // over many calls); the fastest run is the one least disturbed by other processes.
    double once = std::max(seconds_per_call(call, 1), 1e-7);
    int inner = std::max(1, int(std::ceil(o.min_run_seconds / once)));
    std::vector<double> runs;
    for (int r = 0; r < std::max(1, o.repeats); ++r) runs.push_back(seconds_per_call(call, inner));
    trial.seconds = fastest(runs);
    trial.gflops = t.flops() / trial.seconds * 1e-9;
    trial.ok = true;
  } catch (const std::exception& e) {  // loom::Error, and LLVM or allocation failures of one configuration
    trial.error = e.what();
  }
  return trial;
}

// Re-times the default and the fastest few configurations round-robin (each round times every
// candidate once, so slow phases of the machine hit them all alike), for at least
// confirm_seconds per candidate, and keeps each one's fastest round.
static void confirm(const Template& t, const TuneOptions& o, TuneResult& r) {
  std::vector<Trial> top;
  for (auto& tr : r.trials)
    if (tr.ok && tr.config != r.default_trial.config) top.push_back(tr);
  std::sort(top.begin(), top.end(), [](const Trial& a, const Trial& b) { return a.gflops > b.gflops; });
  if (top.size() > size_t(std::max(0, o.confirm))) top.resize(size_t(std::max(0, o.confirm)));
  top.insert(top.begin(), r.default_trial);
  std::vector<Loaded> cands;
  cands.reserve(top.size());
  std::vector<bool> callable;  // false: failed now, not a candidate
  std::vector<std::vector<double>> runs(top.size());
  for (const Trial& tr : top) {
    cands.emplace_back(t, tr.config, o.seed);
    callable.push_back(cands.back().call() == 0);
  }
  const int rounds = std::max(5, o.repeats);
  const double per_round = std::max(o.min_run_seconds, o.confirm_seconds / rounds);
  const int inner = std::max(1, int(std::ceil(per_round / std::max(top[0].seconds, 1e-7))));
  // Cold: each call timed alone, after its weights are flushed and the pool's workers nudged awake
  // (a flush of megabytes outlasts their spin; in a model they are awake between kernels). `inner`
  // counts warm calls, and a cold one (with its flush and wake-up) takes many times longer, so the
  // round also ends when its share of the time is spent.
  auto cold_seconds_per_call = [&](Loaded& k) {
    double total = 0;
    int calls = 0;
    const auto round_start = Clock::now();
    do {
      k.evict_constants();
      wake_workers();
      auto s = Clock::now();
      k.call();
      total += since(s);
      ++calls;
    } while (calls < inner && since(round_start) < per_round);
    return total / calls;
  };
  for (int round = 0; round < rounds; ++round)
    for (size_t i = 0; i < cands.size(); ++i)
      if (callable[i])
        runs[i].push_back(o.cold_confirm ? cold_seconds_per_call(cands[i])
                                         : seconds_per_call([&] { cands[i].call(); }, inner));
  size_t best = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (runs[i].empty()) {
      top[i].ok = false;
      top[i].gflops = 0;
      continue;
    }
    top[i].seconds = fastest(runs[i]);
    top[i].gflops = t.flops() / top[i].seconds * 1e-9;
    if (top[i].gflops > top[best].gflops * (best == 0 ? kRequiredLead : 1.0)) best = i;
  }
  r.default_trial = top[0];
  r.best = top[best];
}

TuneResult tune(const Template& t, const TuneOptions& o) {
  auto t0 = Clock::now();
  TuneResult r;
  std::vector<Config> space = t.space();
  if (space.empty())
    LOOM_THROW(ConfigError, "tune: ", t.op(), " ", shape_str(t.shape()), " has no valid configuration");
  // The reference: the target-aware default, or (for shapes it does not fit) the first valid one.
  const Config def = t.valid(t.default_config()) ? t.default_config() : space.front();
  // The default first: its output is the reference every other configuration must reproduce.
  NDArray reference;
  r.default_trial = measure(t, def, o, nullptr, &reference);
  if (!r.default_trial.ok)
    LOOM_THROW(RuntimeError, "tune: the default configuration of ", t.op(), " fails: ", r.default_trial.error);
  r.trials.push_back(r.default_trial);
  r.best = r.default_trial;
  std::set<Config> measured{def};
  std::mt19937_64 rng(o.seed);
  std::vector<Config> pool;
  for (auto& c : space)
    if (!measured.count(c)) pool.push_back(c);
  std::shuffle(pool.begin(), pool.end(), rng);
  CostModel model;
  r.used_model = o.use_model && CostModel::available();
  const int total = std::min<int>(o.trials, int(pool.size()) + 1);
  auto record = [&](const Trial& tr) {
    r.trials.push_back(tr);
    if (tr.ok && tr.gflops > r.best.gflops) r.best = tr;
    if (o.progress) o.progress(int(r.trials.size()), total, tr, r.best);
  };
  if (o.progress) o.progress(1, total, r.default_trial, r.best);
  while (int(r.trials.size()) < total && !pool.empty() && since(t0) < o.budget_seconds) {
    std::vector<size_t> pick;
    int want = std::max(1, std::min<int>(o.batch, total - int(r.trials.size())));
    if (!r.used_model || int(r.trials.size()) < o.initial) {
      for (int i = 0; i < want && i < int(pool.size()); ++i) pick.push_back(size_t(i));  // random: the pool is shuffled
    } else {
      // Fit log(GFLOP/s) of every successful trial, rank the unmeasured configurations, take the
      // best predictions, and one random configuration per round so the model sees new regions.
      std::vector<std::vector<float>> x;
      std::vector<float> y;
      for (auto& tr : r.trials)
        if (tr.ok) x.push_back(t.features(tr.config)), y.push_back(float(std::log(tr.gflops)));
      std::vector<std::vector<float>> cand;
      for (auto& c : pool) cand.push_back(t.features(c));
      std::vector<float> score;
      try {
        model.fit(x, y);
        score = model.predict(cand);
      } catch (const Error&) {  // keep the measurements: go on at random
        r.used_model = false;
        continue;
      }
      std::vector<size_t> order(pool.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
      // The best predictions, and with two or more per round one random pick for exploration.
      const int ranked = want >= 2 ? want - 1 : 1;
      for (int i = 0; i < ranked && i < int(order.size()); ++i) pick.push_back(order[size_t(i)]);
      if (want >= 2 && int(order.size()) > ranked)
        pick.push_back(order[size_t(ranked) + rng() % (order.size() - size_t(ranked))]);
    }
    std::sort(pick.rbegin(), pick.rend());  // erase from the back so indices stay valid
    std::vector<Config> batch;
    for (size_t i : pick) {
      batch.push_back(pool[i]);
      pool.erase(pool.begin() + long(i));
    }
    for (auto& c : batch) {
      if (int(r.trials.size()) >= total || since(t0) >= o.budget_seconds) break;
      record(measure(t, c, o, &reference));
    }
  }
  // Simulated cycles do not vary between runs: the fastest measurement stands.
  if (t.measure() == Measure::Timed) confirm(t, o, r);
  r.wall_seconds = since(t0);
  return r;
}

void append_to_log(const std::string& path, const Template& t, const std::string& target, const TuneResult& r) {
  nlohmann::json j;
  j["op"] = t.op();
  j["shape"] = t.shape();
  j["target"] = target;
  j["config"] = r.best.config;
  j["gflops"] = r.best.gflops;
  j["seconds"] = r.best.seconds;
  if (r.best.cycles) j["cycles"] = r.best.cycles, j["default_cycles"] = r.default_trial.cycles;
  j["default_gflops"] = r.default_trial.gflops;
  j["trials"] = r.trials.size();
  j["tuning_seconds"] = r.wall_seconds;
  std::ofstream f(path, std::ios::app);
  if (!f) LOOM_THROW(RuntimeError, "tuning log: cannot write '", path, "'");
  f << j.dump() << "\n";
  if (!f) LOOM_THROW(RuntimeError, "tuning log: cannot write '", path, "'");
}

TuningLog::TuningLog(const std::string& path) : path_(path) {
  std::ifstream f(path);
  if (!f) LOOM_THROW(RuntimeError, "tuning log: cannot open '", path, "'");
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      nlohmann::json j = nlohmann::json::parse(line);
      auto key = std::make_tuple(j.at("op").get<std::string>(), j.at("shape").get<std::vector<int64_t>>(),
                                 j.at("target").get<std::string>());
      double g = j.at("gflops").get<double>();
      auto it = best_.find(key);
      if (it == best_.end() || g > it->second.first) best_[key] = {g, j.at("config").get<Config>()};
    } catch (const nlohmann::json::exception& e) {
      LOOM_THROW(ConfigError, "tuning log '", path, "' line ", n, ": ", e.what());
    }
  }
}

std::optional<Config> TuningLog::best(const std::string& op, const std::vector<int64_t>& shape,
                                      const std::string& target) const {
  auto it = best_.find(std::make_tuple(op, shape, target));
  if (it == best_.end()) return std::nullopt;
  return it->second.second;
}

std::vector<std::string> TuningLog::targets(const std::string& op, const std::vector<int64_t>& shape) const {
  std::vector<std::string> out;
  for (auto it = best_.lower_bound(std::make_tuple(op, shape, std::string())); it != best_.end(); ++it) {
    if (std::get<0>(it->first) != op || std::get<1>(it->first) != shape) break;
    out.push_back(std::get<2>(it->first));
  }
  return out;
}

std::optional<Config> best_from_log(const std::string& path, const std::string& op, const std::vector<int64_t>& shape,
                                    const std::string& target) {
  return TuningLog(path).best(op, shape, target);
}

TuneResult confirm_on(const Template& reference, const TuneResult& r, const TuneOptions& o) {
  auto t0 = Clock::now();
  TuneResult c;
  c.used_model = r.used_model;
  c.default_trial = measure(reference, r.default_trial.config, o);
  if (!c.default_trial.ok)
    LOOM_THROW(RuntimeError, "confirming on ", reference.op(), " ", shape_str(reference.shape()),
               ": the default configuration failed: ", c.default_trial.error);
  c.trials.push_back(c.default_trial);
  c.best = c.default_trial;
  if (r.best.config != r.default_trial.config) {
    Trial best = measure(reference, r.best.config, o);
    c.trials.push_back(best);
    if (best.ok && best.gflops > c.best.gflops) c.best = best;
  }
  c.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return c;
}

}  // namespace loom::tune
