#include "loom/regress/job.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "loom/accel/config.h"
#include "loom/accel/program.h"
#include "loom/codegen/accel.h"
#include "loom/codegen/llvm.h"
#include "loom/frontend/load.h"
#include "loom/graph/build.h"
#include "loom/graph/quantize.h"
#include "loom/ops/accel_operators.h"
#include "loom/regress/compare.h"
#include "loom/regress/process.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/npy.h"
#include "loom/schedule/lower.h"
#include "loom/sim/backends.h"
#include "model_artifacts.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The config JSON `backend` is opened with: the job's config plus the section of the job's device
// options that backend reads ("rtl" for rtl and board-rtl, ...; none for a remote device, whose
// options are the server's).
std::string device_json(const JobSpec& job, const json& config, const std::string& backend) {
  json j = config;
  std::string section = backend.rfind("board-", 0) == 0 ? backend.substr(6) : backend;
  if (job.device.contains(section)) j[section] = job.device[section];
  return j.dump();
}

// The device of `backend` ("the job's" or "the reference"), errors saying which it was.
std::unique_ptr<AccelDevice> open_device(const JobSpec& job, const std::string& backend, const json& config,
                                         const std::string& role) {
  try {
    return make_accel_device(backend, device_json(job, config, backend));
  } catch (const Error& e) {
    LOOM_THROW(Error, role, " backend ", backend, ": ", e.what());
  }
}

void compare_into(JobOutcome& o, const std::string& what, const NDArray& got, const NDArray& want) {
  ArrayDiff d = compare_arrays(got, want);
  o.metrics["mismatches"] = o.metrics.value("mismatches", int64_t(0)) + d.mismatches;
  if (!d.equal())
    o.checks.push_back(
        {"reference " + what, false, d.detail + " (" + std::to_string(d.mismatches) + " elements differ)"});
}

// Utilization and cycles from the GEMM work and the timed cycles.
void time_metrics(JobOutcome& o, const accel::AccelConfig& cfg, uint64_t cycles, double macs) {
  o.metrics["macs"] = macs;
  if (!cycles) return;
  o.metrics["cycles"] = cycles;
  o.metrics["utilization"] = macs / (double(cfg.batch) * cfg.block_in * cfg.block_out * double(cycles));
}

// The operator's definition on the CPU: the naive interpreter for small ones (independent of every
// schedule and of LLVM), the unscheduled loops compiled by LLVM for the rest (the interpreter needs a
// minute for ResNet-18's larger layers).
NDArray cpu_reference(const ops::AccelOperator& a, const std::vector<NDArray>& args) {
  if (a.macs <= 4e6) return a.expected(args);
  std::vector<ir::Tensor> tensors = a.inputs;
  tensors.push_back(a.reference);
  schedule::Schedule plain({a.reference});
  runtime::Module m = codegen::build_llvm({schedule::lower(plain, tensors, "reference")});
  std::vector<NDArray> ref(args.begin(), args.begin() + long(a.inputs.size()));
  ref.push_back(NDArray::zeros(args.back().shape(), args.back().dtype()));
  m.call("reference", ref);
  return ref.back();
}

// op:... and resnet18:LAYER: one operator compiled for the config, run on the backend, checked
// against its naive reference (cpu) or the same run on the reference backend.
void run_operator(const JobSpec& job, const Workload& w, JobOutcome& o, const fs::path& dir) {
  accel::AccelConfig cfg = accel::AccelConfig::from_json(job.config.dump(), "config '" + job.config_name + "'");
  const ops::AccelTarget target = ops::accel_target(cfg);
  ops::AccelOperator a;
  if (w.kind == "resnet18") {
    for (const ops::AccelConvLayer& l : ops::resnet18_accel_conv_layers())
      if (w.target == l.name) a = ops::make_accel_conv_layer(l, target, 2);
  } else {
    ops::AccelOpSpec spec;
    spec.kind = ops::parse_accel_op_kind(w.target);
    for (auto& [k, v] : w.params) {
      int x = std::stoi(v);
      if (k == "channels") spec.channels = x;
      if (k == "out_channels") spec.out_channels = x;
      if (k == "size") spec.size = x;
      if (k == "stride") spec.stride = x;
      if (k == "pad") spec.pad = x;
      if (k == "vthreads") spec.virtual_threads = x;
    }
    spec.rq = ops::default_requantize(spec.kind);
    a = ops::make_accel_operator(spec, target, w.target);
  }
  codegen::AccelModule m = codegen::build_accel(a.func, cfg);
  auto run_on = [&](const std::string& backend, std::vector<NDArray>& args) {
    auto dev = open_device(job, backend, job.config, backend == job.backend ? "the job's" : "the reference");
    return m.run(*dev, args);
  };
  std::vector<NDArray> args = a.random_args(job.seed);
  codegen::AccelRunStats stats = run_on(job.backend, args);
  runtime::write_npy((dir / "output.npy").string(), args.back());
  o.metrics["instructions"] = stats.instructions;
  o.metrics["counters"] = stats.counters;
  time_metrics(o, cfg, stats.cycles, a.macs);
  o.metrics["mismatches"] = 0;
  if (job.expect.reference == "cpu") {
    compare_into(o, "cpu", args.back(), cpu_reference(a, args));
  } else if (job.expect.reference != "none") {
    std::vector<NDArray> ref = a.random_args(job.seed);
    run_on(job.expect.reference, ref);
    compare_into(o, job.expect.reference, args.back(), ref.back());
  }
}

