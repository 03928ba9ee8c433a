// numpy arrays to and from NDArrays (copies; zero-copy DLPack exchange is not here yet).
#include <cstring>

#include "bindings.h"
#include "loom/runtime/error.h"

namespace loom::python {

namespace {

DataType dtype_of(const py::dtype& d, const std::string& what) {
  const char kind = d.kind();
  const int bits = int(d.itemsize()) * 8;
  if (kind == 'f' && (bits == 16 || bits == 32 || bits == 64)) return DataType::Float(bits);
  if (kind == 'i' && (bits == 8 || bits == 16 || bits == 32 || bits == 64)) return DataType::Int(bits);
  if (kind == 'u' && (bits == 8 || bits == 16 || bits == 32 || bits == 64)) return DataType::UInt(bits);
  if (kind == 'b' && bits == 8) return DataType::Bool();
  LOOM_THROW(TypeError, what, ": numpy dtype ", d.attr("name").cast<std::string>(), " has no Loom tensor type");
}

}  // namespace

std::string numpy_dtype_name(DataType t) {
  if (t.is_bool()) return "bool";
  return (t.is_float() ? "float" : t.is_int() ? "int" : "uint") + std::to_string(t.bits());
}

NDArray to_ndarray(const py::array& a, const std::string& what) {
  const DataType t = dtype_of(a.dtype(), what);
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  NDArray out = NDArray::empty(shape, t);
  // A C-contiguous copy of whatever layout the array has (strided views, Fortran order).
  py::array c = py::array::ensure(a, py::array::c_style);
  if (!c) LOOM_THROW(TypeError, what, ": cannot read the array as a C-contiguous numpy array");
  if (out.nbytes()) std::memcpy(out.raw_data(), c.data(), out.nbytes());
  return out;
}

py::array to_numpy(const NDArray& a) {
  py::array out(py::dtype(numpy_dtype_name(a.dtype())), a.shape());
  if (a.nbytes()) std::memcpy(out.mutable_data(), a.raw_data(), a.nbytes());
  return out;
}

}  // namespace loom::python
