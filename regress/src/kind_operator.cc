// op:NAME[,key=value...] and resnet18:LAYER: one accelerator operator compiled for the job's
// config, run on its backend, checked against its naive reference (cpu) or the same run on the
// reference backend.
#include <set>
#include <sstream>

#include "builtin_job_kinds.h"
#include "loom/codegen/accel.h"
#include "loom/codegen/llvm.h"
#include "loom/ops/accel_operators.h"
#include "loom/runtime/error.h"
#include "loom/runtime/npy.h"
#include "loom/schedule/lower.h"

namespace loom::regress {

namespace fs = std::filesystem;

namespace {

const std::set<std::string> kOpParams = {"channels", "out_channels", "size", "stride", "pad", "vthreads"};

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

void run_operator(const JobSpec& job, const ops::AccelOperator& a, const fs::path& dir, JobOutcome& o) {
  accel::AccelConfig cfg = accel::AccelConfig::from_json(job.config.dump(), "config '" + job.config_name + "'");
  codegen::AccelModule m = codegen::build_accel(a.func, cfg);
  auto run_on = [&](const std::string& backend, std::vector<NDArray>& args) {
    auto dev = open_job_device(job, backend, job.config, backend == job.backend ? "the job's" : "the reference");
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

ops::AccelTarget target_of(const JobSpec& job) {
  return ops::accel_target(accel::AccelConfig::from_json(job.config.dump(), "config '" + job.config_name + "'"));
}

class OperatorJobKind : public JobKind {
 public:
  std::string name() const override { return "op"; }
  std::string syntax() const override { return "op:NAME[,key=value...]"; }
  Workload parse(const std::string& rest, const std::string& text) const override {
    Workload w;
    w.kind = name();
    std::stringstream ss(rest);
    std::getline(ss, w.target, ',');
    if (w.target != "dense" && w.target != "conv2d" && w.target != "add")
      LOOM_THROW(Error, "workload '", text, "': unknown operator '", w.target, "' (dense, conv2d, add)");
    for (std::string kv; std::getline(ss, kv, ',');) {
      size_t eq = kv.find('=');
      std::string key = kv.substr(0, eq);
      if (eq == std::string::npos || !kOpParams.count(key)) {
        std::string keys;
        for (const std::string& k : kOpParams) keys += (keys.empty() ? "" : ", ") + k;
        LOOM_THROW(Error, "workload '", text, "': '", kv, "' is not key=value with a key of ", keys);
      }
      std::string value = kv.substr(eq + 1);
      if (value.empty() || value.size() > 6 || value.find_first_not_of("0123456789") != std::string::npos)
        LOOM_THROW(Error, "workload '", text, "': ", key, "=", value, " is not a whole number");
      w.params.emplace_back(key, value);
    }
    return w;
  }
  void run(const JobSpec& job, const Workload& w, const fs::path& dir, const fs::path&, JobOutcome& o) const override {
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
    run_operator(job, ops::make_accel_operator(spec, target_of(job), w.target), dir, o);
  }
};

class ResNet18JobKind : public JobKind {
 public:
  std::string name() const override { return "resnet18"; }
  std::string syntax() const override { return "resnet18:LAYER"; }
  ResolvedWorkload resolve(const Workload& w, const std::string& text, const FileResolver& file) const override {
    bool known = false;
    for (const ops::AccelConvLayer& l : ops::resnet18_accel_conv_layers()) known |= w.target == l.name;
    if (!known) LOOM_THROW(Error, "workload '", text, "': ResNet-18 has no conv layer '", w.target, "' (c2 to c11)");
    return JobKind::resolve(w, text, file);
  }
  void run(const JobSpec& job, const Workload& w, const fs::path& dir, const fs::path&, JobOutcome& o) const override {
    for (const ops::AccelConvLayer& l : ops::resnet18_accel_conv_layers())
      if (w.target == l.name) return run_operator(job, ops::make_accel_conv_layer(l, target_of(job), 2), dir, o);
    LOOM_THROW(Error, "ResNet-18 has no conv layer '", w.target, "'");
  }
};

}  // namespace

std::unique_ptr<JobKind> make_operator_job_kind() { return std::make_unique<OperatorJobKind>(); }
std::unique_ptr<JobKind> make_resnet18_job_kind() { return std::make_unique<ResNet18JobKind>(); }

}  // namespace loom::regress
