// Internal to loom_runtime: the executor graph of a compiled model (the JSON section of a .loom
// file), parsed and checked before anything is allocated or loaded: every value id in range,
// every shape non-negative and bounded, every value inside its storage buffer or the parameter
// blob. GraphExecutor binds it to memory; the fuzz target fuzz_executor_graph feeds it bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/graph_executor.h"

namespace loom::runtime {

struct PlannedValue {
  enum class Kind { Input, Temp, Param, AccelParam };
  ArgSpec spec;
  Kind kind = Kind::Temp;
  uint64_t nbytes = 0;
  uint64_t param_offset = 0;  // Param: offset in the parameter blob
  size_t storage = 0;         // Input, Temp: the storage buffer
  int64_t accel_offset = -1;  // offset in the accelerator image, if it has a copy there
};

struct ExecutionPlan {
  std::string target, model;
  std::vector<uint64_t> storage_bytes;
  uint64_t planned_bytes = 0, unplanned_bytes = 0;
  std::vector<PlannedValue> values;
  std::vector<int> inputs, outputs;
  std::vector<KernelCall> kernels;
  // Host memory the storage buffers take (what the executor allocates beyond the file).
  uint64_t storage_total() const;
};

// Throws ModelError naming `origin` and what is wrong.
ExecutionPlan parse_execution_plan(const std::string& graph_json, uint64_t params_bytes, const std::string& origin);

// The host memory an executor may allocate by default: the machine's physical memory.
uint64_t default_host_memory_limit();

}  // namespace loom::runtime
