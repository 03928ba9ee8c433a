// Arithmetic simplifier. Integer Add/Sub/Mul-by-constant chains are rewritten into a canonical
// linear form sum(coeff_i * term_i) + constant, which makes index expressions produced by
// split/fuse/bound inference cancel. Known variable ranges (loop bounds) decide comparisons,
// min/max and floor div/mod.
#include "loom/ir/simplify.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "loom/ir/functor.h"
#include "loom/ir/tensor.h"

namespace loom::ir {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

namespace {

// ---- constant bounds ----
IntBounds bounds_of(const Expr& e, const VarBounds& vb);

std::optional<int64_t> add_opt(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (a && b) return *a + *b;
  return std::nullopt;
}

IntBounds mul_bounds(const IntBounds& a, const IntBounds& b) {
  if (!(a.min && a.max && b.min && b.max)) {
    // One side constant: scale the other.
    const IntBounds* k = a.is_point() ? &a : b.is_point() ? &b : nullptr;
    const IntBounds* o = k == &a ? &b : &a;
    if (!k) return {};
    int64_t c = *k->min;
    if (c >= 0)
      return {o->min ? std::optional<int64_t>(*o->min * c) : std::nullopt,
              o->max ? std::optional<int64_t>(*o->max * c) : std::nullopt};
    return {o->max ? std::optional<int64_t>(*o->max * c) : std::nullopt,
            o->min ? std::optional<int64_t>(*o->min * c) : std::nullopt};
  }
  int64_t v[4] = {*a.min * *b.min, *a.min * *b.max, *a.max * *b.min, *a.max * *b.max};
  return {*std::min_element(v, v + 4), *std::max_element(v, v + 4)};
}

IntBounds bounds_of(const Expr& e, const VarBounds& vb) {
  if (!e.defined() || !e.type().is_integer() && !e.type().is_bool()) return {};
  if (auto* i = e.as<IntImmNode>()) return {i->value, i->value};
  if (auto* v = e.as<VarNode>()) {
    auto it = vb.find(v);
    return it == vb.end() ? IntBounds{} : it->second;
  }
  if (auto* c = e.as<CastNode>()) {
    if (c->value.type().is_integer() && c->type.bits() >= c->value.type().bits()) return bounds_of(c->value, vb);
    return {};
  }
  if (auto* s = e.as<SelectNode>()) {
    IntBounds t = bounds_of(s->true_value, vb), f = bounds_of(s->false_value, vb);
    IntBounds r;
    if (t.min && f.min) r.min = std::min(*t.min, *f.min);
    if (t.max && f.max) r.max = std::max(*t.max, *f.max);
    return r;
  }
  auto* b = as_binary(e);
  if (!b) return {};
  IntBounds x = bounds_of(b->a, vb), y = bounds_of(b->b, vb);
  switch (e.kind()) {
    case ExprKind::Add:
      return {add_opt(x.min, y.min), add_opt(x.max, y.max)};
    case ExprKind::Sub:
      return {x.min && y.max ? std::optional<int64_t>(*x.min - *y.max) : std::nullopt,
              x.max && y.min ? std::optional<int64_t>(*x.max - *y.min) : std::nullopt};
    case ExprKind::Mul:
      return mul_bounds(x, y);
    case ExprKind::Div:
      if (y.is_point() && *y.min > 0) {
        int64_t c = *y.min;
        return {x.min ? std::optional<int64_t>(floor_div(*x.min, c)) : std::nullopt,
                x.max ? std::optional<int64_t>(floor_div(*x.max, c)) : std::nullopt};
      }
      return {};
    case ExprKind::Mod:
      if (y.is_point() && *y.min > 0) {
        int64_t c = *y.min;
        if (x.min && x.max && *x.min >= 0 && *x.max < c) return x;
        return {0, c - 1};
      }
      return {};
    case ExprKind::Min:
      return {x.min && y.min ? std::optional<int64_t>(std::min(*x.min, *y.min)) : std::nullopt,
              x.max && y.max ? std::optional<int64_t>(std::min(*x.max, *y.max))
              : x.max        ? x.max
                             : y.max};
    case ExprKind::Max:
      return {x.min && y.min ? std::optional<int64_t>(std::max(*x.min, *y.min))
              : x.min        ? x.min
                             : y.min,
              x.max && y.max ? std::optional<int64_t>(std::max(*x.max, *y.max)) : std::nullopt};
    default:
      if (e.type().is_bool()) return {0, 1};
      return {};
  }
}

// ---- linear forms ----
struct Linear {
  DataType type;
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;

