// Pass: loops marked vectorized with a constant extent are replaced by one vector computation:
// the loop variable becomes ramp(min, 1, lanes) and every expression depending on it is widened
// (scalars are broadcast, ramps stay ramps under + - and * by scalars). A body that cannot be
// widened safely (a data-dependent guard, a store whose address does not depend on the loop, an
// allocation) keeps the loop; the LLVM backend then asks its own vectorizer to try.
#include "loom/ir/functor.h"
#include "loom/ir/simplify.h"
#include "passes.h"

namespace loom::schedule::passes {

using namespace loom::ir;

namespace {

struct CannotVectorize {};

Expr widen(const Expr& e, int lanes) { return e.type().lanes() == lanes ? e : broadcast(e, lanes); }

class Widener : public IRMutator {
 public:
  Widener(const VarNode* v, Expr ramp_value, int lanes) : var_(v), ramp_(std::move(ramp_value)), lanes_(lanes) {}
  using IRMutator::mutate;

 protected:
  Expr mutate_var(const Expr& e) override { return e.get() == var_ ? ramp_ : e; }

  Expr mutate_binary(const Expr& e, const BinaryNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return e;
    auto* ra = a.as<RampNode>();
    auto* rb = b.as<RampNode>();
    auto* ba = a.as<BroadcastNode>();
    auto* bb = b.as<BroadcastNode>();
    Expr sa = a.type().is_scalar() ? a : ba ? ba->value : Expr();
    Expr sb = b.type().is_scalar() ? b : bb ? bb->value : Expr();
    switch (e.kind()) {
      case ExprKind::Add:
        if (ra && sb.defined()) return ramp(ra->base + sb, ra->stride, ra->lanes);
        if (rb && sa.defined()) return ramp(sa + rb->base, rb->stride, rb->lanes);
        if (ra && rb) return ramp(ra->base + rb->base, ra->stride + rb->stride, ra->lanes);
        break;
      case ExprKind::Sub:
        if (ra && sb.defined()) return ramp(ra->base - sb, ra->stride, ra->lanes);
        if (ra && rb) return ramp(ra->base - rb->base, ra->stride - rb->stride, ra->lanes);
        break;
      case ExprKind::Mul:
        if (ra && sb.defined()) return ramp(ra->base * sb, ra->stride * sb, ra->lanes);
        if (rb && sa.defined()) return ramp(sa * rb->base, sa * rb->stride, rb->lanes);
        break;
      default:
        break;
    }
    if (ba && bb) return broadcast(make_binary(e.kind(), ba->value, bb->value), lanes_);
    return make_binary(e.kind(), widen(a, lanes_), widen(b, lanes_));
  }

  Expr mutate_cast(const Expr& e, const CastNode* op) override {
    Expr v = mutate(op->value);
    if (v.same_as(op->value)) return e;
    return cast(e.type().with_lanes(v.type().lanes()), v);
  }

  Expr mutate_load(const Expr& e, const LoadNode* op) override {
    Expr i = mutate(op->index);
    if (i.same_as(op->index)) return e;
    return load(op->buffer->dtype.with_lanes(i.type().lanes()), op->buffer, i);
  }

  Expr mutate_call(const Expr& e, const CallNode* op) override {
    // A lazy conditional with a per-lane condition would need masked loads.
    if (op->name == "if_then_else" && mutate(op->args[0]).type().is_vector()) throw CannotVectorize{};
    std::vector<Expr> args;
    bool vec = false;
    for (auto& a : op->args) {
      args.push_back(mutate(a));
      vec |= args.back().type().is_vector();
    }
    if (!vec) return e;
    // if_then_else keeps its scalar condition; only the values widen.
    for (size_t i = op->name == "if_then_else" ? 1 : 0; i < args.size(); ++i) args[i] = widen(args[i], lanes_);
    return Expr(std::make_shared<const CallNode>(e.type().with_lanes(lanes_), op->name, args, op->call_type));
  }

  Expr mutate_let(const Expr& e, const LetNode* op) override {
    return mutate(substitute(op->body, {{op->var.get(), op->value}}));
  }
  Expr mutate_ramp(const Expr&, const RampNode*) override { throw CannotVectorize{}; }
  Expr mutate_broadcast(const Expr&, const BroadcastNode*) override { throw CannotVectorize{}; }

  Stmt mutate_store(const Stmt& s, const StoreNode* op) override {
    Expr v = mutate(op->value), i = mutate(op->index);
    if (i.type().is_scalar()) throw CannotVectorize{};  // every lane would write one address
    return store(op->buffer, widen(v, lanes_), i);
  }
  Stmt mutate_if(const Stmt& s, const IfThenElseNode* op) override {
    if (mutate(op->cond).type().is_vector()) throw CannotVectorize{};
    return IRMutator::mutate_if(s, op);
  }
  Stmt mutate_for(const Stmt& s, const ForNode* op) override {
    if (mutate(op->min).type().is_vector() || mutate(op->extent).type().is_vector()) throw CannotVectorize{};
    if (op->for_kind == ForKind::Parallel || op->for_kind == ForKind::ThreadBinding) throw CannotVectorize{};
    return IRMutator::mutate_for(s, op);
  }
  Stmt mutate_let_stmt(const Stmt&, const LetStmtNode* op) override {
    return mutate(substitute(op->body, {{op->var.get(), op->value}}));
  }
  Stmt mutate_allocate(const Stmt&, const AllocateNode*) override { throw CannotVectorize{}; }
  Stmt mutate_evaluate(const Stmt& s, const EvaluateNode* op) override {
    if (mutate(op->value).type().is_vector()) throw CannotVectorize{};
    return s;
  }
  Stmt mutate_assert(const Stmt&, const AssertNode*) override { throw CannotVectorize{}; }

 private:
  const VarNode* var_;
  Expr ramp_;
  int lanes_;
};

class LoopVectorizer : public IRMutator {
 protected:
  Stmt mutate_for(const Stmt& s, const ForNode* op) override {
    Stmt body = mutate(op->body);
    Stmt loop = body.same_as(op->body) ? s : for_loop(op->var, op->min, op->extent, op->for_kind, body, op->thread_tag);
    if (op->for_kind != ForKind::Vectorized) return loop;
    auto* lanes = as_const_int(simplify(op->extent));
    if (!lanes) LOOM_THROW(LoweringError, "cannot vectorize loop '", op->var.name(), "': its extent is not a constant");
    if (*lanes == 1) return substitute(body, {{op->var.get(), op->min}});
    try {
      Widener w(op->var.get(), ramp(op->min, make_one(op->min.type()), static_cast<int>(*lanes)),
                static_cast<int>(*lanes));
      return w.mutate(body);
    } catch (const CannotVectorize&) {
      return loop;
    }
  }
};

}  // namespace

Stmt vectorize_loops(const Stmt& s) {
  LoopVectorizer v;
  return v.mutate(s);
}

}  // namespace loom::schedule::passes
