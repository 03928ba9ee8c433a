// Random instruction streams (the shared table's StreamFuzzer: loads with padding, GEMM and ALU
// nests, strided stores, random bytes as packed operands) at each shipped narrow precision, on
// every accelerator backend built here, against the precision-generic reference model of
// accel_harness.h: the device memory after each stream must be equal byte for byte. The RTL and
// SystemC cases run the Verilated model elaborated for each config (LOOM_RTL_CONFIGS).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <tuple>

#include "accel/accel_harness.h"
#include "stream_reference.h"

namespace loom::accel {
namespace {

using Case = std::tuple<std::string, std::string>;  // config, backend

class PrecisionStreams : public ::testing::TestWithParam<Case> {};

TEST_P(PrecisionStreams, MatchTheReferenceModel) {
  const auto& [name, backend] = GetParam();
  const AccelConfig cfg = AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + name + ".json");
  sim::register_backends();
  std::string json = cfg.to_json();
  if (backend == "rtl") {  // the AXI handshakes under back-pressure, as the shared table runs them
    auto j = nlohmann::json::parse(json);
    j["rtl"] = {{"dram_stall_rate", 0.3}, {"cycle_limit", 5000000}};
    json = j.dump();
  }
  try {
    check_accel_backend(backend, json);
  } catch (const Error& e) {
    GTEST_SKIP() << backend << " is not built for config '" << name << "' here: " << e.what();
  }
  const int seeds = backend == "fsim" ? 60 : 12;
  for (int seed = 0; seed < seeds; ++seed) {
    SCOPED_TRACE(name + " on " + backend + ", seed " + std::to_string(seed));
    test::AccelHarness h(cfg, make_accel_device(backend, json));
    ASSERT_EQ(test_streams::stream_against_reference(h, 3000 + uint64_t(seed), 60), "");
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& p) {
  return std::get<0>(p.param) + "_" + std::get<1>(p.param);
}

INSTANTIATE_TEST_SUITE_P(Shipped, PrecisionStreams,
                         ::testing::Combine(::testing::Values("w4a8", "w4a4", "w2a8", "acc16"),
                                            ::testing::Values("fsim", "rtl", "systemc")),
                         case_name);

}  // namespace
}  // namespace loom::accel
