#include "loom/ir/functor.h"

namespace loom::ir {

// ---------------- IRVisitor ----------------

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e.kind()) {
    case ExprKind::Var:
      return visit_var(e.as<VarNode>());
    case ExprKind::Load:
      return visit_load(e.as<LoadNode>());
    case ExprKind::TensorRead:
      return visit_tensor_read(e.as<TensorReadNode>());
    case ExprKind::Call:
      return visit_call(e.as<CallNode>());
    case ExprKind::Let:
      return visit_let(e.as<LetNode>());
    case ExprKind::Reduce:
      return visit_reduce(e.as<ReduceNode>());
    default:
      return visit_expr_children(e);
  }
}

void IRVisitor::visit_expr_children(const Expr& e) {
  if (auto* b = as_binary(e)) {
    visit(b->a);
    visit(b->b);
  } else if (auto* c = e.as<CastNode>()) {
    visit(c->value);
  } else if (auto* n = e.as<NotNode>()) {
    visit(n->a);
  } else if (auto* s = e.as<SelectNode>()) {
    visit(s->cond);
    visit(s->true_value);
    visit(s->false_value);
  } else if (auto* r = e.as<RampNode>()) {
    visit(r->base);
    visit(r->stride);
  } else if (auto* bc = e.as<BroadcastNode>()) {
    visit(bc->value);
  }
}

void IRVisitor::visit_load(const LoadNode* op) { visit(op->index); }
void IRVisitor::visit_tensor_read(const TensorReadNode* op) {
  for (auto& i : op->indices) visit(i);
}
void IRVisitor::visit_call(const CallNode* op) {
  for (auto& a : op->args) visit(a);
}
void IRVisitor::visit_let(const LetNode* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_reduce(const ReduceNode* op) {
  for (auto& a : op->axes) {
    visit(a->dom.min);
    visit(a->dom.extent);
  }
  visit(op->source);
  visit(op->condition);
}

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case StmtKind::LetStmt:
      return visit_let_stmt(s.as<LetStmtNode>());
    case StmtKind::Attr:
      return visit_attr(s.as<AttrNode>());
    case StmtKind::Assert:
      return visit(s.as<AssertNode>()->cond);
    case StmtKind::For:
      return visit_for(s.as<ForNode>());
    case StmtKind::Store:
      return visit_store(s.as<StoreNode>());
    case StmtKind::Provide:
      return visit_provide(s.as<ProvideNode>());
    case StmtKind::Allocate:
      return visit_allocate(s.as<AllocateNode>());
    case StmtKind::Realize:
      return visit_realize(s.as<RealizeNode>());
    case StmtKind::Seq:
      for (auto& c : s.as<SeqNode>()->seq) visit(c);
      return;
    case StmtKind::IfThenElse:
      return visit_if(s.as<IfThenElseNode>());
    case StmtKind::Evaluate:
      return visit(s.as<EvaluateNode>()->value);
  }
}
void IRVisitor::visit_for(const ForNode* op) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit_store(const StoreNode* op) {
  visit(op->value);
  visit(op->index);
}
void IRVisitor::visit_provide(const ProvideNode* op) {
  for (auto& i : op->indices) visit(i);
  visit(op->value);
}
void IRVisitor::visit_allocate(const AllocateNode* op) {
  for (auto& e : op->buffer->shape) visit(e);
  visit(op->body);
}
void IRVisitor::visit_realize(const RealizeNode* op) {
  for (auto& r : op->bounds) {
    visit(r.min);
    visit(r.extent);
  }
  visit(op->body);
}
void IRVisitor::visit_let_stmt(const LetStmtNode* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_attr(const AttrNode* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_if(const IfThenElseNode* op) {
  visit(op->cond);
  visit(op->then_case);
  visit(op->else_case);
}

// ---------------- IRMutator ----------------

namespace {
bool same_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}
}  // namespace

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  if (auto* b = as_binary(e)) return mutate_binary(e, b);
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::StringImm:
      return e;
    case ExprKind::Var:
      return mutate_var(e);
    case ExprKind::Cast:
      return mutate_cast(e, e.as<CastNode>());
    case ExprKind::Not:
      return mutate_not(e, e.as<NotNode>());
    case ExprKind::Select:
      return mutate_select(e, e.as<SelectNode>());
    case ExprKind::Load:
      return mutate_load(e, e.as<LoadNode>());
    case ExprKind::Ramp:
      return mutate_ramp(e, e.as<RampNode>());
    case ExprKind::Broadcast:
      return mutate_broadcast(e, e.as<BroadcastNode>());
    case ExprKind::Call:
      return mutate_call(e, e.as<CallNode>());
    case ExprKind::Let:
      return mutate_let(e, e.as<LetNode>());
    case ExprKind::TensorRead:
      return mutate_tensor_read(e, e.as<TensorReadNode>());
    case ExprKind::Reduce:
      return mutate_reduce(e, e.as<ReduceNode>());
    default:
      LOOM_CHECK(false, "unhandled expression kind");
  }
}

