// Whether a model's CPU kernels run their parallel loops on the thread pool or on the calling
// thread alone, chosen by timing. A loop's work count (the pool's threshold) cannot see what its
// data costs to move: a slice or a layout transform reading what the other core's half of the
// previous conv wrote, on two cores that share no cache, took several times as long in parallel
// as alone, and a ShuffleNetV2 of such kernels ran slower on two threads than on one. Which way is
// faster for one kernel also depends on its neighbours (where its input was written, who reads
// its output), so a choice is kept only when whole runs confirm it.
//
// Per range of consecutive CPU kernels (a CPU-only model has one): the first call runs on the
// pool (cold caches; it picks the kernels cheap enough to try alone, kAloneBudget); the next
// kMeasuredCalls alternate those kernels alone and every kernel pooled, each kernel and the whole
// range timed; a kernel whose fastest call alone beat its fastest pooled one by kSerialMargin is a
// candidate. The next kMeasuredCalls alternate the candidates alone (the rest pooled) with all
// pooled. From then on the range runs the way of its fastest whole call among the three (all
// pooled, the cheap ones alone, the candidates alone), all pooled unless another was faster by
// kRangeMargin. A range that does not run all pooled runs pooled every kCheckEvery-th time, and
// starts over when that beat its chosen way (a host whose second core was busy while the range
// chose). A new pool size (runtime::set_num_threads) starts over too. Every way computes the same
// values: the lowering splits no reduction across threads. LOOM_FIXED_PARALLELISM (a flag) turns
// the choice off: every loop goes by the pool's threshold alone.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <limits>
#include <vector>

#include "loom/runtime/env.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/thread_pool.h"

namespace loom::runtime {

class RangeParallelism {
 public:
  static constexpr int kMeasuredCalls = 8;
  static constexpr double kSerialMargin = 0.9;
  static constexpr double kRangeMargin = 0.97;
  static constexpr int kCheckEvery = 8;
  // Only a kernel whose pooled call times the pool size is under this is ever run alone: a
  // larger one alone would take about that long on a pool that speeds it up (16 threads: a 1 ms
  // kernel 16 ms), and such kernels are the ones the pool is for.
  static constexpr double kAloneBudget = 200e-6;
  static_assert(2 * kMeasuredCalls + 1 == GraphExecutor::kSettlingRuns,
                "the executor's settling runs are this choice's");
  enum class Way { Pooled = 0, Serial = 1, Candidates = 2 };

  // Runs kernels [first, last) through `call(k)`, as the choice stands or to make it.
  template <typename Call>
  void run(size_t first, size_t last, Call&& call) {
    const int threads = num_threads();
    if (fixed() || threads == 1) {  // a bad LOOM_FIXED_PARALLELISM is an error on any pool
      for (size_t k = first; k < last; ++k) call(k);
      return;
    }
    if (threads != threads_) restart(threads, last - first);
    if (calls_ > 2 * kMeasuredCalls) {
      if (chosen_ == Way::Pooled) {
        run_as(Way::Pooled, first, last, call, nullptr);
        return;
      }
      // Every kCheckEvery-th run goes pooled: faster than the chosen way's fastest run since the
      // last check, the choice starts over (the host's second core was busy while choosing).
      const bool check = ++since_check_ >= kCheckEvery;
      if (check) since_check_ = 0;  // before the run: a kernel that throws does not stop the checks
      auto start = std::chrono::steady_clock::now();
      run_as(check ? Way::Pooled : chosen_, first, last, call, nullptr);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!check) {
        best_chosen_ = std::min(best_chosen_, seconds);
      } else if (seconds < kRangeMargin * best_chosen_) {
        restart(threads, last - first);
      } else {
        best_chosen_ = std::numeric_limits<double>::infinity();
      }
      return;
    }
    const int n = calls_++;
    const Way way = n == 0 || n % 2 == 0 ? Way::Pooled : n <= kMeasuredCalls ? Way::Serial : Way::Candidates;
    std::vector<double>* per_kernel = n <= kMeasuredCalls ? &best_kernel_[int(way)] : nullptr;
    auto start = std::chrono::steady_clock::now();
    run_as(way, first, last, call, per_kernel);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (n > 0) best_range_[int(way)] = std::min(best_range_[int(way)], seconds);
    if (n == 0)  // the kernels cheap enough to try alone, by their first (cold, so slowest) call
      for (size_t i = 0; i < eligible_.size(); ++i) eligible_[i] = best_kernel_[0][i] * threads < kAloneBudget;
    if (n == kMeasuredCalls)
      for (size_t i = 0; i < candidate_.size(); ++i)
        candidate_[i] = eligible_[i] && best_kernel_[1][i] < kSerialMargin * best_kernel_[0][i];
    if (n == 2 * kMeasuredCalls) choose();
  }

