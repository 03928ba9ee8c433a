// Faults planted in a program: one word of its instruction stream changed so that the hardware must
// stop with a fault it names (an illegal opcode, memory type or ALU operation, reserved bits set, a
// memory type its opcode cannot use, a dependency flag toward no module, a malformed transfer shape,
// a shift past 31, a scratchpad overflow, a micro-op range past the buffer, a DMA outside device
// memory, a dependency deadlock). A random regression plants them (`loom regress`, the random jobs' "faults") so that
// every backend's fault detection is checked against the reference's: the same fault at the same
// instruction.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "loom/accel/program.h"

namespace loom::accel {

struct PlantedFault {
  uint32_t index = 0;  // the changed instruction
  std::string what;    // "illegal opcode 6 in instruction 17 (GEMM)"
};

// Changes one instruction of `p` (chosen with its kind from `seed`); nullopt when the stream has no
// instruction the drawn kind applies to (every kind applies to some instruction of a random program).
std::optional<PlantedFault> plant_fault(Program& p, uint64_t seed);

}  // namespace loom::accel
