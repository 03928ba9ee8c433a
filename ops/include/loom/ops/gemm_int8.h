// int8 GEMM on the CPU, the CPU half of quantized models: C[M, N] (int32) = A[M, K] (int8 or
// uint8) x B[K, N] (int8). Two forms, both exact where they are used:
//
// Pairs16 (any A, any B): A widened to int16, B packed into panels of nv x lanes columns of int16
// pairs (Bp[panel, k / 2, column, k % 2]); the CPU's pairwise dot product (ir::kCpuDot2I16:
// pmaddwd, vpdpwssd with VNNI). Per 16 multiply-adds: one multiply and one add instruction.
// Bytes4 (uint8 A): B packed in groups of 4 bytes along K (Bp[panel, k / 4, column, k % 4]); the
// byte dot product (ir::kCpuDot4U8S7): vpdpbusd with VNNI (exact for any B: 64 multiply-adds per
// instruction on 512 bits), else vpmaddubsw + pmaddwd by ones as oneDNN's non-VNNI kernels do.
// vpmaddubsw saturates its int16 pair sums, so without VNNI Bytes4 is exact only for weights
// whose pairs along K have |b0| + |b1| <= 128 (int8_weights_fit_bytes4): oneDNN's u8s8s32 GEMM
// on such a machine returns wrong results for full-range weights (gemm_int8_bench --full-range 1);
// int8_gemm_tiling_for never chooses Bytes4 there unless the weights were checked.
//
// Panels are zero-padded to whole groups and columns. The register tile (mr rows x nv vectors of
// `lanes` int32) accumulates across K in registers.
#pragma once
#include "loom/ir/tensor.h"
#include "loom/runtime/ndarray.h"
#include "loom/schedule/schedule.h"
#include "loom/schedule/tensor_intrin.h"

namespace loom::ops {

// Direct (few rows, M <= 4): no packing, which would cost as much as the product; each k adds
// int32(A[m, k]) x widened B[k, columns] to the tile's accumulators.
enum class Int8GemmForm { Pairs16, Bytes4, Direct };
const char* to_string(Int8GemmForm f);

struct Int8GemmTiling {
  int mr = 6;     // rows of C in registers
  int nv = 2;     // vectors of columns in registers (panel width nv x lanes)
  int lanes = 8;  // int32 lanes per vector
  Int8GemmForm form = Int8GemmForm::Pairs16;
  int panel() const { return nv * lanes; }
  int group() const { return form == Int8GemmForm::Pairs16 ? 2 : 4; }  // multiply-adds per lane per instruction
};

// The register tile for `int32_lanes` per vector and `vector_registers` registers: mr x nv
// accumulators plus the nv B vectors, the broadcast A group and the temporaries the form needs
// without accumulating dot products (`int8_dot` false: the product, and for Bytes4 the ones),
// with no more columns than N needs. AVX2 (8 lanes, 16 registers): 6 x 2 (Pairs16), 5 x 2
// (Bytes4); AVX-512 (16, 32): 8 x 3. Direct: all M rows (at most 8), up to 4 vectors.
Int8GemmTiling int8_gemm_tiling_for(int int32_lanes, int vector_registers, int64_t M, int64_t N,
                                    Int8GemmForm form = Int8GemmForm::Pairs16, bool int8_dot = false);
// Whether Bytes4 is exact for weights B [K, N] (int8) on a target without VNNI: every pair
// (B[2i, n], B[2i + 1, n]) has |b0| + |b1| <= 128.
bool int8_weights_fit_bytes4(const NDArray& B);

// out[l] = sum_j int32(a[j]) * int32(b[l, j]) over j < 2 (a: int16[2], b: int16[lanes, 2]): the
// tensor intrinsic the LLVM backend emits as pmaddwd / vpdpwssd.
schedule::TensorIntrin cpu_dot2_i16_intrin(int lanes);
// The same over j < 4 with a: uint8[4], b: int8[lanes, 4] (ir::kCpuDot4U8S7 and its contract).
schedule::TensorIntrin cpu_dot4_u8s7_intrin(int lanes);

// The product and its stages: A widened (Pairs16) or padded to whole groups (Bytes4, odd K; tag
// "widen"), packed B (tag "pack"), the blocked accumulators Cb[M, panels, panel] (tag
// "gemm_int8_acc") and C (tag "gemm_int8"). Bytes4 needs uint8 A. Direct: C alone (tag
// "gemm_int8_direct").
ir::Tensor gemm_int8(const ir::Tensor& A, const ir::Tensor& B, const Int8GemmTiling& t, const std::string& name = "C");
// Register tiles over a parallel loop of column panels (rows too when panels are few); the
// accumulators stay in a local cache across K; widening and packing in parallel loops.
void schedule_gemm_int8_cpu(schedule::Schedule& s, const ir::Tensor& C, const Int8GemmTiling& t);

}  // namespace loom::ops
