#include "loom/ops/cuda_gemm_warp_tiled.h"

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

LoweredFunc gemm_f32_warp_tiled_cuda(int64_t M, int64_t N, int64_t K, const CudaWarpGemmTiling& t,
                                     const std::string& name) {
  const detail::TilingCheck require{"gemm_f32_warp_tiled_cuda", name};
  require(t.block_m > 0 && t.block_n > 0 && t.block_k > 0 && t.warp_m > 0 && t.warp_n > 0 && t.lanes_m > 0 &&
              t.pad >= 0 && (t.stages == 1 || t.stages == 2),
          "tile sizes must be positive and stages 1 or 2");
  const detail::GemmTiles tiles{M, N, K, t.block_m, t.block_n, t.block_k, t.warp_m, t.warp_n};
  tiles.check(require);
  require(kWarpSize % t.lanes_m == 0, must_divide("lanes_m", t.lanes_m, "the warp's 32 lanes", kWarpSize));
  const int64_t lanes_n = kWarpSize / t.lanes_m;
  require(t.warp_m % (4 * t.lanes_m) == 0 && t.warp_n % (4 * lanes_n) == 0,
          "a lane's tile is whole 4 x 4 groups: warp_m (" + std::to_string(t.warp_m) + ") a multiple of 4 x " +
              std::to_string(t.lanes_m) + " lanes, warp_n (" + std::to_string(t.warp_n) + ") of 4 x " +
              std::to_string(lanes_n));
  require(t.block_k % 4 == 0 && t.pad % 4 == 0,
          "block_k (" + std::to_string(t.block_k) + ") and pad (" + std::to_string(t.pad) + ") must be multiples of 4");
  const int64_t warps_n = t.block_n / t.warp_n;
  const int64_t threads = tiles.threads();
  const int64_t a_chunks = int64_t(t.block_m) * t.block_k / 4, b_chunks = int64_t(t.block_k) * t.block_n / 4;
  const int64_t tm = t.warp_m / t.lanes_m, tn = t.warp_n / lanes_n;  // a lane's tile
  const int64_t lda = t.block_m + t.pad, ldb = t.block_n;            // shared rows (k-major A)
  const int64_t a_stage = t.block_k * lda, b_stage = t.block_k * ldb, stages = t.stages;
  tiles.check_block(require, 4, stages, stages * (a_stage + b_stage) * 4);

  const DataType f32 = DataType::Float(32), i32 = DataType::Int(32);
  const std::vector<Buffer> args = tiles.arguments(f32);
  const Buffer &A = args[0], &B = args[1], &C = args[2];
  Buffer As = make_buffer("A_shared", f32, {index_const(stages * a_stage)}, scope::kShared);
  Buffer Bs = make_buffer("B_shared", f32, {index_const(stages * b_stage)}, scope::kShared);
  Buffer acc = make_buffer("C_local", f32, {index_const(tm * tn)}, scope::kLocal);
  Buffer af = make_buffer("A_frag", f32, {index_const(tm)}, scope::kLocal),
         bf = make_buffer("B_frag", f32, {index_const(tn)}, scope::kLocal);
  const int64_t a_per_thread = a_chunks / threads, b_per_thread = b_chunks / threads;
  Buffer a_regs = make_buffer("A_next", f32, {index_const(a_per_thread * 4)}, scope::kLocal);

  Var by("by", i32), bx("bx", i32), warp("warp", i32), lane("lane", i32), ko("ko", i32), k("k", i32);
  Var g("g", i32), i("i", i32), j("j", i32), q("q", i32), e("e", i32), z("z", i32);
  const Expr wm = warp / index_const(warps_n), wn = warp % index_const(warps_n);
  const Expr lm = lane / index_const(lanes_n), ln = lane % index_const(lanes_n);
  const Expr tid = warp * index_const(kWarpSize) + lane;

  // A's tile, 4 consecutive k of one row per piece: into registers, then transposed into shared
  // buffer `stage` as [k][m].
  const auto [a_r, a_c] = detail::tile_piece(q, tid, threads, t.block_k, 4);
  auto load_a = [&](const Expr& step) {
    Expr from = (by * index_const(t.block_m) + a_r) * index_const(K) + step * index_const(t.block_k) + a_c;
    return unrolled(q, a_per_thread, store(a_regs, load(f32.with_lanes(4), A, ramp(from, 1, 4)), ramp(q * 4, 1, 4)));
  };
  auto store_a = [&](const Expr& stage) {
    return unrolled(q, a_per_thread,
                    unrolled(e, 4,
                             store(As, load(f32, a_regs, q * 4 + e),
                                   stage * index_const(a_stage) + (a_c + e) * index_const(lda) + a_r)));
  };
  // B's tile, 4 consecutive n per piece, into shared buffer `stage` as it is: cp.async, or a
  // vector copy with one stage.
  const auto [b_r, b_c] = detail::tile_piece(q, tid, threads, t.block_n, 4);
  auto copy_b = [&](const Expr& step, const Expr& stage, bool async) {
    Expr to = stage * index_const(b_stage) + b_r * index_const(ldb) + b_c;
    Expr from = (step * index_const(t.block_k) + b_r) * index_const(N) + bx * index_const(t.block_n) + b_c;
    Stmt one = async ? cp_async16(address(Bs, to), address(B, from))
                     : store(Bs, load(f32.with_lanes(4), B, ramp(from, 1, 4)), ramp(to, 1, 4));
    return unrolled(q, b_per_thread, one);
  };

  // One K step on shared buffer `stage`: per k, the lane's float4 groups of A and B, then the
  // outer product into its tile.
  auto multiply = [&](const Expr& stage) {
    Expr a_at = stage * index_const(a_stage) + k * index_const(lda) + wm * index_const(t.warp_m) +
                g * index_const(4 * t.lanes_m) + lm * 4;
    Expr b_at = stage * index_const(b_stage) + k * index_const(ldb) + wn * index_const(t.warp_n) +
                g * index_const(4 * lanes_n) + ln * 4;
    Stmt frags =
        seq({unrolled(g, tm / 4, store(af, load(f32.with_lanes(4), As, ramp(a_at, 1, 4)), ramp(g * 4, 1, 4))),
             unrolled(g, tn / 4, store(bf, load(f32.with_lanes(4), Bs, ramp(b_at, 1, 4)), ramp(g * 4, 1, 4)))});
    Expr at = i * index_const(tn) + j;
    Stmt fma =
        unrolled(i, tm, unrolled(j, tn, store(acc, load(f32, acc, at) + load(f32, af, i) * load(f32, bf, j), at)));
    return unrolled(k, t.block_k, seq({frags, fma}));
  };

  const int64_t steps = K / t.block_k;
  Stmt main_loop;
  if (stages == 1) {
    main_loop = for_loop(ko, 0, index_const(steps), ForKind::Serial,
                         seq({sync_threads(), load_a(ko), store_a(index_const(0)), copy_b(ko, index_const(0), false),
                              sync_threads(), multiply(index_const(0))}));
  } else {
    // Step 0's tiles first; then each step starts the next step's copies (B's asynchronous, A's
    // loads into registers), multiplies, stores A's registers into the other buffer, and waits:
    // one barrier a step, after which every warp is done with the buffer the next step fills.
    Stmt prologue = seq({load_a(index_const(0)), store_a(index_const(0)), copy_b(index_const(0), index_const(0), true),
                         cp_async_commit(), cp_async_wait(0), sync_threads()});
    Expr next = ko + 1, more = next < index_const(steps);
    Stmt step = seq({if_then_else(more, seq({load_a(next), copy_b(next, next % 2, true)})), cp_async_commit(),
                     multiply(ko % 2), if_then_else(more, store_a(next % 2)), cp_async_wait(0), sync_threads()});
    main_loop = seq({prologue, for_loop(ko, 0, index_const(steps), ForKind::Serial, step)});
  }

  // The lane's tile out as float4s: row group gm, row i, column group gn.
  Var gm("gm", i32), gn("gn", i32);
  Expr c_row = by * index_const(t.block_m) + wm * index_const(t.warp_m) + gm * index_const(4 * t.lanes_m) + lm * 4 + i;
  Expr c_col = bx * index_const(t.block_n) + wn * index_const(t.warp_n) + gn * index_const(4 * lanes_n) + ln * 4;
  Stmt store_c = unrolled(
      gm, tm / 4,
      unrolled(i, 4,
               unrolled(gn, tn / 4,
                        store(C, load(f32.with_lanes(4), acc, ramp((gm * 4 + i) * index_const(tn) + gn * 4, 1, 4)),
                              ramp(c_row * index_const(N) + c_col, 1, 4)))));

  Stmt init = unrolled(z, tm * tn, store(acc, Expr(0.0f), z));
  Stmt body = allocate(acc, allocate(af, allocate(bf, allocate(a_regs, seq({init, main_loop, store_c})))));
  body = allocate(As, allocate(Bs, body));
  return LoweredFunc{name, args, tiles.launch(body, by, bx, warp, lane)};
}

}  // namespace loom::ops
