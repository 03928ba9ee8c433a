// A persistent pool of worker threads running parallel loops of compiled code. The calling thread
// takes part in every loop; a loop started inside a worker (a nested parallel loop) runs serially.
#pragma once
#include <cstdint>

namespace loom::runtime {

// Number of threads (the caller included) a parallel loop uses. Defaults to the hardware
// concurrency, or to the environment variable LOOM_NUM_THREADS when set.
int num_threads();
// n <= 0 restores the default. Must not be called while a parallel loop runs.
void set_num_threads(int n);

// Parallel loops compiled with a work hint (loom_parallel_for_work; the model compiler's loops, in
// stores: schedule::LowerOptions::parallel_work_hints) run serially below this host's threshold:
// LOOM_MIN_PARALLEL_WORK when set, else parallel_work_threshold(fork_join_ns()), measured per pool
// before its first hinted loop and again at its 1024th and 65536th (the fastest measurement
// stands). 0 with one thread. Starts the pool, and measures if nothing was measured yet, except
// when called from inside a parallel loop (then: what was measured so far).
int64_t min_parallel_work();
// The fastest measured cost of a parallel loop every thread takes part in, in ns (0 with one
// thread, or when LOOM_MIN_PARALLEL_WORK fixes the threshold). As min_parallel_work, it measures
// if nothing was, except inside a parallel loop. With LOOM_SPIN_US=0 the workers sleep between
// loops and the measurement includes their wake-ups (a higher threshold, as it should be).
double fork_join_ns();
// The work threshold for a fork-join cost: proportional to it, within [kMinParallelWorkFloor,
// kMaxParallelWorkThreshold]. The floor is also the model compiler's compile-time threshold
// (graph::BuildOptions::min_parallel_work): no host has measured a fork-join cheap enough for less.
constexpr int64_t kMinParallelWorkFloor = 1024;
constexpr int64_t kMaxParallelWorkThreshold = 1 << 17;
int64_t parallel_work_threshold(double fork_join_ns);

// While one lives, every parallel loop the calling thread starts runs on that thread alone (as one
// nested in a parallel loop does): a kernel that runs faster serially (the graph executor's
// choice per kernel, runtime/src/kernel_parallelism.h).
class SerialLoops {
 public:
  SerialLoops();
  ~SerialLoops();
  SerialLoops(const SerialLoops&) = delete;
  SerialLoops& operator=(const SerialLoops&) = delete;

 private:
  bool previous_;
};
// Whether a parallel loop started on this thread now runs on it alone: inside a parallel loop, or
// while a SerialLoops lives.
bool parallel_loops_serial();

}  // namespace loom::runtime

extern "C" {
// Body of a parallel loop: runs iterations [begin, end); non-zero means failure.
typedef int32_t (*LoomParallelBody)(int64_t begin, int64_t end, void* closure);
// Runs `body` on contiguous chunks covering [0, extent) exactly once, on all threads. Thread t
// (the caller is thread 0) runs the t-th of `threads` equal parts first, so loops split alike hand
// each thread the data it wrote before; a thread done with its part helps the others from their
// far ends, so uneven iterations balance. Returns 0, or the first non-zero code a chunk returned
// (its loom_set_last_error message is moved to the caller).
int32_t loom_parallel_for(int64_t extent, LoomParallelBody body, void* closure);
// The same, for a loop doing `work` units of work (stores, as the lowering counts them): serial on
// the calling thread below loom::runtime::min_parallel_work().
int32_t loom_parallel_for_work(int64_t extent, LoomParallelBody body, void* closure, int64_t work);
// The same (`work` < 0: no hint), in alternating directions on successive calls that share
// `direction` (a word the caller keeps, 0 at first): every other call runs each thread's part from
// its far end, so a call starts on what the call before finished with, still in that core's cache
// (a recurrent step's weights, re-read whole at every step and larger than a core's L2).
int32_t loom_parallel_for_alternating(int64_t extent, LoomParallelBody body, void* closure, int64_t work,
                                      int32_t* direction);
}
