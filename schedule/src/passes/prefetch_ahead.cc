// Pass (CPU lowering): software prefetching ahead of an outer loop, for a loop marked
// pragma(r, "prefetch", d). The marked loop R runs inside a loop L whose iterations read a block
// of some buffer d at a time (a dense layer's row tiles: d tiles share one group of output
// blocks' weights, then the next group starts). Iteration i of L, at step r of R, prefetches the
// cache lines that iteration i + d will load at step r, on the steps with r = i (mod d) only
// (both counted from their loop's first iteration): the d iterations before a block starts fetch
// it once between them, a line every few steps of their work, so the first tile of the block no
// longer waits for memory. A burst at the start of each iteration, or every iteration fetching
// all of the next block, measured slower than none. L may be parallel: a line fetched for an
// iteration that another core runs still comes to it from a nearer cache than memory.
//
// Prefetched: loads in R's body of buffers it does not store to, whose index uses only variables
// defined where that body starts, reads no memory, divides by constants only, and moves by a
// nonzero constant from iteration i to i + d (a load that stays put, or an accumulator's, is
// reused from the cache anyway); a vector load is a line per 64 bytes. Without an enclosing loop,
// or for a loop that is no longer serial, the pragma is dropped; GPU lowering drops it too
// (emit = false).
//
// pragma(r, "prefetch_across", t) is the same for tiles that keep a loop of their own, T (the
// variable t), inside the loop O whose iterations read the blocks (a dense layer's row tiles
// inside its parallel block groups, where the rows are no whole number of tiles): iteration j of
// T, at step r of R, prefetches the lines that the next iteration of O loads at step r, on the
// steps with r = j (mod T's extent), while O's next iteration exists. A piece of T where the
// value is no loop variable (partitioning made it a single iteration, t a constant, or rewrote a
// symbolic tail's variable) gets none.
#include <set>

#include "loom/ir/functor.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "loom/runtime/error.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

constexpr const char* kPragma = "pragma_prefetch";
constexpr const char* kAcrossPragma = "pragma_prefetch_across";
constexpr int64_t kLineBytes = 64;

// Every load in a statement.
class Loads : public IRVisitor {
 public:
  std::vector<const LoadNode*> loads;

 protected:
  void visit_load(const LoadNode* op) override {
    loads.push_back(op);
    IRVisitor::visit_load(op);
  }
};

// Whether an index can be computed anywhere in the loop body: no loads or calls (the original
// may sit under a guard that keeps them in bounds), division only by constants.
bool computable_anywhere(const Expr& index) {
  bool ok = true;
  post_order_visit(index, [&](const Expr& e) {
    if (e.as<LoadNode>() || e.as<CallNode>()) ok = false;
    if (auto* d = e.as<DivNode>(); d && !as_const_int(d->b)) ok = false;
    if (auto* m = e.as<ModNode>(); m && !as_const_int(m->b)) ok = false;
  });
  return ok;
}

// The prefetches of what iteration L + d loads at this step of `body`.
std::vector<Stmt> prefetches_ahead(const Stmt& body, const ForNode* outer, int64_t d) {
  Loads found;
  found.visit(body);
  const Bindings inside = bindings_of(body);
  std::vector<Stmt> out;
  std::set<std::string> seen;
  Expr ahead = outer->var + make_const(outer->var.type(), double(d));
  for (const LoadNode* ld : found.loads) {
    Expr base = ld->index;
    int lanes = 1;
    if (const auto* r = ld->index.as<RampNode>()) {
      if (!is_one(r->stride)) continue;  // a gather: a line per lane, not worth it
      base = r->base, lanes = r->lanes;
    } else if (ld->index.type().lanes() != 1) {
      continue;
    }
    if (inside.stored.count(ld->buffer.get())) continue;  // an accumulator: in the cache already
    bool defined = computable_anywhere(base);
    for (const VarNode* v : inside.vars) defined &= !uses_var(base, v);
    if (!defined) continue;
    auto delta = as_const_int(simplify(substitute(base, {{outer->var.get(), ahead}}) - base));
    if (!delta || *delta == 0) continue;
    int64_t bytes = ld->buffer->dtype.bytes(), span = int64_t(lanes) * bytes;
    for (int64_t offset = 0; offset < span; offset += kLineBytes) {
      Expr index = simplify(base + make_const(base.type(), double(*delta + offset / bytes)));
      if (seen.insert(ld->buffer->name + "[" + to_string(index) + "]").second)
        out.push_back(evaluate(make_prefetch(ld->buffer, index)));
    }
  }
  return out;
}

