// Shared by the tensor-expression and schedule bindings (te.cc, schedules.cc): handles for
// iteration variables and operations, and Python values as expressions.
#pragma once
#include <string>
#include <vector>

#include "bindings.h"
#include "loom/ir/stmt.h"
#include "loom/ir/tensor.h"
#include "loom/schedule/tensor_intrin.h"

namespace loom::python {

// ir::IterVar is a shared pointer to a const node; Python holds it through this handle.
struct IterVarRef {
  ir::IterVar iv;
};
// A tensor's operation as TVM shows it (T.op.axis, T.op.reduce_axis).
struct OperationRef {
  ir::Tensor tensor;
};

// schedule::TensorIntrin is a shared pointer to a const node; Python holds it through this handle.
struct IntrinRef {
  schedule::TensorIntrin intrin;
};

// A lowered function: its loop IR, printable, and what loom.build compiles.
struct Lowered {
  ir::LoweredFunc func;
  std::vector<bool> is_output;  // per argument: a compute (written) rather than a placeholder
  std::string target;           // llvm, cuda or accel: the passes it was lowered with
};

// What loom.build makes of a function lowered for the accelerator (accel_functions.cc: a
// loom.accel.Function, run on a loom.accel.Device) and for GPUs (cuda_functions.cc).
py::object build_accel_function(const Lowered& lowered, const py::object& config);
py::object build_cuda_function(const Lowered& lowered, const std::string& arch);

// An expression, an iteration variable or a Python number (a constant of `like`'s type, int32 or
// float32 without one); TypeError naming `what` otherwise.
ir::Expr to_expr(const py::handle& v, const ir::Expr* like, const std::string& what);
// A shape: an int, an expression, or a sequence of them.
std::vector<ir::Expr> shape_exprs(const py::object& shape, const std::string& what);

}  // namespace loom::python
