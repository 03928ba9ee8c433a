// ALU nests: element-wise stages in the accumulator scratchpad (pragma "alu") become ALU
// instructions (tensor-immediate or tensor-tensor, up to two loops outside an entry).
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

Emitter::AluNest Emitter::alu_nest_shape(const Stmt& nest, bool with_destination) {
  std::vector<const ForNode*> loops;
  Stmt body = nest;
  while (auto* f = body.as<ForNode>()) {
    loops.push_back(f);
    body = f->body;
  }
  auto* st = body.as<StoreNode>();
  if (!st) fail("pragma alu: the nest must end in one store:\n" + to_string(nest));
  auto dst_it = sram_.find(st->buffer.get());
  if (with_destination && (dst_it == sram_.end() || dst_it->second.mem != MemType::Acc))
    fail("pragma alu: '" + st->buffer->name + "' is not in the accumulator scope");
  // Classify the value: op(load, immediate) or op(load, load).
  const Expr& v = st->value;
  const LoadNode* lhs = nullptr;
  const LoadNode* rhs = nullptr;
  accel::AluOp aop = accel::AluOp::Add;
  bool use_imm = false;
  int64_t imm = 0;
  if (auto* b = as_binary(v)) {
    lhs = b->a.as<LoadNode>();
    rhs = b->b.as<LoadNode>();
    auto* c = as_const_int(b->b);
    switch (v.kind()) {
      case ExprKind::Add:
        aop = accel::AluOp::Add;
        break;
      case ExprKind::Sub:
        aop = accel::AluOp::Add;
        if (!c) fail("pragma alu: subtraction of two tensors");
        imm = -*c;
        use_imm = true;
        break;
      case ExprKind::Mul:
        aop = accel::AluOp::Mul;
        break;
      case ExprKind::Min:
        aop = accel::AluOp::Min;
        break;
      case ExprKind::Max:
        aop = accel::AluOp::Max;
        break;
      case ExprKind::Div:
        if (!c || *c <= 0 || (*c & (*c - 1)))
          fail("pragma alu: division by something other than a power of two in '" + to_string(v) + "'");
        aop = accel::AluOp::Shr;
        imm = __builtin_ctzll(uint64_t(*c));
        use_imm = true;
        break;
      default:
        fail("pragma alu: unsupported operation in '" + to_string(v) + "'");
    }
    if (c && v.kind() != ExprKind::Div && v.kind() != ExprKind::Sub) {
      use_imm = true;
      imm = *c;
    }
  } else if (auto* call = v.as<CallNode>(); call && call->name == kShiftRight && call->args.size() == 2) {
    // SHR by an immediate, or by the amounts of another entry (a per-channel requantization)
    aop = accel::AluOp::Shr;
    lhs = call->args[0].as<LoadNode>();
    rhs = call->args[1].as<LoadNode>();
    if (auto* c = as_const_int(call->args[1])) use_imm = true, imm = *c;
  } else if (auto* l = v.as<LoadNode>()) {
    lhs = l;  // a plain copy: dst = src
  }
  // A multiply by a power of two is a left shift, SHR by a negative amount: one cycle an iteration
  // where MUL's unit takes five, and the same wrapped product; by zero it is a MOV of zero.
  if (aop == accel::AluOp::Mul && use_imm && imm >= 0 && (imm & (imm - 1)) == 0) {
    aop = imm == 0 ? accel::AluOp::Mov : accel::AluOp::Shr;
    imm = imm == 0 ? 0 : -int64_t(__builtin_ctzll(uint64_t(imm)));
  }
  const bool operation = as_binary(v) || v.as<CallNode>();
  if (!lhs || (!use_imm && !rhs && operation))
    fail("pragma alu: expected op(tensor, constant) or op(tensor, tensor), got '" + to_string(v) + "'");
  if (use_imm && (imm < -32768 || imm > 32767))
    fail("pragma alu: immediate " + std::to_string(imm) + " does not fit 16 bits");
  int64_t e = elements_per_entry(MemType::Acc);
  // Element loops inside one entry, from the innermost outwards.
  int64_t prod = 1;
  size_t k = loops.size();
  auto step_of = [&](const Expr& index, const ForNode* l) {
    for (auto* o : loops) env_[o->var.get()] = 0;
    int64_t a = eval(index);
    env_[l->var.get()] = 1;
    int64_t b = eval(index);
    for (auto* o : loops) env_.erase(o->var.get());
    return b - a;
  };
  while (prod < e && k > 0) {
    const ForNode* l = loops[--k];
    if (step_of(st->index, l) != prod || step_of(lhs->index, l) != prod || (rhs && step_of(rhs->index, l) != prod))
      fail("pragma alu: the innermost loops must walk whole accumulator entries contiguously");
    prod *= eval(l->extent);
  }
  if (prod != e)
    fail("pragma alu: the innermost loops cover " + std::to_string(prod) + " elements, an entry has " +
         std::to_string(e));
  // Loops outside the entry, as (extent, destination / left / right operand steps in entries);
  // a loop merges into the one inside it when every operand walks both contiguously.
  struct OuterLoop {
    int64_t extent, dst, lhs, rhs;
  };
  std::vector<OuterLoop> outer;
  for (size_t i = 0; i < k; ++i)
    if (eval(loops[i]->extent) != 1)
      outer.push_back({eval(loops[i]->extent), step_of(st->index, loops[i]) / e, step_of(lhs->index, loops[i]) / e,
                       rhs ? step_of(rhs->index, loops[i]) / e : 0});
  for (size_t i = outer.size(); i-- > 1;) {
    auto &a = outer[i - 1], &b = outer[i];
    if (a.dst != b.extent * b.dst || a.lhs != b.extent * b.lhs || a.rhs != b.extent * b.rhs) continue;
    b.extent *= a.extent;
    outer.erase(outer.begin() + int64_t(i - 1));
  }
  if (outer.size() > 2) fail("pragma alu: more than two loops outside an entry");
  auto entry_at = [&](const BufferNode* buf, const Expr& index) -> int64_t {
    auto it = sram_.find(buf);
    if (it == sram_.end() || it->second.mem != MemType::Acc)
      fail("pragma alu: '" + buf->name + "' is not in the accumulator scope");
    if (it->second.dead) fail("pragma alu: '" + buf->name + "' was reused in place");
    for (auto* o : loops) env_[o->var.get()] = 0;
    int64_t el = eval(index);
    for (auto* o : loops) env_.erase(o->var.get());
    return it->second.base + el / e;
  };
  AluNest n{aop, use_imm, imm, operation, rhs != nullptr, {}, {}, {}, {}};
  n.dst0 = with_destination ? entry_at(st->buffer.get(), st->index) : -1;
  n.lhs0 = entry_at(lhs->buffer.get(), lhs->index);
  n.rhs0 = rhs ? entry_at(rhs->buffer.get(), rhs->index) : 0;
  for (auto& l : outer) n.loops.push_back({l.extent, l.dst, l.lhs, l.rhs});
  return n;
}

