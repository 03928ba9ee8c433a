// Built-in workloads of the `loom` tool: a named operator with its default schedule.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/ir/tensor.h"
#include "loom/schedule/schedule.h"

namespace loom::tools {

struct BuiltWorkload {
  std::vector<ir::Tensor> inputs, outputs;
  std::unique_ptr<schedule::Schedule> schedule;
  std::vector<ir::Tensor> args() const {
    auto a = inputs;
    a.insert(a.end(), outputs.begin(), outputs.end());
    return a;
  }
  double flops = 0;  // useful arithmetic operations, for GFLOP/s
};

struct WorkloadInfo {
  std::string name, summary;
  std::function<BuiltWorkload(int size)> build;      // size: problem size knob (0 = default)
  int max_size;                                      // the largest size whose tensors fit comfortably in host memory
  std::function<BuiltWorkload(int size)> build_gpu;  // the same computation with its CUDA schedule
};

const std::vector<WorkloadInfo>& builtin_workloads();
const WorkloadInfo& find_workload(const std::string& name);  // throws loom::Error listing the names
// The workload `name` built for `size` (0: its default); throws loom::Error naming the option
// --size if it is out of the workload's range.
// gpu: the CUDA schedule (lowered with LowerOptions::target_gpu, compiled by codegen/cuda).
BuiltWorkload build_workload(const std::string& name, int size, bool gpu = false);

}  // namespace loom::tools
