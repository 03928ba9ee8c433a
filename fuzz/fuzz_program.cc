// Accelerator program files (`loom disasm` / `loom sim` input): parse, locate and decode the
// stream, disassemble. Malformed input must end in loom::Error, never a crash or a huge allocation.
#include <cstdint>
#include <string>

#include "loom/accel/program.h"
#include "loom/runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    loom::accel::Program p =
        loom::accel::Program::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    loom::accel::disassemble(p.instructions());
  } catch (const loom::Error&) {
  }
  return 0;
}
