#include "onnx_tensor.h"

#include <cctype>

#include <cmath>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "loom/graph/passes.h"
#include "loom/runtime/error.h"

namespace loom::frontend::onnx_detail {

namespace {

// ONNX's element types that Loom has, read both ways.
struct ElementType {
  int onnx;
  DataType loom;
};
constexpr ElementType kElementTypes[] = {
    {onnx::TensorProto::FLOAT, DataType::Float(32)},  {onnx::TensorProto::FLOAT16, DataType::Float(16)},
    {onnx::TensorProto::DOUBLE, DataType::Float(64)}, {onnx::TensorProto::INT8, DataType::Int(8)},
    {onnx::TensorProto::INT16, DataType::Int(16)},    {onnx::TensorProto::INT32, DataType::Int(32)},
    {onnx::TensorProto::INT64, DataType::Int(64)},    {onnx::TensorProto::UINT8, DataType::UInt(8)},
    {onnx::TensorProto::UINT16, DataType::UInt(16)},  {onnx::TensorProto::UINT32, DataType::UInt(32)},
    {onnx::TensorProto::UINT64, DataType::UInt(64)},  {onnx::TensorProto::BOOL, DataType::Bool()}};

}  // namespace

DataType onnx_dtype(int t, const std::string& where) {
  for (const ElementType& e : kElementTypes)
    if (e.onnx == t) return e.loom;
  std::string name = onnx::TensorProto::DataType_IsValid(t)
                         ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t))
                         : "unknown";
  for (char& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  LOOM_THROW(ModelError, where, ": ONNX element type ", name, " (", t,
             ") is not supported (float32/16/64, int8/16/32/64, uint8/16/32/64, bool)");
}

int onnx_type(DataType t, const std::string& where) {
  for (const ElementType& e : kElementTypes)
    if (e.loom == t) return e.onnx;
  LOOM_THROW(ModelError, where, " is ", t.str(), ", which ONNX has no element type for");
}

int64_t numel(const std::vector<int64_t>& shape, const std::string& where) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) LOOM_THROW(ModelError, where, ": negative dimension in ", shape_str(shape));
    // Each dimension too (a zero elsewhere would hide 2^62 from the product, not from strides).
    if (d > kMaxElements) LOOM_THROW(ModelError, where, ": shape ", shape_str(shape), " has a dimension above 2^40");
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxElements)
      LOOM_THROW(ModelError, where, ": shape ", shape_str(shape), " has more than 2^40 elements");
  }
  return n;
}

NDArray folded_const(const std::vector<int64_t>& shape, DataType dtype, const std::string& where) {
  uint64_t bytes = uint64_t(numel(shape, where)) * dtype.bytes();
  if (bytes > kMaxFoldedBytes)
    LOOM_THROW(ModelError, where, ": computing ", dtype.str(), shape_str(shape), " at import would take ", bytes,
               " bytes (the limit is ", kMaxFoldedBytes, ")");
  return NDArray::empty(shape, dtype);
}

