// Relations between a stage's iteration variables: computing root offsets from leaf loops
// (for the loop nest), and symbolic interval arithmetic (for bound inference).
#include "loom/ir/functor.h"
#include "loom/ir/simplify.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

StageNode* stage_for(const LowerState& st, const Operation* op) {
  Stage s = st.sch->stage_of(op);
  if (!s.node()) LOOM_THROW(LoweringError, "operation '", op->name, "' is read but is not part of the schedule");
  return s.node().get();
}

std::map<const IterVarNode*, Expr> root_offsets(const StageNode& s, const LowerState& st) {
  std::map<const IterVarNode*, Expr> off;
  for (auto& l : s.leaf_iter_vars) off[l.get()] = l->var;
  // Relations were recorded parent-before-child; walk them backwards so children are known.
  for (auto it = s.relations.rbegin(); it != s.relations.rend(); ++it) {
    if (it->kind == Relation::Kind::Split) {
      off[it->parent.get()] = off.at(it->outer.get()) * it->factor + off.at(it->inner.get());
    } else {
      Expr f = off.at(it->fused.get());
      Expr inner_ext = st.ranges.at(it->inner.get()).extent;
      off[it->outer.get()] = f / inner_ext;
      off[it->inner.get()] = f % inner_ext;
    }
  }
  return off;
}

namespace {
Expr lo(const Expr& a, const Expr& b) { return simplify(ir::min(a, b)); }
Expr hi(const Expr& a, const Expr& b) { return simplify(ir::max(a, b)); }
}  // namespace

Interval eval_interval(const Expr& e, const IntervalMap& vars) {
  if (auto* v = e.as<VarNode>()) {
    auto it = vars.find(v);
    return it == vars.end() ? Interval{e, e} : it->second;
  }
  if (e.as<IntImmNode>()) return {e, e};
  if (auto* c = e.as<CastNode>()) {
    Interval i = eval_interval(c->value, vars);
    if (!i.min.defined()) return {};
    return {simplify(cast(e.type(), i.min)), simplify(cast(e.type(), i.max))};
  }
  auto* b = as_binary(e);
  if (!b) return {};  // unknown: caller falls back to the whole tensor
  Interval x = eval_interval(b->a, vars), y = eval_interval(b->b, vars);
  if (!x.min.defined() || !y.min.defined()) return {};
  auto* cy = as_const_int(simplify(y.min));
  bool y_point = cy && structural_equal(simplify(y.min), simplify(y.max));
  switch (e.kind()) {
    case ExprKind::Add:
      return {simplify(x.min + y.min), simplify(x.max + y.max)};
    case ExprKind::Sub:
      return {simplify(x.min - y.max), simplify(x.max - y.min)};
    case ExprKind::Mul: {
      if (y_point) {
        if (*cy >= 0) return {simplify(x.min * y.min), simplify(x.max * y.min)};
        return {simplify(x.max * y.min), simplify(x.min * y.min)};
      }
      auto* cx = as_const_int(simplify(x.min));
      if (cx && structural_equal(simplify(x.min), simplify(x.max))) return eval_interval(b->b * b->a, vars);
      return {};
    }
    case ExprKind::Div:
      if (y_point && *cy > 0) return {simplify(x.min / y.min), simplify(x.max / y.min)};
      return {};
    case ExprKind::Mod:
      if (y_point && *cy > 0) {
        if (structural_equal(x.min, x.max)) return {simplify(x.min % y.min), simplify(x.min % y.min)};
        return {make_zero(e.type()), make_const(e.type(), double(*cy - 1))};
      }
      return {};
    case ExprKind::Min:
      return {lo(x.min, y.min), lo(x.max, y.max)};
    case ExprKind::Max:
      return {hi(x.min, y.min), hi(x.max, y.max)};
    default:
      return {};
  }
}

}  // namespace loom::schedule::passes