  void add_term(const Expr& t, int64_t c) {
    if (c == 0) return;
    for (auto& [e, k] : terms) {
      if (structural_equal(e, t)) {
        k += c;
        return;
      }
    }
    terms.emplace_back(t, c);
  }
  void add(const Linear& o, int64_t scale) {
    for (auto& [e, k] : o.terms) add_term(e, k * scale);
    constant += o.constant * scale;
  }
  void prune() {
    terms.erase(std::remove_if(terms.begin(), terms.end(), [](auto& p) { return p.second == 0; }), terms.end());
  }
  // x / c * (k c) + x % c * k = k x (floor division and modulo, c > 0): the two axes of a fused
  // loop recombined into the loop's own index, so a vectorized fused loop reads a ramp.
  std::vector<std::pair<Expr, int64_t>> take_div_mod_pairs() {
    std::vector<std::pair<Expr, int64_t>> whole;
    for (auto& [d, kd] : terms) {
      auto* div = d.as<DivNode>();
      const int64_t* c = div ? as_const_int(div->b) : nullptr;
      if (!c || *c <= 0 || kd == 0) continue;
      for (auto& [m, km] : terms) {
        auto* mod = m.as<ModNode>();
        if (!mod || km == 0 || kd != km * *c || !structural_equal(mod->a, div->a) || !structural_equal(mod->b, div->b))
          continue;
        whole.emplace_back(div->a, km);
        kd = 0, km = 0;
        break;
      }
    }
    prune();
    return whole;
  }
};

bool is_linear_type(DataType t) { return t.is_scalar() && t.is_integer(); }

Linear to_linear(const Expr& e) {
  Linear l{e.type(), {}, 0};
  if (auto* i = e.as<IntImmNode>()) {
    l.constant = i->value;
    return l;
  }
  switch (e.kind()) {
    case ExprKind::Add:
    case ExprKind::Sub: {
      auto* b = as_binary(e);
      l.add(to_linear(b->a), 1);
      l.add(to_linear(b->b), e.kind() == ExprKind::Add ? 1 : -1);
      l.prune();
      for (auto& [x, k] : l.take_div_mod_pairs()) l.add(to_linear(x), k);
      l.prune();
      return l;
    }
    case ExprKind::Mul: {
      auto* b = as_binary(e);
      Linear x = to_linear(b->a), y = to_linear(b->b);
      if (y.terms.empty()) {
        l.add(x, y.constant);
        l.prune();
        return l;
      }
      if (x.terms.empty()) {
        l.add(y, x.constant);
        l.prune();
        return l;
      }
      break;
    }
    default:
      break;
  }
  l.add_term(e, 1);
  return l;
}

Expr term_times(const Expr& t, int64_t c) {
  if (c == 1) return t;
  return Expr(std::make_shared<const MulNode>(t.type(), t, make_const(t.type(), double(c))));
}

Expr from_linear(const Linear& l) {
  Expr out;
  // Positive terms first, so that a - b prints instead of -b + a.
  std::vector<std::pair<Expr, int64_t>> ordered;
  for (auto& p : l.terms)
    if (p.second > 0) ordered.push_back(p);
  for (auto& p : l.terms)
    if (p.second < 0) ordered.push_back(p);
  for (auto& [t, c] : ordered) {
    if (!out.defined()) {
      out = c > 0 ? term_times(t, c) : Expr(std::make_shared<const MulNode>(l.type, t, make_const(l.type, double(c))));
    } else if (c > 0) {
      out = Expr(std::make_shared<const AddNode>(l.type, out, term_times(t, c)));
    } else {
      out = Expr(std::make_shared<const SubNode>(l.type, out, term_times(t, -c)));
    }
  }
  if (!out.defined()) return make_const(l.type, double(l.constant));
  if (l.constant > 0) out = Expr(std::make_shared<const AddNode>(l.type, out, make_const(l.type, double(l.constant))));
  if (l.constant < 0) out = Expr(std::make_shared<const SubNode>(l.type, out, make_const(l.type, double(-l.constant))));
  return out;
}

// ---- the expression simplifier ----
class Simplifier : public IRMutator {
 public:
  explicit Simplifier(VarBounds vb) : vb_(std::move(vb)) {}
  VarBounds vb_;

  using IRMutator::mutate;

