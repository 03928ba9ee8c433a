// Build-time generator of the RTL parameter package: loom_hw_params_gen <config.json> <out.sv>.
// (The same text as `loom hw-params`; this small tool exists so the build can generate the
// package before the RTL model is compiled, without depending on the whole compiler.)
#include <fstream>
#include <iostream>

#include "loom/accel/config.h"
#include "loom/accel/hw_params.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: loom_hw_params_gen <config.json> <out.sv>\n";
    return 2;
  }
  try {
    std::string text = loom::accel::sv_package(loom::accel::AccelConfig::load(argv[1]));
    std::ofstream(argv[2]) << text;
  } catch (const std::exception& e) {
    std::cerr << "loom_hw_params_gen: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
