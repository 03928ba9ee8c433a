// `loom run --board`: the model's kernels as the estimate takes them, and the estimate printed
// and as JSON (accel/board_estimate.h has the model).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <vector>

#include "loom/accel/board_estimate.h"
#include "loom/runtime/executor_graph.h"
#include "loom/runtime/graph_executor.h"

namespace loom::tools {

// Per kernel call of the last run: the accelerator's cycles, or a CPU kernel's operations and the
// bytes of the values it reads and writes (from `graph`, the executor's graph).
std::vector<accel::KernelWork> kernel_work(const runtime::ExecutorGraph& graph, const runtime::GraphExecutor& ex);

void print_board_estimate(std::ostream& os, const accel::BoardEstimate& e, const accel::Board& board,
                          const std::optional<accel::AccelConfig>& config);
nlohmann::json board_estimate_json(const accel::BoardEstimate& e, const accel::Board& board);

}  // namespace loom::tools
