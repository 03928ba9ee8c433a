#include "kernel_runner.h"

#include "loom/runtime/error.h"

namespace loom::runtime {

void check_arguments(const RunnerInputs& in, const KernelCall& call, const std::vector<ArgSpec>& expects) {
  if (expects.size() != call.args.size())
    LOOM_THROW(ModelError, in.origin, ": kernel '", call.func, "' takes ", expects.size(),
               " arguments, the graph passes ", call.args.size());
  for (size_t a = 0; a < call.args.size(); ++a) {
    const ExecutorValue& v = in.plan.values[size_t(call.args[a])];
    auto dims_of = [](const std::vector<int64_t>& shape, const ShapeExpr& dims) {
      return dims.empty() ? constant_shape(shape) : dims;
    };
    if (dims_of(v.shape, v.dims) != dims_of(expects[a].shape, expects[a].dims) || v.dtype != expects[a].dtype)
      LOOM_THROW(ModelError, in.origin, ": kernel '", call.func, "' argument ", a, " expects ", expects[a].str(),
                 ", the graph passes '", v.name, "' ", ArgSpec{v.name, v.shape, v.dtype, v.dims}.str());
  }
}

}  // namespace loom::runtime
