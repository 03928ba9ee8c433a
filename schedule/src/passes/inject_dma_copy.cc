// Pass: loops annotated with pragma "dma_copy" must be a copy between two buffers (optionally
// padding with a constant outside a box, as produced by if_then_else in a padding stage).
// The nest is replaced by one call
//   dma_copy(dst_address, src_address, pad_value, ndim,
//            extent_0, dst_stride_0, src_stride_0, pad_before_0, pad_after_0, ...)   (outermost first)
// which an accelerator backend turns into its DMA instructions (LOAD/STORE). Strides are in
// elements; the source address is that of the first element inside the padding box.
#include "loom/ir/functor.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "loom/schedule/tensor_intrin.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

struct Loop {
  Var var;
  Expr extent;
};

[[noreturn]] void not_a_copy(const Stmt& s, const std::string& why) {
  LOOM_THROW(LoweringError, "pragma dma_copy: the annotated loop nest is not a copy (", why, "):\n", to_string(s));
}

// Coefficients of `e` in the loop vars (must be affine, coefficients loop-invariant).
std::vector<Expr> strides_of(const Expr& e, const std::vector<Loop>& loops, const Stmt& nest) {
  std::vector<Expr> out;
  VarMap zero;
  for (auto& l : loops) zero.emplace_back(l.var.get(), Expr(0));
  Expr rebuilt = substitute(e, zero);
  for (auto& l : loops) {
    Expr c = simplify(substitute(e, {{l.var.get(), l.var + 1}}) - e);
    for (auto& o : loops)
      if (uses_var(c, o.var.get())) not_a_copy(nest, "index '" + to_string(e) + "' is not affine in the loops");
    out.push_back(c);
    rebuilt = rebuilt + c * l.var;
  }
  if (!is_zero(simplify(e - rebuilt))) not_a_copy(nest, "index '" + to_string(e) + "' is not affine in the loops");
  return out;
}

// Splits a padding condition into per-loop [lo, hi) bounds: each conjunct must bound one loop
// variable with coefficient 1.
void bounds_from_condition(const Expr& cond, const std::vector<Loop>& loops, std::vector<Expr>& lo,
                           std::vector<Expr>& hi, const Stmt& nest) {
  if (auto* a = cond.as<AndNode>()) {
    bounds_from_condition(a->a, loops, lo, hi, nest);
    bounds_from_condition(a->b, loops, lo, hi, nest);
    return;
  }
  auto* b = as_binary(cond);
  if (!b || !(cond.kind() == ExprKind::GE || cond.kind() == ExprKind::LT))
    not_a_copy(nest, "padding condition '" + to_string(cond) + "' is not a box");
  Expr d = simplify(b->a - b->b);  // cond: d >= 0  or  d < 0
  for (size_t i = 0; i < loops.size(); ++i) {
    if (!uses_var(d, loops[i].var.get())) continue;
    Expr coef = simplify(substitute(d, {{loops[i].var.get(), loops[i].var + 1}}) - d);
    Expr rest = simplify(d - loops[i].var);
    if (!is_one(coef) || uses_var(rest, loops[i].var.get()))
      not_a_copy(nest, "padding condition '" + to_string(cond) + "' is not a box");
    for (auto& o : loops)
      if (uses_var(rest, o.var.get())) not_a_copy(nest, "padding condition '" + to_string(cond) + "' couples loops");
    // v + rest >= 0  ->  v >= -rest ;  v + rest < 0  ->  v < -rest
    Expr bound = simplify(Expr(0) - rest);
    if (cond.kind() == ExprKind::GE)
      lo[i] = lo[i].defined() ? simplify(max(lo[i], bound)) : bound;
    else
      hi[i] = hi[i].defined() ? simplify(min(hi[i], bound)) : bound;
    return;
  }
  not_a_copy(nest, "padding condition '" + to_string(cond) + "' does not involve the loops");
}

Stmt lower_copy(const Stmt& nest) {
  std::vector<Loop> loops;
  Stmt body = nest;
  while (auto* f = body.as<ForNode>()) {
    if (!is_zero(f->min)) not_a_copy(nest, "loops must start at 0");
    loops.push_back({f->var, f->extent});
    body = f->body;
  }
  auto* st = body.as<StoreNode>();
  if (!st) not_a_copy(nest, "the innermost statement is not a store");
  Expr value = st->value, pad_value = make_zero(st->buffer->dtype), cond;
  if (auto* c = value.as<CallNode>(); c && c->name == "if_then_else") {
    cond = c->args[0];
    value = c->args[1];
    pad_value = c->args[2];
    if (!pad_value.as<IntImmNode>() && !pad_value.as<FloatImmNode>())
      not_a_copy(nest, "padding value is not a constant");
  }
  // A narrowing cast is allowed: accelerators store accumulators truncated to the output type.
  if (auto* c = value.as<CastNode>();
      c && c->type.is_integer() && c->value.type().is_integer() && c->type.bits() <= c->value.type().bits())
    value = c->value;
  auto* ld = value.as<LoadNode>();
  if (!ld) not_a_copy(nest, "the stored value is not a load");
  if (ld->buffer->dtype != st->buffer->dtype && !(ld->buffer->dtype.is_integer() && st->buffer->dtype.is_integer()))
    not_a_copy(nest, "source and destination types differ");

  std::vector<Expr> dst_strides = strides_of(st->index, loops, nest);
  std::vector<Expr> src_strides = strides_of(ld->index, loops, nest);
  std::vector<Expr> lo(loops.size()), hi(loops.size());
  if (cond.defined()) bounds_from_condition(cond, loops, lo, hi, nest);

  VarMap first_inside, origin;
  DmaCopy copy;
  for (size_t i = 0; i < loops.size(); ++i) {
    Expr before = lo[i].defined() ? simplify(max(lo[i], Expr(0))) : Expr(0);
    Expr after = hi[i].defined() ? simplify(loops[i].extent - max(min(hi[i], loops[i].extent), before)) : Expr(0);
    first_inside.emplace_back(loops[i].var.get(), before);
    origin.emplace_back(loops[i].var.get(), Expr(0));
    copy.dims.push_back({loops[i].extent, dst_strides[i], src_strides[i], before, after});
  }
  copy.dst = address_of(load(st->buffer->dtype, st->buffer, simplify(substitute(st->index, origin))));
  copy.src = address_of(load(ld->buffer->dtype, ld->buffer, simplify(substitute(ld->index, first_inside))));
  copy.pad_value = pad_value;
  return evaluate(make_dma_copy(copy));
}

class DmaInjector : public IRMutator {
 protected:
  Stmt mutate_attr(const Stmt& s, const AttrNode* op) override {
    if (op->key != "pragma_dma_copy") return IRMutator::mutate_attr(s, op);
    return lower_copy(simplify(op->body));
  }
};

}  // namespace

Stmt inject_dma_copy(const Stmt& s) {
  DmaInjector d;
  return d.mutate(s);
}

}  // namespace loom::schedule::passes
