// GEMM folding: tensorized GEMM calls, and the perfect loop nests around them folded into one
// GEMM instruction (micro-op loops plus unrolled micro-ops).
#include "accel_emitter.h"

#include "loom/ir/functor.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/printer.h"
#include "loom/runtime/error.h"

namespace loom::codegen::accel_backend {

using namespace loom::ir;
using accel::MemType;
using accel::Module;
using accel::UopKernelBuilder;

std::optional<TensorIntrinCall> Emitter::as_gemm_call(const CallNode* call) {
  auto c = as_tensor_intrin_call(call);
  if (!c || c->intrinsic != kAccelGemm) return std::nullopt;
  return c;
}

void Emitter::gemm(const TensorIntrinCall& call, const std::vector<const ForNode*>& unrolled,
                   const std::vector<const ForNode*>& loops) {
  bool reset = call.part == TensorIntrinPart::Reset, full = call.part == TensorIntrinPart::Full;
  if (call.addresses.size() != (reset ? 1u : 3u))
    fail(std::string("GEMM ") + to_string(call.part) + " with " + std::to_string(call.addresses.size()) + " addresses");
  // Operand entries at every loop value of interest: base, and one step of each loop.
  auto entries = [&]() {
    std::array<uint32_t, 3> r{0, 0, 0};
    if (reset) {
      r[0] = entry_of(operand(call.addresses[0]), "GEMM accumulator");
    } else {
      r[1] = entry_of(operand(call.addresses[0]), "GEMM input");
      r[2] = entry_of(operand(call.addresses[1]), "GEMM weight");
      r[0] = entry_of(operand(call.addresses[2]), "GEMM accumulator");
    }
    return r;
  };
  UopKernelBuilder k, zero;  // zero: the reset a "full" GEMM (whole reduction in one call) starts with
  std::vector<std::array<int64_t, 3>> steps;
  for (auto* l : unrolled) env_[l->var.get()] = 0;
  for (auto* l : loops) env_[l->var.get()] = 0;
  auto base = entries();
  for (auto* l : loops) {
    env_[l->var.get()] = 1;
    auto next = entries();
    env_[l->var.get()] = 0;
    steps.push_back({int64_t(next[0]) - base[0], int64_t(next[1]) - base[1], int64_t(next[2]) - base[2]});
  }
  for (size_t i = 0; i < loops.size(); ++i) {
    k.loop(uint32_t(eval(loops[i]->extent)), uint32_t(steps[i][0]), uint32_t(steps[i][1]), uint32_t(steps[i][2]));
    zero.loop(uint32_t(eval(loops[i]->extent)), uint32_t(steps[i][0]), 0, 0);
  }
  // One micro-op per iteration of the unrolled loops (they run innermost: GEMM updates commute).
  for_each_point(unrolled, [&] {
    auto b = entries();
    k.push(b[0], b[1], b[2]);
    zero.push(b[0], 0, 0);
  });
  for (auto* l : loops) env_.erase(l->var.get());
  for (auto* l : unrolled) env_.erase(l->var.get());
  CapturedGemm g{zero.build(), k.build(), full, reset};
  if (capture_)
    capture_->push_back(std::move(g));
  else
    emit_gemm(g);
}

void Emitter::emit_gemm(const CapturedGemm& g) {
  Access a = kernel_access(g.kernel, !g.reset);
  sync_before(Module::Compute, a);
  if (g.full) {
    drv_.gemm(g.zero, true);
    note_reset(g.zero);
  }
  drv_.gemm(g.kernel, g.reset);
  if (g.reset) note_reset(g.kernel);
  record_after(Module::Compute, a);
}

// Calls f with the loop variables of `loops` set to every point of their iteration space.
void Emitter::for_each_point(const std::vector<const ForNode*>& loops, const std::function<void()>& f) {
  std::function<void(size_t)> rec = [&](size_t d) {
    if (d == loops.size()) return f();
    for (int64_t i = 0; i < *as_const_int(loops[d]->extent); ++i) {
      env_[loops[d]->var.get()] = i;
      rec(d + 1);
    }
    env_[loops[d]->var.get()] = 0;
  };
  rec(0);
}

// The GEMM call at the end of a perfect nest of at most kMaxGemmNest loops starting at `f`.
const CallNode* Emitter::gemm_nest_call(const ForNode* f) {
  Stmt body = f->body;
  for (int depth = 1; depth < kMaxGemmNest; ++depth) {
    auto* inner = body.as<ForNode>();
    if (!inner) break;
    body = inner->body;
  }
  auto* ev = body.as<EvaluateNode>();
  auto* call = ev ? ev->value.as<CallNode>() : nullptr;
  return as_gemm_call(call) ? call : nullptr;
}

// A perfect nest of loops around a GEMM call becomes one instruction: the innermost one or two
// loops become the micro-op loop when the operand entries move by a constant, non-negative step
// per iteration; loops outside them (the reduction window of a convolution, say) are unrolled into
// the micro-op kernel, up to kMaxUnrolledUops micro-ops.
bool Emitter::try_fold_gemm(const ForNode* op) {
  const CallNode* call = gemm_nest_call(op);
  if (!call) return false;
  std::vector<const ForNode*> chain;
  for (const ForNode* f = op; f; f = f->body.as<ForNode>()) chain.push_back(f);
  int64_t unrolled_points = 1;
  for (auto* l : chain) {
    if (!as_const_int(l->extent) || !is_zero(l->min) || *as_const_int(l->extent) >= (1 << 14)) return false;
  }
  size_t n_inner = std::min<size_t>(2, chain.size());
  std::vector<const ForNode*> unrolled(chain.begin(), chain.end() - n_inner), loops(chain.end() - n_inner, chain.end());
  for (auto* l : unrolled) unrolled_points *= *as_const_int(l->extent);
  if (unrolled_points > kMaxUnrolledUops) return false;
  bool ok = true;
  auto operands = [&]() {
    std::vector<int64_t> v;
    for (auto& a : call->args) {
      Operand o = operand(a);
      if (!o.sram) ok = false;
      v.push_back(o.sram ? o.element : 0);
    }
    return v;
  };
  // Affine check at every unrolled point: the step measured at 0 must hold at the last iteration.
  for (auto* l : loops) env_[l->var.get()] = 0;
  for_each_point(unrolled, [&] {
    auto base = operands();
    std::vector<std::vector<int64_t>> step;
    for (auto* l : loops) {
      env_[l->var.get()] = 1;
      auto n = operands();
      env_[l->var.get()] = 0;
      std::vector<int64_t> d;
      for (size_t i = 0; i < n.size(); ++i) {
        d.push_back(n[i] - base[i]);
        if (d.back() < 0) ok = false;
      }
      step.push_back(d);
    }
    for (auto* l : loops) env_[l->var.get()] = *as_const_int(l->extent) - 1;
    auto last = operands();
    for (size_t i = 0; i < last.size() && ok; ++i) {
      int64_t want = base[i];
      for (size_t j = 0; j < loops.size(); ++j) want += step[j][i] * (*as_const_int(loops[j]->extent) - 1);
      ok = want == last[i];
    }
    for (auto* l : loops) env_[l->var.get()] = 0;
  });
  for (auto* l : loops) env_.erase(l->var.get());
  for (auto* l : unrolled) env_.erase(l->var.get());
  if (!ok) return false;
  gemm(*as_gemm_call(call), unrolled, loops);
  return true;
}

}  // namespace loom::codegen::accel_backend
