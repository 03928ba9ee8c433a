#include "loom/runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loom/runtime/module.h"

namespace loom::runtime {

namespace {

// True on pool workers, and on a caller while it runs a loop: a parallel loop started there runs
// serially instead of waiting for workers that are busy with the enclosing loop.
thread_local bool tls_in_parallel = false;

int default_num_threads() {
  if (const char* env = std::getenv("LOOM_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// [begin, end) of chunk i when `extent` iterations are split into `chunks` nearly equal parts.
void chunk_range(int64_t extent, int64_t chunks, int64_t i, int64_t* begin, int64_t* end) {
  int64_t base = extent / chunks, rem = extent % chunks;
  *begin = i * base + std::min(i, rem);
  *end = *begin + base + (i < rem ? 1 : 0);
}

class ThreadPool {
 public:
  explicit ThreadPool(int threads) : threads_(threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
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

  int32_t run(int64_t extent, LoomParallelBody body, void* closure) {
    // Loops started concurrently by different application threads take turns.
    std::lock_guard<std::mutex> run_lock(run_mu_);
    {
      std::unique_lock<std::mutex> lock(mu_);
      // A worker that woke late for the previous loop may still be looking at its counter.
      done_cv_.wait(lock, [this] { return active_ == 0; });
      body_ = body;
      closure_ = closure;
      extent_ = extent;
      chunks_ = std::min<int64_t>(threads_, extent);
      next_chunk_.store(0);
      pending_ = chunks_;
      error_code_ = 0;
      error_message_.clear();
      ++generation_;
    }
    start_cv_.notify_all();
    tls_in_parallel = true;
    work();
    tls_in_parallel = false;
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return pending_ == 0; });
    if (error_code_ != 0) loom_set_last_error(error_message_.c_str());
    return error_code_;
  }

 private:
  void worker_loop() {
    tls_in_parallel = true;
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        ++active_;
      }
      work();
      std::lock_guard<std::mutex> lock(mu_);
      if (--active_ == 0) done_cv_.notify_all();
    }
  }

  // Claims chunks until none is left.
  void work() {
    for (;;) {
      int64_t i = next_chunk_.fetch_add(1);
      if (i >= chunks_) return;
      int64_t begin, end;
      chunk_range(extent_, chunks_, i, &begin, &end);
      int32_t rc = body_(begin, end, closure_);
      std::lock_guard<std::mutex> lock(mu_);
      if (rc != 0 && error_code_ == 0) {
        error_code_ = rc;
        const char* msg = loom_get_last_error();
        error_message_ = msg ? msg : "";
      }
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  bool stop_ = false;
  uint64_t generation_ = 0;
  // The loop being run (written under mu_ before generation_ changes).
  LoomParallelBody body_ = nullptr;
  void* closure_ = nullptr;
  int64_t extent_ = 0, chunks_ = 0;
  std::atomic<int64_t> next_chunk_{0};
  int64_t pending_ = 0;
  int active_ = 0;  // workers inside work()
  int32_t error_code_ = 0;
  std::string error_message_;
};

std::mutex g_pool_mu;
int g_requested_threads = 0;  // 0: default
std::unique_ptr<ThreadPool> g_pool;

ThreadPool& pool() {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (!g_pool) g_pool = std::make_unique<ThreadPool>(g_requested_threads > 0 ? g_requested_threads : default_num_threads());
  return *g_pool;
}

}  // namespace

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

extern "C" int32_t loom_parallel_for(int64_t extent, LoomParallelBody body, void* closure) {
  using namespace loom::runtime;
  if (extent <= 0) return 0;
  if (tls_in_parallel || extent == 1) return body(0, extent, closure);
  ThreadPool& p = pool();
  if (p.threads() == 1) return body(0, extent, closure);
  return p.run(extent, body, closure);
}
