#include "loom/ir/op_count.h"

#include "loom/ir/functor.h"

namespace loom::ir {

namespace {

// Operations of one element of a compute's body; `known` turns false at a non-constant extent.
class OpCounter : public IRVisitor {
 public:
  using IRVisitor::visit;
  double ops = 0;
  bool known = true;

  void visit(const Expr& e) override {
    if (!e.defined()) return;
    if (is_binary(e.kind())) {
      const ExprKind k = e.kind();
      // Comparisons and logic are conditions (padding, bounds), not the computation.
      if (k == ExprKind::Add || k == ExprKind::Sub || k == ExprKind::Mul || k == ExprKind::Div || k == ExprKind::Mod ||
          k == ExprKind::Min || k == ExprKind::Max)
        ops += 1;
      const BinaryNode* b = as_binary(e);
      visit(b->a);
      visit(b->b);
      return;
    }
    if (e.kind() == ExprKind::Select) {
      const auto* s = static_cast<const SelectNode*>(e.get());
      ops += 1;
      visit(s->true_value);
      visit(s->false_value);
      return;
    }
    IRVisitor::visit(e);
  }

 protected:
  void visit_tensor_read(const TensorReadNode*) override {}  // the indices address, they do not compute
  void visit_load(const LoadNode*) override {}
  void visit_call(const CallNode* op) override {
    ops += 1;
    for (const Expr& a : op->args) visit(a);
  }
  void visit_reduce(const ReduceNode* op) override {
    OpCounter source;
    source.visit(op->source);
    double extent = 1;
    for (const IterVar& v : op->axes) extent *= constant(v->dom.extent);
    ops += extent * (source.ops + 1);
    known = known && source.known;
  }

 public:
  double constant(const Expr& e) {
    if (const int64_t* v = as_const_int(e)) return double(*v);
    known = false;
    return 0;
  }
};

}  // namespace

std::optional<double> count_ops(const std::vector<Tensor>& outputs) {
  double total = 0;
  for (const OpRef& op : topo_sort(outputs)) {
    if (!op->is_compute()) continue;
    OpCounter c;
    double elements = 1;
    for (const Expr& d : op->shape) elements *= c.constant(d);
    c.visit(op->body);
    if (!c.known) return std::nullopt;
    total += elements * c.ops;
  }
  return total;
}

}  // namespace loom::ir
