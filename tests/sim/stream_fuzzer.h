// Random valid instruction streams through the driver (seeded), shared by the simulator fuzz
// test (results against the reference model) and the performance model's test (cycles against the
// RTL).
#pragma once
#include <cstdlib>
#include <optional>
#include <random>

#include "loom/accel/driver.h"

namespace loom::accel::test_streams {

// Builds a random stream through the driver. Each instruction hands a token to the module of the
// next one, so program order is the only legal execution order and the reference model (which
// runs in program order) is exact.
class StreamFuzzer {
 public:
  static constexpr int kEntries = 64;  // entries of each kind in the DRAM image

  // Needs only the driver (the performance model's calibration in bench/ uses it too).
  StreamFuzzer(Driver& drv, const AccelConfig& config, uint64_t seed) : drv_(drv), c_(config), g_(seed) {
    region_[0] = 0;                                             // inp entries
    region_[1] = region_[0] + kEntries * c_.inp_block_bytes();  // wgt
    region_[2] = region_[1] + kEntries * c_.wgt_block_bytes();  // acc
    region_[3] = region_[2] + kEntries * c_.acc_block_bytes();  // out
    bytes_ = region_[3] + kEntries * c_.out_block_bytes();
    std::mt19937_64 values(g_());
    initial.resize(bytes_);
    for (auto& v : initial) v = int8_t(int(values() % 256) - 128);
    image = drv_.alloc(initial.size());
    drv_.copy_to_device(image, initial.data(), initial.size());
  }

  void build(int length) {
    for (int n = 0; n < length; ++n) {
      switch (r(6)) {
        case 0:
          load(MemType::Inp, 0, c_.inp_block_bytes());
          break;
        case 1:
          load(MemType::Wgt, 1, c_.wgt_block_bytes());
          break;
        case 2:
          load(MemType::Acc, 2, c_.acc_block_bytes());
          break;
        case 3:
          gemm();
          break;
        case 4:
          alu();
          break;
        default:
          store(r(16), r(kEntries - 8), 1 + r(8));
          break;
      }
    }
    store(0, 0, 32);  // observe the first out entries
  }

  std::vector<int8_t> initial;
  accel::DeviceBuffer image;

 private:
  uint32_t r(uint32_t n) { return uint32_t(g_() % n); }

  void go(Module next) {
    if (last_ && *last_ != next) {
      bool neighbours = std::abs(int(*last_) - int(next)) == 1;
      if (!neighbours) go(Module::Compute);  // route load <-> store through compute
      if (*last_ == Module::Compute && !emitted_compute_)
        drv_.alu(UopKernelBuilder().push(0, 0).build(), AluOp::Add, true, 0);
      drv_.dep_push(*last_, next);
      drv_.dep_pop(*last_, next);
    }
    emitted_compute_ = next == Module::Compute && last_ == next;
    last_ = next;
  }

  void load(MemType m, int region, int entry_bytes) {
    go(m == MemType::Acc ? Module::Compute : Module::Load);
    emitted_compute_ = true;
    uint32_t y = 1 + r(3), x = 1 + r(4), stride = x + r(3);
    uint32_t pads[4] = {r(2), r(2), r(2), r(2)};
    uint32_t start = r(kEntries - (y - 1) * stride - x + 1);
    drv_.load_2d(m, r(16), image.addr + region_[region] + uint64_t(start) * entry_bytes, y, x, stride, pads[0], pads[1],
                 pads[2], pads[3]);
  }
  void gemm() {
    go(Module::Compute);
    emitted_compute_ = true;
    auto k = UopKernelBuilder()
                 .loop(1 + r(3), r(3), r(3), r(3))
                 .loop(1 + r(3), r(2), r(2), r(2))
                 .push(r(8), r(8), r(8))
                 .push(r(8), r(8), r(8))
                 .build();
    drv_.gemm(k, r(4) == 0);
  }
  void alu() {
    go(Module::Compute);
    emitted_compute_ = true;
    AluOp op = AluOp(r(5));
    int32_t v = op == AluOp::Shr ? int32_t(r(20)) - 6 : int32_t(r(200)) - 100;
    drv_.alu(UopKernelBuilder().loop(1 + r(4), r(3), r(3)).push(r(8), r(8)).build(), op, r(2), v);
  }
  void store(uint32_t sram, uint32_t entry, uint32_t x) {
    go(Module::Store);
    drv_.store_2d(sram, image.addr + region_[3] + uint64_t(entry) * c_.out_block_bytes(), 1, x, x);
  }

  Driver& drv_;
  const AccelConfig& c_;
  std::mt19937_64 g_;
  uint64_t region_[4], bytes_;
  std::optional<Module> last_;
  bool emitted_compute_ = false;
};

}  // namespace loom::accel::test_streams
