// Ready-made accelerator workloads built with the driver, used by `loom accel-example`,
// `loom demo` and the tests.
#pragma once
#include <cstdint>
#include <vector>

#include "loom/accel/driver.h"
#include "loom/accel/program.h"

namespace loom::accel {

// Layout helpers: a rows x cols row-major int8 matrix as [rows/rb][cols/cb][rb][cb] blocks.
std::vector<int8_t> pack_blocks(const std::vector<int8_t>& m, int rows, int cols, int rb, int cb);
std::vector<int8_t> unpack_blocks(const std::vector<int8_t>& p, int rows, int cols, int rb, int cb);

// Emits C = A x W^T (its low out_bits bits) for A: M x K and W: N x K (blocked and packed at the
// config's widths, in device buffers), double
// buffering the input rows over two contexts with dependency tokens. M, N, K must be multiples
// of batch, block_out and block_in; the weights must fit the weight scratchpad.
void emit_blocked_matmul(Driver& drv, const DeviceBuffer& a, const DeviceBuffer& w, const DeviceBuffer& c, int M, int N,
                         int K);

// Plain C++ reference of the same product (int32 accumulate, the low out_bits bits kept as a
// signed value).
std::vector<int8_t> reference_matmul(const std::vector<int8_t>& a, const std::vector<int8_t>& w, int M, int N, int K,
                                     int out_bits = 8);
// Elements (each within `bits` bits) as the accelerator holds them: bytes for 8 bits, packed
// narrower (accel/packing.h).
std::vector<uint8_t> packed(const std::vector<int8_t>& elements, int bits);

// A complete program: random A and W over the config's operand widths, the stream, and the
// expected C (packed at out_bits) as a check.
Program matmul_program(AccelDevice& device, const AccelConfig& config, int M, int N, int K, uint64_t seed);

}  // namespace loom::accel