// program:FILE: the program on the backend, its recorded checks (cpu) or the checked regions as the
// reference backend leaves them.
void run_program_file(const JobSpec& job, const Workload& w, JobOutcome& o, const fs::path& dir) {
  accel::Program p = accel::Program::load(w.target);
  json cfg = json::parse(p.config.to_json());
  auto read_checks = [&](AccelDevice& dev) {
    std::vector<NDArray> regions;
    for (const auto& c : p.checks) {
      NDArray a = NDArray::empty({int64_t(c.data.size())}, DataType::Int(8));
      dev.read(c.addr, a.raw_data(), c.data.size());
      regions.push_back(a);
    }
    return regions;
  };
  auto dev = open_device(job, job.backend, cfg, "the job's");
  accel::ProgramResult r = accel::run_program(p, *dev);
  std::cout << r.report;
  std::vector<NDArray> got = read_checks(*dev);
  for (size_t i = 0; i < got.size(); ++i)
    runtime::write_npy((dir / ("region" + std::to_string(i) + ".npy")).string(), got[i]);
  uint64_t executed = 0;
  for (auto& [k, v] : r.counters) executed += k.find("insns") != std::string::npos ? v : 0;
  o.metrics["counters"] = r.counters;
  if (r.cycles) o.metrics["cycles"] = r.cycles;
  o.metrics["mismatches"] = 0;
  if (job.expect.reference == "cpu") {
    o.metrics["mismatches"] = r.mismatched_checks;
    if (r.mismatched_checks)
      o.checks.push_back({"reference cpu", false,
                          std::to_string(r.mismatched_checks) + " of the program's checks differ (see the log)"});
    if (p.checks.empty()) o.checks.push_back({"reference cpu", false, "the program records no expected contents"});
  } else if (job.expect.reference != "none") {
    auto ref_dev = open_device(job, job.expect.reference, cfg, "the reference");
    accel::run_program(p, *ref_dev);
    std::vector<NDArray> want = read_checks(*ref_dev);
    for (size_t i = 0; i < got.size(); ++i) compare_into(o, job.expect.reference, got[i], want[i]);
  }
}

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

// command:SHELL: run in the job's folder with the job's config and backend in the environment;
// passes on exit code 0; metrics.json in the folder, if written, adds metrics.
void run_shell(const JobSpec& job, const Workload& w, JobOutcome& o, const fs::path& dir) {
  std::ofstream(dir / "config.json") << (job.config.is_null() ? json::object() : job.config).dump(1) << "\n";
  setenv("LOOM_JOB_DIR", dir.c_str(), 1);
  setenv("LOOM_JOB_NAME", job.name.c_str(), 1);
  setenv("LOOM_JOB_BACKEND", job.backend.c_str(), 1);
  setenv("LOOM_JOB_CONFIG", (dir / "config.json").c_str(), 1);
  setenv("LOOM", self_executable().c_str(), 1);
  fs::remove(dir / "metrics.json");
  // In the job's process group, under the job's time limit (the worker's: a hang is a timeout); its
  // output goes to the job's log as it comes.
  std::cout << std::flush;
  ChildStatus s = run_command({"/bin/sh", "-c", "cd \"$LOOM_JOB_DIR\" && " + w.target}, nullptr, 1e9, false);
  if (s.kind != ChildStatus::Exited || s.code != 0) {
    o.checks.push_back(
        {"command", false,
         (s.kind == ChildStatus::Signaled ? "the command was " : "the command ended with ") + s.describe()});
    return;  // what it left in metrics.json may be half written
  }
  if (fs::exists(dir / "metrics.json")) {
    std::ifstream f(dir / "metrics.json");
    json m;
    try {
      m = json::parse(f);
    } catch (const std::exception& e) {
      LOOM_THROW(Error, "metrics.json written by the command is not JSON: ", e.what());
    }
    if (!m.is_object()) LOOM_THROW(Error, "metrics.json written by the command must be an object");
    for (auto& [k, v] : m.items()) o.metrics[k] = v;
  }
}