class PrefetchAhead : public IRMutator {
 public:
  explicit PrefetchAhead(bool emit) : emit_(emit) {}

 protected:
  Stmt mutate_for(const Stmt& s, const ForNode* op) override {
    loops_.push_back(op);
    Stmt r = IRMutator::mutate_for(s, op);
    loops_.pop_back();
    return r;
  }

  Stmt mutate_attr(const Stmt& s, const AttrNode* op) override {
    if (op->key == kAcrossPragma) return across_tiles(op);
    if (op->key != kPragma) return IRMutator::mutate_attr(s, op);
    auto d = as_const_int(op->value);
    if (!d || *d < 1)
      LOOM_THROW(LoweringError, "pragma prefetch needs a constant distance >= 1, not ", to_string(op->value));
    const ForNode* outer = loops_.empty() ? nullptr : loops_.back();
    Stmt body = mutate(op->body);
    if (!emit_ || !outer) return body;
    return with_prefetches(body, {outer, *d, outer, *d});
  }

 private:
  // What a marked loop fetches and when: what iteration `ahead.var + distance` of `ahead` loads,
  // on the steps whose index mod `spread` is that of `spread_over`'s iteration.
  struct Plan {
    const ForNode* ahead;
    int64_t distance;
    const ForNode* spread_over;
    int64_t spread;
  };

  // pragma prefetch_across t: the loop of t and the loop around it.
  Stmt across_tiles(const AttrNode* op) {
    Stmt body = mutate(op->body);
    // No variable (the tile loop partitioned into a single iteration, or a tail whose variable
    // partitioning rewrote): nothing is fetched there.
    const auto* tile_var = op->value.as<VarNode>();
    for (size_t i = loops_.size(); tile_var && i-- > 1;) {
      if (loops_[i]->var.get() != tile_var) continue;
      auto tiles = as_const_int(loops_[i]->extent);
      if (!emit_ || !tiles || *tiles < 1) return body;
      return with_prefetches(body, {loops_[i - 1], 1, loops_[i], *tiles});
    }
    return body;  // no loop of that variable here, or none around it
  }

  // The marked loop (under any other pragmas) with the prefetches at the top of its body.
  Stmt with_prefetches(const Stmt& s, const Plan& p) {
    if (const auto* a = s.as<AttrNode>()) return attr(a->key, a->value, with_prefetches(a->body, p));
    const ForNode* loop = s.as<ForNode>();
    if (!loop || loop->for_kind != ForKind::Serial) return s;
    std::vector<Stmt> fetch = prefetches_ahead(loop->body, p.ahead, p.distance);
    if (fetch.empty()) return s;
    DataType rt = loop->var.type(), st = p.spread_over->var.type(), at = p.ahead->var.type();
    Expr step = floormod(loop->var - loop->min, make_const(rt, double(p.spread)));
    Expr phase = floormod(p.spread_over->var - p.spread_over->min, make_const(st, double(p.spread)));
    if (rt != st) phase = cast(rt, phase);
    Expr in_range = p.ahead->var + make_const(at, double(p.distance)) < p.ahead->min + p.ahead->extent;
    Stmt body = seq({if_then_else(step == phase && in_range, seq(std::move(fetch))), loop->body});
    return for_loop(loop->var, loop->min, loop->extent, loop->for_kind, body, loop->thread_tag);
  }

  bool emit_;
  std::vector<const ForNode*> loops_;
};

}  // namespace

Stmt prefetch_ahead(const Stmt& s, bool emit) { return PrefetchAhead(emit).mutate(s); }

}  // namespace loom::schedule::passes
