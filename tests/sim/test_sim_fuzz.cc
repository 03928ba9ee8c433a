// Random valid instruction streams (seeded), run on the functional simulator and on the
// independent reference model in accel_harness.h; the DRAM images after the run must be equal.
#include <gtest/gtest.h>

#include <optional>

#include "accel/accel_harness.h"
#include "stream_reference.h"

namespace loom::accel {
using loom::ConfigError;
using loom::DeviceError;
using loom::IsaError;
namespace {

class SimFuzz : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Configs, SimFuzz, ::testing::Range(0, 3),
                         [](const auto& p) { return test::test_configs()[p.param].name; });

TEST_P(SimFuzz, RandomStreamsMatchReferenceModel) {
  AccelConfig cfg = test::test_configs()[GetParam()];
  for (int seed = 0; seed < 120; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    test::AccelHarness h(cfg);
    ASSERT_EQ(test_streams::stream_against_reference(h, 1000 + uint64_t(seed), 60), "");
  }
}

}  // namespace
}  // namespace loom::accel
