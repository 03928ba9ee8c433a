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

// Runs a function lowered for a GPU (LowerOptions::target_gpu) the way a GPU would, on host arrays:
// kernels in order, blocks one after another, each block's threads as real threads that meet at
// every barrier (ir/gpu.h's SPMD semantics: bound loops are thread indices, the store rule, shared
// buffers per block, local per thread). Every access to global and shared memory is checked: two
// accesses to one element, at least one a write, from different threads of a block between the
// same two barriers, or from different blocks of a kernel, are a race, reported as a RuntimeError
// naming the kernel, the buffer, the element and both threads. The host/device split's
// LoweringErrors come first (gpu.h).
void interpret_grid(const LoweredFunc& f, const std::vector<NDArray>& args);

}  // namespace loom::ir
