// Pass: loop partitioning. A split whose factor does not divide the extent leaves guards such as
// `if (xo*6 + xi < 56)` inside the loop nest (schedule_ops), and inlined zero padding leaves
// `if_then_else(y + ry - 1 >= 0 && ..., X[..], 0)` on every read; they block unrolled and
// vectorized code for every iteration although only the borders need them. For each serial loop with
// constant bounds whose body holds guards on its variable, this pass finds the iterations where
// every such guard is provably true and splits the loop into up to three loops: before, that
// main range (simplified under its bounds, so its guards disappear) and after. A parallel loop
// stays one loop (one fork-join): its body becomes `if (v in main range) <simplified body> else
// <body>`, so every thread but the one with the last iteration runs unguarded code.
//
// Each conjunct of a guard is true on a prefix or a suffix of the loop when it is monotone in
// the loop variable (linear index arithmetic); the prefix or suffix is found by binary search
// with the simplifier's prover under the bounds of the loops between the guard and this loop.
//
// A loop whose extent is symbolic (a split of an extent over shape variables, docs/
// dynamic_shapes.md) is partitioned where its guards are affine, a*v + (inner loops' variables)
// + (shape variables) < 0 with a > 0: true for every inner iteration while v < P, P computed
// from the shape variables at run time; the loop becomes [0, min(P, extent)) with those guards
// replaced by true, then the rest with them (a parallel loop: one loop, `if (v < P)` inside).
//
// On the CPU, a vector loop whose body does something only on a prefix of its lanes (the last
// tile of a ragged split: `if (192 + xi < 197)` over 16 lanes) becomes a narrower vector loop
// over that prefix, its guards gone: vectorize_loops widens it to that many lanes, where a
// per-lane guard would keep the loop and leave it to LLVM's vectorizer (gathers, scalar FMAs).
// Past one register (of the widest element the body stores or loads) it becomes whole registers
// and the rest (17 floats with 512-bit registers: 16 and 1): LLVM builds a vector of an odd
// width past one register lane by lane.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "loom/ir/buffer.h"
#include "loom/ir/functor.h"
#include "loom/ir/simplify.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

// At most this many loops are partitioned per function: each one copies its body.
constexpr int kMaxPartitions = 16;

struct Guard {
  Expr cond;         // one conjunct
  VarBounds bounds;  // bounds of every loop around it (the candidate loop's var excluded)
};

void split_conjuncts(const Expr& e, std::vector<Expr>& out) {
  if (auto* a = e.as<AndNode>()) {
    split_conjuncts(a->a, out);
    split_conjuncts(a->b, out);
  } else {
    out.push_back(e);
  }
}

// Bounds of a loop's variable from constant min and extent (none otherwise).
std::optional<IntBounds> loop_bounds(const ForNode* f) {
  auto* mn = as_const_int(f->min);
  auto* ext = as_const_int(f->extent);
  if (!mn || !ext || *ext <= 0) return std::nullopt;
  return IntBounds{*mn, *mn + *ext - 1};
}

// The guards inside a loop body that mention `v`, each with the bounds of the loops around it.
class GuardCollector : public IRVisitor {
 public:
  GuardCollector(const VarNode* v, VarBounds outer) : v_(v), bounds_(std::move(outer)) {}
  std::vector<Guard> guards;

  void visit_for(const ForNode* op) override {
    visit(op->min);
    visit(op->extent);
    auto b = loop_bounds(op);
    auto saved = bounds_.find(op->var.get()) != bounds_.end() ? std::optional(bounds_[op->var.get()]) : std::nullopt;
    if (b)
      bounds_[op->var.get()] = *b;
    else
      bounds_.erase(op->var.get());
    visit(op->body);
    if (saved)
      bounds_[op->var.get()] = *saved;
    else
      bounds_.erase(op->var.get());
  }
  void visit_if(const IfThenElseNode* op) override {
    collect(op->cond);
    IRVisitor::visit_if(op);
  }
  // if_then_else in an expression: inlined zero padding's reads (`if_then_else(y + ry - 1 >= 0
  // && ..., X[..], 0)`), true everywhere but at the borders.
  void visit_call(const CallNode* op) override {
    if (op->name == "if_then_else" && op->args.size() == 3) collect(op->args[0]);
    IRVisitor::visit_call(op);
  }

