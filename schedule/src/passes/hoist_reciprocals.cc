// Pass (CPU lowering): hoist_reciprocals. A float division inside a loop whose divisor does not
// change in that loop (softmax's row sum, LayerNorm's deviation, GELU's 1/sqrt(2) as a constant
// tensor) divides every element: a vector division takes 10-16 cycles on x86 cores, a multiply
// half of one. The loop instead multiplies by the divisor's reciprocal, computed once before it
// (at the outermost loop in which the divisor is invariant):
//   a / d  ->  (a * r) * s,   with  s = |d| < 2^-100 ? 2^64 : |d| > 2^100 ? 2^-64 : 1
//                                   and  r = 1 / (d * s)
// s, a power of two, keeps the reciprocal of a tiny divisor finite and that of a huge one normal;
// for every other divisor the product is a * r, within an ulp of the division; zero, infinite and
// NaN divisors give what the division gives.
// Invariant: the divisor reads no variable bound in the loop (its own variable, inner loops',
// lets) and no buffer the loop stores to, and calls only pure intrinsics. A divisor that reads
// memory or divides integers is hoisted only out of a loop of a constant, nonzero extent and not
// from under an if (a statement, or an if_then_else's arm) inside it: the load or division then
// runs where the loop would have run it (a loop of a symbolic extent may run no iteration, and a
// guard may protect a load or a divisor of zero). A loop's annotations (pragmas) stay on it: the
// lets go around them. float32 and float64 (a half's range has no room for s). A quotient read by
// a rounding, an integer conversion, a comparison or a remainder keeps its division: an ulp there
// can change the result.
#include <set>
#include <string>
#include <utility>

#include "loom/ir/functor.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

// A loop of a constant, nonzero extent.
bool runs(const ForNode* op) {
  const int64_t* trips = as_const_int(op->extent);
  return trips && *trips > 0;
}

// Whether evaluating `e` where it did not run could fault: a load, or an integer division.
bool may_fault(const Expr& e) {
  bool unsafe = false;
  post_order_visit(e, [&](const Expr& x) {
    unsafe |= x.kind() == ExprKind::Load ||
              ((x.kind() == ExprKind::Div || x.kind() == ExprKind::Mod) && !x.type().is_float());
  });
  return unsafe;
}

// Whether `d` has the same value in every iteration of a loop that binds and stores `loop`.
bool invariant(const Expr& d, const Bindings& loop) {
  bool ok = true;
  post_order_visit(d, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>()) ok &= !loop.vars.count(v);
    if (auto* l = x.as<LoadNode>()) ok &= !loop.stored.count(l->buffer.get());
    if (auto* c = x.as<CallNode>()) ok &= c->call_type == CallNode::CallType::PureIntrinsic;
    ok &= x.kind() != ExprKind::Reduce && x.kind() != ExprKind::TensorRead;
  });
  return ok;
}

// f(), with `depth` one deeper while it runs if `on`.
template <typename F>
auto within(int& depth, bool on, F f) {
  depth += on;
  auto r = f();
  depth -= on;
  return r;
}

// Rewrites the divisions of one loop whose divisors are invariant in it; each distinct divisor
// gets its scale and reciprocal (lets placed around the loop by the caller).
class Rewriter : public IRMutator {
 public:
  Rewriter(Bindings loop, int& names) : loop_(std::move(loop)), names_(names) {}
  struct Hoisted {
    Expr divisor;
    Var scale, recip;
  };
  std::vector<Hoisted> hoisted;

