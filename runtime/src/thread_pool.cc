#include "loom/runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loom/runtime/env.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"

namespace loom::runtime {

namespace {

// True on pool workers, and on a caller while it runs a loop: a parallel loop started there runs
// serially instead of waiting for workers that are busy with the enclosing loop.
thread_local bool tls_in_parallel = false;

int default_num_threads() {
  if (auto n = env::integer("LOOM_NUM_THREADS", 1, 4096)) return int(*n);
  return std::max(1u, std::thread::hardware_concurrency());
}

// Every thread owns a contiguous part of each loop, its home: thread t the t-th of `threads` equal
// parts, the caller the first. Kernels of a model split their loops alike (rows of a map first,
// ops/src/cpu_model_schedules.cc), so a thread reads mostly what it wrote in the kernel before; a
// line written by another core costs a transfer between their caches, which on hosts whose cores
// share no cache made 2 threads no faster than 1 (docs/cpu_backend.md). A thread takes a quarter
// of what is left of its home at a time, and when that is done half of what is left of another's,
// from its far end: a thread that is late, descheduled or given costlier iterations is helped,
// and the helper's claims stay off the owner's next ones. (Halves of its own home gave a loop whose
// first quarter costs 8x the rest 1.4x on 2 threads: the owner's first claim held most of the work.)
struct alignas(64) HomeRange {
  std::atomic<uint64_t> span{0};  // first unclaimed unit << 32 | end of the unclaimed units
};

// Claims from `home` (at least one unit): a quarter of what is left from its front for its owner,
// half of it from its back for a helper. False when nothing is left.
bool claim_half(HomeRange& home, bool owner, int64_t& begin, int64_t& end) {
  uint64_t span = home.span.load(std::memory_order_relaxed);
  for (;;) {
    const uint32_t front = uint32_t(span >> 32), back = uint32_t(span);
    if (front >= back) return false;
    const uint32_t piece = owner ? (back - front + 3) / 4 : std::max<uint32_t>(1, (back - front) / 2);
    const uint64_t next = owner ? (uint64_t(front + piece) << 32 | back) : (uint64_t(front) << 32 | (back - piece));
    if (home.span.compare_exchange_weak(span, next, std::memory_order_relaxed)) {
      begin = owner ? front : back - piece;
      end = owner ? front + piece : back;
      return true;
    }
  }
}

// Homes hold 32-bit unit indices: a loop of more iterations claims units of several.
constexpr int64_t kMaxUnits = int64_t(1) << 31;

// How long a worker that finished a loop watches for the next one before it sleeps. Waking a
// sleeping thread can take longer than a whole small kernel, whose chunks the caller then claims
// alone (docs/cpu_backend.md). Models run such loops back to back. LOOM_SPIN_US overrides it
// (0: always sleep, e.g. when other processes need the cores).
std::chrono::microseconds spin_time_from_env() {
  return std::chrono::microseconds(env::integer("LOOM_SPIN_US", 0, 10'000'000).value_or(300));
}

// A parallel loop doing less work than this many stores (the lowering's work count,
// schedule::passes::serialize_small_parallel) per nanosecond of the pool's measured fork-join
// (measure_fork_join_ns) runs serially: a host whose fork-join costs more keeps more loops serial.
// The factor was fitted on hosts whose fork-join costs differed by a factor of several, and the
// best threshold followed it (the measurements: docs/cpu_backend.md).
constexpr double kWorkPerForkJoinNs = 4.0;

std::optional<int64_t> min_parallel_work_from_env() {
  return env::integer("LOOM_MIN_PARALLEL_WORK", 0, int64_t(1) << 50);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
class ThreadPool {
 public:
  // Reads LOOM_SPIN_US here, on the thread that creates the pool, so that a bad value is an error
  // there and not in a worker.
  explicit ThreadPool(int threads)
      : threads_(threads),
        spin_(spin_time_from_env()),
        fixed_min_work_(min_parallel_work_from_env()),
        homes_(new HomeRange[size_t(threads)]) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    start_cv_.notify_all();
    for (auto& w : workers_) w.join();
  }

  int threads() const { return threads_; }

  // The work below which a loop with a work hint runs serially: LOOM_MIN_PARALLEL_WORK, or
  // parallel_work_threshold of the fastest fork-join measured so far. Measured before the first
  // hinted loop and again at its 1024th and 65536th: a measurement only ever comes out slow (a busy
  // moment at start-up), so the fastest one stands. Only from outside a parallel loop (run()).
  int64_t min_parallel_work_for_hinted_loop() {
    if (fixed_min_work_) return *fixed_min_work_;
    uint64_t n = hinted_loops_.fetch_add(1, std::memory_order_relaxed);
    if (n == 0 || n == 1024 || n == 65536) measure();
    return parallel_work_threshold(fork_join_ns_.load(std::memory_order_relaxed));
  }
  // The same without counting a loop; measures once if nothing was, unless `may_measure` is false
  // (inside a parallel loop, where run() cannot be called).
  int64_t min_parallel_work(bool may_measure) {
    if (fixed_min_work_) return *fixed_min_work_;
    return parallel_work_threshold(fork_join_ns(may_measure));
  }
  double fork_join_ns(bool may_measure) {
    if (fixed_min_work_) return 0;
    if (may_measure && !measured_.load()) measure();
    return fork_join_ns_.load(std::memory_order_relaxed);
  }

  // `backwards`: each home's units from its far end (claims mirrored within the home), so the
  // thread keeps its part of the loop and meets last what it met first in a forward call.
  int32_t run(int64_t extent, LoomParallelBody body, void* closure, bool backwards = false) {
    // Loops started concurrently by different application threads take turns.
    std::lock_guard<std::mutex> run_lock(run_mu_);
    // A worker that finished its last chunk of the previous loop may not have left it yet: watched
    // for, as the caller otherwise sleeps on done_cv_ and a wake-up costs more than a small kernel.
    spin_until([this] { return active_.load(std::memory_order_acquire) == 0; });
    {
      std::unique_lock<std::mutex> lock = lock_mu();
      // A worker that woke late for the previous loop may still be looking at its counter.
      done_cv_.wait(lock, [this] { return active_.load() == 0; });
      body_ = body;
      closure_ = closure;
      extent_ = extent;
      unit_ = extent > kMaxUnits ? (extent + kMaxUnits - 1) / kMaxUnits : 1;
      backwards_ = backwards;
      for (int t = 0; t < threads_; ++t)
        homes_[size_t(t)].span.store(uint64_t(home_begin(t)) << 32 | uint64_t(home_begin(t + 1)),
                                     std::memory_order_relaxed);
      pending_.store(unit_count());
      error_code_ = 0;
      error_message_.clear();
      generation_.fetch_add(1);
    }
    start_cv_.notify_all();
    tls_in_parallel = true;
    work(0);
    tls_in_parallel = false;
    // The other threads' last chunks: watched for a while (they are usually running), then slept on.
    spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; });
    // Done while watching: no lock (a worker leaving the loop takes it, and waiting for it there
    // can put the caller to sleep). A failing chunk wrote the error before its pending_ update.
    if (pending_.load(std::memory_order_acquire) != 0) {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, [this] { return pending_.load() == 0; });
    }
    if (error_code_ != 0) loom_set_last_error(error_message_.c_str());
    return error_code_;
  }

 private:
  void worker_loop(int self) {
    tls_in_parallel = true;
    uint64_t seen = 0;
    for (;;) {
      // A loop after `seen` (or stop): watched for a while before sleeping, which only saves the
      // sleep and wake-up (the lock below checks again).
      spin_until(
          [&] { return generation_.load(std::memory_order_acquire) != seen || stop_.load(std::memory_order_relaxed); });
      {
        std::unique_lock<std::mutex> lock = lock_mu();
        start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        ++active_;
      }
      work(self);
      std::unique_lock<std::mutex> lock = lock_mu();
      if (--active_ == 0) done_cv_.notify_all();
    }
  }

  // mu_, tried for a while before blocking: the caller and a worker take it at the same moments
  // (a loop's start and end), each for a few instructions, and a blocked lock() sleeps in the
  // kernel, whose wake-up cost more than the whole fork-join (parallel_bench's barrier loops: 4-5
  // µs with lock(), docs/cpu_backend.md).
  std::unique_lock<std::mutex> lock_mu() {
    if (spin_.count() > 0)
      for (int i = 0; i < 256; ++i) {
        if (mu_.try_lock()) return std::unique_lock<std::mutex>(mu_, std::adopt_lock);
        cpu_relax();
      }
    return std::unique_lock<std::mutex>(mu_);
  }

  // Busy-waits until `done()` or for up to spin_ (0: not at all); callers check again under the
  // lock, so this only saves a sleep and a wake-up.
  template <typename Done>
  void spin_until(Done done) const {
    if (spin_.count() == 0) return;
    auto start = std::chrono::steady_clock::now();
    for (unsigned i = 1; !done(); ++i) {
      cpu_relax();
      if (i % 64 == 0 && std::chrono::steady_clock::now() - start > spin_) return;
    }
  }

  void measure() {
    std::lock_guard<std::mutex> lock(measure_mu_);
    double ns = measure_fork_join_ns();
    if (!measured_.load() || ns < fork_join_ns_.load()) fork_join_ns_.store(ns);
    measured_.store(true);
  }

  // What a loop that every thread takes part in costs, hot (the workers spinning, as between a
  // model's kernels): one iteration per thread, each waiting until all have started (a claim the
  // caller could make alone would measure only the caller). The fastest of 8 batches' mean of 64
  // loops, after 16 to wake the workers: a noisy neighbour only ever makes a batch slower.
  double measure_fork_join_ns() {
    struct Barrier {
      std::atomic<int64_t> arrived{0};
      int64_t n = 0;
      bool yield = false;  // LOOM_SPIN_US=0: nobody busy-waits
    } barrier;
    barrier.n = threads_;
    barrier.yield = spin_.count() == 0;
    auto meet = [](int64_t, int64_t, void* c) -> int32_t {
      auto* b = static_cast<Barrier*>(c);
      b->arrived.fetch_add(1);
      // Bounded: a worker the OS does not run for 100 µs only makes this batch slow.
      auto start = std::chrono::steady_clock::now();
      for (unsigned i = 1; b->arrived.load() < b->n; ++i) {
        if (b->yield)
          std::this_thread::yield();
        else
          cpu_relax();
        if (i % 64 == 0 && std::chrono::steady_clock::now() - start > std::chrono::microseconds(100)) break;
      }
      return 0;
    };
    auto loop = [&] {
      barrier.arrived.store(0);
      run(threads_, meet, &barrier);
    };
    for (int i = 0; i < 16; ++i) loop();
    double best = std::numeric_limits<double>::infinity();
    for (int batch = 0; batch < 8; ++batch) {
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < 64; ++i) loop();
      std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
      best = std::min(best, took.count() / 64);
    }
    return best;
  }

  // Runs thread `self`'s home, then helps the others, until no unit is left.
  void work(int self) {
    for (;;) {
      int64_t begin, end;
      int home = self;
      bool claimed = claim_half(homes_[size_t(self)], true, begin, end);
      for (int d = 1; !claimed && d < threads_; ++d) {
        home = (self + d) % threads_;
        claimed = claim_half(homes_[size_t(home)], false, begin, end);
      }
      if (!claimed) return;
      const int64_t units = end - begin;
      if (backwards_) {
        const int64_t mirror = home_begin(home) + home_begin(home + 1);
        const int64_t first = mirror - end;
        end = mirror - begin;
        begin = first;
      }
      begin *= unit_;
      end = std::min(extent_, end * unit_);
      int32_t rc = body_(begin, end, closure_);
      if (rc != 0) {
        std::lock_guard<std::mutex> lock(mu_);
        if (error_code_ == 0) {
          error_code_ = rc;
          const char* msg = loom_get_last_error();
          error_message_ = msg ? msg : "";
        }
      }
      // The chunk that finishes the loop wakes a caller that stopped watching (under the lock, so
      // the wake-up cannot fall between its check and its wait).
      if (pending_.fetch_sub(units, std::memory_order_acq_rel) == units) {
        std::lock_guard<std::mutex> lock(mu_);
        done_cv_.notify_all();
      }
    }
  }

  // The loop's units, and the first unit of thread t's home (t == threads_: the loop's end).
  int64_t unit_count() const { return (extent_ + unit_ - 1) / unit_; }
  int64_t home_begin(int t) const { return unit_count() * t / threads_; }

  const int threads_;
  const std::chrono::microseconds spin_;
  const std::optional<int64_t> fixed_min_work_;  // LOOM_MIN_PARALLEL_WORK
  std::mutex measure_mu_;                        // one measurement at a time
  std::atomic<bool> measured_{false};
  std::atomic<double> fork_join_ns_{0};  // the fastest measured (0: none yet, the floor's threshold)
  std::atomic<uint64_t> hinted_loops_{0};
  std::vector<std::thread> workers_;
  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  std::atomic<bool> stop_{false};        // written under mu_; read without it while spinning
  std::atomic<uint64_t> generation_{0};  // written under mu_; read without it while spinning
  // The loop being run (written under mu_ before generation_ changes).
  LoomParallelBody body_ = nullptr;
  void* closure_ = nullptr;
  int64_t extent_ = 0;
  int64_t unit_ = 1;                             // iterations per claimed unit
  bool backwards_ = false;                       // claims mirrored within their home
  std::unique_ptr<HomeRange[]> homes_;           // one per thread, each on its own cache line
  alignas(64) std::atomic<int64_t> pending_{0};  // units not finished yet
  alignas(64) std::atomic<int> active_{0};       // workers inside work() (written under mu_; off pending_'s line)
  int32_t error_code_ = 0;
  std::string error_message_;
};

