// int8 GEMM on the CPU (gemm_int8.h): int16 pairs through the CPU's pairwise dot product.
#include "loom/ops/gemm_int8.h"

#include <algorithm>
#include <cstdlib>

#include "loom/ops/nn.h"
#include "loom/runtime/error.h"
#include "loom/runtime/thread_pool.h"

#include "gemm_tiles.h"
#include "input_with_tag.h"

namespace loom::ops {

using namespace loom::ir;
using schedule::Schedule;

using detail::input_with_tag;
using detail::kMinParallelMacs;

const char* to_string(Int8GemmForm f) {
  switch (f) {
    case Int8GemmForm::Pairs16:
      return "int16 pairs";
    case Int8GemmForm::Bytes4:
      return "byte groups";
    case Int8GemmForm::Direct:
      return "direct";
  }
  return "?";
}

Int8GemmTiling int8_gemm_tiling_for(int lanes, int registers, int64_t M, int64_t N, Int8GemmForm form, bool int8_dot) {
  if (lanes < 1 || registers < 6 || M < 1 || N < 1)
    LOOM_THROW(ScheduleError, "int8 gemm tiling: ", lanes, " lanes, ", registers, " registers, ", M, " x ", N,
               " is not a target and product");
  Int8GemmTiling t;
  t.lanes = lanes;
  t.form = form;
  if (form == Int8GemmForm::Direct) {
    // All rows in registers with up to 4 vectors of columns, no wider than N needs.
    t.mr = int(std::min<int64_t>(M, 8));
    t.nv = std::max(1, std::min(4, (registers - 2) / (t.mr + 1)));
    while (t.nv > 1 && int64_t(t.nv - 1) * lanes >= N) --t.nv;
    return t;
  }
  // Besides the accumulators and B vectors: the broadcast A group, and without accumulating dot
  // products the product temporary (and for Bytes4 the vector of ones).
  const int extra = 1 + (int8_dot ? 0 : form == Int8GemmForm::Pairs16 ? 1 : 2);
  t.nv = int(std::min<int64_t>(registers >= 32 ? 3 : 2, (N + lanes - 1) / lanes));
  t.mr = int(std::min<int64_t>({8, (registers - t.nv - extra) / t.nv, M}));
  return t;
}

bool int8_weights_fit_bytes4(const NDArray& B) {
  if (B.ndim() != 2 || B.dtype() != DataType::Int(8))
    LOOM_THROW(TypeError, "int8_weights_fit_bytes4: B must be an int8 matrix, got ", B.describe());
  const int64_t K = B.shape()[0], N = B.shape()[1];
  const int8_t* b = B.data<int8_t>();
  for (int64_t k = 0; k < K; k += 2)
    for (int64_t n = 0; n < N; ++n) {
      int pair = std::abs(int(b[k * N + n])) + (k + 1 < K ? std::abs(int(b[(k + 1) * N + n])) : 0);
      if (pair > 128) return false;
    }
  return true;
}

namespace {
// out[l] = sum over j < group of int32(a[j]) * int32(b[l, j]).
schedule::TensorIntrin dot_intrin(const std::string& name, DataType a_type, DataType b_type, int group, int lanes) {
  Tensor a = placeholder({group}, a_type, "a");
  Tensor b = placeholder({lanes, group}, b_type, "b");
  IterVar j = reduce_axis(group, "j");
  Tensor out = compute(
      {lanes},
      [&](Var l) { return sum(cast(DataType::Int(32), a(j->var)) * cast(DataType::Int(32), b(l, j->var)), {j}); },
      name + "_out");
  return schedule::declare_tensor_intrin(name, out, {a, b});
}
}  // namespace

schedule::TensorIntrin cpu_dot2_i16_intrin(int lanes) {
  return dot_intrin(cpu_dot2_i16_name(lanes), DataType::Int(16), DataType::Int(16), 2, lanes);
}
schedule::TensorIntrin cpu_dot4_u8s7_intrin(int lanes) {
  return dot_intrin(cpu_dot4_u8s7_name(lanes), DataType::UInt(8), DataType::Int(8), 4, lanes);
}

Tensor gemm_int8(const Tensor& A, const Tensor& B, const Int8GemmTiling& t, const std::string& name) {
  if (A.ndim() != 2 || B.ndim() != 2)
    LOOM_THROW(ShapeError, "gemm_int8 '", name, "': A and B must be matrices, got '", A.name(), "' of rank ", A.ndim(),
               " and '", B.name(), "' of rank ", B.ndim());
  DataType at = A.dtype(), bt = B.dtype();
  if (!((at == DataType::Int(8) || at == DataType::UInt(8)) && bt == DataType::Int(8)))
    LOOM_THROW(TypeError, "gemm_int8 '", name, "': A must be int8 or uint8 and B int8, got ", at.str(), " and ",
               bt.str());
  const int64_t M = const_dim(A, 0), K = const_dim(A, 1), N = const_dim(B, 1);
  if (const_dim(B, 0) != K)
    LOOM_THROW(ShapeError, "gemm_int8 '", name, "': A is ", M, " x ", K, " but B has ", const_dim(B, 0), " rows");
  if (t.mr < 1 || t.nv < 1 || t.lanes < 1)
    LOOM_THROW(ScheduleError, "gemm_int8 '", name, "': tile ", t.mr, " x ", t.nv, " x ", t.lanes, " lanes");
  if (t.form == Int8GemmForm::Direct) {
    IterVar k = reduce_axis(int(K), "k");
    return compute(
        {A.shape()[0], B.shape()[1]},
        [&](Var m, Var n) {
          return sum(cast(DataType::Int(32), A(m, k->var)) * cast(DataType::Int(32), B(k->var, n)), {k});
        },
        name, "gemm_int8_direct");
  }
  const bool pairs = t.form == Int8GemmForm::Pairs16;
  if (!pairs && at != DataType::UInt(8))
    LOOM_THROW(TypeError, "gemm_int8 '", name, "': the byte-group form multiplies uint8 A (vpmaddubsw/vpdpbusd), got ",
               at.str(), "; use int16 pairs");
  const int G = t.group();
  const DataType elem = pairs ? DataType::Int(16) : DataType::Int(8);
  const int64_t KG = (K + G - 1) / G, W = t.panel(), panels = (N + W - 1) / W;
  // A as the intrinsic reads it: int16 (pairs), or uint8 padded to whole groups when K needs it.
  Tensor Aw = A;
  if (pairs || K % G != 0)
    Aw = compute(
        {A.shape()[0], Expr(int(G * KG))},
        [&](Var m, Var k) {
          Expr v = pairs ? cast(elem, A(m, k)) : A(m, k);
          return K % G == 0 ? v : if_then_else(k < int(K), v, make_zero(v.type()));
        },
        name + (pairs ? "_A16" : "_Apad"), "widen");
  Tensor Bp = compute(
      {Expr(int(panels)), Expr(int(KG)), Expr(int(W)), Expr(G)},
      [&](Var p, Var kg, Var w, Var j) {
        Expr k = kg * G + j, n = p * int(W) + w;
        Expr v = pairs ? cast(elem, B(k, n)) : B(k, n);
        bool whole = K % G == 0 && N % W == 0;
        return whole ? v : if_then_else(k < int(K) && n < int(N), v, make_zero(elem));
      },
      B.name() + "_packed", "pack");
  IterVar kg = reduce_axis(int(KG), "kg"), j = reduce_axis(G, "j");
  Tensor Cb = compute(
      {A.shape()[0], Expr(int(panels)), Expr(int(W))},
      [&](Var m, Var p, Var w) {
        return sum(
            cast(DataType::Int(32), Aw(m, kg->var * G + j->var)) * cast(DataType::Int(32), Bp(p, kg->var, w, j->var)),
            {kg, j});
      },
      name + "_acc", "gemm_int8_acc");
  return compute(
      {A.shape()[0], B.shape()[1]}, [&](Var m, Var n) { return Cb(m, n / int(W), n % int(W)); }, name, "gemm_int8");
}

void schedule_gemm_int8_cpu(Schedule& s, const Tensor& C, const Int8GemmTiling& t) {
  if (C.op()->tag == "gemm_int8_direct" || t.form == Int8GemmForm::Direct) {
    if (C.op()->tag != "gemm_int8_direct" || t.form != Int8GemmForm::Direct)
      LOOM_THROW(ScheduleError, "schedule_gemm_int8_cpu: '", C.name(), "' (tag '", C.op()->tag,
                 "') was not built in the tiling's form (", to_string(t.form), ")");
    GemmTiling g;
    g.mr = t.mr;
    g.nr = t.panel();
    g.k_unroll = 4;
    detail::schedule_gemm_tiles(s, C, g, const_dim(C.op()->input_tensors()[0], 1));
    return;
  }
  Tensor Cb = C.op()->tag == "gemm_int8" ? input_with_tag(C, "gemm_int8_acc") : Tensor();
  if (!Cb.defined())
    LOOM_THROW(ScheduleError, "schedule_gemm_int8_cpu: '", C.name(), "' is not a gemm_int8 (tag '", C.op()->tag, "')");
  if (const_dim(Cb, 2) != t.panel())
    LOOM_THROW(ScheduleError, "schedule_gemm_int8_cpu: '", C.name(), "' is packed in panels of ", const_dim(Cb, 2),
               " columns, the tiling has ", t.nv, " x ", t.lanes);
  Tensor Aw = input_with_tag(Cb, "widen"), Bp = input_with_tag(Cb, "pack");
  if (const_dim(Bp, 3) != t.group())
    LOOM_THROW(ScheduleError, "schedule_gemm_int8_cpu: '", C.name(), "' is packed in groups of ", const_dim(Bp, 3),
               ", the tiling's form (", to_string(t.form), ") takes ", t.group());
  const int64_t M = const_dim(C, 0), N = const_dim(C, 1), K = const_dim(Bp, 1) * t.group(), panels = const_dim(Cb, 1);
  auto c = s[C];
  auto tiles = c.tile(c.axis(0), c.axis(1), t.mr, t.panel());  // io, jo, ii, ji
  c.reorder({tiles[1], tiles[0], tiles[2], tiles[3]});         // panels of packed B outermost
  auto [jv, jl] = c.split(tiles[3], t.lanes);
  c.vectorize(jl);
  IterVar at = tiles[0];
  const bool parallel = double(M) * double(N) * double(K) >= kMinParallelMacs;
  if (parallel) {
    // Few panels (narrow B) leave threads idle: then row tiles are parallel too.
    if (panels < 2 * runtime::num_threads()) {
      at = c.fuse(tiles[1], tiles[0]);
      c.parallel(at);
    } else {
      c.parallel(tiles[1]);
    }
  }
  auto cb = s[Cb];
  cb.set_scope("local");
  cb.compute_at(c, at);
  auto [wv, wl] = cb.split(cb.axis(2), t.lanes);
  cb.reorder({cb.reduce_axis(0), cb.axis(0), cb.axis(1), wv, wl, cb.reduce_axis(1)});
  cb.unroll(cb.axis(0));
  cb.unroll(wv);
  cb.tensorize(wl, t.form == Int8GemmForm::Pairs16 ? cpu_dot2_i16_intrin(t.lanes) : cpu_dot4_u8s7_intrin(t.lanes));
  if (Aw.defined() && parallel) s[Aw].parallel(s[Aw].axis(0));
  if (parallel) s[Bp].parallel(s[Bp].axis(0));
}

}  // namespace loom::ops
