#include "loom/runtime/packed_elements.h"

namespace loom::runtime {

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

namespace {

int64_t container_value(const void* values, int container_bits, size_t k) {
  const auto* p = static_cast<const uint8_t*>(values);
  return packed_element(p, k, container_bits);
}

}  // namespace

int64_t pack_from_container(const void* values, int container_bits, size_t count, int bits, uint8_t* out) {
  const int64_t lo = -(int64_t(1) << (bits - 1)), hi = (int64_t(1) << (bits - 1)) - 1;
  for (size_t k = 0; k < (count * size_t(bits) + 7) / 8; ++k) out[k] = 0;
  for (size_t k = 0; k < count; ++k) {
    int64_t v = container_value(values, container_bits, k);
    if (v < lo || v > hi) return int64_t(k);
    set_packed_element(out, k, bits, int32_t(v));
  }
  return -1;
}

void unpack_to_container(const uint8_t* packed, int bits, size_t count, int container_bits, void* values) {
  auto* p = static_cast<uint8_t*>(values);
  for (size_t k = 0; k < count; ++k) set_packed_element(p, k, container_bits, packed_element(packed, k, bits));
}

}  // namespace loom::runtime
