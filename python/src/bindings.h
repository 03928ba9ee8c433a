// The pieces of the `loom` Python extension (python/src), one file each; module.cc calls them.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "loom/runtime/ndarray.h"

namespace loom::python {

namespace py = pybind11;

// loom.Error and a subclass per loom::Error kind (loom.ModelError, loom.ConfigError, ...), each
// raised with the C++ message.
void register_errors(py::module_& m);
// loom.load, loom.compile and loom.Model.
void register_models(py::module_& m);
// loom.Graph, loom.operators and from_onnx (loom.frontend's).
void register_graphs(py::module_& m);

// A numpy array as an NDArray of the same type and shape (a copy); TypeError naming `what` for a
// type Loom has no tensors of.
NDArray to_ndarray(const py::array& a, const std::string& what);
// An NDArray as a new numpy array (a copy).
py::array to_numpy(const NDArray& a);
// numpy's name of a Loom element type ("float32", "int8", "bool").
std::string numpy_dtype_name(DataType t);

}  // namespace loom::python
