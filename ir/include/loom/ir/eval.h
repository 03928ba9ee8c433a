// Direct evaluation, for testing: a naive reference that computes tensor expressions element by
// element (no schedule involved), and an interpreter for lowered loop IR. Both use the same
// typed arithmetic (wrap-around integers, floor div/mod, float32 rounding).
#pragma once
#include <map>
#include <vector>

#include "loom/ir/stmt.h"
#include "loom/ir/tensor.h"
#include "loom/runtime/ndarray.h"

namespace loom::ir {

// Computes `outputs` from `inputs` (placeholder -> data) by evaluating every compute's body at
// every point of its shape.
std::vector<NDArray> reference_eval(const std::vector<Tensor>& outputs,
                                    const std::map<const Operation*, NDArray>& inputs);

// Runs a lowered function on host arrays (one per argument, in order).
void interpret(const LoweredFunc& f, const std::vector<NDArray>& args);

}  // namespace loom::ir
