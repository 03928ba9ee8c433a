// How much arithmetic a tensor expression does: per compute, its elements times the operations
// of its body (a reduction: its extent times the source's operations and the combine). Index
// arithmetic (inside a tensor read's indices, a select's or reduction's condition) is not the
// computation and is not counted; every arithmetic operation and math call on values is, in any
// type (an int8 requantize is work as a float multiply-add is: a multiply-add counts two).
// The figure a roofline or a GFLOP/s column wants, as TVM's estimate_tir_flops gives for its IR.
#pragma once
#include <optional>
#include <vector>

#include "loom/ir/tensor.h"

namespace loom::ir {

// Operations to compute `outputs` from their placeholders; nullopt when an extent is not a
// constant (a shape known only at run time).
std::optional<double> count_ops(const std::vector<Tensor>& outputs);

}  // namespace loom::ir
