// loom.load, loom.compile and loom.Model: a compiled model run on numpy arrays, its per-kernel
// profile as records. loom.compile takes a file, a built-in model's name or a loom.Graph, for the
// CPU, the accelerator or a GPU, in float or int8. The GIL is released while Loom compiles, loads
// and runs.
#include <pybind11/stl.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "bindings.h"
#include "interruptible.h"
#include "loom/accel/config.h"
#include "loom/frontend/load.h"
#include "loom/graph/build.h"
#include "loom/graph/quantize.h"
#include "loom/runtime/error.h"
#include "loom/runtime/generate.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/interrupt.h"
#include "loom/runtime/model_file.h"
#ifdef LOOM_PYTHON_WITH_TUNE
#include "loom/tune/apply_log.h"
#endif

namespace loom::python {

namespace {

// A model ready to run, and its file when it was compiled in this process (for save()).
struct Model {
  runtime::GraphExecutor executor;
  std::optional<runtime::ModelFile> file;
  std::string quantization_json;      // the accuracy report of a model quantized here
  py::object tuning = py::none();     // {'cpu': {'looked_up', 'found'}, 'accel': ...} when built with a tuning log
  std::string path, origin, backend;  // where it was loaded from (no file), its name, its accelerator backend
  bool stale = false;                 // a run was interrupted: its devices are mid-run, reloaded before the next
  // Runs of one Model from several Python threads take turns (the executor's buffers and devices are
  // one set); taken with the GIL released.
  std::shared_ptr<std::mutex> busy = std::make_shared<std::mutex>();
  // A decoder's generation state (made by the first generate: it carries the caches).
  std::shared_ptr<runtime::Decoder> decoder;
};

py::list specs(const runtime::GraphExecutor& e, bool inputs) {
  py::list out;
  const size_t n = inputs ? e.num_inputs() : e.num_outputs();
  for (size_t i = 0; i < n; ++i) {
    out.append(arg_spec_record(inputs ? e.input_spec(i) : e.output_spec(i)));
  }
  return out;
}

runtime::ExecutorOptions executor_options(const std::string& backend) {
  runtime::ExecutorOptions o;
  o.accel_backend = backend;
  return o;
}

Model load(const std::string& path, const std::string& backend) {
  py::gil_scoped_release released;
  return Model{
      runtime::GraphExecutor::load(path, executor_options(backend)), std::nullopt, {}, py::none(), path, {}, backend};
}

// Runs `work` on the model (run_interruptible): an interrupted run leaves its devices mid-run, so
// they are reloaded before the next.
template <typename Work>
auto interruptible(Model& m, Work&& work) {
  return run_interruptible(
      *m.busy,
      [&] {
        if (m.stale) {  // the last run was interrupted: fresh devices
          m.executor = m.file ? runtime::GraphExecutor::from_model_file(*m.file, m.origin, executor_options(m.backend))
                              : runtime::GraphExecutor::load(m.path, executor_options(m.backend));
          m.stale = false;
          m.decoder.reset();  // its carried buffers were the old executor's
        }
        return work();
      },
      [&] { m.stale = true; });
}

// Calibration inputs from Python: a count of random inputs or a folder of .npy files (as
// `loom compile --calibrate` reads them, with held-out inputs "auto"), or a list whose entries
// are an array (single-input models) or a tuple/list of arrays (one per input; nothing held out).
frontend::CalibrationSets calibration(const py::object& spec, const graph::Graph& g) {
  if (py::isinstance<py::int_>(spec) || py::isinstance<py::str>(spec) || py::hasattr(spec, "__fspath__")) {
    const std::string s = py::isinstance<py::int_>(spec) ? std::to_string(spec.cast<int64_t>()) : fspath(spec);
    frontend::check_calibration_options(s, "auto");
    py::gil_scoped_release released;
    return frontend::calibration_sets(s, "auto", g);
  }
  if (!py::isinstance<py::list>(spec) && !py::isinstance<py::tuple>(spec))
    LOOM_THROW(TypeError, "loom.compile: calibrate is a ", type_name(spec),
               "; it takes a number of random inputs, a folder of .npy files or a list of inputs");
  frontend::CalibrationSets sets;
  size_t k = 0;
  for (auto entry : spec) {
    const std::string what = "loom.compile: calibrate[" + std::to_string(k++) + "]";
    std::vector<NDArray> inputs;
    if (py::isinstance<py::array>(entry)) {
      inputs.push_back(to_ndarray(entry.cast<py::array>(), what));
    } else if (py::isinstance<py::list>(entry) || py::isinstance<py::tuple>(entry)) {
      for (auto a : entry) {
        if (!py::isinstance<py::array>(a))
          LOOM_THROW(TypeError, what, ": holds a ", type_name(a), ", not a numpy array");
        inputs.push_back(to_ndarray(a.cast<py::array>(), what));
      }
    } else {
      LOOM_THROW(TypeError, what, " is a ", type_name(entry),
                 "; each entry is a numpy array or a tuple of them (one per input)");
    }
    if (inputs.size() != g.inputs.size())
      LOOM_THROW(ShapeError, what, ": ", inputs.size(), " arrays for a model of ", g.inputs.size(), " inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
      const graph::TensorType& t = g.node(g.inputs[i]).type;
      // A symbolic dimension takes any length here; the calibration run checks it against its range.
      bool fits = inputs[i].dtype() == t.dtype && inputs[i].shape().size() == t.shape.size();
      for (size_t d = 0; fits && d < t.shape.size(); ++d)
        fits = (!t.is_static() && !t.dims[d].is_constant()) || inputs[i].shape()[d] == t.shape[d];
      if (!fits)
        LOOM_THROW(ShapeError, what, ": input '", g.node(g.inputs[i]).name, "' is ",
                   numpy_dtype_name(inputs[i].dtype()), shape_str(inputs[i].shape()), ", the model takes ", t.str());
    }
    sets.calibration.push_back(std::move(inputs));
  }
  if (sets.calibration.empty()) LOOM_THROW(ConfigError, "loom.compile: calibrate is an empty list");
  sets.calibration_source = std::to_string(sets.calibration.size()) + " inputs given from Python";
  return sets;
}

Model compile(const py::object& model, const std::string& target, int64_t batch, int64_t image,
              const std::optional<std::string>& quantize, const py::object& calibrate, const py::object& config,
              const std::string& backend, const py::object& tuning_log, const std::optional<std::string>& precision,
              const std::optional<std::map<std::string, int>>& layer_weight_bits,
              const std::optional<double>& mixed_precision) {
  if (target != "cpu" && target != "accel" && target != "cuda")
    LOOM_THROW(ConfigError, "loom.compile: target '", target, "' is not one of cpu, accel, cuda");
  if (quantize && *quantize != "int8" && *quantize != "int8-simulated")
    LOOM_THROW(ConfigError, "loom.compile: quantize '", *quantize, "' is not one of int8, int8-simulated");
  if (!config.is_none() && target != "accel")
    LOOM_THROW(ConfigError, "loom.compile: config is the accelerator's; it needs target='accel'");
  graph::BuildOptions bo;
  if (target == "accel") {
    bo.accel = config_arg(config, "loom.compile: config");
  }
  if (target == "cuda") bo.cuda.emplace();
  graph::QuantizeOptions qo;
  qo.simulated = quantize && *quantize == "int8-simulated";
  if (precision && !quantize) LOOM_THROW(ConfigError, "loom.compile: precision needs quantize='int8'");
  if ((layer_weight_bits || mixed_precision) && !quantize)
    LOOM_THROW(ConfigError, "loom.compile: layer_weight_bits and mixed_precision need quantize='int8'");
  if (layer_weight_bits && mixed_precision)
    LOOM_THROW(ConfigError,
               "loom.compile: layer_weight_bits gives every layer's width and mixed_precision chooses "
               "them: give one");
  if (layer_weight_bits) qo.layer_weight_bits = *layer_weight_bits;
  graph::follow_targets(qo, bo, precision.value_or(""), "loom.compile: precision");
  if (mixed_precision && (bo.accel ? bo.accel->weight_widths().back() : 8) <= qo.weight_bits)
    LOOM_THROW(ConfigError, "loom.compile: mixed_precision widens layers to 8-bit weights and the model's are ",
               qo.weight_bits,
               "-bit already: give precision='W4A8' (narrower weights), or target='accel' with a "
               "config whose wgt_bits is below 8");
  graph::check_targets(bo, quantize ? &qo : nullptr);  // before anything expensive
#ifdef LOOM_PYTHON_WITH_TUNE
  std::optional<tune::LogUse> log_use;
  if (!tuning_log.is_none())  // read once and checked before the build
    log_use = tune::apply_log(bo, std::make_shared<const tune::TuningLog>(fspath(tuning_log)));
#else
  if (!tuning_log.is_none()) LOOM_THROW(ConfigError, "loom.compile: tuning_log needs Loom built with the tuner");
#endif
  std::string origin;
  graph::Graph g = model_graph(model, batch, image, origin, "loom.compile");
  std::string report;
  std::optional<graph::BuildResult> built;
  if (quantize) {
    frontend::CalibrationSets sets = calibration(calibrate, g);
    py::gil_scoped_release released;
    if (mixed_precision)
      qo.layer_weight_bits =
          graph::choose_weight_bits(g, sets.calibration, qo, bo.accel ? bo.accel->weight_widths().back() : 8,
                                    *mixed_precision)
              .layer_weight_bits;
    graph::QuantizedBuild cpu_build;
    if (target == "cpu")  // the accuracy report runs the model compiled here: built once, for both
      cpu_build = [&](const graph::Graph& quantized) {
        built.emplace(graph::build(quantized, bo));
        return built->file;
      };
    graph::QuantizeResult q = graph::quantize_checked(std::move(g), sets.calibration, sets.held_out, qo, {}, cpu_build);
    q.report->calibration.source = sets.calibration_source;
    if (q.report->held_out) q.report->held_out->source = sets.held_out_source;
    report = q.report->to_json();
    g = std::move(q.graph);
  }
  py::gil_scoped_release released;
  graph::BuildResult r = built ? std::move(*built) : graph::build(std::move(g), bo);
  runtime::GraphExecutor e = runtime::GraphExecutor::from_model_file(r.file, origin, executor_options(backend));
  Model out{std::move(e), std::move(r.file), std::move(report), py::none(), {}, origin, backend};
#ifdef LOOM_PYTHON_WITH_TUNE
  if (log_use) {
    py::gil_scoped_acquire held;
    py::dict t;
    for (auto [name, l] : {std::pair{"cpu", log_use->cpu}, std::pair{"accel", log_use->accel}}) {
      py::dict d;
      d["looked_up"] = l->looked_up;
      d["found"] = l->found;
      t[name] = d;
    }
    out.tuning = t;
  }
#endif
  return out;
}

// The model's inputs from run()'s or profile()'s arguments: numpy arrays, or objects numpy reads
// through __array__ (CPU torch tensors).
std::vector<NDArray> model_inputs(const Model& m, const py::args& args, const std::string& fn) {
  std::vector<std::string> names;
  for (size_t i = 0; i < m.executor.num_inputs(); ++i) names.push_back(m.executor.input_spec(i).name);
  return input_arrays(args, names, fn);
}

py::list run(Model& m, const py::args& args) {
  std::vector<NDArray> inputs = model_inputs(m, args, "Model.run");
  std::vector<NDArray> outputs = interruptible(m, [&] { return m.executor.run(inputs); });
  py::list out;
  for (auto& o : outputs) out.append(numpy_view(std::move(o)));  // the executor's copies, not copied again
  return out;
}

// One run with every kernel timed: a record per kernel call, in order.
py::list profile(Model& m, const py::args& args) {
  std::vector<NDArray> inputs = model_inputs(m, args, "Model.profile");
  if (inputs.size() != m.executor.num_inputs())
    LOOM_THROW(ShapeError, "Model.profile: ", inputs.size(), " inputs for a model of ", m.executor.num_inputs());
  std::vector<double> seconds = interruptible(m, [&] {
    for (size_t i = 0; i < inputs.size(); ++i) m.executor.set_input(i, inputs[i]);
    return m.executor.run_profiled();
  });
  const auto& calls = m.executor.kernels();
  const auto* accel = m.executor.uses_accelerator() ? &m.executor.accel_stats() : nullptr;
  py::list out;
  for (size_t k = 0; k < calls.size(); ++k) {
    py::dict d;
    d["index"] = k;
    d["kernel"] = calls[k].func;
    d["nodes"] = calls[k].node;
    d["device"] = runtime::device_name(calls[k].device);
    d["seconds"] = k < seconds.size() ? seconds[k] : 0.0;
    if (accel && calls[k].device == runtime::KernelDevice::Accel) {
      d["cycles"] = (*accel)[k].cycles;
      d["gemm_macs"] = (*accel)[k].gemm_macs;
      d["dma_bytes"] = (*accel)[k].dma_bytes;
    }
    out.append(d);
  }
  return out;
}

// Token generation with the key/value cache (runtime/generate.h).
py::dict generate(Model& m, const std::vector<int64_t>& prompt, int64_t max_new_tokens, int64_t top_k,
                  double temperature, uint64_t seed, std::optional<int64_t> stop_token) {
  runtime::GenerateOptions o;
  o.max_new_tokens = max_new_tokens;
  o.top_k = top_k;
  o.temperature = temperature;
  o.seed = seed;
  o.stop_token = stop_token;
  runtime::GenerateResult r = interruptible(m, [&] {
    if (!m.decoder) m.decoder = std::make_shared<runtime::Decoder>(m.executor);
    return m.decoder->generate(prompt, o);
  });
  py::dict d;
  d["tokens"] = r.tokens;
  d["prefill_seconds"] = r.prefill_seconds;
  d["step_seconds"] = r.step_seconds;
  d["tokens_per_second"] = r.tokens_per_second();
  return d;
}

void save(const Model& m, const std::string& path) {
  if (!m.file)
    LOOM_THROW(RuntimeError,
               "Model.save: this model was loaded from a file, not compiled here; copy that file instead");
  py::gil_scoped_release released;
  runtime::save_model_file(path, *m.file);
}

}  // namespace

std::vector<NDArray> input_arrays(const py::args& args, const std::vector<std::string>& names, const std::string& fn) {
  std::vector<NDArray> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string what = "input " + std::to_string(i) + (i < names.size() ? " '" + names[i] + "'" : "");
    py::object a = args[i];
    if (!py::isinstance<py::array>(a) && py::hasattr(a, "__array__") && !py::isinstance<py::str>(a))
      a = py::module_::import("numpy").attr("asarray")(a);
    if (!py::isinstance<py::array>(a))
      LOOM_THROW(TypeError, fn, ": ", what, " is a ", type_name(args[i]),
                 ", not a numpy array (or a tensor numpy reads, such as a CPU torch tensor)");
    inputs.push_back(to_ndarray(a.cast<py::array>(), fn + ": " + what));
  }
  return inputs;
}