Expr IRMutator::mutate_binary(const Expr& e, const BinaryNode* op) {
  Expr a = mutate(op->a), b = mutate(op->b);
  if (a.same_as(op->a) && b.same_as(op->b)) return e;
  return make_binary(e.kind(), a, b);
}
Expr IRMutator::mutate_cast(const Expr& e, const CastNode* op) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? e : cast(e.type(), v);
}
Expr IRMutator::mutate_not(const Expr& e, const NotNode* op) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? e : !a;
}
Expr IRMutator::mutate_select(const Expr& e, const SelectNode* op) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
  return select(c, t, f);
}
Expr IRMutator::mutate_load(const Expr& e, const LoadNode* op) {
  Expr i = mutate(op->index);
  if (i.same_as(op->index)) return e;
  return load(op->buffer->dtype.with_lanes(i.type().lanes()), op->buffer, i);
}
Expr IRMutator::mutate_ramp(const Expr& e, const RampNode* op) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  return b.same_as(op->base) && s.same_as(op->stride) ? e : ramp(b, s, op->lanes);
}
Expr IRMutator::mutate_broadcast(const Expr& e, const BroadcastNode* op) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? e : broadcast(v, op->lanes);
}
Expr IRMutator::mutate_call(const Expr& e, const CallNode* op) {
  std::vector<Expr> args;
  for (auto& a : op->args) args.push_back(mutate(a));
  if (same_exprs(args, op->args)) return e;
  DataType t = e.type();
  // Element-wise intrinsics take their lanes from their first argument; if_then_else from its
  // values (its condition stays scalar).
  size_t lanes_from = op->name == "if_then_else" && args.size() == 3 ? 1 : 0;
  if (args.size() > lanes_from && args[lanes_from].type().lanes() != t.lanes())
    t = t.with_lanes(args[lanes_from].type().lanes());
  return Expr(std::make_shared<const CallNode>(t, op->name, std::move(args), op->call_type));
}
Expr IRMutator::mutate_let(const Expr& e, const LetNode* op) {
  Expr v = mutate(op->value), b = mutate(op->body);
  return v.same_as(op->value) && b.same_as(op->body) ? e : let(op->var, v, b);
}
Expr IRMutator::mutate_tensor_read(const Expr& e, const TensorReadNode* op) {
  std::vector<Expr> idx;
  for (auto& i : op->indices) idx.push_back(mutate(i));
  if (same_exprs(idx, op->indices)) return e;
  return Expr(std::make_shared<const TensorReadNode>(op->op, std::move(idx)));
}
Expr IRMutator::mutate_reduce(const Expr& e, const ReduceNode* op) {
  Expr src = mutate(op->source), cond = mutate(op->condition);
  if (src.same_as(op->source) && cond.same_as(op->condition)) return e;
  return Expr(std::make_shared<const ReduceNode>(op->reduce_kind, src, op->axes, cond));
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
    case StmtKind::LetStmt:
      return mutate_let_stmt(s, s.as<LetStmtNode>());
    case StmtKind::Attr:
      return mutate_attr(s, s.as<AttrNode>());
    case StmtKind::Assert:
      return mutate_assert(s, s.as<AssertNode>());
    case StmtKind::For:
      return mutate_for(s, s.as<ForNode>());
    case StmtKind::Store:
      return mutate_store(s, s.as<StoreNode>());
    case StmtKind::Provide:
      return mutate_provide(s, s.as<ProvideNode>());
    case StmtKind::Allocate:
      return mutate_allocate(s, s.as<AllocateNode>());
    case StmtKind::Realize:
      return mutate_realize(s, s.as<RealizeNode>());
    case StmtKind::Seq:
      return mutate_seq(s, s.as<SeqNode>());
    case StmtKind::IfThenElse:
      return mutate_if(s, s.as<IfThenElseNode>());
    case StmtKind::Evaluate:
      return mutate_evaluate(s, s.as<EvaluateNode>());
  }
  return s;
}
Stmt IRMutator::mutate_for(const Stmt& s, const ForNode* op) {
  Expr mn = mutate(op->min), ext = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return s;
  return for_loop(op->var, mn, ext, op->for_kind, body, op->thread_tag);
}
Stmt IRMutator::mutate_store(const Stmt& s, const StoreNode* op) {
  Expr v = mutate(op->value), i = mutate(op->index);
  return v.same_as(op->value) && i.same_as(op->index) ? s : store(op->buffer, v, i);
}
Stmt IRMutator::mutate_provide(const Stmt& s, const ProvideNode* op) {
  std::vector<Expr> idx;
  for (auto& i : op->indices) idx.push_back(mutate(i));
  Expr v = mutate(op->value);
  if (same_exprs(idx, op->indices) && v.same_as(op->value)) return s;
  return provide(op->op, std::move(idx), v);
}
Stmt IRMutator::mutate_allocate(const Stmt& s, const AllocateNode* op) {
  Stmt b = mutate(op->body);
  return b.same_as(op->body) ? s : allocate(op->buffer, b);
}
Stmt IRMutator::mutate_realize(const Stmt& s, const RealizeNode* op) {
  Region r;
  bool changed = false;
  for (auto& rg : op->bounds) {
    Range n{mutate(rg.min), mutate(rg.extent)};
    changed |= !n.min.same_as(rg.min) || !n.extent.same_as(rg.extent);
    r.push_back(n);
  }
  Stmt b = mutate(op->body);
  if (!changed && b.same_as(op->body)) return s;
  return realize(op->op, std::move(r), op->scope, b);
}
Stmt IRMutator::mutate_let_stmt(const Stmt& s, const LetStmtNode* op) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  return v.same_as(op->value) && b.same_as(op->body) ? s : let_stmt(op->var, v, b);
}
namespace {
// `pragma llvm_unroll` (and `prefetch`, `alternate_order`) back on every piece of its loop (a seq of pieces after loop
// partitioning); what is no longer that loop (a piece of one iteration, simplified to its body) loses it.
Stmt reannotate(const std::string& key, const Expr& value, const VarNode* loop_var, const Stmt& s) {
  if (const auto* q = s.as<SeqNode>()) {
    std::vector<Stmt> pieces;
    for (const Stmt& piece : q->seq) pieces.push_back(reannotate(key, value, loop_var, piece));
    return seq(std::move(pieces));
  }
  const ForNode* loop = annotated_loop(s);
  return loop && loop->var.get() == loop_var ? attr(key, value, s) : s;
}
}  // namespace

