#include "board_estimate_report.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>

namespace loom::tools {

namespace {

// "12.345 G" or "0.334 M": operations and bytes at a scale that shows their digits.
std::string scaled(double v) {
  char b[32];
  std::snprintf(b, sizeof b, v >= 1e9 ? "%.3f G" : "%.3f M", v >= 1e9 ? v * 1e-9 : v * 1e-6);
  return b;
}

}  // namespace

std::vector<accel::KernelWork> kernel_work(const runtime::ExecutorGraph& graph, const runtime::GraphExecutor& ex) {
  std::vector<accel::KernelWork> out;
  for (size_t k = 0; k < ex.kernels().size(); ++k) {
    const runtime::KernelCall& call = ex.kernels()[k];
    accel::KernelWork w;
    w.name = call.func + " (" + call.node + ")";
    w.accel = call.device == runtime::KernelDevice::Accel;
    if (w.accel) {
      w.cycles = ex.accel_stats()[k].cycles;
    } else {
      w.ops = call.ops;
      for (int id : call.args) w.bytes += double(graph.values[size_t(id)].nbytes());
    }
    out.push_back(std::move(w));
  }
  return out;
}

void print_board_estimate(std::ostream& os, const accel::BoardEstimate& e, const accel::Board& board,
                          const std::optional<accel::AccelConfig>& config) {
  const auto flags = os.flags();
  os << std::fixed << std::setprecision(3);
  os << "estimated latency on the " << board.title << " (an estimate, not a measurement): " << e.seconds() * 1e3
     << " ms\n";
  const auto accel_kernels = std::count_if(e.kernels.begin(), e.kernels.end(), [](auto& k) { return k.accel; });
  if (accel_kernels)
    os << "  accelerator: " << accel_kernels << " kernels, " << e.accel_cycles << " cycles at " << e.clock_mhz
       << " MHz = " << e.accel_seconds * 1e3 << " ms (the performance model at "
       << accel::board_dram_bytes_per_cycle(*config, board, e.clock_mhz) << " DRAM bytes a cycle: the "
       << accel::board_hp_bits(*config, board) << "-bit HP port)\n";
  os << "  CPU: " << e.kernels.size() - size_t(accel_kernels) << " kernels on " << board.cores << " " << board.cpu
     << " cores at " << board.cpu_ghz << " GHz = " << e.cpu_seconds * 1e3
     << " ms (roofline, a lower bound: " << scaled(e.cpu_ops) << "operations at the NEON peak of "
     << e.cpu_peak_ops_per_s * 1e-9 << " G/s, " << scaled(e.cpu_bytes) << "B at " << e.ddr_bytes_per_s * 1e-9
     << " GB/s)\n";
  if (e.uncounted_cpu_kernels)
    os << "  (" << e.uncounted_cpu_kernels
       << " CPU kernels have shapes known only at run time and count their bytes alone)\n";
  std::vector<const accel::BoardEstimate::Kernel*> slowest;
  for (const auto& k : e.kernels) slowest.push_back(&k);
  std::sort(slowest.begin(), slowest.end(), [](auto* a, auto* b) { return a->seconds > b->seconds; });
  os << "  slowest:\n";
  for (size_t i = 0; i < std::min<size_t>(5, slowest.size()); ++i)
    os << "    " << std::setw(9) << slowest[i]->seconds * 1e3 << " ms  " << (slowest[i]->accel ? "accel" : "cpu  ")
       << "  " << slowest[i]->bound << "  " << slowest[i]->name << "\n";
  os.flags(flags);
}

nlohmann::json board_estimate_json(const accel::BoardEstimate& e, const accel::Board& board) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : e.kernels)
    kernels.push_back(
        {{"kernel", k.name}, {"device", k.accel ? "accel" : "cpu"}, {"ms", k.seconds * 1e3}, {"bound", k.bound}});
  return {{"board", board.name},
          {"estimate", true},
          {"ms", e.seconds() * 1e3},
          {"accel_ms", e.accel_seconds * 1e3},
          {"accel_cycles", e.accel_cycles},
          {"clock_mhz", e.clock_mhz},
          {"cpu_ms", e.cpu_seconds * 1e3},
          {"cpu_ops", e.cpu_ops},
          {"cpu_bytes", e.cpu_bytes},
          {"kernels", kernels}};
}

}  // namespace loom::tools
