#include "loom/schedule/tensor_intrin.h"

namespace loom::schedule {

using namespace loom::ir;

Expr address_of(Expr element) { return make_address_of(std::move(element)); }

TensorIntrin declare_tensor_intrin(std::string name, Tensor output, std::vector<Tensor> inputs,
                                   std::function<Stmt(IntrinPart, const std::vector<Expr>&)> lower) {
  if (!output.defined() || !output.op()->is_compute())
    LOOM_THROW(ScheduleError, "tensor intrinsic '", name, "': the output must be a compute");
  for (auto& in : inputs)
    if (!in.op()->is_placeholder())
      LOOM_THROW(ScheduleError, "tensor intrinsic '", name, "': input '", in.name(), "' must be a placeholder");
  for (auto& used : output.op()->input_tensors()) {
    bool listed = false;
    for (auto& in : inputs) listed |= in.same_as(used);
    if (!listed)
      LOOM_THROW(ScheduleError, "tensor intrinsic '", name, "': pattern reads '", used.name(),
                 "', which is not among its inputs");
  }
  auto n = std::make_shared<TensorIntrinNode>();
  n->name = name;
  n->output = std::move(output);
  n->inputs = std::move(inputs);
  if (lower) {
    n->lower = std::move(lower);
  } else {
    n->lower = [name](IntrinPart part, const std::vector<Expr>& addresses) {
      return evaluate(make_tensor_intrin_call({name, part, addresses}));
    };
  }
  return n;
}

}  // namespace loom::schedule
