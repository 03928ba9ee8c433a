// Random valid instruction streams (seeded), run on the functional simulator and on the
// independent reference model in accel_harness.h; the DRAM images after the run must be equal.
#include <gtest/gtest.h>

#include <optional>

#include "accel/accel_harness.h"

namespace loom::accel {
using loom::ConfigError;
using loom::DeviceError;
using loom::IsaError;
namespace {

// Builds a random stream through the driver. Each instruction hands a token to the module of the
// next one, so program order is the only legal execution order and the reference model (which
// runs in program order) is exact.
class StreamFuzzer {
 public:
  static constexpr int kEntries = 64;  // entries of each kind in the DRAM image

  StreamFuzzer(test::AccelHarness& h, uint64_t seed) : h_(h), c_(h.cfg), g_(seed) {
    region_[0] = 0;                                             // inp entries
    region_[1] = region_[0] + kEntries * c_.inp_block_bytes();  // wgt
    region_[2] = region_[1] + kEntries * c_.wgt_block_bytes();  // acc
    region_[3] = region_[2] + kEntries * c_.acc_block_bytes();  // out
    bytes_ = region_[3] + kEntries * c_.out_block_bytes();
    initial = test::random_values<int8_t>(bytes_, g_(), -128, 127);
    image = h.upload(initial);
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
        h_.drv.alu(UopKernelBuilder().push(0, 0).build(), AluOp::Add, true, 0);
      h_.drv.dep_push(*last_, next);
      h_.drv.dep_pop(*last_, next);
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
    h_.drv.load_2d(m, r(16), image.addr + region_[region] + uint64_t(start) * entry_bytes, y, x, stride, pads[0],
                   pads[1], pads[2], pads[3]);
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
    h_.drv.gemm(k, r(4) == 0);
  }
  void alu() {
    go(Module::Compute);
    emitted_compute_ = true;
    AluOp op = AluOp(r(5));
    int32_t v = op == AluOp::Shr ? int32_t(r(20)) - 6 : int32_t(r(200)) - 100;
    h_.drv.alu(UopKernelBuilder().loop(1 + r(4), r(3), r(3)).push(r(8), r(8)).build(), op, r(2), v);
  }
  void store(uint32_t sram, uint32_t entry, uint32_t x) {
    go(Module::Store);
    h_.drv.store_2d(sram, image.addr + region_[3] + uint64_t(entry) * c_.out_block_bytes(), 1, x, x);
  }

  test::AccelHarness& h_;
  const AccelConfig& c_;
  std::mt19937_64 g_;
  uint64_t region_[4], bytes_;
  std::optional<Module> last_;
  bool emitted_compute_ = false;
};

class SimFuzz : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Configs, SimFuzz, ::testing::Range(0, 3),
                         [](const auto& p) { return test::test_configs()[p.param].name; });

TEST_P(SimFuzz, RandomStreamsMatchReferenceModel) {
  AccelConfig cfg = test::test_configs()[GetParam()];
  for (int seed = 0; seed < 120; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    test::AccelHarness h(cfg);
    StreamFuzzer f(h, 1000 + seed);
    f.build(60);
    std::vector<Instruction> stream = h.drv.stream();
    // Reference: program order over a host copy of the image; micro-op kernels are read from the
    // device (the run never writes them).
    std::vector<int8_t> mem = f.initial;
    uint64_t base = f.image.addr;
    auto in_image = [&](uint64_t a, size_t n) { return a >= base && a + n <= base + mem.size(); };
    test::ReferenceModel ref(
        cfg,
        [&](uint64_t a, void* d, size_t n) {
          if (in_image(a, n))
            std::memcpy(d, &mem[a - base], n);
          else
            h.dev->read(a, d, n);
        },
        [&](uint64_t a, const void* s, size_t n) {
          ASSERT_TRUE(in_image(a, n));
          std::memcpy(&mem[a - base], s, n);
        });
    ref.run(stream);
    h.drv.synchronize();
    auto got = h.download<int8_t>(f.image, mem.size());
    size_t first = 0;
    while (first < got.size() && got[first] == mem[first]) ++first;
    ASSERT_EQ(first, got.size()) << "first difference at byte " << first << " of the image\n" << disassemble(stream);
  }
}

}  // namespace
}  // namespace loom::accel
