// Faults planted in a program: one word of its instruction stream changed so that the hardware must
// stop with a fault it names (an illegal opcode, memory type or ALU operation, reserved bits set, a
// memory type its opcode cannot use, a dependency flag toward no module, a malformed transfer shape,
// a shift past 31, a scratchpad overflow, a micro-op range past the buffer, an accumulator index
// that leaves the buffer at run time, a DMA outside device memory, a dependency deadlock), or the stream the host
// launches changed (an unaligned address, an address outside device memory, a count that leaves out the FINISH). A
// random regression plants them (`loom regress`, the random jobs' "faults") so that every backend's fault detection is
// checked against the reference's: the same fault at the same instruction.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "loom/accel/program.h"
#include "loom/runtime/accel_device.h"

namespace loom::accel {

struct PlantedFault {
  uint32_t index = 0;  // the changed instruction (a stream fault: the one the hardware stops at)
  std::string what;    // "illegal opcode 6 in instruction 17 (GEMM)"
};

// How the last run on a device ended: ERROR in its STATUS register, the instruction its ERROR_INDEX
// names, and the fault STATUS names (the RTL and SystemC name it; the functional simulator says it
// only in its message).
struct RunStop {
  bool error = false;
  AccelFault fault = AccelFault::None;
  uint32_t index = 0;
  std::string describe() const;  // "illegal opcode at instruction 17", "a fault at ...", "no fault"
  // Both finished, or both stopped at the same instruction with the same fault where both name one.
  bool agrees(const RunStop& other) const;
};
RunStop run_stop(AccelDevice& device);

// Changes one instruction of `p` (chosen with its kind from `seed`); nullopt when the stream has no
// instruction the drawn kind applies to (every kind applies to some instruction of a random program).
std::optional<PlantedFault> plant_fault(Program& p, uint64_t seed);

}  // namespace loom::accel