// The expectation's bounds on the metrics.
void check_bounds(const JobSpec& job, JobOutcome& o) {
  const Expectation& e = job.expect;
  auto number = [&](const char* key) -> std::optional<double> {
    if (o.metrics.contains(key) && o.metrics[key].is_number()) return o.metrics[key].get<double>();
    return std::nullopt;
  };
  auto untimed = "no cycle count: backend " + job.backend + " does not time the run (rtl, perf and systemc do)";
  if (e.max_cycles) {
    auto c = number("cycles");
    o.checks.push_back(
        {"max_cycles", c && *c <= double(*e.max_cycles),
         c ? std::to_string(uint64_t(*c)) + " cycles, budget " + std::to_string(*e.max_cycles) : untimed});
  }
  if (e.min_utilization) {
    auto u = number("utilization");
    std::ostringstream os;
    if (u) os << "GEMM utilization " << *u << ", floor " << *e.min_utilization;
    o.checks.push_back({"min_utilization", u && *u >= *e.min_utilization, u ? os.str() : untimed});
  }
  if (e.min_accuracy) {
    auto a = number("accuracy");
    std::ostringstream os;
    if (a)
      os << "top-1 agreement with the float model " << *a << " over " << job.inputs << " inputs, floor "
         << *e.min_accuracy;
    std::string unmeasured = o.metrics.value("accuracy_unmeasured", std::string("no accuracy measured"));
    o.checks.push_back({"min_accuracy", a && *a >= *e.min_accuracy, a ? os.str() : unmeasured});
  }
}

}  // namespace

std::string job_problem(const JobSpec& job) {
  try {
    Workload w = parse_workload(job.workload);
    if (w.kind == "command") return "";  // the command opens what it opens
    json cfg = job.config;
    if (w.kind == "program") cfg = json::parse(accel::Program::load(w.target).config.to_json());
    if (w.kind == "model" && fs::path(w.target).extension() == ".loom")
      cfg =
          json::parse(runtime::AccelImage::parse(runtime::load_model_file(w.target).accel_image, w.target).config_json);
    sim::register_backends();
    check_accel_backend(job.backend, device_json(job, cfg, job.backend));
    const std::string& ref = job.expect.reference;
    if (ref != "cpu" && ref != "none") {
      try {
        check_accel_backend(ref, device_json(job, cfg, ref));
      } catch (const Error& e) {
        return std::string("reference: ") + e.what();
      }
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

json JobOutcome::to_json() const {
  json c = json::array();
  for (const Check& k : checks) c.push_back({{"name", k.name}, {"ok", k.ok}, {"detail", k.detail}});
  return {{"status", status}, {"message", message}, {"metrics", metrics}, {"checks", c}};
}

JobOutcome run_job(const JobSpec& job, const fs::path& dir, const fs::path& artifacts) {
  JobOutcome o;
  try {
    sim::register_backends();
    fs::create_directories(dir);
    Workload w = parse_workload(job.workload);
    std::cout << "job " << job.name << ": " << job.workload << " on " << job.backend << " (config " << job.config_name
              << ")" << std::endl;
    if (w.kind == "op" || w.kind == "resnet18")
      run_operator(job, w, o, dir);
    else if (w.kind == "program")
      run_program_file(job, w, o, dir);
    else if (w.kind == "model")
      run_model(job, w, o, dir, artifacts);
    else
      run_shell(job, w, o, dir);
    if (job.expect.reference != "none" && w.kind != "command") {
      bool clean = true;
      for (const Check& c : o.checks) clean &= c.name.rfind("reference", 0) != 0;
      if (clean) o.checks.push_back({"reference " + job.expect.reference, true, "bit-exact"});
    }
    check_bounds(job, o);
    bool ok = true;
    for (const Check& c : o.checks) ok &= c.ok;
    o.status = ok ? "pass" : "fail";
    for (const Check& c : o.checks)
      if (!c.ok) {
        o.message = c.name + ": " + c.detail;
        break;
      }
  } catch (const std::exception& e) {
    o.status = "error";
    o.message = e.what();
  }
  std::cout << "job " << job.name << ": " << o.status << (o.message.empty() ? "" : ": " + o.message) << std::endl;
  return o;
}

}  // namespace loom::regress
