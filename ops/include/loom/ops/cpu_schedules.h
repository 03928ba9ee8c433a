// Tuned CPU schedules for the operators in nn.h, written with the public schedule primitives.
#pragma once
#include "loom/ops/nn.h"
#include "loom/schedule/schedule.h"

namespace loom::ops {

struct GemmTiling {
  int mr = 8;    // rows of C kept in registers
  int nr = 32;   // columns of C kept in registers (a multiple of the vector width)
  int kc = 256;  // reduction block kept hot in cache
};

// Schedules C = matmul_packed(A, B, nr): packs B in parallel, then computes C in mr x nr register
// tiles accumulated in a local cache across the whole reduction, over a parallel outer loop.
void schedule_matmul_packed_cpu(schedule::Schedule& s, const Tensor& C, const GemmTiling& t = {});

// Schedules Y = conv2d_nchw(...): output channels blocked by `oc_block`, output rows in
// registers along x (vectorized), padding computed per output row block.
void schedule_conv2d_nchw_cpu(schedule::Schedule& s, const Tensor& Y, int oc_block = 16, int x_block = 16);

}  // namespace loom::ops