NDArray tensor_value(const onnx::TensorProto& t, const std::string& base_dir, const std::string& where) {
  DataType dt = onnx_dtype(t.data_type(), where);
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  int64_t n = numel(shape, where);
  uint64_t nbytes = static_cast<uint64_t>(n) * dt.bytes();
  if (nbytes > (uint64_t(1) << 36)) LOOM_THROW(ModelError, where, ": tensor of ", nbytes, " bytes is too large");
  auto expect = [&](int64_t have) {
    if (have != n) LOOM_THROW(ModelError, where, ": tensor ", shape_str(shape), " holds ", have, " values, needs ", n);
  };
  // The data must be there before the tensor is allocated (the dims alone could ask for 64 GiB).
  if (t.data_location() != onnx::TensorProto::EXTERNAL && !t.has_raw_data()) {
    switch (t.data_type()) {
      case onnx::TensorProto::FLOAT:
        expect(t.float_data_size());
        break;
      case onnx::TensorProto::DOUBLE:
        expect(t.double_data_size());
        break;
      case onnx::TensorProto::INT64:
        expect(t.int64_data_size());
        break;
      case onnx::TensorProto::UINT32:
      case onnx::TensorProto::UINT64:
        expect(t.uint64_data_size());
        break;
      default:
        expect(t.int32_data_size());
        break;
    }
  } else if (t.has_raw_data() && t.raw_data().size() != nbytes) {
    LOOM_THROW(ModelError, where, ": raw data has ", t.raw_data().size(), " bytes, tensor ", dt.str(), shape_str(shape),
               " needs ", nbytes);
  }
  NDArray a = NDArray::empty(shape, dt);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0, length = nbytes;
    for (auto& kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoull(kv.value());
      else if (kv.key() == "length")
        length = std::stoull(kv.value());
    }
    if (location.empty() || location.find("..") != std::string::npos || location[0] == '/')
      LOOM_THROW(ModelError, where, ": external data location '", location, "' must be a file next to the model");
    if (length != nbytes)
      LOOM_THROW(ModelError, where, ": external data length ", length, " differs from the tensor's ", nbytes, " bytes");
    std::string path = (std::filesystem::path(base_dir) / location).string();
    std::ifstream f(path, std::ios::binary);
    if (!f) LOOM_THROW(ModelError, where, ": cannot open external data file '", path, "'");
    f.seekg(static_cast<std::streamoff>(offset));
    f.read(static_cast<char*>(a.raw_data()), static_cast<std::streamsize>(nbytes));
    if (!f || static_cast<uint64_t>(f.gcount()) != nbytes)
      LOOM_THROW(ModelError, where, ": external data file '", path, "' is shorter than offset ", offset, " + ", nbytes,
                 " bytes");
    return a;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != nbytes)
      LOOM_THROW(ModelError, where, ": raw data has ", t.raw_data().size(), " bytes, tensor ", dt.str(),
                 shape_str(shape), " needs ", nbytes);
    if (nbytes) std::memcpy(a.raw_data(), t.raw_data().data(), nbytes);
    return a;
  }
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      expect(t.float_data_size());
      std::copy(t.float_data().begin(), t.float_data().end(), a.data<float>());
      break;
    case onnx::TensorProto::DOUBLE:
      expect(t.double_data_size());
      std::copy(t.double_data().begin(), t.double_data().end(), a.data<double>());
      break;
    case onnx::TensorProto::INT64:
      expect(t.int64_data_size());
      std::copy(t.int64_data().begin(), t.int64_data().end(), a.data<int64_t>());
      break;
    case onnx::TensorProto::INT32:
      expect(t.int32_data_size());
      std::copy(t.int32_data().begin(), t.int32_data().end(), a.data<int32_t>());
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      expect(t.uint64_data_size());
      for (int64_t i = 0; i < n; ++i) {
        uint64_t v = t.uint64_data(static_cast<int>(i));
        std::memcpy(static_cast<char*>(a.raw_data()) + i * dt.bytes(), &v, dt.bytes());  // little-endian
      }
      break;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::FLOAT16:
      expect(t.int32_data_size());
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = t.int32_data(static_cast<int>(i));
        std::memcpy(static_cast<char*>(a.raw_data()) + i * dt.bytes(), &v, dt.bytes());
      }
      break;
    default:
      LOOM_THROW(ModelError, where, ": unsupported tensor storage");
  }
  return a;
}

std::vector<int64_t> int_values(const NDArray& a) {
  std::vector<int64_t> v(static_cast<size_t>(a.numel()));
  if (a.dtype() == DataType::Int(64)) {
    if (!v.empty()) std::memcpy(v.data(), a.raw_data(), v.size() * 8);
  } else {
    for (size_t i = 0; i < v.size(); ++i) {
      double d = a.get_as_double(static_cast<int64_t>(i));
      // Only integral values in int64's range convert (NaN or 1e30 would be undefined behaviour).
      if (!(d >= -9.2e18 && d <= 9.2e18) || d != std::floor(d))
        LOOM_THROW(ModelError, "constant ", a.describe(), " holds ", d, " where an integer is needed");
      v[i] = static_cast<int64_t>(d);
    }
  }
  return v;
}

NDArray int64_array(const std::vector<int64_t>& values, const std::vector<int64_t>& shape) {
  NDArray a = folded_const(shape, DataType::Int(64));
  if (!values.empty()) std::memcpy(a.raw_data(), values.data(), values.size() * 8);
  return a;
}

namespace {
std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}
void copy_elem(const NDArray& from, int64_t i, NDArray& to, int64_t j) {
  int b = from.dtype().bytes();
  std::memcpy(static_cast<char*>(to.raw_data()) + j * b, static_cast<const char*>(from.raw_data()) + i * b, b);
}
}  // namespace

