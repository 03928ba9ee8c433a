#include "kernel_runner.h"

#include "loom/runtime/error.h"

namespace loom::runtime {

void check_arguments(const RunnerInputs& in, const KernelCall& call, const std::vector<ArgSpec>& expects) {
  if (expects.size() != call.args.size())
    LOOM_THROW(ModelError, in.origin, ": kernel '", call.func, "' takes ", expects.size(),
               " arguments, the graph passes ", call.args.size());
  for (size_t a = 0; a < call.args.size(); ++a) {
    const ExecutorValue& v = in.plan.values[size_t(call.args[a])];
    if (v.shape != expects[a].shape || v.dtype != expects[a].dtype)
      LOOM_THROW(ModelError, in.origin, ": kernel '", call.func, "' argument ", a, " expects ", expects[a].str(),
                 ", the graph passes '", v.name, "' ", ArgSpec{v.name, v.shape, v.dtype}.str());
  }
}

}  // namespace loom::runtime
