// numpy arrays to and from NDArrays: copies for models' inputs and outputs, views for loom.empty
// (64-byte aligned, what compiled functions read without a copy), and DLPack through numpy.
#include <pybind11/stl.h>

#include <cstring>

#include "bindings.h"
#include "loom/runtime/error.h"

namespace loom::python {

namespace {

DataType dtype_of(const py::dtype& d, const std::string& what) {
  if (d.byteorder() == '>')
    LOOM_THROW(TypeError, what, ": numpy dtype ", py::str(py::handle(d)).cast<std::string>(),
               " is big-endian; Loom's tensors are in the machine's byte order (astype('=...') converts)");
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

DataType tensor_dtype(const std::string& name, const std::string& what) {
  DataType t;
  try {
    t = DataType::parse(name);
  } catch (const Error&) {
    LOOM_THROW(TypeError, what, ": dtype '", name, "' is not a type name (float32, int8, int32, ...)");
  }
  if (!is_supported_tensor_type(t) || t.str() != name)
    LOOM_THROW(TypeError, what, ": dtype '", name, "' is not a type Loom has tensors of (float32, float64, float16, ",
               "int8, int16, int32, int64, uint8, bool, ...)");
  return t;
}

py::array numpy_view(NDArray a) {
  auto* owner = new NDArray(std::move(a));
  py::capsule base(owner, [](void* p) { delete static_cast<NDArray*>(p); });
  return py::array(py::dtype(numpy_dtype_name(owner->dtype())), owner->shape(), owner->raw_data(), base);
}

py::dict arg_spec_record(const runtime::ArgSpec& s) {
  py::dict d;
  d["name"] = s.name;
  d["shape"] = py::tuple(py::cast(s.shape));  // with shape variables: the largest shape
  d["dtype"] = numpy_dtype_name(s.dtype);
  if (!s.is_static()) {  // the dimensions as text ("seq", "past + seq"), constants as numbers
    py::list dims;
    for (const runtime::DimExpr& e : s.dims) dims.append(e.is_constant() ? py::cast(e.offset) : py::cast(e.str()));
    d["dims"] = py::tuple(dims);
  }
  return d;
}

std::string type_name(const py::handle& h) { return py::type::of(h).attr("__name__").cast<std::string>(); }

std::string fspath(const py::handle& path) {
  return py::str(py::module_::import("os").attr("fspath")(path)).cast<std::string>();
}

void register_arrays(py::module_& m) {
  m.def(
      "empty",
      [](const std::vector<int64_t>& shape, const std::string& dtype) {
        return numpy_view(NDArray::empty(shape, tensor_dtype(dtype, "loom.empty")));
      },
      py::arg("shape"), py::arg("dtype") = "float32",
      "empty(shape, dtype='float32') -> numpy array: uninitialized, 64-byte aligned, so compiled\n"
      "functions (loom.build) read and write it in place.");
  m.def(
      "from_dlpack",
      [](const py::object& obj) {
        if (!py::hasattr(obj, "__dlpack__"))
          LOOM_THROW(TypeError, "from_dlpack: a ", type_name(obj), " has no __dlpack__");
        return py::module_::import("numpy").attr("from_dlpack")(obj);
      },
      py::arg("tensor"),
      "from_dlpack(tensor) -> numpy array over the same memory: any CPU tensor with __dlpack__\n"
      "(torch, numpy, ...); the result's own __dlpack__ hands it on (torch.from_dlpack).");
}

CopiedCall::CopiedCall(const std::string& fn, const std::vector<runtime::ArgSpec>& specs,
                       const std::vector<bool>& is_output, const py::args& args)
    : is_output_(is_output), arrays_(specs.size()), given_(specs.size()) {
  const size_t n = specs.size();
  for (bool o : is_output_) outputs_ += o;
  allocate_ = args.size() == n - outputs_ && outputs_ > 0;
  if (args.size() != n && !allocate_)
    LOOM_THROW(TypeError, fn, ": ", args.size(), " arguments; it takes ", n, " (inputs then outputs) or the ",
               n - outputs_, " inputs alone (its outputs are returned)");
  for (size_t i = 0, next = 0; i < n; ++i) {
    const runtime::ArgSpec& spec = specs[i];
    const std::string what = fn + ": argument " + std::to_string(i) + " '" + spec.name + "'";
    if (allocate_ && is_output_[i]) {
      arrays_[i] = NDArray::empty(spec.shape, spec.dtype);
      continue;
    }
    py::object a = args[next++];
    if (!py::isinstance<py::array>(a)) {
      if (!py::hasattr(a, "__array__") || py::isinstance<py::str>(a))
        LOOM_THROW(TypeError, what, " is a ", type_name(a), ", not an array");
      a = py::module_::import("numpy").attr("asarray")(a);
    }
    py::array arr = py::reinterpret_borrow<py::array>(a);
    if (is_output_[i] && !arr.writeable()) LOOM_THROW(TypeError, what, " is an output and read-only");
    arrays_[i] = to_ndarray(arr, what);
    if (arrays_[i].dtype() != spec.dtype)
      LOOM_THROW(TypeError, what, " is ", arrays_[i].describe(), ", expects ", spec.str());
    if (arrays_[i].shape() != spec.shape)
      LOOM_THROW(ShapeError, what, " is ", arrays_[i].describe(), ", expects ", spec.str());
    given_[i] = arr;
  }
}

py::object CopiedCall::finish() {
  py::object copyto = py::module_::import("numpy").attr("copyto");
  py::tuple out(allocate_ ? outputs_ : 0);
  for (size_t i = 0, k = 0; i < arrays_.size(); ++i) {
    if (!is_output_[i]) continue;
    if (allocate_)
      out[k++] = numpy_view(arrays_[i]);
    else
      copyto(given_[i], numpy_view(arrays_[i]));
  }
  if (!allocate_) return py::none();
  if (outputs_ == 1) return out[0];
  return out;
}

}  // namespace loom::python
