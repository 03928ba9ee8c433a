// Instruction words: decode -> check -> disassemble -> encode. A word that decodes must encode back
// to the same bits (the layout is a bijection on valid words), on every shipped config.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/accel/isa.h"
#include "loom/runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom::accel;
  static const std::vector<AccelConfig> configs = {
      AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/default.json"),
      AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/1x32x32.json"),
      AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/batch2.json")};
  if (size < 17) return 0;
  const AccelConfig& c = configs[data[0] % configs.size()];
  IsaLayout layout(c);
  InsnWord w;
  std::memcpy(w.data(), data + 1, 16);
  Instruction insn;
  try {
    insn = decode(w, layout, 0);
  } catch (const loom::IsaError&) {
    return 0;
  }
  disassemble(insn);
  try {
    check_instruction(insn, c, 0);
  } catch (const loom::IsaError&) {
  }
  if (encode(insn, layout) != w) std::abort();  // decode accepted bits encode would not produce
  return 0;
}
