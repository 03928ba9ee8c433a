// Graph executor: runs a compiled model (.loom file, see model_file.h) with the runtime alone.
// The executor graph lists the model's values (inputs, parameters, planned temporaries), the
// storage buffers of the static memory plan, and the kernel calls in execution order; each kernel
// is a function of the model's shared library following the ABI in module.h.
//
//   auto ex = GraphExecutor::load("resnet18.loom");
//   ex.set_input(0, image);
//   ex.run();
//   NDArray logits = ex.get_output(0);
#pragma once
#include <string>
#include <vector>

#include "loom/runtime/model_file.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"

namespace loom::runtime {

inline constexpr const char* kGraphFormat = "loom-graph";
inline constexpr int kGraphFormatVersion = 1;

struct KernelCall {
  std::string node;  // the graph node(s) it computes, for profiles and errors
  std::string func;  // function in the kernel library
  std::vector<int> args;  // value ids: inputs, then the output
};

class GraphExecutor {
 public:
  // Throws ModelError (malformed/truncated/other-version file, inconsistent graph) or
  // RuntimeError (unreadable file) naming the file.
  static GraphExecutor load(const std::string& path);
  static GraphExecutor from_model_file(const ModelFile& file, const std::string& origin);

  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  const ArgSpec& input_spec(size_t i) const;
  const ArgSpec& output_spec(size_t i) const;
  // Copies `value` into input i (or the input named `name`). ShapeError/TypeError name the input.
  void set_input(size_t i, const NDArray& value);
  void set_input(const std::string& name, const NDArray& value);
  void run();
  // Runs and returns how long each kernel took (seconds), in kernel order.
  std::vector<double> run_profiled();
  NDArray get_output(size_t i) const;  // a copy
  // set_input for every input, run, and every output.
  std::vector<NDArray> run(const std::vector<NDArray>& inputs);

  const std::vector<KernelCall>& kernels() const { return kernels_; }
  const std::string& target() const { return target_; }
  const std::string& model_name() const { return model_name_; }
  // Bytes of the planned temporaries (inputs excluded), and what one buffer per temporary would take.
  uint64_t planned_bytes() const { return planned_bytes_; }
  uint64_t unplanned_bytes() const { return unplanned_bytes_; }
  uint64_t params_bytes() const { return params_bytes_; }

 private:
  struct Value {
    ArgSpec spec;
    void* data = nullptr;
  };
  const Value& value_at(int id) const;
  void call_kernel(size_t k);

  Module module_;
  std::shared_ptr<uint8_t> params_;
  std::vector<std::shared_ptr<uint8_t>> storages_;
  std::vector<Value> values_;
  std::vector<int> inputs_, outputs_;
  std::vector<KernelCall> kernels_;
  std::vector<CompiledFn> fns_;
  std::vector<std::vector<void*>> arg_ptrs_;
  std::string target_, model_name_;
  uint64_t planned_bytes_ = 0, unplanned_bytes_ = 0, params_bytes_ = 0;
};

}  // namespace loom::runtime
