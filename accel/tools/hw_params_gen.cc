// Build-time generator of the RTL parameter package:
//   loom_hw_params_gen <config.json> <out.sv> [--gemm-multipliers auto|plain|dsp|lut]
// (The same text as `loom hw-params`; this small tool exists so the build can generate the
// package before the RTL model is compiled, without depending on the whole compiler.)
#include <fstream>
#include <iostream>
#include <string>

#include "loom/accel/config.h"
#include "loom/accel/hw_params.h"

int main(int argc, char** argv) {
  loom::accel::RtlOptions rtl;
  if (argc != 3 && !(argc == 5 && std::string(argv[3]) == "--gemm-multipliers")) {
    std::cerr << "usage: loom_hw_params_gen <config.json> <out.sv> [--gemm-multipliers auto|plain|dsp|lut]\n";
    return 2;
  }
  try {
    if (argc == 5) rtl.gemm = loom::accel::parse_gemm_multipliers(argv[4]);
    std::string text = loom::accel::sv_package(loom::accel::AccelConfig::load(argv[1]), rtl);
    std::ofstream(argv[2]) << text;
  } catch (const std::exception& e) {
    std::cerr << "loom_hw_params_gen: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
