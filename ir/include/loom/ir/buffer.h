// A Buffer is a named region of memory with an element type, a shape and a memory scope.
// Function arguments and allocations are Buffers; flat Loads/Stores index them in elements.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/expr.h"
#include "loom/runtime/dim_expr.h"

namespace loom::ir {

// Memory scopes. "global" is host/device main memory; "local" is per-thread scratch (stack);
// "shared" is GPU shared memory; accelerator scopes name on-chip SRAMs.
namespace scope {
inline constexpr const char* kGlobal = "global";
inline constexpr const char* kLocal = "local";
inline constexpr const char* kShared = "shared";
inline constexpr const char* kAccInput = "acc.inp";
inline constexpr const char* kAccWeight = "acc.wgt";
inline constexpr const char* kAccAccum = "acc.acc";
}  // namespace scope

struct BufferNode {
  Var data;  // base pointer (printed as the buffer's name)
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;  // logical shape; flat size is the product
  std::string scope;
};

Buffer make_buffer(std::string name, DataType dtype, std::vector<Expr> shape, std::string scope = scope::kGlobal);
// Product of the shape, if every extent is constant; else -1.
int64_t constant_size(const Buffer& b);
// Symbolic extents: the variables the arguments' shapes use (a compiled function takes their
// values at run time, module.h), in order of first appearance. Two variables of one name are a
// ShapeError naming the argument.
std::vector<Var> shape_vars(const std::vector<Buffer>& args);
// An extent as an affine dimension over its variables' names (integer constants, variables, +,
// -, * by a constant); nullopt for any other form.
std::optional<runtime::DimExpr> to_dim_expr(const Expr& e);
// Row-major strides of the shape (innermost = 1).
std::vector<Expr> row_major_strides(const std::vector<Expr>& shape);

}  // namespace loom::ir
