// Internal to loom_runtime: how GraphExecutor runs the kernels of one device. A runner is made once
// per loaded model for a device its kernels use, and prepares then everything its calls need
// (function pointers and argument arrays, device copies of values, streams), checking each call
// against what the model file holds; a run only calls. The executor splits its kernel list into
// runs of consecutive kernels on one device and hands each run to that device's runner, which also
// makes the run's copies between the host and its device (KernelCall::upload, download).
//   kernel_runner_cpu.cc    the kernel library's functions (module.h ABI) on host values
//   kernel_runner_accel.cc  streams of the accelerator image on an AccelDevice
//   kernel_runner_cuda.cc   functions of the CUDA program on one stream, a captured graph per run
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/accel_device.h"
#include "loom/runtime/dtype.h"
#include "loom/runtime/executor_graph.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/model_file.h"

namespace loom::runtime {

class KernelRunner {
 public:
  virtual ~KernelRunner() = default;
  // Runs kernels [first, last) of the model's list (all on this runner's device) with their copies.
  virtual void run(size_t first, size_t last) = 0;
  // The same, appending each kernel's seconds to `seconds`.
  virtual void run_profiled(size_t first, size_t last, std::vector<double>& seconds) = 0;
  // Makes the kernels read and write value `id` at host address `data` from now on (carried
  // values, GraphExecutor::carry); false where this device's copies cannot follow.
  virtual bool repoint(int id, void* data) {
    (void)id, (void)data;
    return false;
  }
};

// What every runner is made from: the model, its executor graph, and each value's host copy
// (null for an accelerator-only parameter).
struct RunnerInputs {
  const ModelFile& file;
  const ExecutorGraph& plan;
  const std::vector<void*>& host;
  const std::string& origin;
  const ExecutorOptions& options;
  // The shape variables' values of the current run, in the order of plan.shape_vars (the executor
  // binds them from the inputs before each run; kernels with symbolic extents read them).
  std::shared_ptr<const std::vector<int64_t>> shape_values;
};

// ModelError naming the origin and the kernel unless the call passes as many values as `expects`
// has arguments, each of the shape and element type its argument expects.
// With `variant`: that variant's arguments, the graph's dims at its value.
void check_arguments(const RunnerInputs& in, const KernelCall& call, const std::vector<ArgSpec>& expects,
                     const KernelVariant* variant = nullptr);

class CpuRunner;
class AccelRunner;
class CudaRunner;
std::shared_ptr<CpuRunner> make_cpu_runner(const RunnerInputs& in);
std::shared_ptr<AccelRunner> make_accel_runner(const RunnerInputs& in);
std::shared_ptr<CudaRunner> make_cuda_runner(const RunnerInputs& in);
KernelRunner& as_runner(CpuRunner& r);
KernelRunner& as_runner(AccelRunner& r);
KernelRunner& as_runner(CudaRunner& r);

// The accelerator runner's device and per-kernel figures of the last run (zero for other kernels).
AccelDevice& accel_device(AccelRunner& r);
const std::vector<AccelKernelStats>& accel_stats(const AccelRunner& r);
// Whether the CUDA runner's last run replayed captured graphs.
bool replayed_graph(const CudaRunner& r);

}  // namespace loom::runtime