 private:
  void collect(const Expr& cond) {
    std::vector<Expr> parts;
    split_conjuncts(cond, parts);
    for (auto& c : parts)
      if (uses_var(c, v_)) guards.push_back({c, bounds_});
  }

  const VarNode* v_;
  VarBounds bounds_;
};

bool provable_on(const Guard& g, const VarNode* v, int64_t lo, int64_t hi) {  // v in [lo, hi]
  VarBounds b = g.bounds;
  b[v] = IntBounds{lo, hi};
  return can_prove(g.cond, b);
}

// The iterations [begin, end) of `v` (whose loop is [lo, hi)) on which the guard is provably
// true, if they are a non-empty prefix or suffix of the loop.
std::optional<std::pair<int64_t, int64_t>> true_range(const Guard& g, const VarNode* v, int64_t lo, int64_t hi) {
  if (provable_on(g, v, lo, lo)) {
    int64_t a = lo + 1, b = hi;  // largest end in [a, b] with the guard proven on [lo, end)
    while (a < b) {
      int64_t mid = a + (b - a + 1) / 2;
      if (provable_on(g, v, lo, mid - 1))
        a = mid;
      else
        b = mid - 1;
    }
    return std::pair{lo, a};
  }
  if (provable_on(g, v, hi - 1, hi - 1)) {
    int64_t a = lo, b = hi - 1;  // smallest begin in [a, b] with the guard proven on [begin, hi)
    while (a < b) {
      int64_t mid = a + (b - a) / 2;
      if (provable_on(g, v, mid, hi - 1))
        b = mid;
      else
        a = mid + 1;
    }
    return std::pair{a, hi};
  }
  return std::nullopt;
}

// Replaces every occurrence of one guard conjunct by true.
class ReplaceGuard : public IRMutator {
 public:
  explicit ReplaceGuard(Expr guard) : guard_(std::move(guard)) {}
  Expr mutate(const Expr& e) override {
    if (structural_equal(e, guard_)) return make_const(e.type(), 1);
    return IRMutator::mutate(e);
  }
  using IRMutator::mutate;

 private:
  Expr guard_;
};

// For a guard conjunct affine in v (coefficient a > 0), the inner loops' variables (bounded in
// `bounds`) and other free variables (shape variables): the end P of the prefix of v on which it
// holds for every inner iteration, as an expression over the free variables; undefined otherwise.
Expr symbolic_prefix_end(const Expr& cond, const VarNode* v, const VarBounds& bounds) {
  Expr diff;  // cond <=> diff < 0
  auto* bin = as_binary(cond);
  if (!bin) return {};
  switch (cond.kind()) {
    case ExprKind::LT:
      diff = bin->a - bin->b;
      break;
    case ExprKind::LE:
      diff = bin->a - bin->b - 1;
      break;
    case ExprKind::GT:
      diff = bin->b - bin->a;
      break;
    case ExprKind::GE:
      diff = bin->b - bin->a - 1;
      break;
    default:
      return {};
  }
  if (!bin->a.type().is_int()) return {};
  std::optional<runtime::DimExpr> form = to_dim_expr(simplify(diff));
  if (!form) return {};
  // The free variables by name: v, the inner loops' (bounded) and the rest.
  std::map<std::string, Expr> by_name;
  bool distinct = true;  // the affine form combines variables by name
  post_order_visit(diff, [&](const Expr& e) {
    if (auto* x = e.as<VarNode>()) distinct &= by_name.emplace(x->name, e).first->second.get() == x;
  });
  if (!distinct) return {};
  int64_t a = 0, inner_max = form->offset;
  Expr rest = Expr(0);
  for (const runtime::DimTerm& t : form->terms) {
    auto it = by_name.find(t.var);
    if (it == by_name.end()) return {};
    const VarNode* x = it->second.as<VarNode>();
    if (x == v) {
      a = t.coeff;
      continue;
    }
    auto bnd = bounds.find(x);
    if (bnd != bounds.end()) {
      if (!bnd->second.min || !bnd->second.max) return {};
      inner_max += t.coeff * (t.coeff > 0 ? *bnd->second.max : *bnd->second.min);
      continue;
    }
    rest = rest + it->second * Expr(static_cast<int>(t.coeff));
  }
  if (a <= 0) return {};
  // a*v + inner_max + rest < 0  <=>  v < (-(inner_max + rest) - 1)/a + 1 = (a - 1 - inner_max - rest)/a.
  return simplify((Expr(static_cast<int>(a - 1 - inner_max)) - rest) / Expr(static_cast<int>(a)));
}