NDArray transpose_const(const NDArray& a, const std::vector<int64_t>& perm) {
  std::vector<bool> seen(a.shape().size(), false);
  if (perm.size() != seen.size())
    LOOM_THROW(ModelError, "Transpose perm ", shape_str(perm), " is not a permutation of the ", seen.size(), " axes");
  for (int64_t p : perm) {
    if (perm.size() != seen.size() || p < 0 || p >= int64_t(seen.size()) || seen[size_t(p)])
      LOOM_THROW(ModelError, "Transpose perm ", shape_str(perm), " is not a permutation of the ", seen.size(), " axes");
    seen[size_t(p)] = true;
  }
  return graph::transpose_constant(a, perm);
}

NDArray slice_const(const NDArray& a, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                    const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  size_t r = a.shape().size();
  std::vector<int64_t> begin(r, 0), step(r, 1), count = a.shape();
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t ax = axes[k] < 0 ? axes[k] + static_cast<int64_t>(r) : axes[k];
    if (ax < 0 || ax >= static_cast<int64_t>(r)) LOOM_THROW(ModelError, "Slice axis ", axes[k], " out of range");
    int64_t dim = a.shape()[ax], st = steps[k];
    if (st == 0) LOOM_THROW(ModelError, "Slice step 0");
    // A step beyond the dimension takes one element, as that step does; clamping keeps the
    // arithmetic below from overflowing for steps near +-2^63.
    st = std::clamp<int64_t>(st, -(dim + 1), dim + 1);
    int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + dim : ends[k];
    // Clamp as ONNX specifies: [0, dim] for positive steps, [-1, dim - 1] for negative ones.
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count[ax] = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<int64_t>(s, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count[ax] = s > e ? (s - e - st - 1) / -st : 0;
    }
    begin[ax] = s;
    step[ax] = st;
  }
  NDArray out = NDArray::empty(count, a.dtype());
  auto in_strides = strides_of(a.shape());
  std::vector<int64_t> idx(r, 0);
  for (int64_t j = 0; j < out.numel(); ++j) {
    int64_t i = 0;
    for (size_t d = 0; d < r; ++d) i += (begin[d] + idx[d] * step[d]) * in_strides[d];
    copy_elem(a, i, out, j);
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < count[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

NDArray concat_const(const std::vector<NDArray>& parts, int64_t axis) {
  std::vector<int64_t> shape = parts[0].shape();
  int64_t r = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) LOOM_THROW(ModelError, "Concat axis out of range");
  shape[axis] = 0;
  for (auto& p : parts) {
    if (p.shape().size() != static_cast<size_t>(r) || p.dtype() != parts[0].dtype())
      LOOM_THROW(ModelError, "Concat of mismatched constants");
    shape[axis] += p.shape()[axis];
  }
  NDArray out = folded_const(shape, parts[0].dtype(), "Concat");
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  int64_t j = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (auto& p : parts) {
      int64_t chunk = p.numel() / std::max<int64_t>(outer, 1);
      for (int64_t i = 0; i < chunk; ++i) copy_elem(p, o * chunk + i, out, j++);
    }
  return out;
}

NDArray gather_const(const NDArray& data, const NDArray& indices, int64_t axis) {
  int64_t r = data.ndim();
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) LOOM_THROW(ModelError, "Gather axis out of range");
  std::vector<int64_t> idx = int_values(indices);
  std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  NDArray out = folded_const(shape, data.dtype(), "Gather");
  int64_t outer = 1, inner = 1, dim = data.shape()[axis];
  for (int64_t d = 0; d < axis; ++d) outer *= data.shape()[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= data.shape()[d];
  int64_t j = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k : idx) {
      int64_t kk = k < 0 ? k + dim : k;
      if (kk < 0 || kk >= dim) LOOM_THROW(ModelError, "Gather index ", k, " out of range for dimension ", dim);
      for (int64_t i = 0; i < inner; ++i) copy_elem(data, (o * dim + kk) * inner + i, out, j++);
    }
  return out;
}

NDArray reshape_const(const NDArray& a, const std::vector<int64_t>& shape) {
  if (numel(shape) != a.numel()) LOOM_THROW(ModelError, "cannot reshape ", a.describe(), " to ", shape_str(shape));
  NDArray out = NDArray::empty(shape, a.dtype());
  if (a.nbytes()) std::memcpy(out.raw_data(), a.raw_data(), a.nbytes());
  return out;
}

}  // namespace loom::frontend::onnx_detail
