// Latency of a compiled model on a board (boards.h), estimated before there is one: accelerator
// kernels take the cycles the performance model counted (run with the board's DRAM bandwidth per
// fabric cycle) at the board's fabric clock; CPU kernels take a roofline on the board's Arm cores,
// the longer of their arithmetic at the cores' NEON peak and their bytes at the DDR's bandwidth.
// The CPU figure is a lower bound (real kernels reach a fraction of the peak); `loom-run --profile`
// on the board measures what it estimates. docs/fpga.md has how to read it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loom/accel/boards.h"
#include "loom/accel/config.h"

namespace loom::accel {

// What one kernel call does: the accelerator's cycles, or a CPU kernel's operations
// (ir/op_count.h; 0: not counted) and the bytes it reads and writes.
struct KernelWork {
  std::string name;
  bool accel = false;
  uint64_t cycles = 0;
  double ops = 0, bytes = 0;
};

struct BoardEstimate {
  struct Kernel {
    std::string name;
    bool accel = false;
    double seconds = 0;
    const char* bound = "";  // "cycles", "compute", "memory", "memory (operations not counted)"
  };
  std::vector<Kernel> kernels;
  int clock_mhz = 0;
  uint64_t accel_cycles = 0;
  double accel_seconds = 0, cpu_seconds = 0, cpu_ops = 0, cpu_bytes = 0;
  double cpu_peak_ops_per_s = 0, ddr_bytes_per_s = 0;
  int uncounted_cpu_kernels = 0;
  double seconds() const { return accel_seconds + cpu_seconds; }
};

// The HP port's data width a design for `config` gets on `board` (the bus's, up to the port's).
int board_hp_bits(const AccelConfig& config, const Board& board);
// The bandwidth the performance model should give the accelerator on `board`: the HP port's
// width a cycle, or the DDR's bandwidth over the clock where that is less.
double board_dram_bytes_per_cycle(const AccelConfig& config, const Board& board, int clock_mhz);

// clock_mhz 0: the board's default fabric clock.
BoardEstimate estimate_on_board(const std::vector<KernelWork>& kernels, const Board& board, int clock_mhz = 0);

}  // namespace loom::accel
