// loom.load, loom.compile and loom.Model: a compiled model run on numpy arrays. The GIL is
// released while Loom compiles, loads and runs.
#include <pybind11/stl.h>

#include <filesystem>
#include <optional>

#include "bindings.h"
#include "loom/frontend/load.h"
#include "loom/graph/build.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/model_file.h"

namespace loom::python {

namespace {

// A model ready to run, and its file when it was compiled in this process (for save()).
struct Model {
  runtime::GraphExecutor executor;
  std::optional<runtime::ModelFile> file;
};

py::list specs(const runtime::GraphExecutor& e, bool inputs) {
  py::list out;
  const size_t n = inputs ? e.num_inputs() : e.num_outputs();
  for (size_t i = 0; i < n; ++i) {
    const runtime::ArgSpec& s = inputs ? e.input_spec(i) : e.output_spec(i);
    py::dict d;
    d["name"] = s.name;
    d["shape"] = py::tuple(py::cast(s.shape));
    d["dtype"] = numpy_dtype_name(s.dtype);
    out.append(d);
  }
  return out;
}

Model load(const std::string& path) {
  py::gil_scoped_release released;
  return Model{runtime::GraphExecutor::load(path), std::nullopt};
}

Model compile(const std::string& model, const std::string& target, int64_t batch, int64_t image) {
  if (target != "cpu")
    LOOM_THROW(ConfigError, "loom.compile: target '", target,
               "' is not one this function compiles for yet (cpu); `loom compile --target` has the others");
  if (batch < 1 || image < 1) LOOM_THROW(ConfigError, "loom.compile: batch and image must be at least 1");
  py::gil_scoped_release released;
  graph::BuildResult r = graph::build(frontend::load_model(model, batch, image));
  const std::string origin = std::filesystem::path(model).filename().string();  // "resnet18" for a built-in one
  runtime::GraphExecutor e = runtime::GraphExecutor::from_model_file(r.file, origin);
  return Model{std::move(e), std::move(r.file)};
}

py::list run(Model& m, const py::args& args) {
  std::vector<NDArray> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string what =
        "input " + std::to_string(i) + (i < m.executor.num_inputs() ? " '" + m.executor.input_spec(i).name + "'" : "");
    if (!py::isinstance<py::array>(args[i]))
      LOOM_THROW(TypeError, "Model.run: ", what, " is a ", py::type::of(args[i]).attr("__name__").cast<std::string>(),
                 ", not a numpy array");
    inputs.push_back(to_ndarray(args[i].cast<py::array>(), "Model.run: " + what));
  }
  std::vector<NDArray> outputs;
  {
    py::gil_scoped_release released;
    outputs = m.executor.run(inputs);
  }
  py::list out;
  for (auto& o : outputs) out.append(to_numpy(o));
  return out;
}

void save(const Model& m, const std::string& path) {
  if (!m.file)
    LOOM_THROW(RuntimeError,
               "Model.save: this model was loaded from a file, not compiled here; copy that file instead");
  py::gil_scoped_release released;
  runtime::save_model_file(path, *m.file);
}

}  // namespace

void register_models(py::module_& m) {
  py::class_<Model>(m, "Model", "A compiled model: run it on numpy arrays.")
      .def_property_readonly(
          "name", [](const Model& x) { return x.executor.model_name(); },
          "The model's name (the built-in model's, or the file's).")
      .def_property_readonly(
          "target", [](const Model& x) { return x.executor.target(); },
          "The CPU (or device) the kernels were compiled for.")
      .def_property_readonly(
          "inputs", [](const Model& x) { return specs(x.executor, true); },
          "The inputs: a list of {'name', 'shape', 'dtype'}.")
      .def_property_readonly(
          "outputs", [](const Model& x) { return specs(x.executor, false); },
          "The outputs: a list of {'name', 'shape', 'dtype'}.")
      .def("run", &run,
           "run(*inputs) -> list of numpy arrays: the model on one numpy array per input, of the\n"
           "input's dtype and shape (loom.TypeError / loom.ShapeError name the input otherwise).")
      .def("save", &save, py::arg("path"), "Writes the compiled model to a .loom file (loom.load reads it).");
  m.def("load", &load, py::arg("path"), "Loads a compiled model (.loom), as `loom run` does.");
  m.def("compile", &compile, py::arg("model"), py::kw_only(), py::arg("target") = "cpu", py::arg("batch") = 1,
        py::arg("image") = 224,
        "compile(model, *, target='cpu', batch=1, image=224) -> Model\n"
        "Compiles an ONNX file or a built-in model (resnet18, resnet50, mobilenet_v2, mlp; batch and\n"
        "image size for those) for this machine's CPU, as `loom compile` does.");
}

}  // namespace loom::python
