// Tensor-expression level: placeholders, computes defined by index lambdas, and reductions.
//   Tensor A = placeholder({n, k}, DataType::Float(32), "A");
//   IterVar r = reduce_axis(0, k, "k");
//   Tensor C = compute({n, m}, [&](auto& i) { return sum(A(i[0], r) * B(r, i[1]), {r}); }, "C");
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "loom/ir/expr.h"
#include "loom/ir/stmt.h"

namespace loom::ir {

enum class IterKind : uint8_t { DataPar, Reduce };

struct IterVarNode {
  Var var;
  Range dom;
  IterKind kind;
};
using IterVar = std::shared_ptr<const IterVarNode>;
IterVar make_iter_var(Var v, Range dom, IterKind kind);
// A reduction axis over [min, min + extent).
IterVar reduce_axis(Expr min, Expr extent, const std::string& name);
inline IterVar reduce_axis(Expr extent, const std::string& name) { return reduce_axis(Expr(0), extent, name); }

class Tensor;

// Index arguments may be expressions or iteration variables (reduce axes).
inline Expr index_expr(const Expr& e) { return e; }
inline Expr index_expr(const IterVar& v) { return v->var; }
inline Expr index_expr(int v) { return Expr(v); }

// An operation produces one output tensor. Placeholders are inputs; computes have a body.
class Operation {
 public:
  enum class Kind : uint8_t { Placeholder, Compute };
  virtual ~Operation() = default;
  Kind op_kind;
  std::string name;
  std::vector<Expr> shape;
  DataType dtype;

  // Axes of a compute (one per output dimension) and its body (a Reduce for reductions).
  std::vector<IterVar> axis;
  Expr body;
  // Tag used by schedules of operator libraries ("conv2d", "injective", ...).
  std::string tag;

  bool is_placeholder() const { return op_kind == Kind::Placeholder; }
  bool is_compute() const { return op_kind == Kind::Compute; }
  std::vector<IterVar> reduce_axes() const;  // from the body's Reduce, if any
  // Tensors this op reads, in first-use order.
  std::vector<Tensor> input_tensors() const;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(OpRef op) : op_(std::move(op)) {}
  bool defined() const { return op_ != nullptr; }
  const OpRef& op() const { return op_; }
  const std::string& name() const { return op_->name; }
  const std::vector<Expr>& shape() const { return op_->shape; }
  int ndim() const { return static_cast<int>(op_->shape.size()); }
  DataType dtype() const { return op_->dtype; }
  bool same_as(const Tensor& o) const { return op_ == o.op_; }
  bool operator==(const Tensor& o) const { return same_as(o); }
  // Element access: A(i, j). Checks the rank (ShapeError naming the tensor).
  Expr operator()(std::vector<Expr> indices) const;
  template <typename... Args>
  Expr operator()(Args... idx) const {
    return (*this)(std::vector<Expr>{index_expr(idx)...});
  }

 private:
  OpRef op_;
};

// Read of a tensor element at the TE level (resolved to a Load by storage flattening).
struct TensorReadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::TensorRead;
  TensorReadNode(OpRef o, std::vector<Expr> idx)
      : ExprNode(kKind, o->dtype), op(std::move(o)), indices(std::move(idx)) {}
  const OpRef op;
  const std::vector<Expr> indices;
};

enum class ReduceKind : uint8_t { Sum, Max, Min, Prod };
const char* to_string(ReduceKind k);

struct ReduceNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Reduce;
  ReduceNode(ReduceKind k, Expr src, std::vector<IterVar> ax, Expr cond)
      : ExprNode(kKind, src.type()),
        reduce_kind(k),
        source(std::move(src)),
        axes(std::move(ax)),
        condition(std::move(cond)) {}
  const ReduceKind reduce_kind;
  const Expr source;
  const std::vector<IterVar> axes;
  const Expr condition;  // undefined = always
};
// Identity element of a reduction for type t (0, -inf/lowest, +inf/highest).
Expr reduce_identity(ReduceKind k, DataType t);
// combine(acc, x) for a reduction.
Expr reduce_combine(ReduceKind k, Expr acc, Expr x);

Expr sum(Expr source, std::vector<IterVar> axes, Expr condition = Expr());
Expr max_reduce(Expr source, std::vector<IterVar> axes, Expr condition = Expr());
Expr prod_reduce(Expr source, std::vector<IterVar> axes, Expr condition = Expr());
Expr min_reduce(Expr source, std::vector<IterVar> axes, Expr condition = Expr());

Tensor placeholder(std::vector<Expr> shape, DataType dtype, std::string name);
using ComputeFn = std::function<Expr(const std::vector<Var>&)>;
Tensor compute(std::vector<Expr> shape, const ComputeFn& fn, std::string name, std::string tag = "");
// Convenience overloads for 1..4 dimensions: compute(shape, [](Var i, Var j) { ... }, "C").
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var)>& fn, std::string name, std::string tag = "");
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var)>& fn, std::string name,
               std::string tag = "");
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var)>& fn, std::string name,
               std::string tag = "");
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var, Var)>& fn, std::string name,
               std::string tag = "");
// A compute over explicitly supplied axes (used by schedule transforms that rebuild ops).
Tensor compute_with_axes(std::vector<IterVar> axes, Expr body, std::string name, std::string tag = "");

// All operations reachable from `outputs`, producers before consumers.
std::vector<OpRef> topo_sort(const std::vector<Tensor>& outputs);

}  // namespace loom::ir
