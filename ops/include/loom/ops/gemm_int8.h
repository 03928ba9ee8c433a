// int8 GEMM on the CPU, the CPU half of quantized models: C[M, N] (int32) = A[M, K] (int8 or
// uint8) x B[K, N] (int8), exact (no intermediate saturation, unlike vpmaddubsw kernels).
//
// A is widened to int16 and B packed into panels of nv x lanes columns of int16 pairs
// (Bp[panel, k / 2, column, k % 2], zero-padded to whole pairs and panels). The register tile (mr
// rows x nv vectors of `lanes` int32) accumulates across K with the CPU's pairwise dot product
// (ir::kCpuDot2I16, tensorized): pmaddwd multiplies 2 x lanes pairs and adds them pairwise in one
// instruction (as many multiplies per instruction as vpmaddubsw + vpmaddwd, the non-VNNI int8
// path of oneDNN), and VNNI's vpdpwssd also does the accumulation.
#pragma once
#include "loom/ir/tensor.h"
#include "loom/schedule/schedule.h"
#include "loom/schedule/tensor_intrin.h"

namespace loom::ops {

struct Int8GemmTiling {
  int mr = 4;     // rows of C in registers
  int nv = 3;     // vectors of columns in registers (panel width nv x lanes)
  int lanes = 8;  // int32 lanes per vector
  int panel() const { return nv * lanes; }
};

// The register tile for `int32_lanes` per vector and `vector_registers` registers: mr x nv
// accumulators plus nv B vectors and the broadcast A pair, with no more columns than N needs.
// AVX2 (8 lanes, 16 registers): 4 x 3; AVX-512 (16, 32): 8 x 3; NEON (4, 32): 8 x 3.
Int8GemmTiling int8_gemm_tiling_for(int int32_lanes, int vector_registers, int64_t M, int64_t N);

// out[l] = sum_j int32(a[j]) * int32(b[l, j]) over j < 2 (a: int16[2], b: int16[lanes, 2]): the
// tensor intrinsic the LLVM backend emits as pmaddwd / vpdpwssd.
schedule::TensorIntrin cpu_dot2_i16_intrin(int lanes);

// The product and its stages: the widened A (tag "widen"), packed B (tag "pack"), the blocked
// accumulators Cb[M, panels, panel] (tag "gemm_int8_acc") and C (tag "gemm_int8").
ir::Tensor gemm_int8(const ir::Tensor& A, const ir::Tensor& B, const Int8GemmTiling& t, const std::string& name = "C");
// Register tiles over a parallel loop of column panels (rows too when panels are few); the
// accumulators stay in a local cache across K; widening and packing in parallel loops.
void schedule_gemm_int8_cpu(schedule::Schedule& s, const ir::Tensor& C, const Int8GemmTiling& t);

}  // namespace loom::ops