 protected:
  Expr mutate_binary(const Expr& e, const BinaryNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    ExprKind k = e.kind();
    DataType t = a.type();
    auto* ia = as_const_int(a);
    auto* ib = as_const_int(b);
    auto* fa = a.as<FloatImmNode>();
    auto* fb = b.as<FloatImmNode>();

    // Constant folding.
    if (ia && ib && t.is_scalar()) {
      int64_t x = *ia, y = *ib;
      switch (k) {
        case ExprKind::Add:
          return make_const(t, double(x + y));
        case ExprKind::Sub:
          return make_const(t, double(x - y));
        case ExprKind::Mul:
          return make_const(t, double(x * y));
        case ExprKind::Div:
          if (y != 0) return make_const(t, double(floor_div(x, y)));
          break;
        case ExprKind::Mod:
          if (y != 0) return make_const(t, double(floor_mod(x, y)));
          break;
        case ExprKind::Min:
          return make_const(t, double(std::min(x, y)));
        case ExprKind::Max:
          return make_const(t, double(std::max(x, y)));
        case ExprKind::EQ:
          return make_const(DataType::Bool(), x == y);
        case ExprKind::NE:
          return make_const(DataType::Bool(), x != y);
        case ExprKind::LT:
          return make_const(DataType::Bool(), x < y);
        case ExprKind::LE:
          return make_const(DataType::Bool(), x <= y);
        case ExprKind::GT:
          return make_const(DataType::Bool(), x > y);
        case ExprKind::GE:
          return make_const(DataType::Bool(), x >= y);
        case ExprKind::And:
          return make_const(DataType::Bool(), x && y);
        case ExprKind::Or:
          return make_const(DataType::Bool(), x || y);
        default:
          break;
      }
    }
    if (fa && fb) {
      double x = fa->value, y = fb->value;
      switch (k) {
        case ExprKind::Add:
          return make_const(t, x + y);
        case ExprKind::Sub:
          return make_const(t, x - y);
        case ExprKind::Mul:
          return make_const(t, x * y);
        case ExprKind::Div:
          return make_const(t, x / y);
        case ExprKind::Min:
          return make_const(t, std::min(x, y));
        case ExprKind::Max:
          return make_const(t, std::max(x, y));
        default:
          break;
      }
    }
    // Float identities that are exact.
    if (t.is_float()) {
      if (k == ExprKind::Mul && (is_one(b) || is_one(a))) return is_one(b) ? a : b;
      if (k == ExprKind::Add && (is_zero(b) || is_zero(a))) return is_zero(b) ? a : b;
    }
    if (k == ExprKind::And) {
      if (is_one(a)) return b;
      if (is_one(b)) return a;
      if (is_zero(a) || is_zero(b)) return make_const(e.type(), 0);
    }
    if (k == ExprKind::Or) {
      if (is_zero(a)) return b;
      if (is_zero(b)) return a;
      if (is_one(a) || is_one(b)) return make_const(e.type(), 1);
    }

    if (is_linear_type(t)) {
      switch (k) {
        case ExprKind::Add:
        case ExprKind::Sub:
        case ExprKind::Mul:
          return from_linear(to_linear(rebuild(e, k, a, b)));
        case ExprKind::Div:
        case ExprKind::Mod:
          if (ib && *ib > 0) return simplify_divmod(k, a, *ib);
          break;
        case ExprKind::Min:
        case ExprKind::Max: {
          if (structural_equal(a, b)) return a;
          IntBounds d = bounds_of(from_linear(diff(a, b)), vb_);
          bool a_le_b = d.max && *d.max <= 0, a_ge_b = d.min && *d.min >= 0;
          if (k == ExprKind::Min && a_le_b) return a;
          if (k == ExprKind::Min && a_ge_b) return b;
          if (k == ExprKind::Max && a_ge_b) return a;
          if (k == ExprKind::Max && a_le_b) return b;
          break;
        }
        case ExprKind::EQ:
        case ExprKind::NE:
        case ExprKind::LT:
        case ExprKind::LE:
        case ExprKind::GT:
        case ExprKind::GE: {
          Linear dl = diff(a, b);
          IntBounds d = bounds_of(from_linear(dl), vb_);
          if (auto r = decide(k, d)) return make_const(DataType::Bool(), *r);
          break;
        }
        default:
          break;
      }
    }
    return rebuild(e, k, a, b);
  }

