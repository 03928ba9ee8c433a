// Tensor intrinsics: a hardware operation (e.g. the accelerator's GEMM block) declared as a
// small tensor expression over placeholders. `Stage::tensorize(iv, intrin)` replaces the loop
// nest from `iv` inwards by the intrinsic when that nest computes exactly the declared pattern;
// otherwise lowering throws a ScheduleError that says which part does not match.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/ir/intrinsics.h"
#include "loom/ir/stmt.h"
#include "loom/ir/tensor.h"

namespace loom::schedule {

// Which part of a reduction the emitted statement performs (ir/intrinsics.h).
using IntrinPart = ir::TensorIntrinPart;
using ir::to_string;

struct TensorIntrinNode {
  std::string name;
  ir::Tensor output;               // compute over `inputs`; may be a reduction
  std::vector<ir::Tensor> inputs;  // placeholders, in the order their addresses are passed
  // Builds the replacement statement. `addresses` holds, for each input then the output,
  // `address_of(T(start indices))`, which storage flattening turns into a flat buffer offset.
  // Default: Evaluate(call "<name>.<part>"(addresses...)).
  std::function<ir::Stmt(IntrinPart part, const std::vector<ir::Expr>& addresses)> lower;
};
using TensorIntrin = std::shared_ptr<const TensorIntrinNode>;

TensorIntrin declare_tensor_intrin(std::string name, ir::Tensor output, std::vector<ir::Tensor> inputs,
                                   std::function<ir::Stmt(IntrinPart, const std::vector<ir::Expr>&)> lower = nullptr);

// address_of(load or tensor read): the address of one element, passed to intrinsics.
ir::Expr address_of(ir::Expr element);

}  // namespace loom::schedule
