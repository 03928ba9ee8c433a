// Symbolic extents of operators (layers.h): the maxima scope and extents over shape variables.
#include "loom/ir/buffer.h"
#include "loom/ir/functor.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "loom/ops/layers.h"
#include "loom/runtime/error.h"

namespace loom::ops {

namespace {
thread_local const ShapeVarMaxima* current_maxima = nullptr;

// The variables of a tensor's extents, by name.
void collect_vars(const Tensor& t, std::map<std::string, ir::Var>& vars) {
  struct Collector : ir::IRVisitor {
    std::map<std::string, ir::Var>* vars;
    using IRVisitor::visit;
    void visit(const Expr& e) override {
      if (auto* v = e.as<ir::VarNode>()) {
        vars->emplace(v->name, ir::Var(std::static_pointer_cast<const ir::VarNode>(e.node_ptr())));
        return;
      }
      IRVisitor::visit(e);
    }
  } c;
  c.vars = &vars;
  for (const Expr& e : t.shape()) c.visit(e);
}
}  // namespace

ShapeVarMaxima::ShapeVarMaxima(std::map<std::string, int64_t> maxima)
    : maxima_(std::move(maxima)), outer_(current_maxima) {
  current_maxima = this;
}

ShapeVarMaxima::~ShapeVarMaxima() { current_maxima = outer_; }

bool has_symbolic_extent(const Tensor& t) {
  for (const Expr& e : t.shape())
    if (!ir::as_const_int(e)) return true;
  return false;
}

Shape max_shape_of(const Tensor& t) {
  Shape s;
  for (int d = 0; d < t.ndim(); ++d) {
    if (auto* c = ir::as_const_int(t.shape()[size_t(d)])) {
      s.push_back(*c);
      continue;
    }
    std::optional<runtime::DimExpr> dim = ir::to_dim_expr(t.shape()[size_t(d)]);
    if (!dim || !current_maxima)
      LOOM_THROW(ShapeError, "tensor '", t.name(), "': dimension ", d, " is symbolic (",
                 ir::to_string(t.shape()[size_t(d)]), ") and no shape variable maxima are known");
    try {
      s.push_back(dim->eval(current_maxima->maxima_));
    } catch (const RuntimeError& e) {
      LOOM_THROW(ShapeError, "tensor '", t.name(), "': ", e.what());
    }
  }
  return s;
}

bool same_extent(const Expr& a, const Expr& b) {
  auto x = ir::to_dim_expr(ir::simplify(a)), y = ir::to_dim_expr(ir::simplify(b));
  return x && y && *x == *y;
}

namespace {
// A dimension as an extent: each variable from `vars`, else the scope's (ShapeError without one).
Expr extent_over(const runtime::DimExpr& d, const std::map<std::string, ir::Var>& vars) {
  Expr e = Expr(static_cast<int>(d.offset));
  bool first = d.offset == 0;
  for (const runtime::DimTerm& t : d.terms) {
    auto it = vars.find(t.var);
    Expr v;
    if (it != vars.end()) {
      v = it->second;
    } else {
      if (!current_maxima)
        LOOM_THROW(ShapeError, "dimension ", d.str(), " uses the shape variable '", t.var,
                   "', which no input's extents have");
      v = current_maxima->var(t.var);
    }
    Expr term = t.coeff == 1 ? v : v * Expr(static_cast<int>(t.coeff));
    e = first ? term : e + term;
    first = false;
  }
  return e;
}
}  // namespace

Expr shape_var_extent(const runtime::DimExpr& d) { return extent_over(d, {}); }

std::vector<Expr> extents_over(const runtime::ShapeExpr& dims, const std::vector<Tensor>& tensors) {
  std::map<std::string, ir::Var> vars;
  for (const Tensor& t : tensors) collect_vars(t, vars);
  std::vector<Expr> out;
  for (const runtime::DimExpr& d : dims) out.push_back(ir::simplify(extent_over(d, vars)));
  return out;
}

}  // namespace loom::ops
