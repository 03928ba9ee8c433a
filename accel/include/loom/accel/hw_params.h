// The SystemVerilog side of the one source of truth: a package with every parameter the RTL in
// hw/ needs (block sizes, element widths, scratchpad depths and index widths, the bit position of
// every instruction field, opcodes, the register map), generated from an AccelConfig.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "loom/accel/config.h"

namespace loom::accel {

// How the GEMM core builds its BATCH x BLOCK_OUT x BLOCK_IN products. Every choice computes the
// same products, bit for bit; they differ in DSP48s against LUTs (docs/fpga_fit.md).
enum class GemmMultipliers {
  Auto,       // the generator picks from the operand widths (gemm_multiplier_plan)
  Plain,      // one multiplier per product (yosys maps it to a DSP48, or to LUTs when the product is tiny)
  DspPacked,  // several products that share an input in one DSP48: two at 8 bits, three at 4 x 4
  Lut,        // shift-and-add in LUTs, no DSP48: what pays for 2-bit operands
};

// "auto", "plain", "dsp", "lut".
std::string to_string(GemmMultipliers m);
// The inverse of to_string; a ConfigError lists the choices.
GemmMultipliers parse_gemm_multipliers(const std::string& name);

// Choices of the RTL's implementation that do not change what it computes, its ISA or its
// timing as programs see it, so they live beside the config rather than in it: a program
// compiled for a config runs on every variant.
struct RtlOptions {
  GemmMultipliers gemm = GemmMultipliers::Auto;
};

// What the generator builds for a config's GEMM core, and why (shown by loom hw-report).
struct GemmMultiplierPlan {
  GemmMultipliers kind = GemmMultipliers::Plain;  // never Auto
  int products_per_multiplier = 1;                // > 1 only for DspPacked
  int product_bits = 16;                          // inp_bits + wgt_bits: a product's two's complement width
  std::string reason;                             // one sentence
};
GemmMultiplierPlan gemm_multiplier_plan(const AccelConfig& config, const RtlOptions& options = {});

// Text of `package loom_accel_pkg; ... endpackage` for `config`.
std::string sv_package(const AccelConfig& config, const RtlOptions& options = {});

// The accelerator's RTL modules in `rtl_dir` (hw/rtl): every .sv file but the package check,
// sorted. An Error when the folder holds none.
std::vector<std::filesystem::path> rtl_sources(const std::string& rtl_dir);

// The yosys commands that read the accelerator's RTL elaborated with the package file `pkg`: every
// module of rtl_sources(rtl_dir), then `hierarchy -check -top loom_accel`.
std::string yosys_read_rtl(const std::string& pkg, const std::string& rtl_dir);

}  // namespace loom::accel