 protected:
  // Code under an if, or in a loop that may run no iteration, may not run at all.
  Stmt mutate_if(const Stmt& s, const IfThenElseNode* op) override {
    return within(conditional_, true, [&] { return IRMutator::mutate_if(s, op); });
  }
  Stmt mutate_for(const Stmt& s, const ForNode* op) override {
    return within(conditional_, !runs(op), [&] { return IRMutator::mutate_for(s, op); });
  }
  // A quotient that a rounding, an integer conversion, a comparison or a remainder reads keeps its
  // division: there an ulp can change the result (DynamicQuantizeLinear's round(x / scale)).
  Expr mutate_cast(const Expr& e, const CastNode* op) override {
    return within(exact_, !e.type().is_float(), [&] { return IRMutator::mutate_cast(e, op); });
  }
  Expr mutate_call(const Expr& e, const CallNode* op) override {
    static const std::set<std::string> kRounding = {"floor", "ceil", "round", "roundeven", "trunc"};
    // if_then_else evaluates one arm (the backend branches): its arms are conditional code
    return within(conditional_, op->name == "if_then_else", [&] {
      return within(exact_, kRounding.count(op->name) > 0, [&] { return IRMutator::mutate_call(e, op); });
    });
  }
  Expr mutate_binary(const Expr& e, const BinaryNode* op) override {
    const ExprKind k = e.kind();
    const bool discontinuous = k == ExprKind::EQ || k == ExprKind::NE || k == ExprKind::LT || k == ExprKind::LE ||
                               k == ExprKind::GT || k == ExprKind::GE || k == ExprKind::Mod;
    Expr m = within(exact_, discontinuous, [&] { return IRMutator::mutate_binary(e, op); });
    const auto* div = m.as<DivNode>();
    if (!div || exact_ || !m.type().is_float() || m.type().bits() < 32 || !invariant(div->b, loop_)) return m;
    if (may_fault(div->b) && conditional_) return m;
    // A broadcast divisor: its scalar's reciprocal, broadcast.
    Expr scalar = div->b;
    int lanes = 0;
    if (auto* b = div->b.as<BroadcastNode>()) {
      scalar = b->value;
      lanes = b->lanes;
    }
    const Hoisted& h = find_or_add(scalar);
    auto wide = [&](const Var& v) { return lanes ? broadcast(v, lanes) : Expr(v); };
    return div->a * wide(h.recip) * wide(h.scale);
  }

 private:
  const Hoisted& find_or_add(const Expr& scalar) {
    for (const Hoisted& h : hoisted)
      if (structural_equal(h.divisor, scalar)) return h;
    const std::string n = std::to_string(names_++);
    hoisted.push_back({scalar, Var("recip_scale" + n, scalar.type()), Var("recip" + n, scalar.type())});
    return hoisted.back();
  }
  const Bindings loop_;
  int& names_;           // numbers the lets across the function
  int conditional_ = 0;  // ifs and loops that may run no iteration around the current node
  int exact_ = 0;        // roundings, integer casts, comparisons and remainders around it
};

class HoistReciprocals : public IRMutator {
 protected:
  Stmt mutate_for(const Stmt& s, const ForNode*) override { return hoist(s, {}); }
  // A loop's annotations stay right around it (the backend finds the loop under them).
  Stmt mutate_attr(const Stmt& s, const AttrNode* op) override {
    std::vector<const AttrNode*> attrs;
    Stmt inner = s;
    while (const auto* a = inner.as<AttrNode>()) {
      attrs.push_back(a);
      inner = a->body;
    }
    if (!inner.as<ForNode>()) return IRMutator::mutate_attr(s, op);
    return hoist(inner, attrs);
  }

 private:
  // The loop `s` with its divisions rewritten, under `attrs` (outermost first), inside the lets.
  Stmt hoist(const Stmt& s, const std::vector<const AttrNode*>& attrs) {
    Rewriter rw(bindings_of(s), names_);
    Stmt loop = rw.mutate(s);  // the loop itself counts: a load is hoisted only out of one that runs
    // Loops inside get their own (divisors that change here but not there).
    const auto* f = loop.as<ForNode>();
    Stmt body = mutate(f->body);
    if (!body.same_as(f->body)) loop = for_loop(f->var, f->min, f->extent, f->for_kind, body, f->thread_tag);
    for (auto a = attrs.rbegin(); a != attrs.rend(); ++a) loop = attr((*a)->key, (*a)->value, loop);
    for (auto it = rw.hoisted.rbegin(); it != rw.hoisted.rend(); ++it) {
      const Expr& d = it->divisor;
      const DataType t = d.type();
      Expr scale = select(abs(d) < make_const(t, 0x1p-100), make_const(t, 0x1p64),
                          select(abs(d) > make_const(t, 0x1p100), make_const(t, 0x1p-64), make_one(t)));
      loop = let_stmt(it->scale, scale, let_stmt(it->recip, make_one(t) / (d * it->scale), loop));
    }
    return loop;
  }
  int names_ = 0;
};

}  // namespace

Stmt hoist_reciprocals(const Stmt& s) { return HoistReciprocals().mutate(s); }

}  // namespace loom::schedule::passes
