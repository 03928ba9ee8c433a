// The pieces of the `loom` Python extension (python/src), one file each; module.cc calls them.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/graph/graph.h"
#include "loom/runtime/module.h"
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
// loom.te (te.cc), and schedules, lowering and building (schedules.cc).
void register_te(py::module_& m);
void register_schedules(py::module_& m);
// loom.accel: Config and its area model (accel.cc); devices, programs, their records and the
// performance model (devices.cc; built with the simulators); functions built for the accelerator
// (accel_functions.cc).
void register_accel(py::module_& m);
void register_devices(py::module_& m);
void register_accel_functions(py::module_& m);
// loom.CudaFunction (cuda_functions.cc).
void register_cuda_functions(py::module_& m);
// loom.dse.sweep (dse.cc; built when the DSE library is).
void register_dse(py::module_& m);
// loom.regress's compiled half (regress.cc; built when the regression library is).
void register_regress(py::module_& m);
// loom.tune (tune.cc; built when the tuner is).
void register_tune(py::module_& m);
// loom.empty and loom.from_dlpack (arrays.cc).
void register_arrays(py::module_& m);

// The positional arguments of a run as NDArrays (numpy arrays, or what numpy reads, such as CPU
// torch tensors); a TypeError naming `fn` and the input (from `names`) otherwise.
std::vector<NDArray> input_arrays(const py::args& args, const std::vector<std::string>& names, const std::string& fn);
// loom.OnnxSession (sessions.cc).
void register_sessions(py::module_& m);
// A numpy array as an NDArray of the same type and shape (a copy); TypeError naming `what` for a
// type Loom has no tensors of.
NDArray to_ndarray(const py::array& a, const std::string& what);
// numpy's name of a Loom element type ("float32", "int8", "bool").
std::string numpy_dtype_name(DataType t);
// The tensor element type named `name` ("float32", "int8", ...); TypeError naming `what` for a
// name that is not one, or a type Loom has no tensors of.
DataType tensor_dtype(const std::string& name, const std::string& what);
// An NDArray as a numpy array over the same memory (kept alive by the array).
py::array numpy_view(NDArray a);
// A call of a function that runs on copies of its arguments (built for the accelerator or a GPU):
// `args` are the inputs then the outputs, or the inputs alone (the outputs are then allocated and
// returned). Host copies of each argument, checked against its spec (TypeError / ShapeError
// naming it), and back to Python after the run.
class CopiedCall {
 public:
  CopiedCall(const std::string& fn, const std::vector<runtime::ArgSpec>& specs, const std::vector<bool>& is_output,
             const py::args& args);
  std::vector<NDArray>& arrays() { return arrays_; }
  // The outputs written into the arrays given, or returned (one array, or a tuple of them).
  py::object finish();

 private:
  std::vector<bool> is_output_;
  std::vector<NDArray> arrays_;
  std::vector<py::object> given_;
  bool allocate_ = false;
  size_t outputs_ = 0;
};
// {'name', 'shape', 'dtype'}: a model's input or output, a compiled function's argument.
py::dict arg_spec_record(const runtime::ArgSpec& s);
// The name of a Python object's type, for errors ("list", "ndarray").
std::string type_name(const py::handle& h);
// A str or os.PathLike as a path (os.fspath).
std::string fspath(const py::handle& path);
// The model a call was given: a loom.Graph (copied), an ONNX file's path or a built-in model's
// name (loaded at `batch` and `image`); `origin` receives its name; errors name `what`.
graph::Graph model_graph(const py::object& model, int64_t batch, int64_t image, std::string& origin,
                         const std::string& what);
// An accelerator config argument: a loom.accel.Config, a config file's path, or None (VTA's
// default), validated; TypeError naming `what` for anything else.
accel::AccelConfig config_arg(const py::object& config, const std::string& what);

}  // namespace loom::python
