// What the accelerator's schedules need of its config, derived in one place: the GEMM core's
// blocking (batch x block_in x block_out) and the scratchpad depths the tilings must fit.
#pragma once
#include "loom/accel/config.h"
#include "loom/ops/accel_schedules.h"

namespace loom::ops {

struct AccelTarget {
  Blocking blocking;
  AccelLimits limits;
  // The widths the config moves inputs, weights and outputs in: an operator's test data and its
  // outputs' clamp (make_accel_operator) stay within them.
  int inp_bits = 8, wgt_bits = 8, out_bits = 8;
};

// Narrow inputs, weights and outputs change nothing here: they are packed in device memory
// (codegen's accel_arg_bits), and the scratchpads are counted in entries. 16-bit accumulators
// wrap, so only layers whose sums provably fit may use them: `bounded` says the caller checked
// each layer (graph::partition_accel does, keeping the others on the CPU); otherwise a ConfigError
// (the operator tools: the tuner, loom accel-run, loom dse).
inline AccelTarget accel_target(const accel::AccelConfig& config, bool bounded = false) {
  if (!bounded) config.require_32bit_accumulators("Loom's accelerator operators (the tuner, loom accel-run, loom dse)");
  return {{config.batch, config.block_in, config.block_out},
          {config.inp_depth(), config.wgt_depth(), config.acc_depth()},
          config.inp_bits,
          config.wgt_bits,
          config.out_bits};
}

}  // namespace loom::ops
