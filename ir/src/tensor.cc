#include "loom/ir/tensor.h"

#include <limits>
#include <set>

#include "loom/ir/functor.h"
#include "loom/ir/printer.h"

namespace loom::ir {

IterVar make_iter_var(Var v, Range dom, IterKind kind) {
  return std::make_shared<const IterVarNode>(IterVarNode{std::move(v), std::move(dom), kind});
}

IterVar reduce_axis(Expr min, Expr extent, const std::string& name) {
  return make_iter_var(Var(name), Range{std::move(min), std::move(extent)}, IterKind::Reduce);
}

const char* to_string(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum:
      return "sum";
    case ReduceKind::Max:
      return "max";
    case ReduceKind::Min:
      return "min";
    case ReduceKind::Prod:
      return "prod";
  }
  return "?";
}

Expr reduce_identity(ReduceKind k, DataType t) {
  if (k == ReduceKind::Sum) return make_zero(t);
  if (k == ReduceKind::Prod) return make_one(t);
  bool want_lowest = k == ReduceKind::Max;
  if (t.is_float()) {
    double inf = std::numeric_limits<double>::infinity();
    return make_const(t, want_lowest ? -inf : inf);
  }
  int bits = t.bits();
  if (t.is_int()) {
    int64_t hi = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    return make_const(t, want_lowest ? double(-hi - 1) : double(hi));
  }
  double hi = bits == 64 ? double(std::numeric_limits<uint64_t>::max()) : double((uint64_t{1} << bits) - 1);
  return make_const(t, want_lowest ? 0.0 : hi);
}

Expr reduce_combine(ReduceKind k, Expr acc, Expr x) {
  switch (k) {
    case ReduceKind::Sum:
      return acc + x;
    case ReduceKind::Max:
      return max(acc, x);
    case ReduceKind::Min:
      return min(acc, x);
    case ReduceKind::Prod:
      return acc * x;
  }
  return Expr();
}

static Expr make_reduce(ReduceKind k, Expr source, std::vector<IterVar> axes, Expr condition) {
  if (axes.empty()) LOOM_THROW(TypeError, to_string(k), " reduction of '", to_string(source), "' has no reduce axes");
  for (auto& a : axes)
    if (a->kind != IterKind::Reduce)
      LOOM_THROW(TypeError, to_string(k), " reduction over '", a->var.name(), "', which is not a reduce_axis");
  return Expr(std::make_shared<const ReduceNode>(k, std::move(source), std::move(axes), std::move(condition)));
}
Expr sum(Expr source, std::vector<IterVar> axes, Expr condition) {
  return make_reduce(ReduceKind::Sum, std::move(source), std::move(axes), std::move(condition));
}
Expr max_reduce(Expr source, std::vector<IterVar> axes, Expr condition) {
  return make_reduce(ReduceKind::Max, std::move(source), std::move(axes), std::move(condition));
}
Expr prod_reduce(Expr source, std::vector<IterVar> axes, Expr condition) {
  return make_reduce(ReduceKind::Prod, std::move(source), std::move(axes), std::move(condition));
}
Expr min_reduce(Expr source, std::vector<IterVar> axes, Expr condition) {
  return make_reduce(ReduceKind::Min, std::move(source), std::move(axes), std::move(condition));
}

std::vector<IterVar> Operation::reduce_axes() const {
  if (auto* r = body.as<ReduceNode>()) return r->axes;
  return {};
}

std::vector<Tensor> Operation::input_tensors() const {
  std::vector<Tensor> out;
  std::set<const Operation*> seen;
  if (!body.defined()) return out;
  post_order_visit(body, [&](const Expr& e) {
    if (auto* r = e.as<TensorReadNode>())
      if (seen.insert(r->op.get()).second) out.emplace_back(r->op);
  });
  return out;
}

Expr Tensor::operator()(std::vector<Expr> indices) const {
  if (!defined()) LOOM_THROW(ShapeError, "indexing an undefined tensor");
  if (indices.size() != op_->shape.size())
    LOOM_THROW(ShapeError, "tensor '", name(), "' has rank ", op_->shape.size(), " but is indexed with ",
               indices.size(), " indices");
  for (auto& i : indices) {
    if (!i.type().is_integer() || !i.type().is_scalar())
      LOOM_THROW(TypeError, "tensor '", name(), "' indexed with non-integer '", to_string(i), "' of type ",
                 i.type().str());
    if (i.type() != DataType::Int(32)) i = cast(DataType::Int(32), i);
  }
  return Expr(std::make_shared<const TensorReadNode>(op_, std::move(indices)));
}