graph::Graph model_graph(const py::object& model, int64_t batch, int64_t image, std::string& origin,
                         const std::string& what) {
  if (py::isinstance<graph::Graph>(model)) {
    graph::Graph g = model.cast<graph::Graph>();
    origin = g.name;
    return g;
  }
  if (!py::isinstance<py::str>(model) && !py::hasattr(model, "__fspath__"))
    LOOM_THROW(TypeError, what, ": model is a ", type_name(model),
               "; it takes a loom.Graph, an ONNX file's path or a built-in model's name");
  const std::string path = fspath(model);
  if (batch < 1 || image < 1) LOOM_THROW(ConfigError, what, ": batch and image must be at least 1");
  origin = std::filesystem::path(path).filename().string();  // "resnet18" for a built-in one
  py::gil_scoped_release released;
  return frontend::load_model(path, batch, image);
}

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
      .def("profile", &profile,
           "profile(*inputs) -> list of dicts: one run with each kernel call timed: index, kernel,\n"
           "nodes, device, seconds (and cycles, gemm_macs, dma_bytes for accelerator kernels).")
      .def_property_readonly(
          "quantization",
          [](const Model& x) -> py::object {
            if (x.quantization_json.empty()) return py::none();
            return py::module_::import("json").attr("loads")(x.quantization_json);
          },
          "The accuracy report of a model quantized by loom.compile (a dict, as `loom compile --json`\n"
          "writes it), or None.")
      .def_property_readonly(
          "tuning", [](const Model& x) { return x.tuning; },
          "For a model compiled with a tuning_log: {'cpu': {'looked_up', 'found'}, 'accel': {...}}, the\n"
          "kernels the build looked up in the log and how many it had a configuration for; else None.")
      .def("generate", &generate, py::arg("prompt_ids"), py::kw_only(), py::arg("max_new_tokens") = 32,
           py::arg("top_k") = 0, py::arg("temperature") = 1.0, py::arg("seed") = 0, py::arg("stop_token") = py::none(),
           "generate(prompt_ids, *, max_new_tokens=32, top_k=0, temperature=1.0, seed=0, stop_token=None)\n"
           "-> {'tokens', 'prefill_seconds', 'step_seconds', 'tokens_per_second'}: a decoder-only model with\n"
           "past key/values as inputs and present ones as outputs (docs/dynamic_shapes.md) generates after\n"
           "the prompt, keeping its cache between steps; greedy, or top-k sampling with a seed.")
      .def("save", &save, py::arg("path"), "Writes the compiled model to a .loom file (loom.load reads it).");
  m.def("load", &load, py::arg("path"), py::kw_only(), py::arg("backend") = "fsim",
        "load(path, *, backend='fsim') -> Model: a compiled model (.loom), as `loom run` loads it;\n"
        "accelerator kernels run on `backend` (fsim, rtl, systemc, perf where built).");
  m.def("compile", &compile, py::arg("model"), py::kw_only(), py::arg("target") = "cpu", py::arg("batch") = 1,
        py::arg("image") = 224, py::arg("quantize") = py::none(), py::arg("calibrate") = 16,
        py::arg("config") = py::none(), py::arg("backend") = "fsim", py::arg("tuning_log") = py::none(),
        py::arg("precision") = py::none(), py::arg("layer_weight_bits") = py::none(),
        py::arg("mixed_precision") = py::none(),
        "compile(model, *, target='cpu', batch=1, image=224, quantize=None, calibrate=16, config=None,\n"
        "        backend='fsim', tuning_log=None, precision=None, layer_weight_bits=None,\n"
        "        mixed_precision=None) -> Model\n"
        "Compiles a loom.Graph, an ONNX file or a built-in model (resnet18, resnet50, mobilenet_v2, mlp;\n"
        "batch and image size those) as `loom compile` does: target 'cpu', 'accel' (int8 layers on the\n"
        "accelerator of `config`, a loom.accel.Config or a JSON file; VTA's 1x16x16 by default; run on `backend`) or "
        "'cuda'.\n"
        "quantize='int8' calibrates on `calibrate`: a number of random inputs, a folder of .npy files\n"
        "or a list of inputs (arrays, or tuples of arrays for several inputs); Model.quantization has\n"
        "the accuracy report. tuning_log: a tuning log (loom.tune.tune's `log`, `loom tune --log`) whose\n"
        "best configurations the build's kernels take; Model.tuning counts what it looked up and found.\n"
        "precision: the quantized widths, 'W4A8' etc. (`loom compile --precision`); with target='accel' the\n"
        "config's, which need not be given. layer_weight_bits: {'layer': 8, ...}, wider weights for the\n"
        "layers named (`--layer-weight-bits`; on the accelerator in passes); mixed_precision: a cosine with\n"
        "the float model the layers widened to 8 bits are chosen for (`--mixed-precision`).");
}

}  // namespace loom::python