// The widest element, in bits, that a statement loads or stores.
class ElementBits : public IRVisitor {
 public:
  int bits = 8;
  void visit_load(const LoadNode* op) override {
    bits = std::max(bits, op->buffer->dtype.bits());
    IRVisitor::visit_load(op);
  }
  void visit_store(const StoreNode* op) override {
    bits = std::max(bits, op->buffer->dtype.bits());
    IRVisitor::visit_store(op);
  }
};

int widest_element_bits(const Stmt& s) {
  ElementBits e;
  e.visit(s);
  return e.bits;
}

bool is_no_op(const Stmt& s) {
  auto* e = s.as<EvaluateNode>();
  return e && e->value.as<IntImmNode>();
}

class Partitioner : public IRMutator {
 public:
  explicit Partitioner(int narrow_vector_bits) : narrow_vector_bits_(narrow_vector_bits) {}

 protected:
  Stmt mutate_for(const Stmt& s, const ForNode* op) override {
    auto b = loop_bounds(op);
    if (op->for_kind == ForKind::Vectorized && narrow_vector_bits_ > 0 && b && partitions_ < kMaxPartitions)
      if (auto narrowed = narrow_vector(op, *b)) return *narrowed;
    if (!b && partitions_ < kMaxPartitions && is_const_int(op->min, 0) && over_free_vars(op->extent) &&
        (op->for_kind == ForKind::Serial || op->for_kind == ForKind::Parallel))
      if (auto split = partition_symbolic(op)) return *split;
    bool serial = op->for_kind == ForKind::Serial, parallel = op->for_kind == ForKind::Parallel;
    if (!(serial || parallel) || !b || partitions_ >= kMaxPartitions) return with_bound(s, op, b);
    int64_t lo = *b->min, hi = *b->max + 1;
    GuardCollector collect(op->var.get(), bounds_);
    collect.visit(op->body);
    int64_t begin = lo, end = hi;
    bool any = false;
    for (const Guard& g : collect.guards) {
      auto r = true_range(g, op->var.get(), lo, hi);
      if (!r || (r->first == lo && r->second == hi)) continue;  // not monotone, or always true
      begin = std::max(begin, r->first);
      end = std::min(end, r->second);
      any = true;
    }
    if (!any || begin >= end) return with_bound(s, op, b);
    ++partitions_;
    if (parallel) {
      auto saved = bounds_;
      loop_vars_.insert(op->var.get());
      bounds_[op->var.get()] = IntBounds{begin, end - 1};
      Stmt main = mutate(simplify(op->body, bounds_));
      // The other iterations: one tail when the main range touches an end of the loop.
      bounds_[op->var.get()] = begin == lo ? IntBounds{end, hi - 1} : end == hi ? IntBounds{lo, begin - 1} : *b;
      Stmt rest = mutate(simplify(op->body, bounds_));
      loop_vars_.erase(op->var.get());
      bounds_ = std::move(saved);
      // The main range is not the whole loop, so at least one bound is checked.
      Expr v = op->var, in_main;
      if (begin > lo) in_main = v >= Expr(static_cast<int>(begin));
      if (end < hi)
        in_main = in_main.defined() ? (in_main && v < Expr(static_cast<int>(end))) : v < Expr(static_cast<int>(end));
      return for_loop(op->var, op->min, op->extent, op->for_kind, if_then_else(in_main, main, rest), op->thread_tag);
    }
    std::vector<Stmt> pieces;
    for (auto [a, z] : {std::pair{lo, begin}, std::pair{begin, end}, std::pair{end, hi}}) {
      if (a >= z) continue;
      // Simplified under v in [a, z): in the main range the guards fold away.
      Stmt loop = simplify(
          for_loop(op->var, Expr(static_cast<int>(a)), Expr(static_cast<int>(z - a)), ForKind::Serial, op->body),
          bounds_);
      pieces.push_back(mutate_piece(loop, op->var.get()));
    }
    return seq(std::move(pieces));
  }

