// Graph executor: runs a compiled model (.loom file, see model_file.h) with the runtime alone.
// The executor graph (executor_graph.h) lists the model's values (inputs, parameters, planned
// temporaries), the storage buffers of the static memory plan, and the kernel calls in execution
// order; a CPU kernel is a function of the model's shared library following the ABI in module.h,
// an accelerator kernel a stream of the model's accelerator image, a CUDA kernel a function of its
// CUDA program. One model may mix the three: one loop hands each run of consecutive kernels on a
// device to that device's runner, prepared once at load (runtime/src/kernel_runner.h), which also
// copies values between the host and its device.
//
//   auto ex = GraphExecutor::load("resnet18.loom");
//   ex.set_input(0, image);
//   ex.run();
//   NDArray logits = ex.get_output(0);
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/accel_image.h"
#include "loom/runtime/executor_graph.h"
#include "loom/runtime/model_file.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"

namespace loom::runtime {

// The per-device runners (runtime/src/kernel_runner.h).
class KernelRunner;
class CpuRunner;
class AccelRunner;
class CudaRunner;

struct ExecutorOptions {
  std::string accel_backend = "fsim";  // the device backend accelerator kernels run on
  std::string accel_config_json;       // its config (empty: the one the model was compiled for)
  uint64_t max_host_bytes = 0;         // refuse models whose activation buffers need more (0: physical memory)
  int cuda_device = 0;                 // the GPU CUDA kernels run on
  // From the second run on, replay each run of consecutive CUDA kernels as one captured graph.
  bool cuda_graphs = true;
  // Let NaN and infinity into the inputs of a quantized model (whose int8 layers would turn them
  // into plausible-looking numbers); by default set_input refuses them, naming the input.
  bool allow_non_finite = false;
};

// What the accelerator did in the last run of one accelerator kernel.
struct AccelKernelStats {
  uint64_t cycles = 0, gemm_macs = 0, dma_bytes = 0;
  uint64_t dma_wgt_bytes = 0;      // of dma_bytes, the weights' loads
  std::vector<uint64_t> counters;  // every counter, indexed by AccelCounter (accel_device.h)
  double seconds = 0;              // host wall time of the stream, copies included
};

class GraphExecutor {
 public:
  // Throws ModelError (malformed/truncated/other-version file, inconsistent graph) or
  // RuntimeError (unreadable file) naming the file.
  static GraphExecutor load(const std::string& path, const ExecutorOptions& options = {});
  static GraphExecutor from_model_file(const ModelFile& file, const std::string& origin,
                                       const ExecutorOptions& options = {});

  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  const ArgSpec& input_spec(size_t i) const;
  const ArgSpec& output_spec(size_t i) const;
  // Copies `value` into input i (or the input named `name`). ShapeError/TypeError name the input.
  // An input with symbolic dimensions takes any shape its dims allow, each shape variable within
  // its range; the inputs must agree on every variable (checked by run, naming both).
  void set_input(size_t i, const NDArray& value);
  void set_input(const std::string& name, const NDArray& value);
  // Runs after which every kernel runs the way it keeps (the CPU kernels' choice between the
  // thread pool and the calling thread, runtime/src/kernel_parallelism.h): the warm-up of a
  // benchmark that times the steady state. After a change of thread count, as many again.
  static constexpr int kSettlingRuns = 17;
  void run();
  // Runs and returns how long each kernel took (seconds), in kernel order.
  std::vector<double> run_profiled();
  NDArray get_output(size_t i) const;  // a copy, of the last run's shape
  // The model's shape variables (empty: every shape is static) and their values in the last run
  // (after run; before it, as the inputs set so far give them).
  const std::vector<ShapeVar>& shape_vars() const { return shape_vars_; }
  std::map<std::string, int64_t> shape_values() const;
  // set_input for every input, run, and every output.
  std::vector<NDArray> run(const std::vector<NDArray>& inputs);
  // Output `output`'s value becomes input `input`'s at each advance_carried(), without a copy: the
  // two get buffers of their own, which swap (a decoder's present key/value into its past;
  // generate.h). Same element type and rank; CPU kernels only; ModelError naming them otherwise.
  void carry(size_t output, size_t input);
  // After a run: each carried input holds its output's value, at the run's shape.
  void advance_carried();

  const std::vector<KernelCall>& kernels() const { return kernels_; }
  bool uses_accelerator() const { return accel_ != nullptr; }
  bool uses_gpu() const { return cuda_ != nullptr; }
  // Whether the last run of GPU kernels replayed its captured CUDA graph (from the second run on).
  bool replayed_cuda_graph() const;
  // Per kernel (in kernel order), the accelerator's figures of the last run; zero for CPU kernels.
  const std::vector<AccelKernelStats>& accel_stats() const;
  // The device accelerator kernels run on (null without accelerator kernels): for backend-specific
  // views such as the simulators' commit records.
  AccelDevice* accel_device() const;
  const std::string& target() const { return target_; }
  const std::string& model_name() const { return model_name_; }
  // Bytes of the planned temporaries (inputs excluded), and what one buffer per temporary would take.
  uint64_t planned_bytes() const { return planned_bytes_; }
  uint64_t unplanned_bytes() const { return unplanned_bytes_; }
  uint64_t params_bytes() const { return params_bytes_; }

 private:
  struct Value {
    ArgSpec spec;
    void* data = nullptr;  // host copy (null for accelerator-only parameters)
    uint64_t nbytes = 0;
    bool finite_only = false;      // an input that refuses NaN and infinity
    bool in_place_region = false;  // ExecutorValue::in_place_region: carry refuses it
  };
  // Consecutive kernels [first, last) on one device, and that device's runner.
  struct KernelRun {
    KernelRunner* runner;
    size_t first, last;
  };
  const Value& value_at(int id) const;
  // ShapeError `what` unless input i takes `shape` (its dims, each variable within its range).
  void check_shape(size_t i, const std::vector<int64_t>& shape, const std::string& what) const;
  // Points value `id` at `data` for every kernel (the carried buffers).
  void repoint(int id, void* data);
  struct Carried {
    size_t output, input;
  };
  std::vector<Carried> carried_;
  std::vector<std::shared_ptr<uint8_t>> carried_buffers_;
  // The shape variables from every input's shape (ShapeError naming inputs that disagree).
  void bind_shapes();
  std::vector<int64_t> current_shape(int id) const;

  std::shared_ptr<uint8_t> params_;
  std::vector<std::shared_ptr<uint8_t>> storages_;
  std::vector<Value> values_;
  std::vector<int> inputs_, outputs_;
  std::vector<KernelCall> kernels_;
  std::shared_ptr<CpuRunner> cpu_;
  std::shared_ptr<AccelRunner> accel_;
  std::shared_ptr<CudaRunner> cuda_;
  std::vector<KernelRun> runs_;
  std::vector<ShapeVar> shape_vars_;
  std::shared_ptr<std::vector<int64_t>> shape_values_ = std::make_shared<std::vector<int64_t>>();
  std::vector<std::vector<int64_t>> input_shapes_;  // of the values set, per input
  std::string target_, model_name_;
  bool allow_non_finite_ = false;
  uint64_t planned_bytes_ = 0, unplanned_bytes_ = 0, params_bytes_ = 0;
};

}  // namespace loom::runtime
