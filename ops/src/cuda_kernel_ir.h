// Internal to loom_ops: small builders shared by the GPU kernels built as loop IR directly
// (cuda_tensor_core.cc, cuda_gemm_warp_tiled.cc).
#pragma once
#include <string>
#include <vector>

#include "loom/ir/buffer.h"
#include "loom/ir/gpu.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/stmt.h"
#include "loom/runtime/error.h"

namespace loom::ops::detail {

// A builder's checks of its tiling: ScheduleError "<builder> '<name>': <what>" unless `ok`.
struct TilingCheck {
  const char* builder;
  const std::string& name;
  void operator()(bool ok, const std::string& what) const {
    if (!ok) LOOM_THROW(ScheduleError, builder, " '", name, "': ", what);
  }
};
// "<a> (<av>) must divide <b> (<bv>)".
inline std::string must_divide(const char* a, int64_t av, const char* b, int64_t bv) {
  return std::string(a) + " (" + std::to_string(av) + ") must divide " + b + " (" + std::to_string(bv) + ")";
}
// An int32 index constant.
inline ir::Expr index_const(int64_t v) { return ir::Expr(int(v)); }
inline ir::Stmt unrolled(const ir::Var& v, int64_t extent, ir::Stmt body) {
  return ir::for_loop(v, 0, index_const(extent), ir::ForKind::Unrolled, std::move(body));
}
// The address of b[index], the operand form of the warp and copy statements (ir/gpu.h).
inline ir::Expr address(const ir::Buffer& b, ir::Expr index) {
  return ir::make_address_of(ir::load(b->dtype, b, std::move(index)));
}

// Piece `it` of one thread's share when the block's `threads` threads copy a row-major tile with
// rows of `row_length` elements, `piece` consecutive elements a piece (thread `tid` takes pieces
// tid, tid + threads, ...): the piece's row and first column in the tile.
struct TilePiece {
  ir::Expr row, col;
};
inline TilePiece tile_piece(const ir::Expr& it, const ir::Expr& tid, int64_t threads, int64_t row_length,
                            int64_t piece) {
  const ir::Expr n = it * index_const(threads) + tid, pieces_a_row = index_const(row_length / piece);
  return {n / pieces_a_row, n % pieces_a_row * index_const(piece)};
}

// The block and warp tiles of a GEMM C [M, N] += A [M, K] B [K, N]: each tile divides its extent.
struct GemmTiles {
  int64_t M, N, K;
  int block_m, block_n, block_k, warp_m, warp_n;
  void check(const TilingCheck& require) const {
    require(M % block_m == 0, must_divide("block_m", block_m, "M", M));
    require(N % block_n == 0, must_divide("block_n", block_n, "N", N));
    require(K % block_k == 0, must_divide("block_k", block_k, "K", K));
    require(block_m % warp_m == 0, must_divide("warp_m", warp_m, "block_m", block_m));
    require(block_n % warp_n == 0, must_divide("warp_n", warp_n, "block_n", block_n));
  }
  int64_t warps() const { return (block_m / warp_m) * (block_n / warp_n); }
  // The arguments A [M, K] and B [K, N] of `in`, C [M, N] float32.
  std::vector<ir::Buffer> arguments(DataType in) const {
    return {ir::make_buffer("A", in, {index_const(M), index_const(K)}),
            ir::make_buffer("B", in, {index_const(K), index_const(N)}),
            ir::make_buffer("C", DataType::Float(32), {index_const(M), index_const(N)})};
  }
  int64_t threads() const { return warps() * ir::kWarpSize; }
  // A block of at most 1024 threads, whose threads share the copies of A's and B's tiles in pieces
  // of `piece` elements evenly, and whose `stages` fit static shared memory.
  void check_block(const TilingCheck& require, int64_t piece, int64_t stages, int64_t shared_bytes) const {
    const int64_t n = threads(), a = int64_t(block_m) * block_k / piece, b = int64_t(block_k) * block_n / piece;
    require(n <= 1024, std::to_string(n) + " threads per block (more than 1024)");
    require(a % n == 0 && b % n == 0, "the block's " + std::to_string(n) + " threads must share the copies of A (" +
                                          std::to_string(a) + " pieces of " + std::to_string(piece) + ") and B (" +
                                          std::to_string(b) + ") evenly");
    require(shared_bytes <= 48 * 1024, std::to_string(stages) + " stages need " + std::to_string(shared_bytes) +
                                           " bytes of shared memory (more than 48 KiB)");
  }
  // The kernel around `body`: blocks over C's tiles (by down M, bx along N), a block's warps on
  // threadIdx.y and their lanes on threadIdx.x.
  ir::Stmt launch(ir::Stmt body, const ir::Var& by, const ir::Var& bx, const ir::Var& warp, const ir::Var& lane) const {
    using ir::ForKind;
    body = ir::for_loop(lane, 0, index_const(ir::kWarpSize), ForKind::ThreadBinding, std::move(body), "threadIdx.x");
    body = ir::for_loop(warp, 0, index_const(warps()), ForKind::ThreadBinding, body, "threadIdx.y");
    body = ir::for_loop(bx, 0, index_const(N / block_n), ForKind::ThreadBinding, body, "blockIdx.x");
    return ir::for_loop(by, 0, index_const(M / block_m), ForKind::ThreadBinding, body, "blockIdx.y");
  }
};

}  // namespace loom::ops::detail
