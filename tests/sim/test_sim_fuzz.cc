// Random valid instruction streams (seeded), run on the functional simulator and on the
// independent reference model in accel_harness.h; the DRAM images after the run must be equal.
#include <gtest/gtest.h>

#include <optional>

#include "accel/accel_harness.h"
#include "stream_fuzzer.h"

namespace loom::accel {
using loom::ConfigError;
using loom::DeviceError;
using loom::IsaError;
namespace {

using test_streams::StreamFuzzer;

class SimFuzz : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Configs, SimFuzz, ::testing::Range(0, 3),
                         [](const auto& p) { return test::test_configs()[p.param].name; });

TEST_P(SimFuzz, RandomStreamsMatchReferenceModel) {
  AccelConfig cfg = test::test_configs()[GetParam()];
  for (int seed = 0; seed < 120; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    test::AccelHarness h(cfg);
    StreamFuzzer f(h.drv, cfg, 1000 + seed);
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