  // if_then_else with a decided condition is its chosen branch (loop partitioning proves
  // padding guards true on the interior of a loop nest).
  Expr mutate_call(const Expr& e, const CallNode* op) override {
    if (op->name == "if_then_else" && op->args.size() == 3) {
      Expr c = mutate(op->args[0]);
      if (auto* ic = as_const_int(c)) return mutate(*ic ? op->args[1] : op->args[2]);
      Expr t = mutate(op->args[1]), f = mutate(op->args[2]);
      if (c.same_as(op->args[0]) && t.same_as(op->args[1]) && f.same_as(op->args[2])) return e;
      return if_then_else(c, t, f);
    }
    return IRMutator::mutate_call(e, op);
  }

  Expr mutate_select(const Expr& e, const SelectNode* op) override {
    Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
    if (auto* ic = as_const_int(c)) return *ic ? t : f;
    if (structural_equal(t, f)) return t;
    if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
    return select(c, t, f);
  }

  Expr mutate_not(const Expr& e, const NotNode* op) override {
    Expr a = mutate(op->a);
    if (auto* i = as_const_int(a)) return make_const(e.type(), *i ? 0 : 1);
    return a.same_as(op->a) ? e : !a;
  }

  Expr mutate_cast(const Expr& e, const CastNode* op) override {
    Expr v = mutate(op->value);
    if (auto* f = v.as<FloatImmNode>(); f && e.type().is_scalar()) {
      if (e.type().is_float()) return make_const(e.type(), e.type().bits() == 32 ? double(float(f->value)) : f->value);
      if (std::isfinite(f->value)) return cast(e.type(), make_const(DataType::Int(64), std::trunc(f->value)));
    }
    return cast(e.type(), v);  // cast() folds integer constants
  }

 private:
  static Expr rebuild(const Expr& e, ExprKind k, const Expr& a, const Expr& b) {
    auto* op = as_binary(e);
    if (a.same_as(op->a) && b.same_as(op->b)) return e;
    return make_binary(k, a, b);
  }

  static Linear diff(const Expr& a, const Expr& b) {
    Linear l = to_linear(a);
    l.add(to_linear(b), -1);
    l.prune();
    return l;
  }

  static std::optional<bool> decide(ExprKind k, const IntBounds& d) {
    bool pos = d.min && *d.min > 0, neg = d.max && *d.max < 0;
    bool nonneg = d.min && *d.min >= 0, nonpos = d.max && *d.max <= 0;
    bool zero = d.is_point() && *d.min == 0;
    switch (k) {
      case ExprKind::EQ:
        return zero ? std::optional(true) : (pos || neg) ? std::optional(false) : std::nullopt;
      case ExprKind::NE:
        return zero ? std::optional(false) : (pos || neg) ? std::optional(true) : std::nullopt;
      case ExprKind::LT:
        return neg ? std::optional(true) : nonneg ? std::optional(false) : std::nullopt;
      case ExprKind::LE:
        return nonpos ? std::optional(true) : pos ? std::optional(false) : std::nullopt;
      case ExprKind::GT:
        return pos ? std::optional(true) : nonpos ? std::optional(false) : std::nullopt;
      case ExprKind::GE:
        return nonneg ? std::optional(true) : neg ? std::optional(false) : std::nullopt;
      default:
        return std::nullopt;
    }
  }