 private:
  // Whether an extent's variables are all free in the function (shape variables), none an
  // enclosing loop's: only such loops are partitioned symbolically.
  bool over_free_vars(const Expr& e) const {
    bool free = true;
    post_order_visit(e, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) free &= !loop_vars_.count(v);
    });
    return free;
  }

  // A loop of symbolic extent: its prefix where the affine guards hold, then the rest.
  std::optional<Stmt> partition_symbolic(const ForNode* op) {
    GuardCollector collect(op->var.get(), bounds_);
    collect.visit(op->body);
    Expr end;
    Stmt main = op->body;
    for (const Guard& g : collect.guards) {
      Expr p = symbolic_prefix_end(g.cond, op->var.get(), g.bounds);
      if (!p.defined()) continue;
      end = end.defined() ? ir::min(end, p) : p;
      main = ReplaceGuard(g.cond).mutate(main);
    }
    if (!end.defined()) return std::nullopt;
    ++partitions_;
    Expr split = simplify(ir::max(Expr(0), ir::min(end, op->extent)));
    loop_vars_.insert(op->var.get());
    main = mutate(simplify(main, bounds_));
    Stmt rest = mutate(op->body);
    loop_vars_.erase(op->var.get());
    if (op->for_kind == ForKind::Parallel)
      return for_loop(op->var, op->min, op->extent, op->for_kind, if_then_else(Expr(op->var) < split, main, rest),
                      op->thread_tag);
    Var tail_var(op->var.name(), op->var.type());
    VarMap to_tail{{op->var.get(), Expr(tail_var) + split}};
    return seq({for_loop(op->var, Expr(0), split, ForKind::Serial, main),
                for_loop(tail_var, Expr(0), simplify(op->extent - split), ForKind::Serial, substitute(rest, to_tail))});
  }

  // A vector loop over [lo, hi) whose body provably does nothing on [end, hi), its guards true
  // on [lo, end): the loop over [lo, end) alone, simplified there.
  std::optional<Stmt> narrow_vector(const ForNode* op, IntBounds b) {
    int64_t lo = *b.min, hi = *b.max + 1, end = hi;
    GuardCollector collect(op->var.get(), bounds_);
    collect.visit(op->body);
    for (const Guard& g : collect.guards)
      if (auto r = true_range(g, op->var.get(), lo, hi); r && r->first == lo) end = std::min(end, r->second);
    if (end == hi) return std::nullopt;
    Stmt rest = simplify(
        for_loop(op->var, Expr(static_cast<int>(end)), Expr(static_cast<int>(hi - end)), ForKind::Serial, op->body),
        bounds_);
    if (!is_no_op(rest)) return std::nullopt;
    ++partitions_;
    const int64_t lanes = std::max(1, narrow_vector_bits_ / widest_element_bits(op->body));
    const int64_t whole = (end - lo) > lanes ? (end - lo) / lanes * lanes : 0;
    std::vector<Stmt> pieces;
    for (auto [a, z] : {std::pair{lo, lo + whole}, std::pair{lo + whole, end}}) {
      if (a >= z) continue;
      Stmt piece = simplify(for_loop(op->var, Expr(static_cast<int>(a)), Expr(static_cast<int>(z - a)),
                                     ForKind::Vectorized, op->body, op->thread_tag),
                            bounds_);
      pieces.push_back(mutate_piece(piece, op->var.get()));
    }
    return seq(std::move(pieces));
  }

  // Recurse into the body with this loop's bounds known.
  Stmt with_bound(const Stmt& s, const ForNode* op, std::optional<IntBounds> b) {
    auto saved = bounds_;
    if (b) bounds_[op->var.get()] = *b;
    loop_vars_.insert(op->var.get());
    Stmt body = mutate(op->body);
    loop_vars_.erase(op->var.get());
    bounds_ = std::move(saved);
    return body.same_as(op->body) ? s : for_loop(op->var, op->min, op->extent, op->for_kind, body, op->thread_tag);
  }
  // A partitioned piece: its own loop is final, its body may hold further candidates. A piece
  // of one iteration comes back from simplify as its body, which is searched like any other.
  Stmt mutate_piece(const Stmt& piece, const VarNode* v) {
    auto* f = piece.as<ForNode>();
    if (!f || f->var.get() != v) return mutate(piece);
    return with_bound(piece, f, loop_bounds(f));
  }

  const int narrow_vector_bits_;
  VarBounds bounds_;
  std::set<const VarNode*> loop_vars_;  // of the loops around the current statement
  int partitions_ = 0;
};

}  // namespace

Stmt partition_loops(const Stmt& s, int narrow_vector_bits) {
  Partitioner p(narrow_vector_bits);
  return p.mutate(s);
}

}  // namespace loom::schedule::passes
