// Load balancing of loom_parallel_for on uneven loops: iteration i costs ~i (triangular work, like
// the rows of a triangular solve or an attention mask) or the first quarter of the iterations costs
// 8x the rest (rows of different cost). The runtime's scheduling (each thread starts on its own
// part, then helps the others) against a static split into one contiguous chunk per thread, at
// every thread count up to the
// machine's, in the same run. Prints the speedup over one thread of each. Then the fork-join cost:
// loops of n cheap iterations (one float update each) called back to back, microseconds per call
// at every thread count: what a kernel too small to share pays for its parallel loop. Last, the
// round trip of one cache line between two threads, which sets what a kernel pays for reading
// data the other thread wrote (it moves between spells on some VMs).
//   parallel_bench [--n 4000] [--reps 5]
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "baselines.h"
#include "loom/runtime/thread_pool.h"

namespace {

struct Work {
  int64_t n;
  bool triangular;
  std::vector<double> out;
};

// ~cost(i) units of floating-point work for iteration i.
int64_t cost(const Work& w, int64_t i) { return w.triangular ? i + 1 : (i < w.n / 4 ? 8 * 64 : 64); }

void iteration(Work& w, int64_t i) {
  double acc = 0;
  for (int64_t k = 0; k < cost(w, i) * 64; ++k) acc += std::sqrt(double(k + i));
  w.out[size_t(i)] = acc;
}

int32_t pool_body(int64_t b, int64_t e, void* c) {
  for (int64_t i = b; i < e; ++i) iteration(*static_cast<Work*>(c), i);
  return 0;
}

struct Static {
  Work* w;
  int threads;
};
int32_t static_body(int64_t b, int64_t e, void* c) {
  auto* s = static_cast<Static*>(c);
  for (int64_t t = b; t < e; ++t) {
    int64_t lo = s->w->n * t / s->threads, hi = s->w->n * (t + 1) / s->threads;
    for (int64_t i = lo; i < hi; ++i) iteration(*s->w, i);
  }
  return 0;
}

int32_t cheap_body(int64_t b, int64_t e, void* c) {
  float* a = static_cast<float*>(c);
  for (int64_t i = b; i < e; ++i) a[i] = a[i] * 1.0001f + 1.0f;
  return 0;
}

// One cache line sent to the other thread and back `trips` times: each thread waits for the
// other's count and answers with the next.
void ping_pong(int trips) {
  std::atomic<int> count{0};
  std::thread other([&] {
    for (int i = 0; i < trips; ++i) {
      while (count.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      count.store(2 * i + 2, std::memory_order_release);
    }
  });
  for (int i = 0; i < trips; ++i) {
    count.store(2 * i + 1, std::memory_order_release);
    while (count.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  other.join();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 4000;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--n")
      n = std::stoll(v);
    else if (a == "--reps")
      reps = std::stoi(v);
    else {
      std::fprintf(stderr, "usage: parallel_bench [--n 4000] [--reps 5]\n");
      return 2;
    }
  }
  int max_threads = int(std::thread::hardware_concurrency());
  std::printf("loom_parallel_for on uneven loops, %lld iterations, best of %d\n", (long long)n, reps);
  std::printf("%-12s %8s %12s %12s %10s %10s\n", "loop", "threads", "pool ms", "static ms", "pool x", "static x");
  for (bool tri : {true, false}) {
    Work w{n, tri, std::vector<double>(size_t(n))};
    double one_g = 0, one_s = 0;
    for (int t = 1; t <= max_threads; ++t) {
      loom::runtime::set_num_threads(t);
      Static st{&w, t};
      double g = loom::bench::time_best_of(reps, [&] { loom_parallel_for(n, pool_body, &w); });
      double s = loom::bench::time_best_of(reps, [&] { loom_parallel_for(t, static_body, &st); });
      if (t == 1) one_g = g, one_s = s;
      std::printf("%-12s %8d %12.2f %12.2f %10.2f %10.2f\n", tri ? "triangular" : "heavy start", t, g * 1e3, s * 1e3,
                  one_g / g, one_s / s);
    }
  }
  std::printf("\nfork-join: loops of cheap iterations called back to back, microseconds per call (best of %d)\n", reps);
  std::printf("%-12s", "iterations");
  for (int t = 1; t <= max_threads; ++t) std::printf(" %9d thr", t);
  std::printf("\n");
  std::vector<float> data(1 << 16, 1.0f);
  for (int64_t iters : {int64_t(2), int64_t(1024), int64_t(16384), int64_t(65536)}) {
    std::printf("%-12lld", (long long)iters);
    for (int t = 1; t <= max_threads; ++t) {
      loom::runtime::set_num_threads(t);
      const int calls = 2000;
      double best = loom::bench::time_best_of(reps, [&] {
        for (int c = 0; c < calls; ++c) loom_parallel_for(iters, cheap_body, data.data());
      });
      std::printf(" %10.2f us", best / calls * 1e6);
    }
    std::printf("\n");
  }
  // What the runtime measures for itself when a model's first hinted loop runs (a loop every
  // thread takes part in), and the work threshold it derives.
  std::printf("\nruntime's own measurement (runtime::fork_join_ns, min_parallel_work):\n");
  for (int t = 2; t <= max_threads; ++t) {
    loom::runtime::set_num_threads(t);
    std::printf("%d threads: fork-join %.2f us, parallel loops from %lld work\n", t,
                loom::runtime::fork_join_ns() / 1e3, (long long)loom::runtime::min_parallel_work());
  }
  if (max_threads >= 2) {
    loom::runtime::set_num_threads(1);  // no pool worker spinning beside the two threads
    const int trips = 200000;
    std::printf("\ncache-line round trip between two threads, ns (best of %d or more, %d trips each):", reps, trips);
    double best_s = loom::bench::time_best_of(reps, [&] { ping_pong(trips); });
    std::printf(" %.0f\n", best_s * 1e9 / trips);
  }
  return 0;
}
