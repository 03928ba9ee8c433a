// Test harness for the accelerator: a functional simulator + driver for a config, host<->device
// helpers, and an independent reference model of the ISA that executes a stream in program order.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "common/error_text.h"
#include "loom/accel/driver.h"
#include "loom/runtime/error.h"
#include "loom/runtime/rpc.h"
#include "loom/sim/backends.h"
#include "loom/sim/functional_sim.h"
#ifdef LOOM_HAVE_RTL
#include "loom/sim/rtl_sim.h"
#endif

namespace loom::test {

inline std::vector<accel::AccelConfig> test_configs() {
  std::string dir = LOOM_ACCEL_CONFIG_DIR;
  return {accel::AccelConfig::load(dir + "/default.json"), accel::AccelConfig::load(dir + "/1x32x32.json"),
          accel::AccelConfig::load(dir + "/batch2.json")};
}

// The accelerator backend the shared simulator tests run on: the same sources build test_fsim
// (LOOM_TEST_BACKEND "fsim"), test_rtl ("rtl", the Verilated RTL) and test_rpc ("rpc-fsim": the
// functional simulator behind an RPC server on 127.0.0.1: servers per config, another one where a
// test holds two devices at once), so all run one table.
#ifndef LOOM_TEST_BACKEND
#define LOOM_TEST_BACKEND "fsim"
#endif
inline std::string test_backend() { return LOOM_TEST_BACKEND; }
// Whether the backend is a board's runtime ("board-*", "zynq-*"), which places buffers itself.
inline bool test_backend_is_board() {
  return test_backend().rfind("board-", 0) == 0 || test_backend().rfind("zynq-", 0) == 0;
}
// On the RTL, DRAM holds its READYs low in a third of the cycles (reproducibly), so that every
// table test also exercises the RTL's AXI4 handshakes under back-pressure (the DRAM model checks
// the protocol); test_rtl_only.cc covers the free-flowing timing. Every table stream finishes in
// under 1 M cycles: a run that hangs fails after 5 M (seconds) instead of the driver's 60 s timeout.
inline std::unique_ptr<AccelDevice> make_test_device(const accel::AccelConfig& c) {
  sim::register_backends();  // also keeps the simulator library linked
  std::string json = c.to_json();
  if (test_backend() == "rtl" || test_backend() == "board-rtl" || test_backend() == "rpc-rtl" ||
      test_backend() == "zynq-rtl")
    json = json.substr(0, json.rfind('}')) + R"(, "rtl": {"dram_stall_rate": 0.33, "cycle_limit": 5000000}})";
  if (test_backend().rfind("zynq-", 0) == 0)  // a DMA region the table's programs fit in
    json = json.substr(0, json.rfind('}')) + R"(, "zynq": {"dma_bytes": 2097152}})";
  if (test_backend() == "systemc")
    json = json.substr(0, json.rfind('}')) + R"(, "systemc": {"dram_stall_rate": 0.33, "cycle_limit": 5000000}})";
  if (test_backend().rfind("rpc-", 0) == 0) {
    static std::map<std::string, std::vector<std::unique_ptr<rpc::Server>>> servers;  // live until the end
    std::string backend = test_backend().substr(4);
    rpc::Server* free = nullptr;
    auto& list = servers[json];
    if (backend == "rtl")  // a fresh device per test, as locally (the RTL's scratchpads outlive runs)
      list.erase(std::remove_if(list.begin(), list.end(), [](auto& s) { return !s->busy(); }), list.end());
    for (auto& s : list)
      if (!s->busy()) free = s.get();
    if (!free) {
      rpc::ServerOptions o;
      o.port = 0;
      o.backend = backend;
      o.config_json = json;
      list.push_back(std::make_unique<rpc::Server>(o));
      free = list.back().get();
      free->start();
    }
    return make_accel_device("rpc://127.0.0.1:" + std::to_string(free->port()) + "/" + backend, json);
  }
  return make_accel_device(test_backend(), json);
}

struct AccelHarness {
  explicit AccelHarness(const accel::AccelConfig& c) : cfg(c), dev(make_test_device(c)), drv(*dev, c) {}
  // On a device of the caller's (a backend with options of its own).
  AccelHarness(const accel::AccelConfig& c, std::unique_ptr<AccelDevice> d) : cfg(c), dev(std::move(d)), drv(*dev, c) {}
  accel::AccelConfig cfg;
  std::unique_ptr<AccelDevice> dev;
  accel::Driver drv;

