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

}  // namespace loom::runtime

extern "C" {
// Body of a parallel loop: runs iterations [begin, end); non-zero means failure.
typedef int32_t (*LoomParallelBody)(int64_t begin, int64_t end, void* closure);
// Runs `body` on contiguous chunks covering [0, extent) exactly once, on all threads. Chunks are
// claimed dynamically and shrink as the loop drains (guided scheduling: each takes 1/(4 x threads)
// of what is left), so uneven iterations balance. Returns 0, or the first non-zero code a chunk
// returned (its loom_set_last_error message is moved to the caller).
int32_t loom_parallel_for(int64_t extent, LoomParallelBody body, void* closure);
}
