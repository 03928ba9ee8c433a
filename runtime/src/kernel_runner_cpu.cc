// The CPU's kernel runner: functions of the model's kernel library, called on the host copies of
// their values with argument arrays made once.
#include <chrono>
#include <map>

#include "kernel_parallelism.h"
#include "kernel_runner.h"
#include "loom/runtime/cpu_target.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"

namespace loom::runtime {

class CpuRunner final : public KernelRunner {
 public:
  explicit CpuRunner(const RunnerInputs& in) : kernels_(in.plan.kernels), shape_values_(in.shape_values) {
    // Another architecture's or a newer CPU's code: say so before the loader or the CPU fails.
    check_cpu_target(in.file.library, in.plan.target_triple, in.plan.target, in.plan.target_features, in.origin);
    module_ = Module::load_from_memory(in.file.library, in.origin);
    calls_.resize(kernels_.size());
    variants_.resize(kernels_.size());
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const KernelCall& call = kernels_[k];
      if (call.device != KernelDevice::CPU) continue;
      prepare(in, call, nullptr, calls_[k]);
      variants_[k].resize(call.variants.size());
      for (size_t v = 0; v < call.variants.size(); ++v) {
        Variant& var = variants_[k][v];
        var.graph_index = graph_index(in, call.variants[v].func, call.variants[v].var);
        var.value = call.variants[v].value;
        var.from = call.variants[v].from ? call.variants[v].from : var.value;
        prepare(in, call, &call.variants[v], var.call);
      }
    }
  }

  void run(size_t first, size_t last) override {
    // Kernels of run-time shapes do different work from call to call: no two calls compare.
    bool symbolic = false;
    for (size_t k = first; k < last; ++k) symbolic = symbolic || !calls_[k].values.empty();
    if (symbolic) {
      for (size_t k = first; k < last; ++k) call(k);
      return;
    }
    parallelism_[first].run(first, last, [this](size_t k) { call(k); });
  }

  // Each kernel the way run() runs it now.
  void run_profiled(size_t first, size_t last, std::vector<double>& seconds) override {
    const RangeParallelism& choice = parallelism_[first];
    for (size_t k = first; k < last; ++k) {
      auto t0 = std::chrono::steady_clock::now();
      if (choice.serial(k - first)) {
        SerialLoops alone;
        call(k);
      } else {
        call(k);
      }
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }

  bool repoint(int id, void* data) override {
    for (size_t k = 0; k < kernels_.size(); ++k) {
      if (kernels_[k].device != KernelDevice::CPU) continue;
      for (size_t a = 0; a < kernels_[k].args.size(); ++a) {
        if (kernels_[k].args[a] != id) continue;
        calls_[k].args[a] = data;
        for (Variant& v : variants_[k]) v.call.args[a] = data;
      }
    }
    return true;
  }

 private:
  // A function ready to call: its arguments array (the values' host copies, then its shape
  // variables' values, module.h ABI) and where those values come from.
  struct Call {
    CompiledFn fn = nullptr;
    std::vector<void*> args;
    std::vector<size_t> graph_index;  // of each shape variable it takes
    std::vector<int64_t> values;
  };
  struct Variant {
    size_t graph_index = 0;       // of the shape variable it is for
    int64_t from = 0, value = 0;  // the values it runs for
    Call call;
  };

  size_t graph_index(const RunnerInputs& in, const std::string& func, const std::string& var) const {
    for (size_t at = 0; at < in.plan.shape_vars.size(); ++at)
      if (in.plan.shape_vars[at].name == var) return at;
    LOOM_THROW(ModelError, in.origin, ": kernel '", func, "' takes the shape variable '", var,
               "', which the model does not declare");
  }

  void prepare(const RunnerInputs& in, const KernelCall& call, const KernelVariant* variant, Call& c) {
    const std::string& func = variant ? variant->func : call.func;
    if (!module_.has_function(func))
      LOOM_THROW(ModelError, in.origin, ": kernel '", func, "' (node '", call.node,
                 "') is missing from the kernel library");
    check_arguments(in, call, module_.signature(func).args, variant);
    for (int id : call.args) {
      if (!in.host[size_t(id)])
        LOOM_THROW(ModelError, in.origin, ": CPU kernel '", func, "' reads '", in.plan.values[size_t(id)].name,
                   "', which lives only on the accelerator");
      c.args.push_back(in.host[size_t(id)]);
    }
    for (const std::string& v : module_.signature(func).shape_vars) c.graph_index.push_back(graph_index(in, func, v));
    c.values.resize(c.graph_index.size());
    if (!c.values.empty()) c.args.push_back(c.values.data());
    c.fn = module_.get_function(func);
  }

  void call(size_t k) {
    Call* c = &calls_[k];
    for (Variant& v : variants_[k])
      if (int64_t x = (*shape_values_)[v.graph_index]; v.from <= x && x <= v.value) {
        c = &v.call;
        break;
      }
    for (size_t i = 0; i < c->values.size(); ++i) c->values[i] = (*shape_values_)[c->graph_index[i]];
    loom_set_last_error("");
    int32_t rc = c->fn(c->args.data());
    if (rc != 0) {
      const char* msg = loom_get_last_error();
      LOOM_THROW(RuntimeError, "kernel '", kernels_[k].func, "' (node '", kernels_[k].node,
                 "'): ", msg && *msg ? msg : "failed", " (code ", rc, ")");
    }
  }

  Module module_;
  std::vector<KernelCall> kernels_;
  std::shared_ptr<const std::vector<int64_t>> shape_values_;
  std::vector<Call> calls_;
  std::vector<std::vector<Variant>> variants_;
  std::map<size_t, RangeParallelism> parallelism_;  // per range of kernels run(), by its first
};

std::shared_ptr<CpuRunner> make_cpu_runner(const RunnerInputs& in) { return std::make_shared<CpuRunner>(in); }
KernelRunner& as_runner(CpuRunner& r) { return r; }

}  // namespace loom::runtime
