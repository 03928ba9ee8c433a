// PYBIND11_MODULE for `loom._loom`, the compiled half of the `loom` package (python/loom).
#include "bindings.h"

#include "loom/sim/backends.h"

PYBIND11_MODULE(_loom, m) {
  m.doc() = "Loom's C++ core: models compiled and run from Python (see docs/python.md)";
  // Models with accelerator kernels run on the simulators without anything else to call.
  loom::sim::register_backends();
  loom::python::register_errors(m);
  loom::python::register_arrays(m);
  loom::python::register_accel(m);  // before models: loom.compile takes a Config
  loom::python::register_te(m);
  loom::python::register_schedules(m);  // after te: its tensors and axes
  loom::python::register_devices(m);    // before the accelerator's functions: they run on a Device
  loom::python::register_accel_functions(m);
  loom::python::register_cuda_functions(m);
#ifdef LOOM_PYTHON_WITH_TUNE
  loom::python::register_tune(m);
#endif
#ifdef LOOM_PYTHON_WITH_DSE
  loom::python::register_dse(m);
  loom::python::register_regress(m);
#endif
  loom::python::register_graphs(m);  // before models: loom.compile takes a Graph
  loom::python::register_models(m);
  loom::python::register_sessions(m);
}
