#include "loom/ir/stmt.h"

namespace loom::ir {

namespace {
template <typename T, typename... Args>
Stmt node(Args&&... args) {
  return Stmt(std::make_shared<const T>(std::forward<Args>(args)...));
}
}  // namespace

const char* to_string(ForKind k) {
  switch (k) {
    case ForKind::Serial:
      return "for";
    case ForKind::Parallel:
      return "parallel";
    case ForKind::Vectorized:
      return "vectorized";
    case ForKind::Unrolled:
      return "unrolled";
    case ForKind::ThreadBinding:
      return "bind";
    case ForKind::VirtualThread:
      return "vthread";
  }
  return "?";
}

Stmt let_stmt(Var v, Expr value, Stmt body) {
  return node<LetStmtNode>(std::move(v), std::move(value), std::move(body));
}
Stmt attr(std::string key, Expr value, Stmt body) {
  return node<AttrNode>(std::move(key), std::move(value), std::move(body));
}
Stmt assert_stmt(Expr cond, std::string message) { return node<AssertNode>(std::move(cond), std::move(message)); }
Stmt for_loop(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag) {
  return node<ForNode>(std::move(v), std::move(min), std::move(extent), kind, std::move(body), std::move(thread_tag));
}
Stmt store(Buffer b, Expr value, Expr index) {
  LOOM_CHECK(b != nullptr, "store to null buffer");
  return node<StoreNode>(std::move(b), std::move(value), std::move(index));
}
Stmt provide(OpRef op, std::vector<Expr> indices, Expr value) {
  return node<ProvideNode>(std::move(op), std::move(indices), std::move(value));
}
Stmt allocate(Buffer b, Stmt body) { return node<AllocateNode>(std::move(b), std::move(body)); }
Stmt realize(OpRef op, Region bounds, std::string scope, Stmt body) {
  return node<RealizeNode>(std::move(op), std::move(bounds), std::move(scope), std::move(body));
}
const ForNode* annotated_loop(const Stmt& s) {
  if (const auto* a = s.as<AttrNode>()) return annotated_loop(a->body);
  return s.as<ForNode>();
}

Stmt seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    if (!s.defined()) continue;
    if (auto* q = s.as<SeqNode>()) {
      flat.insert(flat.end(), q->seq.begin(), q->seq.end());
    } else if (auto* e = s.as<EvaluateNode>(); e && e->value.as<IntImmNode>()) {
      continue;  // no-op
    } else {
      flat.push_back(s);
    }
  }
  if (flat.empty()) return no_op();
  if (flat.size() == 1) return flat[0];
  return node<SeqNode>(std::move(flat));
}
Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case) {
  return node<IfThenElseNode>(std::move(cond), std::move(then_case), std::move(else_case));
}
Stmt evaluate(Expr v) { return node<EvaluateNode>(std::move(v)); }
Stmt no_op() { return evaluate(Expr(0)); }

}  // namespace loom::ir
