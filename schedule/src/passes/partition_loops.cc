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
#include <algorithm>
#include <vector>

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

class Partitioner : public IRMutator {
 protected:
  Stmt mutate_for(const Stmt& s, const ForNode* op) override {
    auto b = loop_bounds(op);
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
      bounds_[op->var.get()] = IntBounds{begin, end - 1};
      Stmt main = mutate(simplify(op->body, bounds_));
      // The other iterations: one tail when the main range touches an end of the loop.
      bounds_[op->var.get()] = begin == lo ? IntBounds{end, hi - 1} : end == hi ? IntBounds{lo, begin - 1} : *b;
      Stmt rest = mutate(simplify(op->body, bounds_));
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
  // Recurse into the body with this loop's bounds known.
  Stmt with_bound(const Stmt& s, const ForNode* op, std::optional<IntBounds> b) {
    auto saved = bounds_;
    if (b) bounds_[op->var.get()] = *b;
    Stmt body = mutate(op->body);
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

  VarBounds bounds_;
  int partitions_ = 0;
};

}  // namespace

Stmt partition_loops(const Stmt& s) {
  Partitioner p;
  return p.mutate(s);
}

}  // namespace loom::schedule::passes
