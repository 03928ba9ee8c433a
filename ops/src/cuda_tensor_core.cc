#include "loom/ops/cuda_tensor_core.h"

#include "cuda_kernel_ir.h"
#include "loom/ir/buffer.h"
#include "loom/ir/gpu.h"
#include "loom/ir/intrinsics.h"

namespace loom::ops {

using namespace loom::ir;

using detail::address;
using detail::index_const;
using detail::must_divide;
using detail::unrolled;

LoweredFunc gemm_f16_tensor_core_cuda(int64_t M, int64_t N, int64_t K, const CudaMmaTiling& t,
                                      const std::string& name) {
  const detail::TilingCheck require{"gemm_f16_tensor_core_cuda", name};
  require(
      t.block_m > 0 && t.block_n > 0 && t.block_k > 0 && t.warp_m > 0 && t.warp_n > 0 && t.pad >= 0 && t.stages >= 1,
      "tile sizes and stages must be positive");
  const detail::GemmTiles tiles{M, N, K, t.block_m, t.block_n, t.block_k, t.warp_m, t.warp_n};
  tiles.check(require);
  const int n_tile = t.ldmatrix ? 16 : 8;  // ldmatrix.trans loads two of B's 8-column tiles at once
  require(t.warp_m % 16 == 0 && t.warp_n % n_tile == 0,
          "a warp tile is whole 16 x 8 mma tiles: warp_m (" + std::to_string(t.warp_m) +
              ") a multiple of 16, warp_n (" + std::to_string(t.warp_n) + ") of " + std::to_string(n_tile) +
              (t.ldmatrix ? " with ldmatrix" : ""));
  require(t.block_k % 16 == 0, "block_k (" + std::to_string(t.block_k) + ") must be a multiple of 16");
  require(t.pad % 8 == 0, "pad (" + std::to_string(t.pad) + ") must be a multiple of 8 (16-byte rows)");
  const int64_t warps_n = t.block_n / t.warp_n;
  const int64_t threads = tiles.threads();
  const int64_t a_chunks = int64_t(t.block_m) * t.block_k / 8, b_chunks = int64_t(t.block_k) * t.block_n / 8;
  const int64_t fm_n = t.warp_m / 16, fn_n = t.warp_n / 8;
  const int64_t lda = t.block_k + t.pad, ldb = t.block_n + t.pad;  // shared rows
  const int64_t a_stage = t.block_m * lda, b_stage = t.block_k * ldb, stages = t.stages;
  tiles.check_block(require, 8, stages, stages * (a_stage + b_stage) * 2);

  const DataType f16 = DataType::Float(16), f32 = DataType::Float(32), i32 = DataType::Int(32);
  const std::vector<Buffer> args = tiles.arguments(f16);
  const Buffer &A = args[0], &B = args[1], &C = args[2];
  Buffer As = make_buffer("A_shared", f16, {index_const(stages * a_stage)}, scope::kShared);
  Buffer Bs = make_buffer("B_shared", f16, {index_const(stages * b_stage)}, scope::kShared);
  Buffer acc = make_buffer("C_frag", f32, {index_const(fm_n * fn_n * 4)}, scope::kLocal);
  Buffer af = make_buffer("A_frag", f16, {index_const(fm_n * 8)}, scope::kLocal);
  Buffer bf = make_buffer("B_frag", f16, {index_const(fn_n * 4)}, scope::kLocal);

  Var by("by", i32), bx("bx", i32), warp("warp", i32), lane("lane", i32);
  Var ko("ko", i32), kk("kk", i32), fm("fm", i32), fn("fn", i32), p("p", i32), j("j", i32), it("it", i32);
  const Expr wm = warp / index_const(warps_n), wn = warp % index_const(warps_n);
  const Expr group = lane / 4, in_group = lane % 4;  // the PTX tables' groupID, threadID_in_group

  // Zero the accumulators.
  Var z("z", i32);
  Stmt init = unrolled(z, fm_n * fn_n * 4, store(acc, Expr(0.0f), z));

  // K step `k`'s tiles of A and B into shared buffer `stage`, 8 float16 (16 bytes) per thread and
  // copy: plain vector moves, or cp.async.
  auto copy = [&](const Buffer& dst, int64_t ld_dst, int64_t stage_size, const Buffer& src, int64_t chunks,
                  int64_t row_length, const Expr& src_row0, const Expr& src_col0, int64_t ld_src, const Expr& stage,
                  bool async) {
    auto [r, c] = detail::tile_piece(it, warp * index_const(kWarpSize) + lane, threads, row_length, 8);
    Expr to = stage * index_const(stage_size) + r * index_const(ld_dst) + c,
         from = (src_row0 + r) * index_const(ld_src) + src_col0 + c;
    Stmt one = async ? cp_async16(address(dst, to), address(src, from))
                     : store(dst, load(f16.with_lanes(8), src, ramp(from, 1, 8)), ramp(to, 1, 8));
    return unrolled(it, chunks / threads, one);
  };
  auto copy_tiles = [&](const Expr& k, const Expr& stage, bool async) {
    return seq({copy(As, lda, a_stage, A, a_chunks, t.block_k, by * index_const(t.block_m), k * index_const(t.block_k),
                     K, stage, async),
                copy(Bs, ldb, b_stage, B, b_chunks, t.block_n, k * index_const(t.block_k), bx * index_const(t.block_n),
                     N, stage, async)});
  };

  // One K step on shared buffer `stage`: the warp's fragments (mma_m16n8k16_a/b), then its mmas.
  auto multiply = [&](const Expr& stage) {
    Expr a0 = stage * index_const(a_stage), b0 = stage * index_const(b_stage);
    Stmt load_a, load_b;
    if (t.ldmatrix) {
      // Lane l addresses row l % 8 of matrix l / 8: A's four 8 x 8 quarters in a0..a7's order,
      // B's (k 0-7, k 8-15) x (two 8-column tiles).
      Expr a_row = wm * index_const(t.warp_m) + fm * 16 + lane % 8 + lane / 8 % 2 * 8, a_col = kk * 16 + lane / 16 * 8;
      load_a = unrolled(fm, fm_n,
                        ldmatrix_x4(address(af, fm * 8), address(As, a0 + a_row * index_const(lda) + a_col), false));
      Expr b_row = kk * 16 + lane % 8 + lane / 8 % 2 * 8, b_col = wn * index_const(t.warp_n) + (p * 2 + lane / 16) * 8;
      load_b = unrolled(p, fn_n / 2,
                        ldmatrix_x4(address(bf, p * 8), address(Bs, b0 + b_row * index_const(ldb) + b_col), true));
    } else {
      // A element 2p, 2p + 1: row groupID + 8 (p % 2), columns 2 threadID_in_group + 8 (p / 2) + {0, 1}.
      Expr a_row = wm * index_const(t.warp_m) + fm * 16 + group + p % 2 * 8;
      Expr a_col = kk * 16 + in_group * 2 + p / 2 * 8;
      load_a =
          unrolled(fm, fm_n,
                   unrolled(p, 4,
                            store(af, load(f16.with_lanes(2), As, ramp(a0 + a_row * index_const(lda) + a_col, 1, 2)),
                                  ramp(fm * 8 + p * 2, 1, 2))));
      // B element j: row (k) 2 threadID_in_group + j % 2 + 8 (j / 2), column groupID.
      Expr b_row = kk * 16 + in_group * 2 + j % 2 + j / 2 * 8;
      Expr b_col = wn * index_const(t.warp_n) + fn * 8 + group;
      load_b = unrolled(fn, fn_n,
                        unrolled(j, 4, store(bf, load(f16, Bs, b0 + b_row * index_const(ldb) + b_col), fn * 4 + j)));
    }
    Stmt mmas = unrolled(fm, fm_n,
                         unrolled(fn, fn_n,
                                  mma_m16n8k16(address(af, fm * 8), address(bf, fn * 4),
                                               address(acc, (fm * index_const(fn_n) + fn) * 4))));
    return unrolled(kk, t.block_k / 16, seq({load_a, load_b, mmas}));
  };

  const int64_t steps = K / t.block_k;
  Stmt main_loop;
  if (stages == 1) {
    main_loop = for_loop(
        ko, 0, index_const(steps), ForKind::Serial,
        seq({sync_threads(), copy_tiles(ko, index_const(0), false), sync_threads(), multiply(index_const(0))}));
  } else {
    // Tiles 0 .. stages - 2 ahead; each step waits for its own tile (at most stages - 2 groups in
    // flight), and after the barrier (every warp done with the buffer the step before read) copies
    // the tile stages - 1 ahead into that buffer. Every step commits a group, empty at the end.
    std::vector<Stmt> prologue;
    for (int64_t s = 0; s < stages - 1; ++s) {
      if (s < steps) prologue.push_back(copy_tiles(index_const(s), index_const(s), true));
      prologue.push_back(cp_async_commit());
    }
    Expr ahead = ko + index_const(stages - 1);
    Stmt step = seq({cp_async_wait(int(stages - 2)), sync_threads(),
                     if_then_else(ahead < index_const(steps), copy_tiles(ahead, ahead % index_const(stages), true)),
                     cp_async_commit(), multiply(ko % index_const(stages))});
    main_loop = seq({seq(prologue), for_loop(ko, 0, index_const(steps), ForKind::Serial, step)});
  }

  // C element 2h, 2h + 1 of a tile: row groupID + 8 h, columns 2 threadID_in_group + {0, 1}.
  Var h("h", i32);
  Expr c_row = by * index_const(t.block_m) + wm * index_const(t.warp_m) + fm * 16 + group + h * 8;
  Expr c_col = bx * index_const(t.block_n) + wn * index_const(t.warp_n) + fn * 8 + in_group * 2;
  Stmt store_c = unrolled(
      fm, fm_n,
      unrolled(fn, fn_n,
               unrolled(h, 2,
                        store(C, load(f32.with_lanes(2), acc, ramp((fm * index_const(fn_n) + fn) * 4 + h * 2, 1, 2)),
                              ramp(c_row * index_const(N) + c_col, 1, 2)))));

  Stmt body = allocate(acc, allocate(af, allocate(bf, seq({init, main_loop, store_c}))));
  body = allocate(As, allocate(Bs, body));
  return LoweredFunc{name, args, tiles.launch(body, by, bx, warp, lane)};
}

}  // namespace loom::ops