static void check_shape(const std::vector<Expr>& shape, const std::string& name) {
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].type().is_integer()) LOOM_THROW(ShapeError, "tensor '", name, "': extent ", i, " is not an integer");
    if (auto* c = as_const_int(shape[i]); c && *c <= 0)
      LOOM_THROW(ShapeError, "tensor '", name, "': extent ", i, " is ", *c, ", must be positive");
  }
}

Tensor placeholder(std::vector<Expr> shape, DataType dtype, std::string name) {
  if (!is_supported_tensor_type(dtype))
    LOOM_THROW(TypeError, "placeholder '", name, "': unsupported dtype ", dtype.str());
  check_shape(shape, name);
  auto op = std::make_shared<Operation>();
  op->op_kind = Operation::Kind::Placeholder;
  op->name = std::move(name);
  op->shape = std::move(shape);
  op->dtype = dtype;
  return Tensor(op);
}

Tensor compute_with_axes(std::vector<IterVar> axes, Expr body, std::string name, std::string tag) {
  if (!body.defined()) LOOM_THROW(TypeError, "compute '", name, "': body is undefined");
  if (!is_supported_tensor_type(body.type()))
    LOOM_THROW(TypeError, "compute '", name, "': unsupported element type ", body.type().str());
  // A Reduce may only appear at the top of a body: nested reductions need their own stage.
  int reduces = 0;
  post_order_visit(body, [&](const Expr& e) { reduces += e.as<ReduceNode>() != nullptr; });
  if (reduces > (body.as<ReduceNode>() ? 1 : 0))
    LOOM_THROW(TypeError, "compute '", name, "': a reduction must be the whole body; split it into its own compute");
  auto op = std::make_shared<Operation>();
  op->op_kind = Operation::Kind::Compute;
  op->name = std::move(name);
  op->tag = std::move(tag);
  for (auto& a : axes) op->shape.push_back(a->dom.extent);
  check_shape(op->shape, op->name);
  op->dtype = body.type();
  op->axis = std::move(axes);
  op->body = std::move(body);
  return Tensor(op);
}

Tensor compute(std::vector<Expr> shape, const ComputeFn& fn, std::string name, std::string tag) {
  check_shape(shape, name);
  static const char* kAxisNames[] = {"i", "j", "k", "l", "m", "n"};
  std::vector<IterVar> axes;
  std::vector<Var> vars;
  for (size_t d = 0; d < shape.size(); ++d) {
    Var v(d < 6 ? kAxisNames[d] : "ax" + std::to_string(d));
    vars.push_back(v);
    axes.push_back(make_iter_var(v, Range{Expr(0), shape[d]}, IterKind::DataPar));
  }
  return compute_with_axes(std::move(axes), fn(vars), std::move(name), std::move(tag));
}

static void check_rank(const std::vector<Expr>& shape, size_t n, const std::string& name) {
  if (shape.size() != n)
    LOOM_THROW(ShapeError, "compute '", name, "': lambda takes ", n, " indices but shape has rank ", shape.size());
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var)>& fn, std::string name, std::string tag) {
  check_rank(shape, 1, name);
  return compute(std::move(shape), ComputeFn([&](const std::vector<Var>& v) { return fn(v[0]); }), std::move(name),
                 std::move(tag));
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var)>& fn, std::string name, std::string tag) {
  check_rank(shape, 2, name);
  return compute(std::move(shape), ComputeFn([&](const std::vector<Var>& v) { return fn(v[0], v[1]); }),
                 std::move(name), std::move(tag));
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var)>& fn, std::string name,
               std::string tag) {
  check_rank(shape, 3, name);
  return compute(std::move(shape), ComputeFn([&](const std::vector<Var>& v) { return fn(v[0], v[1], v[2]); }),
                 std::move(name), std::move(tag));
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var, Var)>& fn, std::string name,
               std::string tag) {
  check_rank(shape, 4, name);
  return compute(std::move(shape), ComputeFn([&](const std::vector<Var>& v) { return fn(v[0], v[1], v[2], v[3]); }),
                 std::move(name), std::move(tag));
}

std::vector<OpRef> topo_sort(const std::vector<Tensor>& outputs) {
  std::vector<OpRef> order;
  std::set<const Operation*> visited;
  std::function<void(const OpRef&)> visit = [&](const OpRef& op) {
    if (!visited.insert(op.get()).second) return;
    for (auto& t : op->input_tensors()) visit(t.op());
    order.push_back(op);
  };
  for (auto& t : outputs) visit(t.op());
  return order;
}

}  // namespace loom::ir
