// loom.OnnxSession: an ONNX model run with every input given at run time, compiled per value of
// the inputs an operator reads at compile time (frontend/session.h). The GIL is released while it
// compiles and runs.
#include <pybind11/stl.h>

#include <memory>
#include <mutex>

#include "bindings.h"
#include "loom/frontend/session.h"

namespace loom::python {

namespace {

struct Session {
  std::unique_ptr<frontend::OnnxSession> session;
  std::shared_ptr<std::mutex> busy = std::make_shared<std::mutex>();  // runs from several threads take turns
};

Session make(const py::object& path, size_t max_compiled, const py::dict& bind) {
  frontend::OnnxSessionOptions o;
  o.max_compiled = max_compiled;
  for (auto [name, value] : bind) {
    const std::string input = py::str(name);
    o.import.input_values[input] = input_arrays(py::make_tuple(value), {input}, "loom.OnnxSession: bind").at(0);
  }
  const std::string file = fspath(path);
  py::gil_scoped_release released;
  return Session{std::make_unique<frontend::OnnxSession>(file, std::move(o))};
}

// What `read` returns, read between runs (a run in another thread changes the session's state).
template <typename Read>
auto locked(const Session& s, Read&& read) {
  py::gil_scoped_release released;
  std::lock_guard<std::mutex> lock(*s.busy);
  return read();
}

py::list run(Session& s, const py::args& args) {
  std::vector<NDArray> inputs = input_arrays(args, s.session->input_names(), "OnnxSession.run");
  std::vector<NDArray> outputs;
  {
    py::gil_scoped_release released;
    std::lock_guard<std::mutex> lock(*s.busy);
    outputs = s.session->run(inputs);
  }
  py::list out;
  for (auto& o : outputs) out.append(numpy_view(std::move(o)));
  return out;
}

}  // namespace

void register_sessions(py::module_& m) {
  py::class_<Session>(m, "OnnxSession",
                      "An ONNX model run with every input given at run time. One whose shapes depend on no\n"
                      "input's value is compiled once, when the session is made; one where an operator reads\n"
                      "an input's value at compile time (Reshape's shape, Resize's scales, a reduction's axes,\n"
                      "TopK's k) is compiled per distinct value of those inputs (value_inputs) at the run that\n"
                      "first gives it, and kept (max_compiled of them, the least recently used dropped).\n"
                      "bind: {'input': array} fixed at compile time for every run (`loom compile --bind`).")
      .def(py::init(&make), py::arg("path"), py::kw_only(), py::arg("max_compiled") = 8, py::arg("bind") = py::dict())
      .def_property_readonly(
          "input_names", [](const Session& s) { return s.session->input_names(); },
          "The inputs run takes, in the model's order.")
      .def_property_readonly(
          "value_inputs", [](const Session& s) { return locked(s, [&] { return s.session->value_inputs(); }); },
          "The inputs the model is compiled per value of (a run may find more).")
      .def_property_readonly(
          "compilations", [](const Session& s) { return locked(s, [&] { return s.session->compilations(); }); },
          "Models compiled so far.")
      .def_property_readonly(
          "cached", [](const Session& s) { return locked(s, [&] { return s.session->cached(); }); },
          "Compiled models kept.")
      .def("run", &run,
           "run(*inputs) -> list of numpy arrays: one array per input (input_names' order); compiles\n"
           "first for values of value_inputs not seen before.");
}

}  // namespace loom::python
