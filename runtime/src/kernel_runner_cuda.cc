// The GPU's kernel runner: functions of the model's CUDA program launched on one stream per run of
// consecutive GPU kernels. The storages the GPU touches and the parameter blob have device copies
// (the blob uploaded once, at load); a run's uploads are copied in before its first launch and its
// downloads back after its last. From a run's second time on (ExecutorOptions::cuda_graphs) its
// launches are captured once as a CUDA graph and replayed with one launch.
#include <chrono>
#include <map>

#include "kernel_runner.h"
#include "loom/runtime/cuda.h"
#include "loom/runtime/error.h"

namespace loom::runtime {

class CudaRunner final : public KernelRunner {
 public:
  explicit CudaRunner(const RunnerInputs& in)
      : kernels_(in.plan.kernels), host_(in.host), ordinal_(in.options.cuda_device), graphs_(in.options.cuda_graphs) {
    if (in.file.cuda_program.empty()) LOOM_THROW(ModelError, in.origin, ": CUDA kernels but no CUDA program");
    CudaProgram program = CudaProgram::deserialize(in.file.cuda_program, in.origin);
    try {
      module_ = CudaModule::load(program, ordinal_);
    } catch (const DeviceError& e) {
      LOOM_THROW(DeviceError, in.origin, ": its kernels run on a GPU: ", e.what());
    }
    const std::vector<ExecutorValue>& values = in.plan.values;
    for (const ExecutorValue& v : values) nbytes_.push_back(v.nbytes());
    // Device copies of what the GPU kernels touch: their storages and the parameter blob.
    std::vector<bool> storage_used(in.plan.storages.size());
    bool params_used = false;
    for (const KernelCall& call : kernels_)
      if (call.device == KernelDevice::Cuda)
        for (int id : call.args) {
          const ExecutorValue& v = values[size_t(id)];
          if (v.kind == ValueKind::Param) params_used = true;
          if (v.kind == ValueKind::Input || v.kind == ValueKind::Temp) storage_used[v.storage] = true;
        }
    const DLDevice dev = cuda_device(ordinal_);
    for (size_t s = 0; s < in.plan.storages.size(); ++s)
      storages_.push_back(storage_used[s] ? NDArray::empty({int64_t(std::max<uint64_t>(in.plan.storages[s], 1))},
                                                           DataType::UInt(8), dev)
                                          : NDArray());
    if (params_used && in.file.params_bytes) {
      params_ = NDArray::empty({int64_t(in.file.params_bytes)}, DataType::UInt(8), dev);
      cuda_copy_to_device(params_.raw_data(), in.file.params.get(), in.file.params_bytes, ordinal_);
      cuda_synchronize(ordinal_);  // the first run may have no upload that would wait for this copy
    }
    for (const ExecutorValue& v : values) {
      void* p = nullptr;
      if (v.kind == ValueKind::Param && params_.defined())
        p = static_cast<uint8_t*>(params_.raw_data()) + v.param_offset;
      if ((v.kind == ValueKind::Input || v.kind == ValueKind::Temp) && storages_[v.storage].defined())
        p = static_cast<uint8_t*>(storages_[v.storage].raw_data()) + v.storage_offset;
      dev_.push_back(p);
    }
    function_.resize(kernels_.size());
    args_.resize(kernels_.size());
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const KernelCall& call = kernels_[k];
      if (call.device != KernelDevice::Cuda) continue;
      const CudaFunction* fn = nullptr;
      for (size_t f = 0; f < program.functions.size() && !fn; ++f)
        if (program.functions[f].name == call.func) {
          fn = &program.functions[f];
          function_[k] = f;
        }
      if (!fn)
        LOOM_THROW(ModelError, in.origin, ": kernel '", call.func, "' (node '", call.node,
                   "') is missing from the CUDA program");
      check_arguments(in, call, fn->args);
      for (int id : call.args) {
        if (!dev_[size_t(id)])
          LOOM_THROW(ModelError, in.origin, ": kernel '", call.func, "' reads '", values[size_t(id)].name,
                     "', which has no device copy");
        args_[k].push_back(dev_[size_t(id)]);
      }
      for (const auto* list : {&call.upload, &call.download})
        for (int id : *list)
          if (!host_[size_t(id)] || !dev_[size_t(id)])
            LOOM_THROW(ModelError, in.origin, ": node '", call.node, "' copies '", values[size_t(id)].name,
                       "', which has no ", host_[size_t(id)] ? "device" : "host", " copy");
    }
  }