Stmt IRMutator::mutate_attr(const Stmt& s, const AttrNode* op) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return s;
  // A pass that split or removed the annotated loop must not leave the pragma on a seq of pieces
  // (lost) or on an inner loop that took the removed loop's place (misapplied).
  if (op->key == "pragma_llvm_unroll" || op->key == "pragma_prefetch" || op->key == "pragma_prefetch_across" ||
      op->key == "pragma_alternate_order")
    if (const ForNode* loop = annotated_loop(op->body)) return reannotate(op->key, v, loop->var.get(), b);
  return attr(op->key, v, b);
}
Stmt IRMutator::mutate_assert(const Stmt& s, const AssertNode* op) {
  Expr c = mutate(op->cond);
  return c.same_as(op->cond) ? s : assert_stmt(c, op->message);
}
Stmt IRMutator::mutate_seq(const Stmt& s, const SeqNode* op) {
  std::vector<Stmt> out;
  bool changed = false;
  for (auto& c : op->seq) {
    out.push_back(mutate(c));
    changed |= !out.back().same_as(c);
  }
  return changed ? seq(std::move(out)) : s;
}
Stmt IRMutator::mutate_if(const Stmt& s, const IfThenElseNode* op) {
  Expr c = mutate(op->cond);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return s;
  return if_then_else(c, t, e);
}
Stmt IRMutator::mutate_evaluate(const Stmt& s, const EvaluateNode* op) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? s : evaluate(v);
}

// ---------------- helpers ----------------

namespace {
class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& m) : map_(m) {}

 protected:
  Expr mutate_var(const Expr& e) override {
    for (auto& [v, r] : map_)
      if (v == e.get()) return r;
    return e;
  }

 private:
  const VarMap& map_;
};

