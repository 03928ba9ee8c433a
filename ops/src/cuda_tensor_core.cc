#include "loom/ops/cuda_tensor_core.h"

#include "loom/ir/buffer.h"
#include "loom/ir/gpu.h"
#include "loom/ir/intrinsics.h"

namespace loom::ops {

using namespace loom::ir;

namespace {

void require(bool ok, const std::string& name, const std::string& what) {
  if (!ok) LOOM_THROW(ScheduleError, "gemm_f16_tensor_core_cuda '", name, "': ", what);
}

std::string divides(const char* a, int64_t av, const char* b, int64_t bv) {
  return std::string(a) + " (" + std::to_string(av) + ") must divide " + b + " (" + std::to_string(bv) + ")";
}

Expr I(int64_t v) { return Expr(int(v)); }  // an int32 index constant

Stmt unrolled(const Var& v, int64_t extent, Stmt body) {
  return for_loop(v, 0, I(extent), ForKind::Unrolled, std::move(body));
}

Expr address(const Buffer& b, Expr index) { return make_address_of(load(b->dtype, b, std::move(index))); }

}  // namespace

LoweredFunc gemm_f16_tensor_core_cuda(int64_t M, int64_t N, int64_t K, const CudaMmaTiling& t,
                                      const std::string& name) {
  require(
      t.block_m > 0 && t.block_n > 0 && t.block_k > 0 && t.warp_m > 0 && t.warp_n > 0 && t.pad >= 0 && t.stages >= 1,
      name, "tile sizes and stages must be positive");
  require(M % t.block_m == 0, name, divides("block_m", t.block_m, "M", M));
  require(N % t.block_n == 0, name, divides("block_n", t.block_n, "N", N));
  require(K % t.block_k == 0, name, divides("block_k", t.block_k, "K", K));
  require(t.block_m % t.warp_m == 0, name, divides("warp_m", t.warp_m, "block_m", t.block_m));
  require(t.block_n % t.warp_n == 0, name, divides("warp_n", t.warp_n, "block_n", t.block_n));
  const int n_tile = t.ldmatrix ? 16 : 8;  // ldmatrix.trans loads two of B's 8-column tiles at once
  require(t.warp_m % 16 == 0 && t.warp_n % n_tile == 0, name,
          "a warp tile is whole 16 x 8 mma tiles: warp_m (" + std::to_string(t.warp_m) +
              ") a multiple of 16, warp_n (" + std::to_string(t.warp_n) + ") of " + std::to_string(n_tile) +
              (t.ldmatrix ? " with ldmatrix" : ""));
  require(t.block_k % 16 == 0, name, "block_k (" + std::to_string(t.block_k) + ") must be a multiple of 16");
  require(t.pad % 8 == 0, name, "pad (" + std::to_string(t.pad) + ") must be a multiple of 8 (16-byte rows)");
  const int64_t warps_n = t.block_n / t.warp_n, warps = (t.block_m / t.warp_m) * warps_n;
  const int64_t threads = warps * kWarpSize;
  require(threads <= 1024, name, std::to_string(threads) + " threads per block (more than 1024)");
  const int64_t a_chunks = int64_t(t.block_m) * t.block_k / 8, b_chunks = int64_t(t.block_k) * t.block_n / 8;
  require(a_chunks % threads == 0 && b_chunks % threads == 0, name,
          "the block's " + std::to_string(threads) + " threads must share the copies of A (" +
              std::to_string(a_chunks) + " pieces of 8) and B (" + std::to_string(b_chunks) + ") evenly");
  const int64_t fm_n = t.warp_m / 16, fn_n = t.warp_n / 8;
  const int64_t lda = t.block_k + t.pad, ldb = t.block_n + t.pad;  // shared rows
  const int64_t a_stage = t.block_m * lda, b_stage = t.block_k * ldb, stages = t.stages;
  const int64_t shared_bytes = stages * (a_stage + b_stage) * 2;
  require(shared_bytes <= 48 * 1024, name,
          std::to_string(stages) + " stages need " + std::to_string(shared_bytes) +
              " bytes of shared memory (more than 48 KiB)");

  const DataType f16 = DataType::Float(16), f32 = DataType::Float(32), i32 = DataType::Int(32);
  Buffer A = make_buffer("A", f16, {I(M), I(K)}), B = make_buffer("B", f16, {I(K), I(N)});
  Buffer C = make_buffer("C", f32, {I(M), I(N)});
  Buffer As = make_buffer("A_shared", f16, {I(stages * a_stage)}, scope::kShared);
  Buffer Bs = make_buffer("B_shared", f16, {I(stages * b_stage)}, scope::kShared);
  Buffer acc = make_buffer("C_frag", f32, {I(fm_n * fn_n * 4)}, scope::kLocal);
  Buffer af = make_buffer("A_frag", f16, {I(fm_n * 8)}, scope::kLocal);
  Buffer bf = make_buffer("B_frag", f16, {I(fn_n * 4)}, scope::kLocal);

  Var by("by", i32), bx("bx", i32), warp("warp", i32), lane("lane", i32);
  Var ko("ko", i32), kk("kk", i32), fm("fm", i32), fn("fn", i32), p("p", i32), j("j", i32), it("it", i32);
  const Expr wm = warp / I(warps_n), wn = warp % I(warps_n);
  const Expr group = lane / 4, in_group = lane % 4;  // the PTX tables' groupID, threadID_in_group

  // Zero the accumulators.
  Var z("z", i32);
  Stmt init = unrolled(z, fm_n * fn_n * 4, store(acc, Expr(0.0f), z));

  // K step `k`'s tiles of A and B into shared buffer `stage`, 8 float16 (16 bytes) per thread and
  // copy: plain vector moves, or cp.async.
  auto copy = [&](const Buffer& dst, int64_t ld_dst, int64_t stage_size, const Buffer& src, int64_t chunks,
                  int64_t row_chunks, const Expr& src_row0, const Expr& src_col0, int64_t ld_src, const Expr& stage,
                  bool async) {
    Expr chunk = it * I(threads) + warp * I(kWarpSize) + lane;
    Expr r = chunk / I(row_chunks), c = chunk % I(row_chunks) * 8;
    Expr to = stage * I(stage_size) + r * I(ld_dst) + c, from = (src_row0 + r) * I(ld_src) + src_col0 + c;
    Stmt one = async ? cp_async16(address(dst, to), address(src, from))
                     : store(dst, load(f16.with_lanes(8), src, ramp(from, 1, 8)), ramp(to, 1, 8));
    return unrolled(it, chunks / threads, one);
  };
  auto copy_tiles = [&](const Expr& k, const Expr& stage, bool async) {
    return seq(
        {copy(As, lda, a_stage, A, a_chunks, t.block_k / 8, by * I(t.block_m), k * I(t.block_k), K, stage, async),
         copy(Bs, ldb, b_stage, B, b_chunks, t.block_n / 8, k * I(t.block_k), bx * I(t.block_n), N, stage, async)});
  };

  // One K step on shared buffer `stage`: the warp's fragments (mma_m16n8k16_a/b), then its mmas.
  auto multiply = [&](const Expr& stage) {
    Expr a0 = stage * I(a_stage), b0 = stage * I(b_stage);
    Stmt load_a, load_b;
    if (t.ldmatrix) {
      // Lane l addresses row l % 8 of matrix l / 8: A's four 8 x 8 quarters in a0..a7's order,
      // B's (k 0-7, k 8-15) x (two 8-column tiles).
      Expr a_row = wm * I(t.warp_m) + fm * 16 + lane % 8 + lane / 8 % 2 * 8, a_col = kk * 16 + lane / 16 * 8;
      load_a = unrolled(fm, fm_n, ldmatrix_x4(address(af, fm * 8), address(As, a0 + a_row * I(lda) + a_col), false));
      Expr b_row = kk * 16 + lane % 8 + lane / 8 % 2 * 8, b_col = wn * I(t.warp_n) + (p * 2 + lane / 16) * 8;
      load_b = unrolled(p, fn_n / 2, ldmatrix_x4(address(bf, p * 8), address(Bs, b0 + b_row * I(ldb) + b_col), true));
    } else {
      // A element 2p, 2p + 1: row groupID + 8 (p % 2), columns 2 threadID_in_group + 8 (p / 2) + {0, 1}.
      Expr a_row = wm * I(t.warp_m) + fm * 16 + group + p % 2 * 8;
      Expr a_col = kk * 16 + in_group * 2 + p / 2 * 8;
      load_a = unrolled(fm, fm_n,
                        unrolled(p, 4,
                                 store(af, load(f16.with_lanes(2), As, ramp(a0 + a_row * I(lda) + a_col, 1, 2)),
                                       ramp(fm * 8 + p * 2, 1, 2))));
      // B element j: row (k) 2 threadID_in_group + j % 2 + 8 (j / 2), column groupID.
      Expr b_row = kk * 16 + in_group * 2 + j % 2 + j / 2 * 8;
      Expr b_col = wn * I(t.warp_n) + fn * 8 + group;
      load_b = unrolled(fn, fn_n, unrolled(j, 4, store(bf, load(f16, Bs, b0 + b_row * I(ldb) + b_col), fn * 4 + j)));
    }
    Stmt mmas = unrolled(
        fm, fm_n,
        unrolled(fn, fn_n,
                 mma_m16n8k16(address(af, fm * 8), address(bf, fn * 4), address(acc, (fm * I(fn_n) + fn) * 4))));
    return unrolled(kk, t.block_k / 16, seq({load_a, load_b, mmas}));
  };

  const int64_t steps = K / t.block_k;
  Stmt main_loop;
  if (stages == 1) {
    main_loop = for_loop(ko, 0, I(steps), ForKind::Serial,
                         seq({sync_threads(), copy_tiles(ko, I(0), false), sync_threads(), multiply(I(0))}));
  } else {
    // Tiles 0 .. stages - 2 ahead; each step waits for its own tile (at most stages - 2 groups in
    // flight), and after the barrier (every warp done with the buffer the step before read) copies
    // the tile stages - 1 ahead into that buffer. Every step commits a group, empty at the end.
    std::vector<Stmt> prologue;
    for (int64_t s = 0; s < stages - 1; ++s) {
      if (s < steps) prologue.push_back(copy_tiles(I(s), I(s), true));
      prologue.push_back(cp_async_commit());
    }
    Expr ahead = ko + I(stages - 1);
    Stmt step = seq({cp_async_wait(int(stages - 2)), sync_threads(),
                     if_then_else(ahead < I(steps), copy_tiles(ahead, ahead % I(stages), true)), cp_async_commit(),
                     multiply(ko % I(stages))});
    main_loop = seq({seq(prologue), for_loop(ko, 0, I(steps), ForKind::Serial, step)});
  }

  // C element 2h, 2h + 1 of a tile: row groupID + 8 h, columns 2 threadID_in_group + {0, 1}.
  Var h("h", i32);
  Expr c_row = by * I(t.block_m) + wm * I(t.warp_m) + fm * 16 + group + h * 8;
  Expr c_col = bx * I(t.block_n) + wn * I(t.warp_n) + fn * 8 + in_group * 2;
  Stmt store_c =
      unrolled(fm, fm_n,
               unrolled(fn, fn_n,
                        unrolled(h, 2,
                                 store(C, load(f32.with_lanes(2), acc, ramp((fm * I(fn_n) + fn) * 4 + h * 2, 1, 2)),
                                       ramp(c_row * I(N) + c_col, 1, 2)))));

  Stmt body = allocate(acc, allocate(af, allocate(bf, seq({init, main_loop, store_c}))));
  body = allocate(As, allocate(Bs, body));
  body = for_loop(lane, 0, I(kWarpSize), ForKind::ThreadBinding, body, "threadIdx.x");
  body = for_loop(warp, 0, I(warps), ForKind::ThreadBinding, body, "threadIdx.y");
  body = for_loop(bx, 0, I(N / t.block_n), ForKind::ThreadBinding, body, "blockIdx.x");
  body = for_loop(by, 0, I(M / t.block_m), ForKind::ThreadBinding, body, "blockIdx.y");
  return LoweredFunc{name, {A, B, C}, body};
}

}  // namespace loom::ops
