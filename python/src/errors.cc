// Loom's typed C++ errors as Python exceptions: loom.Error (a RuntimeError) and one subclass per
// kind, raised with the same message.
#include "bindings.h"
#include "loom/runtime/error.h"
#include "loom/runtime/interrupt.h"

namespace loom::python {

template <typename E>
static void register_kind(py::module_& m, const char* name, const py::handle& base) {
  py::register_exception<E>(m, name, base);
}

void register_errors(py::module_& m) {
  // pybind11 tries the translators newest first: the base class goes first, so that each kind
  // below is raised as itself.
  auto base = py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  register_kind<ShapeError>(m, "ShapeError", base);
  register_kind<TypeError>(m, "TypeError", base);
  register_kind<ScheduleError>(m, "ScheduleError", base);
  register_kind<LoweringError>(m, "LoweringError", base);
  register_kind<CodegenError>(m, "CodegenError", base);
  register_kind<RuntimeError>(m, "RuntimeError", base);
  register_kind<ConfigError>(m, "ConfigError", base);
  register_kind<IsaError>(m, "IsaError", base);
  register_kind<ModelError>(m, "ModelError", base);
  register_kind<DeviceError>(m, "DeviceError", base);
  register_kind<InternalError>(m, "InternalError", base);
  // Work stopped by Ctrl-C is Python's KeyboardInterrupt, with Loom's message (registered last, so
  // it is tried before loom.Error's translator, which would take it as one of its kinds).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Interrupted& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    }
  });
}

}  // namespace loom::python
