// The host's side of the control block (ap_ctrl_hs and Loom's registers, docs/accel.md) exercised
// around a run, so that a backend's answers can be compared with the reference's: the random
// regression does it in every job that carries no planted fault.
//
// Before the run: CONTROL read, written without START (nothing happens) and read, GIE, IER and ISR written with drawn
// values and read back (ISR toggles on write; it is left at zero), the arguments (INSN_ADDR, INSN_COUNT) written with
// drawn values and read back before the launch writes the program's, a drawn read-only register written and an offset
// past the last register read (both refused). While the run may be in progress: ISR read, and where it shows the run
// still going, START written again, which must be refused (a backend that accepts it is an error; a synchronous backend
// never shows a run in progress). After the run: CONTROL read twice (DONE and READY are cleared by the first read), ISR
// (the run's end raised DONE and READY), INSN_COUNT.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/accel/program.h"
#include "loom/runtime/accel_device.h"

namespace loom::accel {

// One entry per access that a backend's answer must agree on: "ISR <- 0x2 reads 0x3",
// "STATUS <- 0x5 refused".
using ControlTrace = std::vector<std::string>;

// Runs `p` on `device` (run_program) with the exercise drawn from `seed` around it; the trace is
// appended to `trace`. Throws DeviceError when the device accepts START while its run is in progress.
ProgramResult run_with_control_exercise(const Program& p, AccelDevice& device, uint64_t seed, ControlTrace& trace);

// The first entry where `got` differs from `want`, said in words; nullopt when they agree.
std::optional<std::string> first_difference(const ControlTrace& want, const ControlTrace& got);

}  // namespace loom::accel