std::mutex g_pool_mu;
int g_requested_threads = 0;  // 0: default
std::unique_ptr<ThreadPool> g_pool;

ThreadPool& pool() {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (!g_pool)
    g_pool = std::make_unique<ThreadPool>(g_requested_threads > 0 ? g_requested_threads : default_num_threads());
  return *g_pool;
}

// pool(), reporting its errors (a bad LOOM_NUM_THREADS) as a failed loop: -1 with the message set,
// not an exception through compiled code.
ThreadPool* pool_or_error() {
  try {
    return &pool();
  } catch (const loom::Error& e) {
    loom_set_last_error(e.what());
    return nullptr;
  }
}

}  // namespace

int64_t parallel_work_threshold(double fork_join_ns) {
  double work = std::max(0.0, fork_join_ns) * kWorkPerForkJoinNs;
  return std::clamp<int64_t>(int64_t(std::llround(std::min(work, 1e15))), kMinParallelWorkFloor,
                             kMaxParallelWorkThreshold);
}

int64_t min_parallel_work() {
  ThreadPool& p = pool();
  return p.threads() == 1 ? 0 : p.min_parallel_work(!tls_in_parallel);
}

double fork_join_ns() {
  ThreadPool& p = pool();
  return p.threads() == 1 ? 0 : p.fork_join_ns(!tls_in_parallel);
}