  void run(size_t first, size_t last) override {
    Run& r = run_state(first);
    copy_in(first, last);
    replayed_ = false;
    if (graphs_ && r.times >= 1) {
      if (!r.stream->has_graph()) {
        r.stream->begin_capture();
        try {
          launch(first, last, r);
        } catch (...) {
          try {
            r.stream->end_capture();
          } catch (...) {
          }
          throw;
        }
        r.stream->end_capture();
      }
      r.stream->launch_graph();
      replayed_ = true;
    } else {
      launch(first, last, r);
    }
    r.stream->synchronize();
    ++r.times;
    copy_out(first, last);
  }

  void run_profiled(size_t first, size_t last, std::vector<double>& seconds) override {
    Run& r = run_state(first);
    copy_in(first, last);
    for (size_t k = first; k < last; ++k)
      seconds.push_back(double(r.stream->time_ms([&] { module_.launch(function_[k], args_[k], r.stream->handle()); })) /
                        1e3);
    copy_out(first, last);
  }

  bool replayed() const { return replayed_; }

 private:
  // A run of consecutive GPU kernels (keyed by its first): its stream and how often it ran.
  struct Run {
    std::unique_ptr<CudaStream> stream;
    int times = 0;
  };

  Run& run_state(size_t first) {
    Run& r = runs_[first];
    if (!r.stream) r.stream = std::make_unique<CudaStream>(ordinal_);
    return r;
  }

  void launch(size_t first, size_t last, Run& r) {
    for (size_t k = first; k < last; ++k) {
      try {
        module_.launch(function_[k], args_[k], r.stream->handle());
      } catch (const DeviceError& e) {
        LOOM_THROW(DeviceError, "CUDA kernel '", kernels_[k].func, "' (node '", kernels_[k].node, "'): ", e.what());
      }
    }
  }

  // What the run's kernels read from other devices is on the host before the run starts, and what
  // they make for others is read only after it ends.
  // A copy from pageable host memory may return before its DMA ends, and the runs' streams do not
  // wait for the default stream: the context is synchronized before the first launch.
  void copy_in(size_t first, size_t last) {
    bool copied = false;
    for (size_t k = first; k < last; ++k)
      for (int id : kernels_[k].upload) {
        cuda_copy_to_device(dev_[size_t(id)], host_[size_t(id)], nbytes_[size_t(id)], ordinal_);
        copied = true;
      }
    if (copied) cuda_synchronize(ordinal_);
  }
  void copy_out(size_t first, size_t last) {
    for (size_t k = first; k < last; ++k)
      for (int id : kernels_[k].download)
        cuda_copy_to_host(host_[size_t(id)], dev_[size_t(id)], nbytes_[size_t(id)], ordinal_);
  }

  std::vector<KernelCall> kernels_;
  std::vector<void*> host_;
  int ordinal_ = 0;
  bool graphs_ = true;
  CudaModule module_;
  std::vector<uint64_t> nbytes_;
  std::vector<NDArray> storages_;  // per storage: its device copy (undefined where no GPU kernel touches it)
  NDArray params_;
  std::vector<void*> dev_;  // per value: its device copy, or null
  std::vector<size_t> function_;
  std::vector<std::vector<void*>> args_;
  std::map<size_t, Run> runs_;
  bool replayed_ = false;
};

std::shared_ptr<CudaRunner> make_cuda_runner(const RunnerInputs& in) { return std::make_shared<CudaRunner>(in); }
KernelRunner& as_runner(CudaRunner& r) { return r; }
bool replayed_graph(const CudaRunner& r) { return r.replayed(); }

}  // namespace loom::runtime
