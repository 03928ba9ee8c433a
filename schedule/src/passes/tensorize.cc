// Tensorization: replaces the loop nest of a stage from leaf loop `p` inwards by a tensor
// intrinsic. The nest must compute exactly the intrinsic's pattern: the stage's last data-parallel
// and reduction axes sweep the intrinsic's axes (same extents, no guard needed), the remaining
// axes are fixed inside the nest, the bodies agree operator by operator, and each tensor read
// differs from the pattern's read only by an offset that does not depend on the intrinsic's axes.
#include <sstream>

#include "loom/ir/functor.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

class Matcher {
 public:
  Matcher(std::string where, std::vector<const VarNode*> intrin_vars)
      : where_(std::move(where)), ivars_(std::move(intrin_vars)) {}

  // Placeholder of the pattern -> start indices of the matching tensor in the stage.
  std::map<const Operation*, std::pair<OpRef, std::vector<Expr>>> bound;

  void match(const Expr& a, const Expr& b) {
    if (a.kind() != b.kind()) fail(a, b, "a different operation");
    if (a.type() != b.type()) fail(a, b, "type " + a.type().str() + " instead of " + b.type().str());
    if (auto* x = as_binary(a)) {
      auto* y = as_binary(b);
      match(x->a, y->a);
      match(x->b, y->b);
      return;
    }
    switch (a.kind()) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
        if (!structural_equal(a, b)) fail(a, b, "a different constant");
        return;
      case ExprKind::Var:
        if (!a.same_as(b)) fail(a, b, "a different variable");
        return;
      case ExprKind::Cast:
        match(a.as<CastNode>()->value, b.as<CastNode>()->value);
        return;
      case ExprKind::Reduce: {
        auto *x = a.as<ReduceNode>(), *y = b.as<ReduceNode>();
        if (x->reduce_kind != y->reduce_kind) fail(a, b, std::string("a ") + to_string(x->reduce_kind) + " reduction");
        if (x->condition.defined() || y->condition.defined()) fail(a, b, "a conditional reduction");
        match(x->source, y->source);
        return;
      }
      case ExprKind::TensorRead:
        return match_read(a.as<TensorReadNode>(), b.as<TensorReadNode>(), a, b);
      default:
        if (!structural_equal(a, b)) fail(a, b, "an unsupported construct");
    }
  }

 private:
  bool uses_intrin_var(const Expr& e) const {
    for (auto* v : ivars_)
      if (uses_var(e, v)) return true;
    return false;
  }

  void match_read(const TensorReadNode* x, const TensorReadNode* y, const Expr& a, const Expr& b) {
    size_t rank = x->indices.size(), prank = y->indices.size();
    if (prank > rank) fail(a, b, "a read of lower rank");
    std::vector<Expr> start;
    for (size_t d = 0; d < rank; ++d) {
      Expr offset = d < rank - prank ? x->indices[d] : simplify(x->indices[d] - y->indices[d - (rank - prank)]);
      if (uses_intrin_var(offset)) {
        std::ostringstream m;
        m << "index " << d << " of '" << x->op->name << "' moving differently from the pattern's '" << y->op->name
          << "'";
        fail(a, b, m.str());
      }
      start.push_back(offset);
    }
    auto it = bound.find(y->op.get());
    if (it == bound.end()) {
      bound[y->op.get()] = {x->op, start};
    } else if (it->second.first != x->op) {
      fail(a, b,
           "input '" + y->op->name + "' bound to both '" + it->second.first->name + "' and '" + x->op->name + "'");
    }
  }

  [[noreturn]] void fail(const Expr& a, const Expr& b, const std::string& what) const {
    LOOM_THROW(ScheduleError, where_, ": the stage computes '", to_string(a), "' where the intrinsic has '",
               to_string(b), "' (", what, ")");
  }

  std::string where_;
  std::vector<const VarNode*> ivars_;
};

}  // namespace

