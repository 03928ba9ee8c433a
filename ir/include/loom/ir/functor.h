// Visitors and mutators over expressions and statements. Mutators rebuild a node only when one of
// its children changed, so untouched subtrees stay shared.
#pragma once
#include <functional>
#include <set>

#include "loom/ir/expr.h"
#include "loom/ir/stmt.h"
#include "loom/ir/tensor.h"

namespace loom::ir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);

 protected:
  // Per-node hooks; the defaults recurse into children.
  virtual void visit_var(const VarNode*) {}
  virtual void visit_load(const LoadNode* op);
  virtual void visit_tensor_read(const TensorReadNode* op);
  virtual void visit_call(const CallNode* op);
  virtual void visit_let(const LetNode* op);
  virtual void visit_reduce(const ReduceNode* op);
  virtual void visit_for(const ForNode* op);
  virtual void visit_store(const StoreNode* op);
  virtual void visit_provide(const ProvideNode* op);
  virtual void visit_allocate(const AllocateNode* op);
  virtual void visit_realize(const RealizeNode* op);
  virtual void visit_let_stmt(const LetStmtNode* op);
  virtual void visit_attr(const AttrNode* op);
  virtual void visit_if(const IfThenElseNode* op);
  void visit_expr_children(const Expr& e);  // generic recursion for the remaining kinds
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
  virtual Expr mutate_var(const Expr& e) { return e; }
  virtual Expr mutate_load(const Expr& e, const LoadNode* op);
  virtual Expr mutate_tensor_read(const Expr& e, const TensorReadNode* op);
  virtual Expr mutate_call(const Expr& e, const CallNode* op);
  virtual Expr mutate_binary(const Expr& e, const BinaryNode* op);
  virtual Expr mutate_cast(const Expr& e, const CastNode* op);
  virtual Expr mutate_select(const Expr& e, const SelectNode* op);
  virtual Expr mutate_ramp(const Expr& e, const RampNode* op);
  virtual Expr mutate_broadcast(const Expr& e, const BroadcastNode* op);
  virtual Expr mutate_let(const Expr& e, const LetNode* op);
  virtual Expr mutate_not(const Expr& e, const NotNode* op);
  virtual Expr mutate_reduce(const Expr& e, const ReduceNode* op);
  virtual Stmt mutate_for(const Stmt& s, const ForNode* op);
  virtual Stmt mutate_store(const Stmt& s, const StoreNode* op);
  virtual Stmt mutate_provide(const Stmt& s, const ProvideNode* op);
  virtual Stmt mutate_allocate(const Stmt& s, const AllocateNode* op);
  virtual Stmt mutate_realize(const Stmt& s, const RealizeNode* op);
  virtual Stmt mutate_let_stmt(const Stmt& s, const LetStmtNode* op);
  virtual Stmt mutate_attr(const Stmt& s, const AttrNode* op);
  virtual Stmt mutate_assert(const Stmt& s, const AssertNode* op);
  virtual Stmt mutate_seq(const Stmt& s, const SeqNode* op);
  virtual Stmt mutate_if(const Stmt& s, const IfThenElseNode* op);
  virtual Stmt mutate_evaluate(const Stmt& s, const EvaluateNode* op);
};

// Replaces Vars (by identity) with expressions.
using VarMap = std::vector<std::pair<const VarNode*, Expr>>;
Expr substitute(const Expr& e, const VarMap& map);
Stmt substitute(const Stmt& s, const VarMap& map);
// Calls f on every node, children before their parent (post-order).
void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f);
bool uses_var(const Expr& e, const VarNode* v);
bool uses_var(const Stmt& s, const VarNode* v);
// What a statement defines and writes: the variables it binds (loops, lets, let expressions) and
// the buffers it stores to.
struct Bindings {
  std::set<const VarNode*> vars;
  std::set<const BufferNode*> stored;
};
Bindings bindings_of(const Stmt& s);

}  // namespace loom::ir
