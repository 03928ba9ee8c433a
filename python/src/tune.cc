// loom.tune: the auto-tuner from Python. A template (GEMM, conv2d, blocked conv2d, the
// accelerator's conv2d) searched as `loom tune` searches it, with a Python callback after every
// measured configuration; the trials come back as records and can be appended to a tuning log.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>

#include "bindings.h"
#include "loom/accel/config.h"
#include "loom/codegen/llvm.h"
#include "loom/frontend/load.h"
#include "loom/runtime/error.h"
#include "loom/runtime/thread_pool.h"
#include "loom/tune/apply_log.h"
#include "loom/tune/template.h"
#include "loom/tune/tuner.h"

namespace loom::python {

namespace {

// A template and the log key its results go under.
struct TemplateRef {
  std::shared_ptr<tune::Template> t;
  std::string target;
};

py::dict config_dict(const tune::Config& c) {
  py::dict d;
  for (const auto& [k, v] : c) d[py::str(k)] = v;
  return d;
}

py::dict trial_record(const tune::Trial& t) {
  py::dict d;
  d["config"] = config_dict(t.config);
  d["ok"] = t.ok;
  d["seconds"] = t.seconds;
  d["gflops"] = t.gflops;
  d["cycles"] = t.cycles;
  d["error"] = t.error;
  return d;
}

tune::Conv2dShape conv_shape(int64_t in_channels, int64_t out_channels, int64_t size, int64_t kernel, int64_t stride,
                             int64_t pad) {
  if (in_channels < 1 || out_channels < 1 || size < 1 || kernel < 1 || stride < 1 || pad < 0)
    LOOM_THROW(ConfigError, "tune: a conv2d needs positive channels, size, kernel and stride and a pad >= 0");
  tune::Conv2dShape c;
  c.in_channels = in_channels;
  c.out_channels = out_channels;
  c.height = c.width = size;
  c.kernel = kernel;
  c.stride = stride;
  c.pad = pad;
  if (c.out_height() < 1) LOOM_THROW(ConfigError, "tune: the conv2d's kernel is larger than its padded input");
  return c;
}

std::string cpu_target() { return tune::target_key(codegen::target_info(), runtime::num_threads()); }

py::dict run(const TemplateRef& ref, int trials, double budget_seconds, uint64_t seed, bool use_model, int repeats,
             double confirm_seconds, bool cold_confirm, const py::object& on_trial,
             const std::optional<std::string>& log) {
  if (trials < 1) LOOM_THROW(ConfigError, "tune: trials must be at least 1");
  if (!(budget_seconds > 0)) LOOM_THROW(ConfigError, "tune: budget_seconds must be positive");
  if (repeats < 1 || !(confirm_seconds >= 0))
    LOOM_THROW(ConfigError, "tune: repeats must be at least 1 and confirm_seconds at least 0");
  if (!on_trial.is_none() && !PyCallable_Check(on_trial.ptr()))
    LOOM_THROW(TypeError, "tune: on_trial is a ", type_name(on_trial), ", not a function");
  tune::TuneOptions o;
  o.trials = trials;
  o.budget_seconds = budget_seconds;
  o.seed = seed;
  o.use_model = use_model;
  o.repeats = repeats;
  o.confirm_seconds = confirm_seconds;
  o.cold_confirm = cold_confirm;
  // The callback runs with the GIL taken back; an exception it raises ends the search and is
  // raised from loom.tune.tune.
  std::optional<py::error_already_set> raised;
  struct Stop {};
  if (!on_trial.is_none())
    o.progress = [&](int done, int total, const tune::Trial& last, const tune::Trial& best) {
      py::gil_scoped_acquire acquire;
      try {
        py::dict r = trial_record(last);
        r["trial"] = done;
        r["trials"] = total;
        r["best"] = trial_record(best);
        on_trial(r);
      } catch (py::error_already_set& e) {
        raised.emplace(std::move(e));
        throw Stop{};
      }
    };
  tune::TuneResult r;
  try {
    py::gil_scoped_release released;
    r = tune::tune(*ref.t, o);
    if (log) tune::append_to_log(*log, *ref.t, ref.target, r);
  } catch (const Stop&) {
    throw std::move(*raised);
  }
  py::dict out;
  py::list ts;
  for (const tune::Trial& t : r.trials) ts.append(trial_record(t));
  out["trials"] = ts;
  out["best"] = trial_record(r.best);
  out["default"] = trial_record(r.default_trial);
  out["wall_seconds"] = r.wall_seconds;
  out["used_model"] = r.used_model;
  return out;
}

// The templates of every kernel a build of `model` compiles and the log would be asked for: the
// blocked CPU convolutions (of the int8 model with quantize='int8'), or the int8 model's
// accelerator convolutions for `config` (measured on `device`).
py::list model_templates(const py::object& model, const std::string& target, const std::optional<std::string>& quantize,
                         const py::object& config, const std::string& device, int64_t batch, int64_t image) {
  const std::string what = "tune.model_templates";
  if (target != "cpu" && target != "accel")
    LOOM_THROW(ConfigError, what, ": target '", target, "' is not one of cpu, accel");
  if (quantize && *quantize != "int8") LOOM_THROW(ConfigError, what, ": quantize '", *quantize, "' is not int8");
  if (target == "accel" && device != "perf" && device != "rtl")
    LOOM_THROW(ConfigError, what, ": device '", device, "' is not one of perf, rtl");
  if (target == "cpu" && !config.is_none())
    LOOM_THROW(ConfigError, what, ": config is the accelerator's (target='accel')");
  std::string origin;
  graph::Graph g = model_graph(model, batch, image, origin, what);
  py::list out;
  if (target == "cpu") {
    std::vector<std::unique_ptr<tune::Template>> ts;
    {
      py::gil_scoped_release released;
      if (quantize) g = frontend::quantized_for_shapes(std::move(g));
      for (const auto& key : tune::model_conv_kernels(std::move(g)))
        ts.push_back(tune::conv_kernel_template(key, codegen::target_info()));
    }
    for (auto& t : ts) out.append(TemplateRef{std::move(t), cpu_target()});
    return out;
  }
  accel::AccelConfig cfg = config_arg(config, what + ": config");
  std::vector<ops::ConvShape> shapes;
  {
    py::gil_scoped_release released;
    shapes = tune::model_accel_convs(frontend::quantized_for_shapes(std::move(g)), cfg);
  }
  for (const auto& s : shapes)
    out.append(TemplateRef{tune::make_accel_conv2d_template(tune::accel_conv_shape(s, cfg), cfg, device),
                           tune::accel_target_key(cfg, device)});
  return out;
}

}  // namespace

void register_tune(py::module_& m) {
  py::module_ t = m.def_submodule("tune", "The auto-tuner: templates, searched with a per-trial callback.");
  py::class_<TemplateRef>(t, "Template", "An operator with schedule knobs: what loom.tune.tune searches.")
      .def_property_readonly("op", [](const TemplateRef& r) { return r.t->op(); })
      .def_property_readonly("shape", [](const TemplateRef& r) { return r.t->shape(); })
      .def_property_readonly(
          "target", [](const TemplateRef& r) { return r.target; }, "The key its tuning-log entries are filed under.")
      .def_property_readonly("knobs",
                             [](const TemplateRef& r) {
                               py::dict d;
                               for (const tune::Knob& k : r.t->knobs()) d[py::str(k.name)] = k.values;
                               return d;
                             })
      .def_property_readonly("default_config", [](const TemplateRef& r) { return config_dict(r.t->default_config()); })
      .def_property_readonly(
          "space_size", [](const TemplateRef& r) { return r.t->space().size(); },
          "How many valid configurations the knobs give.")
      .def_property_readonly("flops", [](const TemplateRef& r) { return r.t->flops(); });
  t.def(
      "gemm",
      [](int64_t M, int64_t N, int64_t K) {
        if (M < 1 || N < 1 || K < 1) LOOM_THROW(ConfigError, "tune.gemm: M, N and K must be positive");
        return TemplateRef{tune::make_gemm_template(M, N, K, codegen::target_info()), cpu_target()};
      },
      py::arg("M"), py::arg("N"), py::arg("K"), "gemm(M, N, K) -> Template: fp32 C = A x B on this CPU.");
  t.def(
      "conv2d",
      [](int64_t in_channels, int64_t out_channels, int64_t size, int64_t kernel, int64_t stride, int64_t pad,
         int64_t block) {
        tune::Conv2dShape c = conv_shape(in_channels, out_channels, size, kernel, stride, pad);
        codegen::TargetInfo target = codegen::target_info();
        if (block < 0) LOOM_THROW(ConfigError, "tune.conv2d: block must be 0 (plain NCHW) or positive");
        std::unique_ptr<tune::Template> tp =
            block ? tune::make_conv2d_nchwc_template(c, block, target) : tune::make_conv2d_template(c, target);
        return TemplateRef{std::move(tp), cpu_target()};
      },
      py::arg("in_channels"), py::arg("out_channels"), py::arg("size"), py::kw_only(), py::arg("kernel") = 3,
      py::arg("stride") = 1, py::arg("pad") = 1, py::arg("block") = 0,
      "conv2d(in_channels, out_channels, size, *, kernel=3, stride=1, pad=1, block=0) -> Template: an fp32\n"
      "convolution on this CPU, plain NCHW or (block > 0) on blocks of that many channels.");
  t.def(
      "accel_conv2d",
      [](int64_t in_channels, int64_t out_channels, int64_t size, int64_t kernel, int64_t stride, int64_t pad,
         const py::object& config, const std::string& device) {
        accel::AccelConfig cfg = config_arg(config, "tune.accel_conv2d: config");
        if (device != "perf" && device != "rtl")
          LOOM_THROW(ConfigError, "tune.accel_conv2d: device '", device, "' is not one of perf, rtl");
        return TemplateRef{tune::make_accel_conv2d_template(
                               conv_shape(in_channels, out_channels, size, kernel, stride, pad), cfg, device),
                           tune::accel_target_key(cfg, device)};
      },
      py::arg("in_channels"), py::arg("out_channels"), py::arg("size"), py::kw_only(), py::arg("kernel") = 3,
      py::arg("stride") = 1, py::arg("pad") = 1, py::arg("config") = py::none(), py::arg("device") = "perf",
      "accel_conv2d(in_channels, out_channels, size, *, kernel=3, stride=1, pad=1, config=None, device='perf')\n"
      "-> Template: an int8 convolution's tiling on the accelerator, measured in cycles on `device`.");
  t.def("model_templates", &model_templates, py::arg("model"), py::kw_only(), py::arg("target") = "cpu",
        py::arg("quantize") = py::none(), py::arg("config") = py::none(), py::arg("device") = "rtl",
        py::arg("batch") = 1, py::arg("image") = 224,
        "model_templates(model, *, target='cpu', quantize=None, config=None, device='rtl', batch=1,\n"
        "                image=224) -> list of Template: one per distinct kernel a build of the model\n"
        "compiles and looks up in a tuning log (`loom tune model`'s kernels): target 'cpu', the blocked\n"
        "convolutions (of the int8 model with quantize='int8'); 'accel', the int8 model's accelerator\n"
        "convolutions for `config`, measured on `device` (a build reads the RTL's entries: tune with\n"
        "device='rtl' for loom.compile(tuning_log=...)). model: a loom.Graph, an ONNX file or a built-in\n"
        "model's name.");
  t.def("tune", &run, py::arg("template"), py::kw_only(), py::arg("trials") = 48, py::arg("budget_seconds") = 120.0,
        py::arg("seed") = 1, py::arg("use_model") = true, py::arg("repeats") = 5, py::arg("confirm_seconds") = 0.15,
        py::arg("cold_confirm") = true, py::arg("on_trial") = py::none(), py::arg("log") = py::none(),
        "tune(template, *, trials=48, budget_seconds=120, seed=1, use_model=True, repeats=5,\n"
        "     confirm_seconds=0.15, cold_confirm=True, on_trial=None, log=None)\n"
        "-> {'trials', 'best', 'default', 'wall_seconds', 'used_model'}: the search `loom tune` runs (a cost\n"
        "model guides it when XGBoost is there). on_trial(record) is called after every measured\n"
        "configuration with {'trial', 'trials', 'config', 'ok', 'seconds', 'gflops', 'cycles', 'error',\n"
        "'best'}; an exception it raises stops the search and is raised here. log: a tuning log the\n"
        "result is appended to (what `loom compile --tuning-log` reads). repeats, confirm_seconds and\n"
        "cold_confirm are the timing's (timed runs per configuration; the confirmation round of the\n"
        "fastest against the default, with the weights flushed from the caches).");
}

}  // namespace loom::python