  // The way the range runs once chosen (Pooled while still choosing).
  Way way() const { return calls_ > 2 * kMeasuredCalls ? chosen_ : Way::Pooled; }
  // Whether kernel `first + i` runs serially the way the range runs now.
  bool serial(size_t i) const {
    if (threads_ != num_threads() || fixed()) return false;  // run() would start over, or pool
    return i < candidate_.size() && alone(way(), i);
  }

 private:
  static bool fixed() { return env::flag("LOOM_FIXED_PARALLELISM"); }

  // Whether kernel `first + i` runs alone when the range runs `way`.
  bool alone(Way way, size_t i) const {
    return (way == Way::Serial && eligible_[i]) || (way == Way::Candidates && candidate_[i]);
  }

  void restart(int threads, size_t kernels) {
    threads_ = threads;
    calls_ = 0;
    const double inf = std::numeric_limits<double>::infinity();
    for (auto& b : best_kernel_) b.assign(kernels, inf);
    candidate_.assign(kernels, false);
    eligible_.assign(kernels, false);
    std::fill(std::begin(best_range_), std::end(best_range_), inf);
    chosen_ = Way::Pooled;
    since_check_ = 0;
    best_chosen_ = inf;
  }

  void choose() {
    chosen_ = Way::Pooled;
    double best = kRangeMargin * best_range_[int(Way::Pooled)];
    // A way that runs no kernel alone is the pooled one, whatever its time said.
    const bool any_eligible = std::find(eligible_.begin(), eligible_.end(), true) != eligible_.end();
    const bool any_candidate = std::find(candidate_.begin(), candidate_.end(), true) != candidate_.end();
    for (Way w : {Way::Serial, Way::Candidates})
      if ((w == Way::Serial ? any_eligible : any_candidate) && best_range_[int(w)] < best)
        best = best_range_[int(w)], chosen_ = w;
  }

  template <typename Call>
  void run_as(Way way, size_t first, size_t last, Call& call, std::vector<double>* per_kernel) {
    for (size_t k = first; k < last; ++k) {
      const size_t i = k - first;
      auto start = per_kernel ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      if (alone(way, i)) {
        SerialLoops serial;
        call(k);
      } else {
        call(k);
      }
      if (per_kernel) {
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        (*per_kernel)[i] = std::min((*per_kernel)[i], s);
      }
    }
  }

  int threads_ = 0;                     // the pool size the choice is for
  int calls_ = 0;                       // calls since the choice started
  std::vector<double> best_kernel_[2];  // each kernel's fastest pooled [0] and serial [1] call
  std::vector<bool> eligible_;          // kernels whose calls alone cost at most kAloneBudget
  std::vector<bool> candidate_;         // eligible kernels whose serial call was clearly the faster
  double best_range_[3] = {};           // the range's fastest call, per Way
  Way chosen_ = Way::Pooled;
  int since_check_ = 0;                                           // runs the chosen way since the last pooled check
  double best_chosen_ = std::numeric_limits<double>::infinity();  // their fastest
};

}  // namespace loom::runtime
