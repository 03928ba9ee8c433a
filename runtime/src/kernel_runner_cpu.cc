// The CPU's kernel runner: functions of the model's kernel library, called on the host copies of
// their values with argument arrays made once.
#include <chrono>

#include "kernel_runner.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"

namespace loom::runtime {

class CpuRunner final : public KernelRunner {
 public:
  explicit CpuRunner(const RunnerInputs& in) : kernels_(in.plan.kernels), shape_values_(in.shape_values) {
    module_ = Module::load_from_memory(in.file.library, in.origin);
    fns_.resize(kernels_.size());
    args_.resize(kernels_.size());
    kernel_vars_.resize(kernels_.size());
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const KernelCall& call = kernels_[k];
      if (call.device != KernelDevice::CPU) continue;
      if (!module_.has_function(call.func))
        LOOM_THROW(ModelError, in.origin, ": kernel '", call.func, "' (node '", call.node,
                   "') is missing from the kernel library");
      check_arguments(in, call, module_.signature(call.func).args);
      for (int id : call.args) {
        if (!in.host[size_t(id)])
          LOOM_THROW(ModelError, in.origin, ": CPU kernel '", call.func, "' reads '", in.plan.values[size_t(id)].name,
                     "', which lives only on the accelerator");
        args_[k].push_back(in.host[size_t(id)]);
      }
      // Symbolic extents: the function's shape variables, which the graph must have.
      KernelVars& kv = kernel_vars_[k];
      for (const std::string& v : module_.signature(call.func).shape_vars) {
        size_t at = 0;
        while (at < in.plan.shape_vars.size() && in.plan.shape_vars[at].name != v) ++at;
        if (at == in.plan.shape_vars.size())
          LOOM_THROW(ModelError, in.origin, ": kernel '", call.func, "' takes the shape variable '", v,
                     "', which the model does not declare");
        kv.graph_index.push_back(at);
      }
      kv.values.resize(kv.graph_index.size());
      if (!kv.values.empty()) args_[k].push_back(kv.values.data());
      fns_[k] = module_.get_function(call.func);
    }
  }

  void run(size_t first, size_t last) override {
    for (size_t k = first; k < last; ++k) call(k);
  }

  void run_profiled(size_t first, size_t last, std::vector<double>& seconds) override {
    for (size_t k = first; k < last; ++k) {
      auto t0 = std::chrono::steady_clock::now();
      call(k);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }

  bool repoint(int id, void* data) override {
    for (size_t k = 0; k < kernels_.size(); ++k)
      for (size_t a = 0; a < kernels_[k].args.size() && kernels_[k].device == KernelDevice::CPU; ++a)
        if (kernels_[k].args[a] == id) args_[k][a] = data;
    return true;
  }

 private:
  void call(size_t k) {
    KernelVars& kv = kernel_vars_[k];
    for (size_t i = 0; i < kv.values.size(); ++i) kv.values[i] = (*shape_values_)[kv.graph_index[i]];
    loom_set_last_error("");
    int32_t rc = fns_[k](args_[k].data());
    if (rc != 0) {
      const char* msg = loom_get_last_error();
      LOOM_THROW(RuntimeError, "kernel '", kernels_[k].func, "' (node '", kernels_[k].node,
                 "'): ", msg && *msg ? msg : "failed", " (code ", rc, ")");
    }
  }

  // A kernel's shape-variable values (module.h ABI: its last argument), copied from the run's.
  struct KernelVars {
    std::vector<size_t> graph_index;
    std::vector<int64_t> values;
  };

  Module module_;
  std::vector<KernelCall> kernels_;
  std::shared_ptr<const std::vector<int64_t>> shape_values_;
  std::vector<KernelVars> kernel_vars_;
  std::vector<CompiledFn> fns_;
  std::vector<std::vector<void*>> args_;
};

std::shared_ptr<CpuRunner> make_cpu_runner(const RunnerInputs& in) { return std::make_shared<CpuRunner>(in); }
KernelRunner& as_runner(CpuRunner& r) { return r; }

}  // namespace loom::runtime
