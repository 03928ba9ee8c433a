#include "loom/ops/cuda_schedules.h"

#include "loom/ir/buffer.h"
#include "loom/ops/nn.h"

namespace loom::ops {

using namespace loom::ir;
using schedule::Schedule;
using schedule::Stage;

namespace {

// Fuses all of a stage's data-parallel axes into one loop (outermost first).
IterVar fuse_data_axes(Stage st) {
  std::vector<IterVar> axes;
  for (auto& iv : st.leaf_iter_vars())
    if (iv->kind != IterKind::Reduce) axes.push_back(iv);
  IterVar f = axes.at(0);
  for (size_t i = 1; i < axes.size(); ++i) f = st.fuse(f, axes[i]);
  return f;
}

// A stage's leaf loops: the fused data axes split over threads, then its reduction loops.
void bind_flat(Stage st, int threads) {
  if (st->op->axis.empty()) LOOM_THROW(ScheduleError, "schedule_cuda_generic: '", st.name(), "' has no axes to bind");
  IterVar f = fuse_data_axes(st);
  auto [bx, tx] = st.split(f, threads);
  st.bind(bx, "blockIdx.x");
  st.bind(tx, "threadIdx.x");
}

// The cooperative load of a shared copy: the copy's axes fused, `vector` elements per thread
// and step (vectorized), the rest over the block's ty x tx threads, then serial.
void cooperative_load(Stage st, int ty, int tx, int vector) {
  IterVar f = fuse_data_axes(st);
  auto [rest, v] = st.split(f, vector);
  auto [outer, thread] = st.split(rest, ty * tx);
  auto [y, x] = st.split(thread, tx);
  st.bind(y, "threadIdx.y");
  st.bind(x, "threadIdx.x");
  st.vectorize(v);
  st.unroll(outer);
}

}  // namespace

void schedule_cuda_generic(Schedule& s, int threads) {
  for (Stage st : s.stages()) {
    if (!st->op->is_compute()) continue;
    bool reduction = !st->op->reduce_axes().empty();
    if (!st->is_output && !reduction) {
      st.compute_inline();
      continue;
    }
    bind_flat(st, threads);
  }
}

void schedule_gemm_cuda(Schedule& s, const Tensor& A, const Tensor& B, const Tensor& C, const CudaGemmTiling& t) {
  int64_t M = const_dim(C, 0), N = const_dim(C, 1), K = const_dim(A, 1);
  if (M % t.block_m || N % t.block_n || K % t.block_k || t.block_m % t.thread_m || t.block_n % t.thread_n)
    LOOM_THROW(ScheduleError, "schedule_gemm_cuda '", C.name(), "': ", M, " x ", N, " x ", K,
               " is not a multiple of the block tile ", t.block_m, " x ", t.block_n, " x ", t.block_k,
               " (or the thread tile ", t.thread_m, " x ", t.thread_n, " does not divide it)");
  const int ty = t.block_m / t.thread_m, tx = t.block_n / t.thread_n;
  Tensor AS = s.cache_read(A, scope::kShared, {C});
  Tensor BS = s.cache_read(B, scope::kShared, {C});
  Tensor CL = s.cache_write(C, scope::kLocal);

  Stage out = s[C];
  auto [io, ii] = out.split(out.axis(0), t.block_m);
  auto [jo, ji] = out.split(out.axis(1), t.block_n);
  auto [yi, ri] = out.split(ii, t.thread_m);
  auto [xi, rj] = out.split(ji, t.thread_n);
  out.reorder({io, jo, yi, xi, ri, rj});
  out.bind(io, "blockIdx.y");
  out.bind(jo, "blockIdx.x");
  out.bind(yi, "threadIdx.y");
  out.bind(xi, "threadIdx.x");
  out.unroll(ri);
  if (t.thread_n % t.vector == 0 && t.vector > 1) {
    auto [rjo, rjv] = out.split(rj, t.vector);
    out.unroll(rjo);
    out.vectorize(rjv);
  } else {
    out.unroll(rj);
  }

  Stage acc = s[CL];
  acc.compute_at(out, xi);
  auto [ko, ki] = acc.split(acc.reduce_axis(0), t.block_k);
  IterVar li = acc.axis(0), lj = acc.axis(1);
  acc.reorder({ko, ki, li, lj});
  acc.unroll(ki);
  acc.unroll(li);
  acc.unroll(lj);

  for (const Tensor& shared : {AS, BS}) {
    Stage st = s[shared];
    st.compute_at(acc, ko);
    cooperative_load(st, ty, tx, t.vector);
  }
  if (t.transpose_a) s[AS].storage_order({1, 0});
}

}  // namespace loom::ops
