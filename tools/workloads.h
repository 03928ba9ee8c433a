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
  std::function<BuiltWorkload(int size)> build;  // size: problem size knob (0 = default)
};

const std::vector<WorkloadInfo>& builtin_workloads();
const WorkloadInfo& find_workload(const std::string& name);  // throws loom::Error listing the names

}  // namespace loom::tools
