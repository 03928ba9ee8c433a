// The SystemVerilog side of the one source of truth: a package with every parameter the RTL in
// hw/ needs (block sizes, scratchpad depths and index widths, the bit position of every
// instruction field, opcodes, the register map), generated from an AccelConfig.
#pragma once
#include <string>

#include "loom/accel/config.h"

namespace loom::accel {

// Choices of the RTL's implementation that do not change what it computes, its ISA or its
// timing as programs see it, so they live beside the config rather than in it: a program
// compiled for a config runs on every variant.
struct RtlOptions {
  // GEMM: two int8 products per multiplier (one DSP48 for two MACs); false keeps the plain core.
  bool gemm_dsp_pack = true;
};

// Text of `package loom_accel_pkg; ... endpackage` for `config`.
std::string sv_package(const AccelConfig& config, const RtlOptions& options = {});

}  // namespace loom::accel
