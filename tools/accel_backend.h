// The accelerator backend a `loom` command runs on: --backend fsim|rtl, and for the RTL
// simulation its options (--dram-latency N, --dram-bytes-per-cycle B, --cycle-limit N,
// --fst FILE [--fst-begin C] [--fst-end C]).
#pragma once
#include <memory>

#include "command.h"
#include "loom/accel/config.h"
#include "loom/runtime/accel_device.h"

namespace loom::tools {

inline constexpr const char* kBackendUsage =
    "[--backend fsim|rtl] [--dram-latency N] [--dram-bytes-per-cycle B] [--cycle-limit N] [--fst FILE [--fst-begin C] [--fst-end C]]";

std::unique_ptr<AccelDevice> open_accel_backend(const Options& opt, const accel::AccelConfig& config);

}  // namespace loom::tools
