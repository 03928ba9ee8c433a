// What a stream of instructions does, counted from its fields alone: the accelerator's functional
// counters (AccelCounter up to kFirstTimingCounter) without executing anything. The functional
// simulator counts the same things while it runs and the RTL counts them in hardware; the
// performance model reports these, so that its energy figures rest on the counts the RTL measures.
#pragma once
#include <cstdint>
#include <vector>

#include "loom/accel/isa.h"
#include "loom/runtime/accel_device.h"

namespace loom::accel {

// Indexed by AccelCounter; the entries from kFirstTimingCounter on (timing) are zero.
using ActionCounts = std::vector<uint64_t>;

// Which counters a LOAD or STORE of scratchpad `m` adds to: its instructions (LOAD of inputs and
// weights on the load module, of micro-ops and accumulators on the compute module), its DMA bytes
// (STORE: kind Out), its padding entries (inputs, weights, accumulators; micro-op loads cannot pad).
AccelCounter load_insn_counter(MemType m);
AccelCounter dma_counter(MemType m);
AccelCounter pad_counter(MemType m);

// The counts of a well-formed stream (check_instruction's rules hold).
ActionCounts count_actions(const std::vector<Instruction>& stream, const AccelConfig& config);

}  // namespace loom::accel