  template <typename T>
  accel::DeviceBuffer upload(const std::vector<T>& v) {
    auto b = drv.alloc(v.size() * sizeof(T));
    drv.copy_to_device(b, v.data(), v.size() * sizeof(T));
    return b;
  }
  template <typename T>
  std::vector<T> download(const accel::DeviceBuffer& b, size_t n) {
    std::vector<T> v(n);
    drv.copy_from_device(b, v.data(), n * sizeof(T));
    return v;
  }
};

// Writes raw instruction words to the device, launches them and returns the DeviceError message
// ("<no error>" if the run succeeds).
inline std::string run_words(AccelHarness& h, const std::vector<accel::InsnWord>& words) {
  auto b = h.drv.alloc(words.size() * 16);
  h.drv.copy_to_device(b, words.data(), words.size() * 16);
  return error_text<DeviceError>([&] {
    h.dev->launch(b.addr, uint32_t(words.size()));
    h.dev->wait();
  });
}

template <typename T>
std::vector<T> random_values(size_t n, uint64_t seed, int lo, int hi) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = T(d(g));
  return v;
}

// Reference semantics of one stream, executed in program order over its own scratchpads; device
// memory is reached through the two callbacks. Any legal precision: inputs, weights and outputs
// as packed bytes (its own bit extraction, little-endian within bytes), accumulators as int32
// wrapped at acc_bits, narrow accumulator entries sign-extended on load.
struct ReferenceModel {
  const accel::AccelConfig& c;
  std::function<void(uint64_t addr, void* dst, size_t n)> read_dram;
  std::function<void(uint64_t addr, const void* src, size_t n)> write_dram;
  std::vector<uint8_t> inp, wgt, out;
  std::vector<int32_t> acc;
  std::vector<uint32_t> uop;

  ReferenceModel(const accel::AccelConfig& cfg, std::function<void(uint64_t, void*, size_t)> rd,
                 std::function<void(uint64_t, const void*, size_t)> wr)
      : c(cfg),
        read_dram(std::move(rd)),
        write_dram(std::move(wr)),
        inp(size_t(cfg.inp_depth()) * size_t(cfg.inp_block_bytes())),
        wgt(size_t(cfg.wgt_depth()) * size_t(cfg.wgt_block_bytes())),
        out(size_t(cfg.out_depth()) * size_t(cfg.out_block_bytes())),
        acc(cfg.acc_depth() * cfg.batch * cfg.block_out),
        uop(cfg.uop_depth()) {}

  // Element k of `bits`-bit signed values packed from bit 0 of byte 0 upwards.
  static int64_t element(const uint8_t* p, size_t k, int bits) {
    uint64_t v = 0;
    for (int b = 0; b < bits; ++b) {
      size_t bit = k * size_t(bits) + size_t(b);
      v |= uint64_t((p[bit / 8] >> (bit % 8)) & 1) << b;
    }
    return int64_t(v << (64 - bits)) >> (64 - bits);
  }
  static void set_element(uint8_t* p, size_t k, int bits, int64_t value) {
    for (int b = 0; b < bits; ++b) {
      size_t bit = k * size_t(bits) + size_t(b);
      p[bit / 8] = uint8_t((p[bit / 8] & ~(1 << (bit % 8))) | (((value >> b) & 1) << (bit % 8)));
    }
  }
  int32_t wrap(int64_t v) const { return int32_t(int64_t(uint64_t(v) << (64 - c.acc_bits)) >> (64 - c.acc_bits)); }

