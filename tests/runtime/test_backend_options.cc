// A backend's declared options: the reader takes exactly the declared keys, of their kind and in
// their range, names the closest key for a typo, and enforces what an option needs.
#include <gtest/gtest.h>

#include "common/error_text.h"
#include "loom/runtime/backend_options.h"
#include "loom/runtime/error.h"

namespace loom {
namespace {

const std::string kBackend = "test-backend-options";

void declare() {
  using O = BackendOption;
  register_accel_backend_options(kBackend, {
                                               O::count("dram_latency", 0, 1000, "latency"),
                                               O::number("stall_rate", 0, 1, O::Ends::OpenAbove, "stalls"),
                                               O::number("bandwidth", 0, 64, O::Ends::OpenBelow, "bytes per cycle"),
                                               O::boolean("functional", "execute"),
                                               O::choice("memory", {"fixed", "banked"}, "model"),
                                               O::output_file("trace", "timeline"),
                                               O::count("trace_end", 1, 100, "end").needing("trace"),
                                           });
}

std::string error_of(const std::string& section) {
  return test::error_text<ConfigError>([&] { read_backend_options(kBackend, section); });
}

TEST(BackendOptions, DeclaredValuesAreReadWithTheirKinds) {
  declare();
  BackendOptionValues v = read_backend_options(
      kBackend,
      R"({"dram_latency": 1000, "stall_rate": 0, "bandwidth": 64, "functional": false, "memory": "banked",
          "trace": "t.json", "trace_end": 1})");
  EXPECT_EQ(v.count("dram_latency", 7), 1000u);
  EXPECT_EQ(v.number("stall_rate", 0.5), 0.0);
  EXPECT_EQ(v.number("bandwidth", 1), 64.0);
  EXPECT_FALSE(v.flag("functional", true));
  EXPECT_EQ(v.text("memory", ""), "banked");
  EXPECT_EQ(v.text("trace", ""), "t.json");
  EXPECT_EQ(v.count("trace_end", 0), 1u);
  BackendOptionValues none = read_backend_options(kBackend, "");
  EXPECT_FALSE(none.has("dram_latency"));
  EXPECT_EQ(none.count("dram_latency", 7), 7u);
  EXPECT_TRUE(none.flag("functional", true));
  EXPECT_FALSE(read_backend_options(kBackend, "{}").has("memory"));
}

TEST(BackendOptions, BadSectionsNameBackendAndKey) {
  declare();
  struct Case {
    const char* section;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"dram_latncy": 3})",
            "test-backend-options backend: unknown option \"dram_latncy\" (did you mean 'dram_latency'?); its options: "
            "dram_latency, stall_rate, bandwidth, functional, memory, trace, trace_end"},
           {R"({"dram_latency": 1001})", "option \"dram_latency\" must be an integer in [0, 1000], got 1001"},
           {R"({"dram_latency": -1})", "option \"dram_latency\" must be an integer in [0, 1000], got -1"},
           {R"({"dram_latency": 2.5})", "option \"dram_latency\" must be an integer in [0, 1000], got 2.5"},
           {R"({"dram_latency": "3"})", "option \"dram_latency\" must be an integer in [0, 1000], got \"3\""},
           {R"({"stall_rate": 1})", "option \"stall_rate\" must be a number in [0, 1), got 1"},
           {R"({"stall_rate": -0.1})", "option \"stall_rate\" must be a number in [0, 1), got -0.1"},
           {R"({"bandwidth": 0})", "option \"bandwidth\" must be a number in (0, 64], got 0"},
           {R"({"bandwidth": 64.5})", "option \"bandwidth\" must be a number in (0, 64], got 64.5"},
           {R"({"functional": "yes"})", "option \"functional\" must be true or false, got \"yes\""},
           {R"({"memory": "stacked"})", "option \"memory\" must be one of fixed, banked, got \"stacked\""},
           {R"({"trace": ""})", "option \"trace\" must be a file path, got \"\""},
           {R"({"trace_end": 5})", "option \"trace_end\" needs \"trace\""},
           {R"([1, 2])", "test-backend-options backend: its options must be a JSON object, got [1,2]"},
           {R"({"trace": )", "test-backend-options backend: its options are not valid JSON"},
       }) {
    std::string msg = error_of(c.section);
    EXPECT_NE(msg.find(c.says), std::string::npos) << c.section << "\n" << msg;
  }
  // A backend that declares nothing takes nothing.
  std::string msg = test::error_text<ConfigError>([] { read_backend_options("test-no-options", R"({"x": 1})"); });
  EXPECT_NE(msg.find("test-no-options backend: unknown option \"x\"; it takes no options"), std::string::npos) << msg;
}

TEST(BackendOptions, FlagsAndRangesForTheCommandLine) {
  declare();
  const BackendOptionSchema& s = accel_backend_options(kBackend);
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s[0].cli_flag(), "--dram-latency");
  EXPECT_EQ(s[6].cli_flag(), "--trace-end");
  EXPECT_EQ(s[0].range_text(), "an integer in [0, 1000]");
  EXPECT_EQ(s[1].range_text(), "a number in [0, 1)");
  EXPECT_EQ(s[2].range_text(), "a number in (0, 64]");
  EXPECT_EQ(s[4].range_text(), "one of fixed, banked");
  EXPECT_TRUE(accel_backend_options("test-never-declared").empty());
}

}  // namespace
}  // namespace loom
