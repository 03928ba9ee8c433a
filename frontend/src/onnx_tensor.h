// ONNX TensorProto <-> NDArray and the host-side evaluation of shape computations on constants
// (internal to the ONNX importer).
#pragma once
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "loom/runtime/ndarray.h"

namespace loom::frontend::onnx_detail {

DataType onnx_dtype(int onnx_type, const std::string& where);
// Reads a tensor (raw, typed fields or external data relative to base_dir); ModelError naming `where`.
NDArray tensor_value(const onnx::TensorProto& t, const std::string& base_dir, const std::string& where);

// Integer contents of a constant (int64/int32/... or float with integral values).
std::vector<int64_t> int_values(const NDArray& a);
NDArray int64_array(const std::vector<int64_t>& values, const std::vector<int64_t>& shape);
int64_t numel(const std::vector<int64_t>& shape);

// Element-wise copies with arbitrary element size.
NDArray transpose_const(const NDArray& a, const std::vector<int64_t>& perm);
NDArray slice_const(const NDArray& a, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                    const std::vector<int64_t>& axes, const std::vector<int64_t>& steps);
NDArray concat_const(const std::vector<NDArray>& parts, int64_t axis);
NDArray gather_const(const NDArray& data, const NDArray& indices, int64_t axis);
NDArray reshape_const(const NDArray& a, const std::vector<int64_t>& shape);
NDArray cast_const(const NDArray& a, DataType to);

}  // namespace loom::frontend::onnx_detail
