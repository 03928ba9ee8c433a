// Internal to loom_ops: the register-tiled GEMM schedule shared by fp32 GEMM (cpu_schedules.cc)
// and the direct int8 form (gemm_int8.cc).
#pragma once
#include "loom/ops/cpu_schedules.h"

namespace loom::ops::detail {

// Products smaller than this many multiply-adds finish before a worker thread wakes: no
// parallel loop (such a product ran slower on 2 threads than on 1).
inline constexpr double kMinParallelMacs = 1 << 16;

// C in t.mr x t.nr tiles over a parallel loop of column panels, accumulated in a local cache
// across the whole reduction (unrolled by t.k_unroll when it divides K), vectorized over columns.
void schedule_gemm_tiles(schedule::Schedule& s, const ir::Tensor& C, const GemmTiling& t, int64_t K);

}  // namespace loom::ops::detail
