// model:NAME|FILE.onnx[@IMAGE] and model:FILE.loom: a compiled model as is (it carries its config),
// or a float model quantized to int8 and compiled for the job's config (shared with the run's
// other jobs of that model: model_artifacts.h); run on the job's inputs; checked against the CPU
// int8 build (bit-exact), the reference backend, and for accuracy the float model's top-1 class.
#include <algorithm>
#include <iostream>
#include <optional>
#include <set>

#include "builtin_job_kinds.h"
#include "loom/frontend/load.h"
#include "loom/graph/builtin_models.h"
#include "loom/regress/compare.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/npy.h"
#include "model_artifacts.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool compiled_model(const Workload& w) { return fs::path(w.target).extension() == ".loom"; }

// The job's model inputs: the first `inputs` .npy files of its inputs_from folder, or random draws
// (seeded by the job) from the distribution each input was calibrated on (normal(0, 1) for a
// compiled model's float inputs).
std::vector<std::vector<NDArray>> model_inputs(const JobSpec& job, const runtime::GraphExecutor& ex,
                                               const std::vector<std::string>& distributions) {
  std::vector<std::vector<NDArray>> inputs;
  if (!job.inputs_from.empty()) {
    if (ex.num_inputs() != 1)
      LOOM_THROW(Error, "inputs_from '", job.inputs_from, "': a folder of .npy files needs a single-input model");
    std::vector<std::string> files;
    for (auto& e : fs::directory_iterator(job.inputs_from))
      if (e.path().extension() == ".npy") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (files.size() < size_t(job.inputs))
      LOOM_THROW(Error, "inputs_from '", job.inputs_from, "' holds ", files.size(), " .npy files; the job runs ",
                 job.inputs, " inputs");
    for (int k = 0; k < job.inputs; ++k) {
      NDArray a = runtime::read_npy(files[size_t(k)]);
      if (a.shape() != ex.input_spec(0).shape || a.dtype() != ex.input_spec(0).dtype)
        LOOM_THROW(Error, "inputs_from: '", files[size_t(k)], "' holds ", a.describe(), ", the model's input is ",
                   ex.input_spec(0).str());
      inputs.push_back({a});
    }
    return inputs;
  }
  for (int k = 0; k < job.inputs; ++k) {
    std::vector<NDArray> one;
    for (size_t i = 0; i < ex.num_inputs(); ++i) {
      NDArray a = NDArray::empty(ex.input_spec(i).shape, ex.input_spec(i).dtype);
      frontend::InputDistribution d;
      if (i < distributions.size())
        d = frontend::InputDistribution::parse(distributions[i], "input distribution");
      else if (!a.dtype().is_float())
        d = {frontend::InputDistribution::Kind::Uniform, -1, 1};
      d.fill(a, job.seed * 1000003 + uint64_t(k) * 131 + i);
      one.push_back(a);
    }
    inputs.push_back(one);
  }
  return inputs;
}

// Top-1 agreement of the int8 outputs with the float model's over the inputs, unless the float
// model's answers cannot tell a good quantization from a bad one (one input, one class for every
// input, the same output for every input): then the reason, and no figure.
std::string measure_accuracy(runtime::GraphExecutor& fl, const std::vector<std::vector<NDArray>>& inputs,
                             const std::vector<std::vector<NDArray>>& outputs, JobOutcome& o) {
  if (inputs.size() < 2)
    return "top-1 agreement over one input says nothing about the quantization: give the group \"inputs\" >= 2";
  std::set<int64_t> classes;
  int agree = 0;
  bool constant = true;
  NDArray first;
  for (size_t k = 0; k < inputs.size(); ++k) {
    NDArray f = fl.run(inputs[k])[0];
    int64_t c = argmax(f);
    classes.insert(c);
    agree += c == argmax(outputs[k][0]);
    if (!first.defined())
      first = f;
    else
      constant = constant && compare_arrays(f, first).equal();
  }
  o.metrics["float_classes"] = classes.size();
  if (constant)
    return "the float model's output is the same for all " + std::to_string(inputs.size()) +
           " inputs: agreement with it says nothing (give inputs the model tells apart: \"inputs_from\")";
  if (classes.size() == 1)
    return "the float model picks class " + std::to_string(*classes.begin()) + " for all " +
           std::to_string(inputs.size()) +
           " inputs: any quantized model would agree (give inputs the model tells apart: \"inputs_from\", or more "
           "\"inputs\")";
  o.metrics["accuracy"] = double(agree) / double(inputs.size());
  return "";
}

