// What the loop IR means on a GPU: thread tags of bound loops, the block barrier, the launch limits
// every lowering and code generator checks against, and the kernels of a lowered function (the
// host/device split both the CUDA backend and the grid interpreter use).
//
// A GPU function's body is host code (allocations of global workspaces, sequences) around kernels;
// a kernel is a maximal statement whose outermost loop is bound to blockIdx.* or threadIdx.*.
// Inside a kernel every thread of every block runs the code (SPMD, as in TVM): a loop bound to a
// tag is no loop but "var = that index", and threads whose index is not below the loop's extent
// skip its body; the same tag may be bound again inside (a cooperative load inside a compute
// nest). A store statement (with the loads in it) is executed only by the threads whose index is 0
// in every thread dimension of the launch that no enclosing loop binds (so a stage that binds
// threadIdx.x alone is not repeated by every threadIdx.y). Shared buffers are one per block, local buffers one per
// thread. A barrier must be reached by all threads of the block: never under a guarded binding or a condition or loop
// bound that depends on a thread index.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/stmt.h"

namespace loom::ir {

// The block-wide barrier (__syncthreads): evaluate(call_intrinsic(Int(32), kSyncThreads, {})).
inline constexpr const char* kSyncThreads = "gpu.syncthreads";
Stmt sync_threads();
bool is_sync_threads(const Stmt& s);

// The warp's tensor-core multiply-add, PTX mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32:
// D = A B + C with A 16 x 16 and B 16 x 8 in float16, C and D 16 x 8 in float32, accumulated in
// place. The 32 threads of a warp (consecutive linear thread indices) each hold a fragment: 8
// elements of A, 4 of B and 4 of C/D, in local buffers at the three operand addresses
// (address_of(buffer[offset])); mma_m16n8k16_a/b/c say which matrix element each of a lane's
// elements is. Every lane of the warp must reach it together (the grid interpreter reports a
// lane that does not); the block's thread count must be a multiple of 32.
inline constexpr const char* kMmaM16N8K16 = "gpu.mma_m16n8k16_f32f16";
inline constexpr int kWarpSize = 32;
Stmt mma_m16n8k16(Expr a_fragment, Expr b_fragment, Expr c_fragment);
struct MmaOperands {
  const LoadNode *a, *b, *c;  // the first element of each fragment
};
// The operands of an mma statement; nullopt for any other statement; LoweringError for a malformed
// one (operands not address_of loads of local buffers of float16, float16 and float32).
std::optional<MmaOperands> as_mma(const Stmt& s);
std::optional<MmaOperands> as_mma(const CallNode* call);
// Which element of the operand matrix element i of a lane's fragment is (the PTX ISA's fragment
// tables for m16n8k16): A is [row m][column k], B [row k][column n], C/D [row m][column n].
struct MatrixElement {
  int row, col;
};
MatrixElement mma_m16n8k16_a(int lane, int i);  // i < 8
MatrixElement mma_m16n8k16_b(int lane, int i);  // i < 4
MatrixElement mma_m16n8k16_c(int lane, int i);  // i < 4

// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16, a warp instruction: four 8 x 8 float16
// matrices from shared memory into each lane's 8-element local fragment. Lane l gives the address
// of row l % 8 of matrix l / 8 (8 contiguous elements, 16-byte aligned) and receives pair j
// (fragment elements 2j, 2j + 1) from matrix j: row l / 4, columns 2 (l % 4) + {0, 1}; with
// `trans`, rows 2 (l % 4) + {0, 1} of column l / 4. So loaded, a 16 x 16 tile of A is
// mma_m16n8k16_a's fragment, and (trans) two 16 x 8 tiles of B are two mma_m16n8k16_b fragments.
inline constexpr const char* kLdMatrixX4 = "gpu.ldmatrix_x4";
Stmt ldmatrix_x4(Expr fragment, Expr row, bool trans);
struct LdMatrixOperands {
  const LoadNode *fragment, *row;
  bool trans;
};
// nullopt for other statements; LoweringError when the fragment is not a local float16 element's
// address or the row not a shared float16 element's.
std::optional<LdMatrixOperands> as_ldmatrix(const Stmt& s);
std::optional<LdMatrixOperands> as_ldmatrix(const CallNode* call);

// cp.async.cg.shared.global of 16 bytes: one thread's asynchronous copy from a global buffer to a
// shared one of the same element type (the addresses of the first elements, 16-byte aligned). The
// copies a thread issued since its last cp_async_commit form a group; cp_async_wait(n) waits until
// at most n of the thread's groups are in flight. A copy's data lands at some point between the
// copy and the wait: the grid interpreter lands it at the wait, and reports a thread reading an
// element its own copy has not landed in yet.
inline constexpr const char* kCpAsync16 = "gpu.cp_async16";
inline constexpr const char* kCpAsyncCommit = "gpu.cp_async_commit";
inline constexpr const char* kCpAsyncWait = "gpu.cp_async_wait";
Stmt cp_async16(Expr dst, Expr src);
Stmt cp_async_commit();
Stmt cp_async_wait(int in_flight);
struct CpAsyncOperands {
  const LoadNode *dst, *src;
  int elements;  // 16 bytes of the element type
};
std::optional<CpAsyncOperands> as_cp_async(const Stmt& s);
std::optional<CpAsyncOperands> as_cp_async(const CallNode* call);
bool is_cp_async_commit(const Stmt& s);
std::optional<int> as_cp_async_wait(const Stmt& s);  // the groups allowed in flight

struct ThreadTag {
  bool block = false;  // blockIdx.* (else threadIdx.*)
  int dim = 0;         // 0: x, 1: y, 2: z
};
// The tag of "blockIdx.x" ... "threadIdx.z"; nullopt for anything else ("vthread").
std::optional<ThreadTag> parse_thread_tag(const std::string& tag);

// Hopper's (sm_90) limits; a kernel beyond them is a LoweringError naming it and the limit.
struct GpuLimits {
  int64_t max_threads_per_block = 1024;
  std::array<int64_t, 3> max_block_dim = {1024, 1024, 64};
  std::array<int64_t, 3> max_grid_dim = {2147483647, 65535, 65535};
  int64_t max_shared_bytes = 48 * 1024;  // static __shared__ per block
  int64_t max_registers_per_block = 65536;
  int64_t max_registers_per_thread = 255;
};

// One kernel of a lowered GPU function.
struct GpuKernel {
  std::string name;  // <function>_kernel<i>
  Stmt body;         // the kernel's statement (its outermost loop is bound)
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::vector<Buffer> params;  // global buffers it reads or writes, in first-use order
  std::vector<Buffer> shared;  // shared-memory allocations (hoisted to the kernel's top)
  int64_t shared_bytes = 0;
  std::string stages;  // the buffers it writes, for messages ("C.shared, C")
};

// The host/device split: workspaces (global allocations outside every kernel, with their sizes)
// and the kernels in execution order. LoweringError (naming the function, the kernel and the loop
// or buffer) where the body is not host code around kernels: a store outside every bound loop, a
// bound loop with a non-constant extent or a non-zero min, blockIdx inside threadIdx, a global
// allocation inside a kernel, a shared allocation outside every kernel, a divergent barrier, or a
// launch limit.
struct GpuSplit {
  std::vector<Buffer> workspaces;
  std::vector<GpuKernel> kernels;
};
GpuSplit split_gpu_kernels(const LoweredFunc& f, const GpuLimits& limits = {});

}  // namespace loom::ir
