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

void schedule_conv2d_cuda(Schedule& s, const Tensor& conv, const Tensor& out, int channels, int threads) {
  if (conv.ndim() != 4 || out.ndim() != 4 || const_dim(conv, 1) % channels != 0)
    LOOM_THROW(ScheduleError, "schedule_conv2d_cuda '", conv.name(), "': needs NCHW tensors with output channels (",
               conv.ndim() == 4 ? const_dim(conv, 1) : 0, ") a multiple of ", channels);
  Stage conv_stage = s[conv];
  for (Stage st : s.stages()) {
    if (!st->op->is_compute() || st == conv_stage || st->is_output) continue;
    if (st->op->reduce_axes().empty())
      st.compute_inline();
    else
      bind_flat(st, threads);  // another reduction: a kernel of its own
  }
  Stage acc, o;
  if (conv.op() == out.op()) {  // no epilogue: accumulate in registers, then copy out
    acc = s[s.cache_write(conv, scope::kLocal)];
    o = s[conv];
  } else {
    acc = conv_stage;
    acc.set_scope(scope::kLocal);
    o = s[out];
  }
  auto [fo, fi] = o.split(o.axis(1), channels);
  IterVar n = o.axis(0), y = o.axis(2), x = o.axis(3);
  o.reorder({n, fo, y, x, fi});
  IterVar pixel = o.fuse(o.fuse(o.fuse(n, fo), y), x);
  auto [bx, tx] = o.split(pixel, threads);
  o.bind(bx, "blockIdx.x");
  o.bind(tx, "threadIdx.x");
  o.unroll(fi);
  acc.compute_at(o, tx);
  std::vector<IterVar> order;
  for (auto& iv : acc->op->reduce_axes()) order.push_back(iv);
  for (size_t d = 0; d < 4; ++d) order.push_back(acc.axis(d));
  acc.reorder(order);
  acc.unroll(acc.axis(1));
  // The kernel window unrolled: its loads are independent, so they issue ahead of the FMA chain.
  const auto& red = acc->op->reduce_axes();
  for (size_t r = 1; r < red.size(); ++r)
    if (auto* e = as_const_int(red[r]->dom.extent); e && *e <= 7) acc.unroll(red[r]);
}

Tensor softmax_cuda(const Tensor& X, int threads, const std::string& name) {
  if (X.ndim() != 2 || !X.dtype().is_float())
    LOOM_THROW(ShapeError, "softmax_cuda: '", X.name(), "' must be a 2-D floating-point tensor");
  const int64_t n = const_dim(X, 0), m = const_dim(X, 1), steps = (m + threads - 1) / threads;
  auto folded = [&](const std::string& what, auto&& reduce, auto&& value) {
    IterVar k = reduce_axis(int(steps), "k");
    Expr col = k->var * threads;
    return compute(
        {int(n), threads},
        [&](Var i, Var t) { return reduce(value(i, col + t), std::vector<IterVar>{k}, col + t < int(m)); },
        name + "_" + what + "_part", "softmax_cuda.part");
  };
  auto mx_reduce = [](Expr v, std::vector<IterVar> ax, Expr c) { return max_reduce(v, ax, c); };
  auto sum_reduce = [](Expr v, std::vector<IterVar> ax, Expr c) { return sum(v, ax, c); };
  Tensor pmax = folded("max", mx_reduce, [&](Var i, Expr j) { return X(i, j); });
  IterVar t1 = reduce_axis(threads, "t1");
  Tensor rmax = compute(
      {int(n)}, [&](Var i) { return max_reduce(pmax(i, t1), {t1}); }, name + "_max", "softmax_cuda.row");
  Tensor psum = folded("sum", sum_reduce, [&](Var i, Expr j) { return exp(X(i, j) - rmax(i)); });
  IterVar t2 = reduce_axis(threads, "t2");
  Tensor rsum = compute(
      {int(n)}, [&](Var i) { return sum(psum(i, t2), {t2}); }, name + "_sum", "softmax_cuda.row");
  return compute(
      {int(n), int(m)}, [&](Var i, Var j) { return exp(X(i, j) - rmax(i)) / rsum(i); }, name, "softmax_cuda");
}

void schedule_softmax_cuda(Schedule& s, const Tensor& out) {
  if (out.op()->tag != "softmax_cuda")
    LOOM_THROW(ScheduleError, "schedule_softmax_cuda: '", out.name(), "' is not made by softmax_cuda");
  Stage o = s[out];
  int t = 0;
  for (Stage st : s.stages())
    if (st->op->tag == "softmax_cuda.part") t = int(const_dim(ir::Tensor(st->op), 1));
  o.bind(o.axis(0), "blockIdx.x");
  auto [jo, jt] = o.split(o.axis(1), t);
  o.bind(jt, "threadIdx.x");
  for (Stage st : s.stages()) {
    if (st->op->tag == "softmax_cuda.part") {
      st.set_scope(scope::kShared);
      st.compute_at(o, o.axis(0));
      st.bind(st.axis(1), "threadIdx.x");
    } else if (st->op->tag == "softmax_cuda.row") {
      st.set_scope(scope::kShared);
      st.compute_at(o, o.axis(0));
    }
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
  if (t.prefetch) acc.pragma(ko, "prefetch_shared");
}

}  // namespace loom::ops
