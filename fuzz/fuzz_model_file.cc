// Compiled-model files (.loom): the container (sections, version, checksum). Errors are
// ModelError naming the file; no allocation beyond the input's size.
#include <cstdint>
#include <string>

#include "loom/runtime/error.h"
#include "loom/runtime/model_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    loom::runtime::parse_model_file(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const loom::Error&) {
  }
  return 0;
}
