#include "loom/accel/packing.h"

namespace loom::accel {

std::vector<uint8_t> pack_elements(const std::vector<int32_t>& values, int bits) {
  std::vector<uint8_t> out((values.size() * size_t(bits) + 7) / 8, 0);
  for (size_t k = 0; k < values.size(); ++k) set_packed_element(out.data(), k, bits, values[k]);
  return out;
}

std::vector<int32_t> unpack_elements(const uint8_t* data, size_t count, int bits) {
  std::vector<int32_t> out(count);
  for (size_t k = 0; k < count; ++k) out[k] = packed_element(data, k, bits);
  return out;
}

}  // namespace loom::accel
