// Explicit registration of the simulator backends ("fsim", and "rtl" where the RTL models are
// built) with the runtime's backend registry (runtime/accel_device.h). A program calls it once
// before make_accel_device or GraphExecutor::load with accelerator kernels; a call also keeps the
// simulator library linked (a linker with --as-needed drops a library nothing references, and
// with it any static registration). Calling it again is harmless.
#pragma once

namespace loom::sim {

void register_backends();

}  // namespace loom::sim
