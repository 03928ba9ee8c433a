// Linked accelerator images (the fourth section of a compiled model): parse, then relocate to a
// few bases. Errors are ModelError; nothing is written outside the image.
#include <cstdint>
#include <string>

#include "loom/runtime/accel_image.h"
#include "loom/runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom::runtime;
  AccelImage img;
  try {
    img = AccelImage::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const loom::Error&) {
    return 0;
  }
  for (uint64_t k : {uint64_t(0), uint64_t(1), uint64_t(1) << 20}) {
    try {
      relocate(img, img.link_base + k * img.alignment);
    } catch (const loom::Error&) {
    }
  }
  return 0;
}
