#include "kernel_runner.h"

#include "loom/runtime/error.h"

namespace loom::runtime {

namespace {
// `dims` with variable `var` at `value` (the others stay).
ShapeExpr fixed(ShapeExpr dims, const KernelVariant* at) {
  if (!at) return dims;
  for (DimExpr& d : dims) {
    DimExpr out = DimExpr::constant(d.offset);
    for (const DimTerm& t : d.terms)
      out = out + (t.var == at->var ? DimExpr::constant(t.coeff * at->value) : DimExpr::variable(t.var) * t.coeff);
    d = out;
  }
  return dims;
}
}  // namespace

void check_arguments(const RunnerInputs& in, const KernelCall& call, const std::vector<ArgSpec>& expects,
                     const KernelVariant* variant) {
  const std::string& func = variant ? variant->func : call.func;
  if (expects.size() != call.args.size())
    LOOM_THROW(ModelError, in.origin, ": kernel '", func, "' takes ", expects.size(), " arguments, the graph passes ",
               call.args.size());
  for (size_t a = 0; a < call.args.size(); ++a) {
    const ExecutorValue& v = in.plan.values[size_t(call.args[a])];
    auto dims_of = [](const std::vector<int64_t>& shape, const ShapeExpr& dims) {
      return dims.empty() ? constant_shape(shape) : dims;
    };
    if (fixed(dims_of(v.shape, v.dims), variant) != dims_of(expects[a].shape, expects[a].dims) ||
        v.dtype != expects[a].dtype)
      LOOM_THROW(ModelError, in.origin, ": kernel '", func, "' argument ", a, " expects ", expects[a].str(),
                 ", the graph passes '", v.name, "' ", ArgSpec{v.name, v.shape, v.dtype, v.dims}.str(),
                 variant ? " at " + variant->var + " = " + std::to_string(variant->value) : "");
  }
}

}  // namespace loom::runtime
