// Elements narrower than a byte (the accelerator's 2- and 4-bit inputs, weights and outputs) packed
// little-endian within bytes: element k of `bits` bits holds bits [k*bits mod 8, +bits) of byte
// k*bits/8, as two's complement. 8- and 16-bit elements are plain int8 and little-endian int16.
// One definition for the simulators, the driver, the compiler, the runtime's copies to and from
// an accelerator image, and the tests (accel/packing.h names them in loom::accel).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::runtime {

// Element `index` (signed, `bits` in {2, 4, 8, 16, 32}) of packed data.
inline int32_t packed_element(const uint8_t* data, size_t index, int bits) {
  if (bits == 8) return int8_t(data[index]);
  if (bits == 16) return int16_t(uint16_t(data[2 * index] | data[2 * index + 1] << 8));
  if (bits == 32)
    return int32_t(uint32_t(data[4 * index]) | uint32_t(data[4 * index + 1]) << 8 |
                   uint32_t(data[4 * index + 2]) << 16 | uint32_t(data[4 * index + 3]) << 24);
  const size_t bit = index * size_t(bits);
  const int v = (data[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
  return v >= (1 << (bits - 1)) ? v - (1 << bits) : v;
}

// Writes the low `bits` bits of `value` as element `index` (two's complement wrap-around).
inline void set_packed_element(uint8_t* data, size_t index, int bits, int32_t value) {
  const uint32_t v = uint32_t(value);
  if (bits >= 8) {
    for (int b = 0; b < bits / 8; ++b) data[index * size_t(bits / 8) + size_t(b)] = uint8_t(v >> (8 * b));
    return;
  }
  const size_t bit = index * size_t(bits);
  const uint8_t mask = uint8_t(((1u << bits) - 1) << (bit % 8));
  data[bit / 8] = uint8_t((data[bit / 8] & ~mask) | ((v << (bit % 8)) & mask));
}

// `values` (each within `bits` bits, or wrapped) packed; (values.size() * bits + 7) / 8 bytes.
std::vector<uint8_t> pack_elements(const std::vector<int32_t>& values, int bits);
// `count` elements of packed data.
std::vector<int32_t> unpack_elements(const uint8_t* data, size_t count, int bits);

// Host tensors keep narrow values in wider containers (int8 for 2- and 4-bit elements, int32 for
// 16-bit accumulators); device memory holds them packed. `values`: `count` signed little-endian
// integers of `container_bits` (8, 16 or 32); `out`: (count * bits + 7) / 8 bytes. Returns the
// index of the first value outside the signed `bits`-bit range (nothing is clamped: the caller
// reports it), or -1 when all fit.
int64_t pack_from_container(const void* values, int container_bits, size_t count, int bits, uint8_t* out);
// The inverse: packed elements sign-extended into `container_bits` integers.
void unpack_to_container(const uint8_t* packed, int bits, size_t count, int container_bits, void* values);

}  // namespace loom::runtime
