// Registration of the simulator backends ("fsim", and "rtl" where the RTL models are built) with
// the runtime's backend registry (runtime/accel_device.h). A program that links the CMake target
// (Loom::sim or Loom::simulators, loom_sim in Loom's own tree) needs nothing else: the target
// compiles sim/link/register_backends_on_link.cc into it, which calls register_backends() before
// main. A program that links libloom_sim some other way (plain -lloom_sim, a static archive)
// calls register_backends() once before make_accel_device or GraphExecutor::load with
// accelerator kernels; the call also keeps the library linked. Calling it again is harmless.
#pragma once

namespace loom::sim {

void register_backends();

}  // namespace loom::sim
