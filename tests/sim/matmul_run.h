// The blocked matmul example as a test workload: runs it on a device and returns its counters.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "accel/accel_harness.h"
#include "loom/accel/examples.h"

namespace loom::accel {

// Runs the blocked matmul example on a device and returns its counters.
inline std::map<std::string, uint64_t> run_matmul(AccelDevice& dev, const AccelConfig& cfg, std::vector<int8_t>* result,
                                                  uint64_t seed = 8) {
  Driver drv(dev, cfg);
  const int M = 4 * cfg.batch, N = 4 * cfg.block_out, K = 8 * cfg.block_in;
  auto a = test::random_values<int8_t>(size_t(M) * K, seed, -128, 127),
       w = test::random_values<int8_t>(size_t(N) * K, seed + 1, -128, 127);
  auto da = drv.alloc(a.size()), dw = drv.alloc(w.size()), dc = drv.alloc(size_t(M) * N);
  auto pa = pack_blocks(a, M, K, cfg.batch, cfg.block_in), pw = pack_blocks(w, N, K, cfg.block_out, cfg.block_in);
  drv.copy_to_device(da, pa.data(), pa.size());
  drv.copy_to_device(dw, pw.data(), pw.size());
  emit_blocked_matmul(drv, da, dw, dc, M, N, K);
  auto counters = drv.synchronize();
  result->resize(size_t(M) * N);
  drv.copy_from_device(dc, result->data(), result->size());
  return counters;
}

}  // namespace loom::accel