// model:...: a compiled model as is, or a float model quantized to int8 and compiled for the
// config (shared with the run's other jobs of that model: model_artifacts.h); run on the job's
// inputs; checked against the CPU int8 build (bit-exact), the reference backend, and for accuracy
// the float model's top-1 class.
void run_model(const JobSpec& job, const Workload& w, JobOutcome& o, const fs::path& dir, const fs::path& artifacts) {
  const bool compiled = fs::path(w.target).extension() == ".loom";
  runtime::ModelFile file;
  std::optional<ModelArtifacts> built;
  json cfg;
  if (compiled) {
    file = runtime::load_model_file(w.target);
    if (file.accel_image.empty())
      LOOM_THROW(Error, "'", w.target, "' has no accelerator kernels (compile it with --target accel)");
    cfg = json::parse(runtime::AccelImage::parse(file.accel_image, w.target).config_json);
  } else {
    cfg = job.config;
    built = model_artifacts(job, w, artifacts);
    std::cout << "model " << w.target << ": " << built->note << std::endl;
    file = built->accel;
    o.metrics["quantization"] = built->quantization;
  }
  auto executor = [&](const runtime::ModelFile& f, const std::string& backend) {
    runtime::ExecutorOptions eo;
    eo.accel_backend = backend;
    eo.accel_config_json = device_json(job, cfg, backend);
    try {
      return runtime::GraphExecutor::from_model_file(f, "'" + w.target + "'", eo);
    } catch (const Error& e) {
      LOOM_THROW(Error, backend == job.backend ? "the job's" : "the reference", " backend ", backend, ": ", e.what());
    }
  };
  auto ex = executor(file, job.backend);
  std::vector<std::vector<NDArray>> inputs =
      model_inputs(job, ex, built ? built->input_distributions : std::vector<std::string>{});
  std::vector<std::vector<NDArray>> outputs;
  AccelTotals totals;
  for (size_t k = 0; k < inputs.size(); ++k) {
    outputs.push_back(ex.run(inputs[k]));
    if (k) continue;
    totals = accel_totals(ex);
    for (size_t i = 0; i < outputs[0].size(); ++i)
      runtime::write_npy((dir / ("output" + std::to_string(i) + ".npy")).string(), outputs[0][i]);
  }
  o.metrics["accel_kernels"] = totals.kernels;
  time_metrics(o, accel::AccelConfig::from_json(cfg.dump(), w.target), totals.cycles, totals.macs);
  o.metrics["mismatches"] = 0;
  if (job.expect.reference != "none") {
    std::optional<runtime::GraphExecutor> ref;
    if (job.expect.reference == "cpu") {
      ref.emplace(runtime::GraphExecutor::from_model_file(built->cpu_int8, "CPU int8"));
    } else {
      ref.emplace(executor(file, job.expect.reference));
    }
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::vector<NDArray> want = ref->run(inputs[k]);
      for (size_t i = 0; i < want.size(); ++i)
        compare_into(o, job.expect.reference + " (input " + std::to_string(k) + ", output " + std::to_string(i) + ")",
                     outputs[k][i], want[i]);
    }
  }
  if (job.expect.min_accuracy) {
    auto fl = runtime::GraphExecutor::from_model_file(built->float_model, "float model");
    std::string why = measure_accuracy(fl, inputs, outputs, o);
    if (!why.empty()) o.metrics["accuracy_unmeasured"] = why;
  }
}

class ModelJobKind : public JobKind {
 public:
  std::string name() const override { return "model"; }
  std::string syntax() const override { return "model:NAME|FILE[@IMAGE]"; }
  Workload parse(const std::string& rest, const std::string& text) const override {
    Workload w;
    w.kind = name();
    w.target = rest;
    size_t at = rest.rfind('@');
    if (at != std::string::npos && rest.find('/', at) == std::string::npos) {
      std::string image = rest.substr(at + 1);
      if (image.empty() || image.size() > 4 || image.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(image) < 32 || std::stoi(image) > 1024)
        LOOM_THROW(Error, "workload '", text, "': the image size after @ must be a whole number in [32, 1024]");
      w.image = std::stoi(image);
      w.target = rest.substr(0, at);
    }
    if (w.target.empty()) LOOM_THROW(Error, "workload '", text, "' names no model");
    return w;
  }
  ResolvedWorkload resolve(const Workload& w, const std::string& text, const FileResolver& file) const override {
    ResolvedWorkload r;
    r.text = text;
    r.default_reference = "cpu";
    r.accuracy = r.model_inputs = true;
    auto builtin = graph::builtin_model_names();
    if (std::find(builtin.begin(), builtin.end(), w.target) != builtin.end()) return r;
    if (fs::path(w.target).extension() != ".onnx" && !compiled_model(w)) {
      std::string names;
      for (const std::string& n : builtin) names += (names.empty() ? "" : ", ") + n;
      LOOM_THROW(Error, "workload '", text, "': '", w.target, "' is neither a built-in model (", names,
                 ") nor an .onnx or .loom file");
    }
    r.text = "model:" + file(w.target) + (w.image ? "@" + std::to_string(w.image) : "");
    if (compiled_model(w)) {
      if (w.image) LOOM_THROW(Error, "workload '", text, "': a compiled model has its image size");
      r.own_config = true;
      r.default_reference = "none";
      r.cpu_reference = false;  // no float model to build a CPU int8 reference from
      r.accuracy = false;
    }
    return r;
  }
  void run(const JobSpec& job, const Workload& w, const fs::path& dir, const fs::path& artifacts,
           JobOutcome& o) const override {
    run_model(job, w, o, dir, artifacts);
  }
  std::string problem(const JobSpec& job, const Workload& w) const override {
    if (!compiled_model(w)) return JobKind::problem(job, w);
    JobSpec with_config = job;
    with_config.config =
        json::parse(runtime::AccelImage::parse(runtime::load_model_file(w.target).accel_image, w.target).config_json);
    return JobKind::problem(with_config, w);
  }
};

}  // namespace

std::unique_ptr<JobKind> make_model_job_kind() { return std::make_unique<ModelJobKind>(); }

}  // namespace loom::regress
