#include "loom/ir/buffer.h"

#include <algorithm>
#include <map>
#include <set>

#include "loom/ir/functor.h"
#include "loom/runtime/error.h"

namespace loom::ir {

Buffer make_buffer(std::string name, DataType dtype, std::vector<Expr> shape, std::string scope) {
  auto b = std::make_shared<BufferNode>();
  b->data = Var(name, DataType::UInt(64));
  b->name = std::move(name);
  b->dtype = dtype;
  b->shape = std::move(shape);
  b->scope = std::move(scope);
  return b;
}

int64_t constant_size(const Buffer& b) {
  int64_t n = 1;
  for (auto& e : b->shape) {
    auto* c = as_const_int(e);
    if (!c) return -1;
    n *= *c;
  }
  return n;
}

namespace {
class ShapeVarCollector : public IRVisitor {
 public:
  std::vector<Var> vars;
  std::map<std::string, const VarNode*> by_name;
  std::string arg;
  using IRVisitor::visit;
  void visit(const Expr& e) override {
    auto* v = e.as<VarNode>();
    if (!v) return IRVisitor::visit(e);
    auto [it, is_new] = by_name.emplace(v->name, v);
    if (!is_new && it->second != v)
      LOOM_THROW(ShapeError, "argument '", arg, "': two different shape variables are named '", v->name, "'");
    if (is_new) vars.push_back(Var(std::static_pointer_cast<const VarNode>(e.node_ptr())));
  }
};
}  // namespace

std::vector<Var> shape_vars(const std::vector<Buffer>& args) {
  ShapeVarCollector c;
  for (const Buffer& b : args) {
    c.arg = b->name;
    for (const Expr& e : b->shape) c.visit(e);
  }
  return c.vars;
}

namespace {
// The variables a statement reads without defining them (by loops, lets or allocations).
class FreeVarCollector : public IRVisitor {
 public:
  std::set<const VarNode*> bound;
  std::map<std::string, Var> used;
  using IRVisitor::visit;
  void visit(const Expr& e) override {
    if (auto* v = e.as<VarNode>()) {
      used.emplace(v->name, Var(std::static_pointer_cast<const VarNode>(e.node_ptr())));
      return;
    }
    IRVisitor::visit(e);
  }
  void visit_for(const ForNode* op) override {
    bound.insert(op->var.get());
    IRVisitor::visit_for(op);
  }
  void visit_let_stmt(const LetStmtNode* op) override {
    bound.insert(op->var.get());
    IRVisitor::visit_let_stmt(op);
  }
  void visit_let(const LetNode* op) override {
    bound.insert(op->var.get());
    IRVisitor::visit_let(op);
  }
  void visit_allocate(const AllocateNode* op) override {
    bound.insert(op->buffer->data.get());
    IRVisitor::visit_allocate(op);
  }
};
}  // namespace

std::vector<Var> shape_vars(const LoweredFunc& f) {
  std::vector<Var> vars = shape_vars(f.args);
  for (const Var& v : f.body_shape_vars)
    if (std::none_of(vars.begin(), vars.end(), [&](const Var& w) { return w.get() == v.get(); })) vars.push_back(v);
  return vars;
}

std::vector<Var> free_vars(const Stmt& s) {
  FreeVarCollector c;
  c.visit(s);
  std::vector<Var> vars;
  for (auto& [name, v] : c.used)
    if (!c.bound.count(v.get())) vars.push_back(v);
  return vars;
}

std::optional<runtime::DimExpr> to_dim_expr(const Expr& e) {
  if (auto* c = as_const_int(e)) return runtime::DimExpr::constant(*c);
  if (auto* v = e.as<VarNode>()) return runtime::DimExpr::variable(v->name);
  auto* b = as_binary(e);
  if (!b) return std::nullopt;
  auto x = to_dim_expr(b->a), y = to_dim_expr(b->b);
  if (!x || !y) return std::nullopt;
  switch (e.kind()) {
    case ExprKind::Add:
      return *x + *y;
    case ExprKind::Sub:
      return *x + *y * -1;
    case ExprKind::Mul:
      if (y->is_constant()) return *x * y->offset;
      if (x->is_constant()) return *y * x->offset;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::vector<Expr> row_major_strides(const std::vector<Expr>& shape) {
  std::vector<Expr> strides(shape.size());
  Expr s = Expr(1);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    auto* a = as_const_int(s);
    auto* b = as_const_int(shape[i]);
    s = a && b ? Expr(static_cast<int>(*a * *b)) : s * shape[i];
  }
  return strides;
}

}  // namespace loom::ir
