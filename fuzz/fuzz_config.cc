// Accelerator configs (JSON): parse and validate; a config that loads must survive a JSON round
// trip and give an instruction layout and the RTL parameter package.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "loom/accel/config.h"
#include "loom/accel/hw_params.h"
#include "loom/accel/isa.h"
#include "loom/runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom::accel;
  AccelConfig c;
  try {
    c = AccelConfig::from_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const loom::Error&) {
    return 0;
  }
  if (!(AccelConfig::from_json(c.to_json()) == c)) std::abort();
  IsaLayout layout(c);
  (void)layout.insn_bits(Opcode::Gemm);
  (void)sv_package(c);
  return 0;
}
