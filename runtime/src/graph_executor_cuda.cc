// GraphExecutor for models whose kernels run on CUDA: storages and parameters live on the GPU,
// inputs are copied in and outputs out around each run, kernels launch on one stream; from the
// second run on (ExecutorOptions::cuda_graphs) the launches are captured once as a CUDA graph and
// replayed with one launch.
#include "loom/runtime/cuda.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"

#include <chrono>

namespace loom::runtime {

struct GraphExecutor::CudaState {
  CudaModule module;
  int ordinal = 0;
  bool graphs = true;
  std::vector<NDArray> storages;         // device memory of the memory plan
  NDArray params;                        // the parameter blob on the device
  std::vector<void*> dev;                // per value
  std::vector<std::vector<void*>> args;  // per kernel
  std::vector<size_t> function;          // per kernel: its function's index in the module
  std::unique_ptr<CudaStream> stream;
  int runs = 0;
  bool replayed = false;
};

std::shared_ptr<GraphExecutor::CudaState> GraphExecutor::load_cuda(const GraphExecutor& ex, const ModelFile& file,
                                                                   const ExecutorGraph& plan, const std::string& origin,
                                                                   const ExecutorOptions& options) {
  if (file.cuda_program.empty()) LOOM_THROW(ModelError, origin, ": CUDA kernels but no CUDA program");
  CudaProgram program = CudaProgram::deserialize(file.cuda_program, origin);
  auto st = std::make_shared<CudaState>();
  st->ordinal = options.cuda_device;
  st->graphs = options.cuda_graphs;
  try {
    st->module = CudaModule::load(program, st->ordinal);
  } catch (const DeviceError& e) {
    LOOM_THROW(DeviceError, origin, ": its kernels run on a GPU: ", e.what());
  }
  const std::vector<ExecutorValue>& values = plan.values;
  DLDevice dev = cuda_device(st->ordinal);
  for (uint64_t bytes : plan.storages)
    st->storages.push_back(NDArray::empty({int64_t(std::max<uint64_t>(bytes, 1))}, DataType::UInt(8), dev));
  if (file.params_bytes) {
    st->params = NDArray::empty({int64_t(file.params_bytes)}, DataType::UInt(8), dev);
    cuda_copy_to_device(st->params.raw_data(), file.params.get(), file.params_bytes, st->ordinal);
  }
  for (auto& v : values) {
    void* p = nullptr;
    if (v.kind == ValueKind::Param) p = static_cast<uint8_t*>(st->params.raw_data()) + v.param_offset;
    if (v.kind == ValueKind::Input || v.kind == ValueKind::Temp)
      p = static_cast<uint8_t*>(st->storages[v.storage].raw_data()) + v.storage_offset;
    st->dev.push_back(p);
  }
  for (auto& call : ex.kernels_) {
    const CudaFunction* fn = nullptr;
    for (size_t f = 0; f < program.functions.size() && !fn; ++f)
      if (program.functions[f].name == call.func) {
        fn = &program.functions[f];
        st->function.push_back(f);
      }
    if (!fn)
      LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' (node '", call.node,
                 "') is missing from the CUDA program");
    if (fn->args.size() != call.args.size())
      LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' takes ", fn->args.size(),
                 " arguments, the graph passes ", call.args.size());
    std::vector<void*> ptrs;
    for (size_t a = 0; a < call.args.size(); ++a) {
      const ExecutorValue& v = values[size_t(call.args[a])];
      if (v.shape != fn->args[a].shape || v.dtype != fn->args[a].dtype)
        LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' argument ", a, " expects ", fn->args[a].str(),
                   ", the graph passes '", v.name, "'");
      if (!st->dev[size_t(call.args[a])])
        LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' reads '", v.name, "', which has no device copy");
      ptrs.push_back(st->dev[size_t(call.args[a])]);
    }
    st->args.push_back(std::move(ptrs));
  }
  st->stream = std::make_unique<CudaStream>(st->ordinal);
  return st;
}

bool GraphExecutor::replayed_cuda_graph() const { return cuda_ && cuda_->replayed; }

void GraphExecutor::run_cuda() {
  CudaState& c = *cuda_;
  copy_inputs_to_gpu();
  auto launch_all = [&] {
    for (size_t k = 0; k < kernels_.size(); ++k) {
      try {
        c.module.launch(c.function[k], c.args[k], c.stream->handle());
      } catch (const DeviceError& e) {
        LOOM_THROW(DeviceError, "CUDA kernel '", kernels_[k].func, "' (node '", kernels_[k].node, "'): ", e.what());
      }
    }
  };
  c.replayed = false;
  if (c.graphs && c.runs >= 1) {
    if (!c.stream->has_graph()) {
      c.stream->begin_capture();
      try {
        launch_all();
      } catch (...) {
        try {
          c.stream->end_capture();
        } catch (...) {
        }
        throw;
      }
      c.stream->end_capture();
    }
    c.stream->launch_graph();
    c.replayed = true;
  } else {
    launch_all();
  }
  c.stream->synchronize();
  ++c.runs;
  copy_outputs_from_gpu();
}

std::vector<double> GraphExecutor::run_cuda_profiled() {
  CudaState& c = *cuda_;
  copy_inputs_to_gpu();
  std::vector<double> times;
  for (size_t k = 0; k < kernels_.size(); ++k)
    times.push_back(double(c.stream->time_ms([&] { c.module.launch(c.function[k], c.args[k], c.stream->handle()); })) /
                    1e3);
  copy_outputs_from_gpu();
  return times;
}

void GraphExecutor::copy_inputs_to_gpu() {
  for (int id : inputs_) {
    const Value& v = values_[size_t(id)];
    cuda_copy_to_device(cuda_->dev[size_t(id)], v.data, v.nbytes, cuda_->ordinal);
  }
}

void GraphExecutor::copy_outputs_from_gpu() {
  for (int id : outputs_) {
    const Value& v = values_[size_t(id)];
    cuda_copy_to_host(v.data, cuda_->dev[size_t(id)], v.nbytes, cuda_->ordinal);
  }
}

}  // namespace loom::runtime