SerialLoops::SerialLoops() : previous_(tls_in_parallel) { tls_in_parallel = true; }
SerialLoops::~SerialLoops() { tls_in_parallel = previous_; }
bool parallel_loops_serial() { return tls_in_parallel; }

int num_threads() {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (g_pool) return g_pool->threads();
  return g_requested_threads > 0 ? g_requested_threads : default_num_threads();
}

void set_num_threads(int n) {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  g_requested_threads = std::max(n, 0);
  g_pool.reset();  // the next loop starts a pool of the new size
}

}  // namespace loom::runtime

namespace loom::runtime {
namespace {

// A loop run serially, forwards or from its last iterations (in up to 64 chunks, each run
// forwards).
int32_t run_serially(int64_t extent, LoomParallelBody body, void* closure, bool backwards) {
  if (!backwards) return body(0, extent, closure);
  const int64_t chunk = (extent + 63) / 64;
  for (int64_t end = extent; end > 0; end -= chunk)
    if (int32_t rc = body(std::max<int64_t>(0, end - chunk), end, closure)) return rc;
  return 0;
}

// Every entry point: with a `work` hint, serial below the pool's threshold.
int32_t parallel_for(int64_t extent, LoomParallelBody body, void* closure, std::optional<int64_t> work,
                     bool backwards = false) {
  if (extent <= 0) return 0;
  if (tls_in_parallel || extent == 1) return run_serially(extent, body, closure, backwards);
  ThreadPool* p = pool_or_error();
  if (!p) return -1;
  if (p->threads() == 1 || (work && *work < p->min_parallel_work_for_hinted_loop()))
    return run_serially(extent, body, closure, backwards);
  return p->run(extent, body, closure, backwards);
}

}  // namespace
}  // namespace loom::runtime

extern "C" int32_t loom_parallel_for(int64_t extent, LoomParallelBody body, void* closure) {
  return loom::runtime::parallel_for(extent, body, closure, std::nullopt);
}

extern "C" int32_t loom_parallel_for_work(int64_t extent, LoomParallelBody body, void* closure, int64_t work) {
  return loom::runtime::parallel_for(extent, body, closure, work);
}

extern "C" int32_t loom_parallel_for_alternating(int64_t extent, LoomParallelBody body, void* closure, int64_t work,
                                                 int32_t* direction) {
  if (extent <= 0) return 0;  // no call to alternate with
  // Relaxed: the direction only picks an order, and calls that race on it still cover the loop.
  const bool backwards = (__atomic_fetch_xor(direction, 1, __ATOMIC_RELAXED) & 1) != 0;
  std::optional<int64_t> hint;
  if (work >= 0) hint = work;
  return loom::runtime::parallel_for(extent, body, closure, hint, backwards);
}