  void run(const std::vector<accel::Instruction>& stream) {
    using namespace accel;
    const int B = c.batch, BI = c.block_in, BO = c.block_out;
    for (auto& i : stream) {
      if (i.opcode == Opcode::Load && i.x_size && i.y_size) {
        int bytes = i.mem == MemType::Inp   ? c.inp_block_bytes()
                    : i.mem == MemType::Wgt ? c.wgt_block_bytes()
                    : i.mem == MemType::Acc ? c.acc_block_bytes()
                                            : 4;
        uint32_t cols = i.x_pad0 + i.x_size + i.x_pad1;
        std::vector<uint8_t> entry(size_t(bytes), 0);
        for (uint32_t r = 0; r < i.y_pad0 + i.y_size + i.y_pad1; ++r)
          for (uint32_t x = 0; x < cols; ++x) {
            std::fill(entry.begin(), entry.end(), 0);
            if (!(r < i.y_pad0 || r >= i.y_pad0 + i.y_size || x < i.x_pad0 || x >= i.x_pad0 + i.x_size)) {
              uint64_t addr = (uint64_t(i.dram_base) + (r - i.y_pad0) * i.x_stride + (x - i.x_pad0)) * bytes;
              read_dram(addr, entry.data(), size_t(bytes));
            }
            size_t at = size_t(i.sram_base) + r * cols + x;
            if (i.mem == MemType::Acc) {
              for (int k = 0; k < B * BO; ++k)
                acc[at * size_t(B * BO) + size_t(k)] = int32_t(element(entry.data(), size_t(k), c.acc_bits));
            } else {
              uint8_t* sram = i.mem == MemType::Inp   ? inp.data()
                              : i.mem == MemType::Wgt ? wgt.data()
                                                      : reinterpret_cast<uint8_t*>(uop.data());
              std::memcpy(sram + at * size_t(bytes), entry.data(), size_t(bytes));
            }
          }
      } else if (i.opcode == Opcode::Store && i.x_size && i.y_size) {
        int bytes = c.out_block_bytes();
        for (uint32_t r = 0; r < i.y_size; ++r)
          for (uint32_t x = 0; x < i.x_size; ++x) {
            uint64_t addr = (uint64_t(i.dram_base) + r * i.x_stride + x) * bytes;
            write_dram(addr, &out[(i.sram_base + r * i.x_size + x) * size_t(bytes)], size_t(bytes));
          }
      } else if (i.opcode == Opcode::Gemm || i.opcode == Opcode::Alu) {
        // SHRSAT reads each entry before the write of the iteration just ahead lands (isa.h): that
        // write waits in `held` (the entry's values) until the next iteration has read.
        const bool behind = i.opcode == Opcode::Alu && i.alu_op == AluOp::ShrSat;
        std::vector<int32_t> held, ahead;
        uint32_t held_d = 0;
        auto land = [&] {
          for (int e = 0; e < B * BO && !held.empty(); ++e) {
            acc[held_d * B * BO + e] = held[size_t(e)];
            set_element(out.data(), size_t(held_d) * B * BO + e, c.out_bits, held[size_t(e)]);
          }
        };
        for (uint32_t o = 0; o < i.iter_out; ++o)
          for (uint32_t n = 0; n < i.iter_in; ++n)
            for (uint32_t u = i.uop_begin; u < i.uop_end; ++u) {
              MicroOp m = decode_uop(uop[u], c);
              uint32_t d = m.dst + o * i.dst_factor_out + n * i.dst_factor_in;
              uint32_t s = m.src + o * i.src_factor_out + n * i.src_factor_in;
              uint32_t w = m.wgt + o * i.wgt_factor_out + n * i.wgt_factor_in;
              if (behind) ahead.assign(&acc[d * B * BO], &acc[d * B * BO] + B * BO);
              for (int b = 0; b < B; ++b)
                for (int k = 0; k < BO; ++k) {
                  int32_t& a = behind ? ahead[size_t(b * BO + k)] : acc[(d * B + b) * BO + k];
                  if (i.opcode == Opcode::Gemm) {
                    if (i.reset) {
                      a = 0;
                    } else {
                      int64_t sum = a;
                      for (int q = 0; q < BI; ++q)
                        sum += element(inp.data(), size_t(s * B + b) * BI + q, c.inp_bits) *
                               element(wgt.data(), size_t(w * BO + k) * BI + q, c.wgt_bits);
                      a = wrap(sum);
                    }
                  } else {
                    int64_t x = a, y = i.use_imm ? i.imm : acc[(s * B + b) * BO + k];
                    int64_t r = 0;
                    switch (i.alu_op) {
                      case AluOp::Min:
                        r = std::min(x, y);
                        break;
                      case AluOp::Max:
                        r = std::max(x, y);
                        break;
                      case AluOp::Add:
                        r = x + y;
                        break;
                      // Shift amounts saturate at 31 either way (documented ISA semantics).
                      case AluOp::Shr:
                        r = y >= 0 ? (x >> std::min<int64_t>(y, 31))
                                   : int64_t(uint64_t(x) << std::min<int64_t>(-y, 31));
                        break;
                      case AluOp::Mul:
                        r = int64_t(uint64_t(x) * uint64_t(y));
                        break;
                      case AluOp::Mov:
                        r = y;
                        break;
                      case AluOp::Clip:  // bounds: the immediate's low and high signed bytes
                        r = std::min<int64_t>(std::max<int64_t>(x, int8_t(y & 0xff)), int8_t((y >> 8) & 0xff));
                        break;
                      case AluOp::ShrSat: {  // shift y[4:0], then a (y[8:5] + 1)-bit range, non-negative if y[9]
                        const int64_t half = int64_t(1) << ((y >> 5) & 15);
                        r = std::min<int64_t>(std::max<int64_t>(x >> (y & 31), (y >> 9) & 1 ? 0 : -half), half - 1);
                        break;
                      }
                    }
                    a = wrap(r);
                  }
                  // the output entry: the accumulator's low out_bits bits
                  if (!behind) set_element(out.data(), size_t(d * B + b) * BO + k, c.out_bits, a);
                }
              if (behind) {
                land();
                held.swap(ahead);
                held_d = d;
              }
            }
        land();
      }
    }
  }
};

}  // namespace loom::test
