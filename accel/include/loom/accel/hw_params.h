// The SystemVerilog side of the one source of truth: a package with every parameter the RTL in
// hw/ needs (block sizes, scratchpad depths and index widths, the bit position of every
// instruction field, opcodes, the register map), generated from an AccelConfig.
#pragma once
#include <string>

#include "loom/accel/config.h"

namespace loom::accel {

// Text of `package loom_accel_pkg; ... endpackage` for `config`.
std::string sv_package(const AccelConfig& config);

}  // namespace loom::accel
