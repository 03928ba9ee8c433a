#include "loom/accel/board_estimate.h"

#include <algorithm>

namespace loom::accel {

int board_hp_bits(const AccelConfig& config, const Board& board) {
  return std::max(32, std::min(config.dram_bus_bytes() * 8, board.hp_port_max_bits));  // 32: the narrowest HP port
}

double board_dram_bytes_per_cycle(const AccelConfig& config, const Board& board, int clock_mhz) {
  if (clock_mhz <= 0) clock_mhz = board.pl_clock_mhz;
  return std::min(board_hp_bits(config, board) / 8.0, board.ddr_gbytes_per_s * 1e3 / clock_mhz);
}

BoardEstimate estimate_on_board(const std::vector<KernelWork>& kernels, const Board& board, int clock_mhz) {
  BoardEstimate e;
  e.clock_mhz = clock_mhz > 0 ? clock_mhz : board.pl_clock_mhz;
  e.cpu_peak_ops_per_s = board.cores * board.cpu_ghz * 1e9 * board.fp32_flops_per_cycle;
  e.ddr_bytes_per_s = board.ddr_gbytes_per_s * 1e9;
  for (const KernelWork& k : kernels) {
    BoardEstimate::Kernel out{k.name, k.accel, 0, "cycles"};
    if (k.accel) {
      out.seconds = double(k.cycles) / (e.clock_mhz * 1e6);
      e.accel_cycles += k.cycles;
      e.accel_seconds += out.seconds;
    } else {
      const double compute = k.ops / e.cpu_peak_ops_per_s, memory = k.bytes / e.ddr_bytes_per_s;
      out.seconds = std::max(compute, memory);
      out.bound = k.ops <= 0 ? "memory (operations not counted)" : compute >= memory ? "compute" : "memory";
      if (k.ops <= 0) ++e.uncounted_cpu_kernels;
      e.cpu_ops += k.ops;
      e.cpu_bytes += k.bytes;
      e.cpu_seconds += out.seconds;
    }
    e.kernels.push_back(out);
  }
  return e;
}

}  // namespace loom::accel