class PostOrder : public IRVisitor {
 public:
  explicit PostOrder(const std::function<void(const Expr&)>& f) : f_(f) {}
  void visit(const Expr& e) override {
    if (!e.defined()) return;
    IRVisitor::visit(e);
    f_(e);
  }
  using IRVisitor::visit;

 private:
  const std::function<void(const Expr&)>& f_;
};

class VarUse : public IRVisitor {
 public:
  explicit VarUse(const VarNode* v) : v_(v) {}
  bool found = false;

 protected:
  void visit_var(const VarNode* op) override { found |= op == v_; }
  void visit_load(const LoadNode* op) override {
    found |= op->buffer->data.get() == v_;
    IRVisitor::visit_load(op);
  }
  void visit_store(const StoreNode* op) override {
    found |= op->buffer->data.get() == v_;
    IRVisitor::visit_store(op);
  }

 private:
  const VarNode* v_;
};
}  // namespace

Expr substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  Substituter s(map);
  return s.mutate(e);
}
Stmt substitute(const Stmt& st, const VarMap& map) {
  if (map.empty()) return st;
  Substituter s(map);
  return s.mutate(st);
}
void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f) {
  PostOrder v(f);
  v.visit(e);
}
bool uses_var(const Expr& e, const VarNode* var) {
  VarUse u(var);
  u.visit(e);
  return u.found;
}
bool uses_var(const Stmt& s, const VarNode* var) {
  VarUse u(var);
  u.visit(s);
  return u.found;
}

Bindings bindings_of(const Stmt& s) {
  struct Collector : IRVisitor {
    Bindings b;
    void visit_for(const ForNode* op) override {
      b.vars.insert(op->var.get());
      IRVisitor::visit_for(op);
    }
    void visit_let_stmt(const LetStmtNode* op) override {
      b.vars.insert(op->var.get());
      IRVisitor::visit_let_stmt(op);
    }
    void visit_let(const LetNode* op) override {
      b.vars.insert(op->var.get());
      IRVisitor::visit_let(op);
    }
    void visit_store(const StoreNode* op) override {
      b.stored.insert(op->buffer.get());
      IRVisitor::visit_store(op);
    }
  } c;
  c.visit(s);
  return c.b;
}

bool structural_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.type() != b.type()) return false;
  if (auto* x = as_binary(a)) {
    auto* y = as_binary(b);
    return structural_equal(x->a, y->a) && structural_equal(x->b, y->b);
  }
  auto eq_all = [](const std::vector<Expr>& p, const std::vector<Expr>& q) {
    if (p.size() != q.size()) return false;
    for (size_t i = 0; i < p.size(); ++i)
      if (!structural_equal(p[i], q[i])) return false;
    return true;
  };
  switch (a.kind()) {
    case ExprKind::IntImm:
      return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::FloatImm:
      return a.as<FloatImmNode>()->value == b.as<FloatImmNode>()->value;
    case ExprKind::StringImm:
      return a.as<StringImmNode>()->value == b.as<StringImmNode>()->value;
    case ExprKind::Var:
      return false;  // identity already compared
    case ExprKind::Cast:
      return structural_equal(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case ExprKind::Not:
      return structural_equal(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case ExprKind::Select: {
      auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      return structural_equal(x->cond, y->cond) && structural_equal(x->true_value, y->true_value) &&
             structural_equal(x->false_value, y->false_value);
    }
    case ExprKind::Load: {
      auto *x = a.as<LoadNode>(), *y = b.as<LoadNode>();
      return x->buffer == y->buffer && structural_equal(x->index, y->index);
    }
    case ExprKind::Ramp: {
      auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
      return x->lanes == y->lanes && structural_equal(x->base, y->base) && structural_equal(x->stride, y->stride);
    }
    case ExprKind::Broadcast:
      return structural_equal(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value);
    case ExprKind::Call: {
      auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      return x->name == y->name && eq_all(x->args, y->args);
    }
    case ExprKind::Let: {
      auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
      return x->var.same_as(y->var) && structural_equal(x->value, y->value) && structural_equal(x->body, y->body);
    }
    case ExprKind::TensorRead: {
      auto *x = a.as<TensorReadNode>(), *y = b.as<TensorReadNode>();
      return x->op == y->op && eq_all(x->indices, y->indices);
    }
    case ExprKind::Reduce:
      return false;
    default:
      return false;
  }
}

}  // namespace loom::ir