  // floor(L / c) and L mod c for a linear form L: terms whose coefficients are multiples of c
  // leave the remainder untouched; if what is left provably lies in [0, c) it is the remainder.
  Expr simplify_divmod(ExprKind k, const Expr& a, int64_t c) {
    if (c == 1) return k == ExprKind::Div ? a : make_zero(a.type());
    Linear l = to_linear(a);
    Linear q{l.type, {}, floor_div(l.constant, c)}, r{l.type, {}, floor_mod(l.constant, c)};
    for (auto& [t, coeff] : l.terms) {
      if (coeff % c == 0)
        q.add_term(t, coeff / c);
      else
        r.add_term(t, coeff);
    }
    Expr rest = from_linear(r);
    IntBounds rb = bounds_of(rest, vb_);
    if (rb.min && rb.max) {
      int64_t lo = floor_div(*rb.min, c), hi = floor_div(*rb.max, c);
      if (lo == hi) {  // the remainder part contributes a known constant to the quotient
        if (k == ExprKind::Div) {
          q.constant += lo;
          return from_linear(q);
        }
        r.constant -= lo * c;
        return from_linear(r);
      }
    }
    // (x / a) / b == x / (a*b) for positive constants, and (x / a + k) / b == (x + k*a) / (a*b):
    // the inner quotient may have had its constant taken out already.
    if (k == ExprKind::Div) {
      const Expr* nested = a.as<DivNode>() ? &a : nullptr;
      int64_t shift = 0;
      if (!nested && l.terms.size() == 1 && l.terms[0].second == 1 && l.terms[0].first.as<DivNode>())
        nested = &l.terms[0].first, shift = l.constant;
      if (nested) {
        auto* inner = nested->as<DivNode>();
        if (auto* ia = as_const_int(inner->b); ia && *ia > 0)
          return simplify_divmod(k, shift ? inner->a + make_const(a.type(), double(shift * *ia)) : inner->a, *ia * c);
      }
    }
    // Only for signed types: an unsigned dividend's wrap-around ((0u - 1) / 16) is no floor.
    if ((q.terms.empty() && (q.constant == 0 || !a.type().is_int())) || k == ExprKind::Mod) {
      Expr base = k == ExprKind::Mod ? rest : a;
      return make_binary(k, base, make_const(a.type(), double(c)));
    }
    // floor((c*Q + R) / c) == Q + floor(R / c), Q a constant too: (x + 16) / 16 == x / 16 + 1
    Expr qe = from_linear(q), re = make_binary(ExprKind::Div, rest, make_const(a.type(), double(c)));
    return from_linear(to_linear(Expr(std::make_shared<const AddNode>(a.type(), qe, re))));
  }
};

// ---- the statement simplifier: tracks loop variable ranges ----
class StmtSimplifier : public Simplifier {
 public:
  using Simplifier::mutate;
  using Simplifier::Simplifier;

 protected:
  Stmt mutate_for(const Stmt& s, const ForNode* op) override {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    if (is_const_int(ext, 0) || (as_const_int(ext) && *as_const_int(ext) < 0)) return no_op();
    if (is_const_int(ext, 1) && op->for_kind != ForKind::ThreadBinding && op->for_kind != ForKind::VirtualThread) {
      return mutate(substitute(op->body, {{op->var.get(), mn}}));
    }
    IntBounds mb = bounds_of(mn, vb_), eb = bounds_of(ext, vb_);
    IntBounds range{mb.min, mb.max && eb.max ? std::optional<int64_t>(*mb.max + *eb.max - 1) : std::nullopt};
    auto saved = vb_;
    vb_[op->var.get()] = range;
    Stmt body = mutate(op->body);
    vb_ = std::move(saved);
    if (auto* e = body.as<EvaluateNode>(); e && e->value.as<IntImmNode>()) return no_op();
    if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return s;
    return for_loop(op->var, mn, ext, op->for_kind, body, op->thread_tag);
  }

  Stmt mutate_let_stmt(const Stmt& s, const LetStmtNode* op) override {
    Expr v = mutate(op->value);
    auto saved = vb_;
    vb_[op->var.get()] = bounds_of(v, vb_);
    Stmt b = mutate(op->body);
    vb_ = std::move(saved);
    return v.same_as(op->value) && b.same_as(op->body) ? s : let_stmt(op->var, v, b);
  }

  Stmt mutate_if(const Stmt& s, const IfThenElseNode* op) override {
    Expr c = mutate(op->cond);
    if (auto* i = as_const_int(c)) {
      if (*i) return mutate(op->then_case);
      return op->else_case.defined() ? mutate(op->else_case) : no_op();
    }
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return s;
    return if_then_else(c, t, e);
  }

  Stmt mutate_assert(const Stmt& s, const AssertNode* op) override {
    Expr c = mutate(op->cond);
    if (auto* i = as_const_int(c); i && *i) return no_op();
    return c.same_as(op->cond) ? s : assert_stmt(c, op->message);
  }
};

}  // namespace

Expr simplify(const Expr& e, const VarBounds& bounds) {
  Simplifier s(bounds);
  return s.mutate(e);
}

Stmt simplify(const Stmt& st, const VarBounds& bounds) {
  StmtSimplifier s(bounds);
  return s.mutate(st);
}

IntBounds const_bounds(const Expr& e, const VarBounds& bounds) { return bounds_of(simplify(e, bounds), bounds); }

bool can_prove(const Expr& cond, const VarBounds& bounds) {
  Expr r = simplify(cond, bounds);
  auto* i = as_const_int(r);
  return i && *i != 0;
}

}  // namespace loom::ir