Stmt tensorize_nest(const StageNode& s, size_t p, const LowerState& st, IntrinPart part) {
  const IterVar& at = s.leaf_iter_vars[p];
  const TensorIntrin& intrin = s.attrs.at(at.get()).tensorize;
  std::string where = "tensorize '" + intrin->name + "' at '" + at->var.name() + "' of stage '" + s.op->name + "'";
  for (size_t q = p; q < s.leaf_iter_vars.size(); ++q) {
    const IterVar& iv = s.leaf_iter_vars[q];
    for (auto& rel : s.relations)
      if (rel.kind == Relation::Kind::Fuse && rel.fused == iv)
        LOOM_THROW(ScheduleError, where, ": loop '", iv->var.name(), "' inside the tensorized nest is fused");
    for (auto* c : {&st.sch->stages()})
      for (auto& other : *c)
        if (other->attach_type == AttachType::Scope && other->attach_ivar == iv)
          LOOM_THROW(ScheduleError, where, ": stage '", other.name(), "' is computed inside the tensorized nest at '",
                     iv->var.name(), "'");
  }
  // Offsets of the root vars from the leaves; split into the fixed part (inner leaves = 0)
  // and the extent the inner leaves sweep.
  auto offsets = root_offsets(s, st);
  VarMap inner_zero;
  VarBounds inner_bounds, all_bounds;
  for (size_t q = 0; q < s.leaf_iter_vars.size(); ++q) {
    const IterVar& iv = s.leaf_iter_vars[q];
    auto* ext = as_const_int(simplify(st.ranges.at(iv.get()).extent));
    if (!ext) LOOM_THROW(ScheduleError, where, ": loop '", iv->var.name(), "' has no constant extent");
    all_bounds[iv->var.get()] = {0, *ext - 1};
    if (q >= p) {
      inner_zero.emplace_back(iv->var.get(), Expr(0));
      inner_bounds[iv->var.get()] = {0, *ext - 1};
    } else {
      inner_bounds[iv->var.get()] = {0, 0};
    }
  }
  std::vector<IterVar> data_roots, reduce_roots;
  for (auto& r : s.root_iter_vars) (r->kind == IterKind::Reduce ? reduce_roots : data_roots).push_back(r);
  const Operation& pat = *intrin->output.op();
  std::vector<IterVar> pat_data = pat.axis, pat_reduce = pat.reduce_axes();
  if (pat_data.size() > data_roots.size() || pat_reduce.size() > reduce_roots.size())
    LOOM_THROW(ScheduleError, where, ": the intrinsic has more axes than the stage");

  VarMap to_pattern;
  std::vector<const VarNode*> intrin_vars;
  std::vector<Expr> out_start;
  auto map_roots = [&](const std::vector<IterVar>& roots, const std::vector<IterVar>& pattern) {
    size_t first = roots.size() - pattern.size();
    for (size_t k = 0; k < roots.size(); ++k) {
      const IterVar& r = roots[k];
      const Range& rg = st.ranges.at(r.get());
      Expr off = offsets.at(r.get());
      IntBounds sweep = const_bounds(off, inner_bounds), full = const_bounds(off, all_bounds);
      auto* rext = as_const_int(simplify(rg.extent));
      if (!full.max || !rext || *full.max >= *rext)
        LOOM_THROW(ScheduleError, where, ": axis '", r->var.name(),
                   "' needs a bounds guard (its loops overshoot extent ", to_string(rg.extent),
                   "); pick split factors that divide it");
      int64_t extent = sweep.max ? *sweep.max - (sweep.min ? *sweep.min : 0) + 1 : -1;
      Expr fixed = simplify(rg.min + substitute(off, inner_zero));
      if (r->kind == IterKind::DataPar) out_start.push_back(fixed);
      if (k < first) {
        if (extent != 1)
          LOOM_THROW(ScheduleError, where, ": axis '", r->var.name(), "' sweeps ", extent,
                     " iterations inside the nest but has no counterpart in the intrinsic");
        to_pattern.emplace_back(r->var.get(), fixed);
        continue;
      }
      const IterVar& pv = pattern[k - first];
      auto* pext = as_const_int(pv->dom.extent);
      if (!pext || *pext != extent)
        LOOM_THROW(ScheduleError, where, ": axis '", r->var.name(), "' sweeps ", extent,
                   " iterations, the intrinsic's axis '", pv->var.name(), "' has ",
                   pv->dom.extent.defined() ? to_string(pv->dom.extent) : "?");
      to_pattern.emplace_back(r->var.get(), fixed + pv->var);
      intrin_vars.push_back(pv->var.get());
    }
  };
  map_roots(data_roots, pat_data);
  map_roots(reduce_roots, pat_reduce);

  Expr body = simplify(substitute(st.bodies.at(&s), to_pattern));
  Matcher m(where, intrin_vars);
  m.match(body, pat.body);

  std::vector<Expr> addresses;
  if (part != IntrinPart::Reset) {
    for (auto& in : intrin->inputs) {
      auto it = m.bound.find(in.op().get());
      if (it == m.bound.end())
        LOOM_THROW(ScheduleError, where, ": the intrinsic's input '", in.name(), "' is not read");
      addresses.push_back(
          address_of(Expr(std::make_shared<const TensorReadNode>(it->second.first, it->second.second))));
    }
  }
  addresses.push_back(address_of(Expr(std::make_shared<const TensorReadNode>(s.op, out_start))));
  return intrin->lower(part, addresses);
}

}  // namespace loom::schedule::passes