// A kernel over the nest's entries: destination steps from `dst`, operand steps from `src`
// (0 dst, 1 lhs, 2 rhs of each loop's steps).
accel::UopKernel Emitter::alu_kernel(const AluNest& n, int dst, int src) const {
  UopKernelBuilder kb;
  const int64_t base[3] = {n.dst0, n.lhs0, n.rhs0};
  for (auto& l : n.loops) kb.loop(uint32_t(l[0]), uint32_t(l[1 + dst]), src < 0 ? 0 : uint32_t(l[1 + src]));
  return kb.push(uint32_t(base[dst]), src < 0 ? 0 : uint32_t(base[src])).build();
}

void Emitter::alu_nest(const Stmt& nest) {
  if (auto acc = accumulated_add_.find(nest.get());
      acc != accumulated_add_.end() && emit_accumulated_add(nest, acc->second))
    return;
  AluNest n = alu_nest_shape(nest);
  // The GEMMs accumulated onto a bias this nest would add (accel_bias_init.cc): it only copies,
  // if it does not compute in place.
  const bool preset = bias_applied_.erase({nest.get(), context()}) > 0;
  // A constant added in place right after the GEMMs: the resets before them take it instead.
  bool in_place = n.dst0 == n.lhs0;
  for (const auto& l : n.loops) in_place = in_place && l[1] == l[2];
  if (n.operation && !preset && n.op == accel::AluOp::Add && n.use_imm && in_place &&
      emit_round_preset(alu_kernel(n, 0, 0), int32_t(n.imm)))
    return;
  // Every ALU instruction below writes the destination entries' out copies.
  Access a = kernel_access(alu_kernel(n, 0, -1), false);
  sync_before(Module::Compute, a);
  // The ALU updates its destination: bring the left operand there first unless it already is.
  if (n.dst0 != n.lhs0) alu(alu_kernel(n, 0, 1), accel::AluOp::Mov, false);
  if (n.operation && !preset) {
    accel::UopKernel k = n.use_imm ? alu_kernel(n, 0, 0) : alu_kernel(n, 0, 2);
    // A clamp's second bound joins the first one's instruction as one CLIP.
    if (!n.use_imm || !drv_.fold_into_clip(k, n.op, int32_t(n.imm))) alu(k, n.op, n.use_imm, int32_t(n.imm));
  }
  record_after(Module::Compute, a);
}

}  // namespace loom::codegen::accel_backend
