#include "loom/accel/examples.h"

#include <random>
#include <tuple>

#include "loom/accel/packing.h"
#include "loom/runtime/error.h"

namespace loom::accel {

std::vector<int8_t> pack_blocks(const std::vector<int8_t>& m, int rows, int cols, int rb, int cb) {
  std::vector<int8_t> out(m.size());
  size_t k = 0;
  for (int r0 = 0; r0 < rows / rb; ++r0)
    for (int c0 = 0; c0 < cols / cb; ++c0)
      for (int r = 0; r < rb; ++r)
        for (int c = 0; c < cb; ++c) out[k++] = m[size_t(r0 * rb + r) * cols + c0 * cb + c];
  return out;
}

std::vector<int8_t> unpack_blocks(const std::vector<int8_t>& p, int rows, int cols, int rb, int cb) {
  std::vector<int8_t> out(p.size());
  size_t k = 0;
  for (int r0 = 0; r0 < rows / rb; ++r0)
    for (int c0 = 0; c0 < cols / cb; ++c0)
      for (int r = 0; r < rb; ++r)
        for (int c = 0; c < cb; ++c) out[size_t(r0 * rb + r) * cols + c0 * cb + c] = p[k++];
  return out;
}

void emit_blocked_matmul(Driver& drv, const DeviceBuffer& a, const DeviceBuffer& w, const DeviceBuffer& c, int M, int N,
                         int K) {
  const AccelConfig& cfg = drv.config();
  const int B = cfg.batch, BI = cfg.block_in, BO = cfg.block_out;
  if (M % B || N % BO || K % BI)
    LOOM_THROW(ShapeError, "blocked matmul ", M, "x", N, "x", K, ": M, N, K must be multiples of ", B, ", ", BO, ", ",
               BI);
  const int mb = M / B, nb = N / BO, kb = K / BI;
  if (int64_t(nb) * kb > cfg.wgt_depth())
    LOOM_THROW(ShapeError, "blocked matmul: ", nb * kb, " weight blocks exceed the weight scratchpad");
  if (2 * kb > cfg.inp_depth() || 2 * nb > cfg.acc_depth())
    LOOM_THROW(ShapeError, "blocked matmul: a row of blocks does not fit twice (double buffering) in the scratchpads");
  const int ctx_inp = kb, ctx_acc = nb;
  drv.load_2d(MemType::Wgt, 0, w.addr, 1, nb * kb, nb * kb);  // weights stay resident
  for (int i = 0; i < mb; ++i) {
    int ctx = i % 2;
    if (i >= 2) drv.dep_pop(Module::Compute, Module::Load);  // this context's input entries are free again
    drv.load_2d(MemType::Inp, ctx * ctx_inp, a.addr + uint64_t(i) * kb * cfg.inp_block_bytes(), 1, kb, kb);
    drv.dep_push(Module::Load, Module::Compute);
    drv.dep_pop(Module::Load, Module::Compute);
    if (i >= 2) drv.dep_pop(Module::Store, Module::Compute);  // this context's outputs were stored
    drv.gemm(UopKernelBuilder().loop(nb, 1, 0, kb).push(ctx * ctx_acc, 0, 0).build(), true);
    drv.gemm(UopKernelBuilder().loop(nb, 1, 0, kb).loop(kb, 0, 1, 1).push(ctx * ctx_acc, ctx * ctx_inp, 0).build(),
             false);
    drv.dep_push(Module::Compute, Module::Load);
    drv.dep_push(Module::Compute, Module::Store);
    drv.dep_pop(Module::Compute, Module::Store);
    drv.store_2d(ctx * ctx_acc, c.addr + uint64_t(i) * nb * cfg.out_block_bytes(), 1, nb, nb);
    drv.dep_push(Module::Store, Module::Compute);
  }
  // Consume the tokens of the last (up to) two iterations.
  for (int i = std::max(0, mb - 2); i < mb; ++i) {
    drv.dep_pop(Module::Compute, Module::Load);
    drv.dep_pop(Module::Store, Module::Compute);
  }
}

std::vector<int8_t> reference_matmul(const std::vector<int8_t>& a, const std::vector<int8_t>& w, int M, int N, int K,
                                     int out_bits) {
  std::vector<int8_t> c(size_t(M) * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int32_t s = 0;
      for (int k = 0; k < K; ++k) s += int32_t(a[size_t(m) * K + k]) * w[size_t(n) * K + k];
      // The low out_bits bits, sign-extended (acc_bits >= 16 > out_bits: the accumulator's own
      // wrap-around does not change them).
      const int shift = 32 - out_bits;
      c[size_t(m) * N + n] = int8_t(int32_t(uint32_t(s) << shift) >> shift);
    }
  return c;
}

std::vector<uint8_t> packed(const std::vector<int8_t>& elements, int bits) {
  if (bits == 8) return std::vector<uint8_t>(elements.begin(), elements.end());
  return pack_elements(std::vector<int32_t>(elements.begin(), elements.end()), bits);
}

Program matmul_program(AccelDevice& device, const AccelConfig& config, int M, int N, int K, uint64_t seed) {
  std::mt19937_64 g(seed);
  // Uniform over each operand's range (-128..127 for 8 bits, -8..7 for 4, -2..1 for 2).
  auto draw = [&](size_t n, int bits) {
    std::uniform_int_distribution<int> d(-(1 << (bits - 1)), (1 << (bits - 1)) - 1);
    std::vector<int8_t> v(n);
    for (auto& x : v) x = int8_t(d(g));
    return v;
  };
  std::vector<int8_t> a = draw(size_t(M) * K, config.inp_bits);
  std::vector<int8_t> w = draw(size_t(N) * K, config.wgt_bits);
  RecordingDevice rec(device);
  Program p;
  p.config = config;
  {
    Driver drv(rec, config);
    auto pa = packed(pack_blocks(a, M, K, config.batch, config.block_in), config.inp_bits),
         pw = packed(pack_blocks(w, N, K, config.block_out, config.block_in), config.wgt_bits);
    DeviceBuffer da = drv.alloc(pa.size()), dw = drv.alloc(pw.size()),
                 dc = drv.alloc(size_t(M) * N * size_t(config.out_bits) / 8);
    drv.copy_to_device(da, pa.data(), pa.size());
    drv.copy_to_device(dw, pw.data(), pw.size());
    emit_blocked_matmul(drv, da, dw, dc, M, N, K);
    std::tie(p.insn_addr, p.insn_count) = drv.finalize_stream();
    p.segments = rec.capture();
    auto expected =
        packed(pack_blocks(reference_matmul(a, w, M, N, K, config.out_bits), M, N, config.batch, config.block_out),
               config.out_bits);
    p.checks.push_back(Program::Segment{dc.addr, 64, expected});
  }
  return p;
}

}  // namespace loom::accel
