// ONNX TensorProto <-> NDArray and the host-side evaluation of shape computations on constants
// (internal to the ONNX importer).
#pragma once
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "loom/runtime/ndarray.h"

namespace loom::frontend::onnx_detail {

DataType onnx_dtype(int onnx_type, const std::string& where);
// The inverse: the TensorProto element type of `t`; ModelError naming `where` for a type ONNX has none for.
int onnx_type(DataType t, const std::string& where);
// Reads a tensor (raw, typed fields or external data relative to base_dir); ModelError naming `where`.
NDArray tensor_value(const onnx::TensorProto& t, const std::string& base_dir, const std::string& where);

// Integer contents of a constant (int64/int32/... or float with integral values).
std::vector<int64_t> int_values(const NDArray& a);
NDArray int64_array(const std::vector<int64_t>& values, const std::vector<int64_t>& shape);
// Elements of `shape`: ModelError (naming `where`) for a negative dimension or more than
// kMaxElements (the product is computed without overflow: shapes come from the file).
inline constexpr int64_t kMaxElements = int64_t(1) << 40;
int64_t numel(const std::vector<int64_t>& shape, const std::string& where = "constant");
// A constant computed at import (constant folding): at most kMaxFoldedBytes, so a tiny model
// cannot make the importer allocate gigabytes (ConstantOfShape of [1e6, 1e6]).
inline constexpr uint64_t kMaxFoldedBytes = uint64_t(256) << 20;
// Operators whose inputs are all constants are evaluated during import up to this many output
// elements (shape computations and masks); larger ones are left to the fold_constants pass.
inline constexpr int64_t kMaxFoldedElements = int64_t(1) << 16;
NDArray folded_const(const std::vector<int64_t>& shape, DataType dtype, const std::string& where = "constant");

// Element-wise copies with arbitrary element size.
NDArray transpose_const(const NDArray& a, const std::vector<int64_t>& perm);
NDArray slice_const(const NDArray& a, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                    const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);
NDArray concat_const(const std::vector<NDArray>& parts, int64_t axis);
NDArray gather_const(const NDArray& data, const NDArray& indices, int64_t axis);
NDArray reshape_const(const NDArray& a, const std::vector<int64_t>& shape);

}  // namespace loom::frontend::onnx_detail
