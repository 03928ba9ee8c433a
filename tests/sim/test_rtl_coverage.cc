// The RTL's coverage build (`--backend rtl --coverage FILE`, sim/rtl_coverage.h): it commits a
// random program as the functional simulator does; its file holds line, branch, toggle and
// cover-property points that the program reached; devices accumulate into one file; merging
// agrees with verilator_coverage's own merge; bad files and missing builds are clear errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "accel/accel_harness.h"
#include "common/error_text.h"
#include "common/temp_dir.h"
#include "loom/accel/program_gen.h"
#include "loom/sim/commit_log.h"
#include "loom/sim/functional_sim.h"
#include "loom/sim/rtl_coverage.h"
#include "loom/sim/rtl_sim.h"
#include "loom/sim/rtl_waivers.h"
#include "rtl/rtl_model.h"

namespace loom::sim {
namespace {

using accel::AccelConfig;
using accel::Program;

// The tests that simulate the coverage build skip where it was not built (LOOM_RTL_COVERAGE_CONFIGS).
#define REQUIRE_COVERAGE_BUILD()                       \
  if (!rtl::make_model(accel::default_config(), true)) \
  GTEST_SKIP() << "the default config has no RTL coverage build (LOOM_RTL_COVERAGE_CONFIGS)"

Program program_for(const AccelConfig& cfg, uint64_t seed, int length = 150) {
  FunctionalSim scratch(cfg);
  accel::ProgramConstraints c;
  c.length = length;
  c.max_pad = 2;
  return accel::random_program(scratch, cfg, c, seed);
}

std::vector<CommitRecord> commits(AccelDevice& dev, const std::string& backend, const Program& p) {
  std::string error;
  auto r = run_recorded(
      &dev, backend, [&] { accel::run_program(p, dev); }, error);
  EXPECT_EQ(error, "");
  return r;
}

// Runs `p` on a coverage build writing into `file`, with DRAM back-pressure; the commit records.
std::vector<CommitRecord> run_covered(const Program& p, const std::string& file) {
  RtlSimOptions o;
  o.coverage_path = file;
  o.dram_stall_rate = 0.3;
  RtlSim dev(accel::default_config(), o);
  return commits(dev, "rtl", p);
}

const RtlCoverProperty* find_property(const std::vector<RtlCoverProperty>& v, const std::string& suffix) {
  for (const auto& p : v)
    if (p.instance.size() >= suffix.size() &&
        p.instance.compare(p.instance.size() - suffix.size(), suffix.size(), suffix) == 0)
      return &p;
  return nullptr;
}

TEST(RtlCoverage, TheCoverageBuildCommitsAsTheFunctionalSimulatorAndCountsEveryKind) {
  REQUIRE_COVERAGE_BUILD();
  test::TestDir dir;
  const std::string file = (dir.path() / "cov.dat").string();
  const Program p = program_for(accel::default_config(), 3);
  FunctionalSim fsim(accel::default_config());
  auto want = commits(fsim, "fsim", p);
  auto got = run_covered(p, file);
  auto d = first_divergence(want, got);
  EXPECT_FALSE(d) << "instruction " << (d ? d->index : 0);

  RtlCoverage c = RtlCoverage::load(file);
  for (RtlCoverageKind k : {RtlCoverageKind::Line, RtlCoverageKind::Branch, RtlCoverageKind::Toggle}) {
    RtlCoverageFigure f = c.total(k);
    EXPECT_GT(f.points, 50u) << to_string(k);
    EXPECT_GT(f.hit, f.points / 4) << to_string(k);
    EXPECT_LT(f.hit, f.points) << to_string(k);  // a short program leaves holes
  }
  // Modules are named without their parameterization; every RTL module has lines.
  auto modules = c.by_module();
  for (const char* m : {"loom_accel", "loom_fifo", "loom_dma_rd", "loom_gemm_alu", "loom_token_counter"})
    EXPECT_TRUE(modules.count(m) && modules[m].count(RtlCoverageKind::Toggle)) << m;
  EXPECT_FALSE(modules.count("loom_fifo__W9_D4"));
  // Cover properties per instance: the stalls made back-pressure on the read address channel.
  auto props = c.cover_properties();
  const RtlCoverProperty* ar = find_property(props, "loom_accel.c_ar_backpressure");
  ASSERT_NE(ar, nullptr);
  EXPECT_GT(ar->count, 0u);
  EXPECT_EQ(std::filesystem::path(ar->file).filename(), "loom_accel.sv");
  // Each FIFO instance has its own full/drained points.
  EXPECT_NE(find_property(props, "load.seq.queue.c_full"), nullptr);
  EXPECT_NE(find_property(props, "compute.seq.queue.c_full"), nullptr);
  EXPECT_EQ(c.total(RtlCoverageKind::CoverProperty).points, props.size());
}

// Bursts make tokens pile up and the store queue fill: the cover properties that a program of
// strict hand-offs never reaches.
TEST(RtlCoverage, BurstsReachTheTokenAndQueueCoverProperties) {
  REQUIRE_COVERAGE_BUILD();
  test::TestDir dir;
  const std::string file = (dir.path() / "cov.dat").string();
  FunctionalSim scratch(accel::default_config());
  accel::ProgramConstraints c;
  c.length = 80;
  c.burst = 3;
  run_covered(accel::random_program(scratch, accel::default_config(), c, 2), file);
  auto props = RtlCoverage::load(file).cover_properties();
  for (const char* p : {"tok_l2c.c_two_waiting", "tok_c2l.c_two_waiting", "tok_c2s.c_two_waiting",
                        "tok_s2c.c_two_waiting", "store.seq.queue.c_full", "load.seq.queue.c_full"}) {
    const RtlCoverProperty* cp = find_property(props, p);
    ASSERT_NE(cp, nullptr) << p;
    EXPECT_GT(cp->count, 0u) << p;
  }
}

TEST(RtlCoverage, DevicesAddTheirCountsToTheSameFile) {
  REQUIRE_COVERAGE_BUILD();
  test::TestDir dir;
  const std::string once = (dir.path() / "once.dat").string(), twice = (dir.path() / "twice.dat").string();
  const Program p = program_for(accel::default_config(), 5, 60);
  run_covered(p, once);
  run_covered(p, twice);
  run_covered(p, twice);
  RtlCoverage a = RtlCoverage::load(once), b = RtlCoverage::load(twice);
  ASSERT_EQ(a.size(), b.size());
  RtlCoverage doubled = a;
  doubled.merge(a);
  EXPECT_EQ(doubled.text(), b.text());
  EXPECT_NE(a.text(), b.text());
}

TEST(RtlCoverage, MergeAgreesWithVerilatorCoverage) {
  REQUIRE_COVERAGE_BUILD();
  if (std::system("verilator_coverage --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "verilator_coverage not found";
  test::TestDir dir;
  const std::string a = (dir.path() / "a.dat").string(), b = (dir.path() / "b.dat").string(),
                    theirs = (dir.path() / "theirs.dat").string();
  run_covered(program_for(accel::default_config(), 11, 60), a);
  run_covered(program_for(accel::default_config(), 12, 60), b);
  RtlCoverage ours = RtlCoverage::load(a);
  ours.merge(RtlCoverage::load(b));
  const std::string cmd = "verilator_coverage --write " + theirs + " " + a + " " + b + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  RtlCoverage v = RtlCoverage::load(theirs);
  EXPECT_EQ(v.size(), ours.size());
  for (RtlCoverageKind k :
       {RtlCoverageKind::Line, RtlCoverageKind::Branch, RtlCoverageKind::Toggle, RtlCoverageKind::CoverProperty}) {
    EXPECT_EQ(v.total(k).hit, ours.total(k).hit) << to_string(k);
    EXPECT_EQ(v.total(k).points, ours.total(k).points) << to_string(k);
  }
  // The merge covers more than either part.
  EXPECT_GT(ours.total(RtlCoverageKind::Toggle).hit, RtlCoverage::load(a).total(RtlCoverageKind::Toggle).hit);
}

// Points of two instances of one module: lines count once (their counts summed), cover
// properties once per instance.
TEST(RtlCoverage, LinesCountPerSourcePointAndCoverPropertiesPerInstance) {
  auto point = [](const std::string& page, const std::string& line, const std::string& what, const std::string& hier,
                  int count) {
    return "C '\x01"
           "f\x02/x/loom_fifo.sv\x01l\x02" +
           line + "\x01page\x02" + page + "\x01o\x02" + what + "\x01h\x02" + hier + "' " + std::to_string(count) + "\n";
  };
  const std::string text = "# SystemC::Coverage-3\n" +
                           point("v_line/loom_fifo__W9", "30", "block", "loom_accel.loom_accel.a", 0) +
                           point("v_line/loom_fifo__W80", "30", "block", "loom_accel.loom_accel.b", 4) +
                           point("v_line/loom_fifo__W80", "31", "block", "loom_accel.loom_accel.b", 0) +
                           point("v_user/loom_fifo__W9", "50", "c_full", "loom_accel.loom_accel.a.c_full", 0) +
                           point("v_user/loom_fifo__W80", "50", "c_full", "loom_accel.loom_accel.b.c_full", 2);
  RtlCoverage c = RtlCoverage::parse(text, "t.dat");
  auto m = c.by_module();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m["loom_fifo"][RtlCoverageKind::Line].points, 2u);
  EXPECT_EQ(m["loom_fifo"][RtlCoverageKind::Line].hit, 1u);
  EXPECT_EQ(m["loom_fifo"][RtlCoverageKind::CoverProperty].points, 2u);
  EXPECT_EQ(m["loom_fifo"][RtlCoverageKind::CoverProperty].hit, 1u);
  auto props = c.cover_properties();
  ASSERT_EQ(props.size(), 2u);
  EXPECT_EQ(props[0].instance, "loom_accel.a.c_full");
  EXPECT_EQ(props[1].count, 2u);
  auto holes = c.holes(RtlCoverageKind::Line);
  ASSERT_EQ(holes.size(), 1u);
  EXPECT_EQ(holes[0].line, 31);
  // Written back and read again: the same points.
  EXPECT_EQ(RtlCoverage::parse(c.text(), "again").text(), c.text());
}

// Toggle holes grouped per signal, summed over instances: the unhit bits as Verilog ranges, the
// signals with most unhit bits first, a one-bit signal without a range.
TEST(RtlCoverage, ToggleHolesAreListedPerSignalAsBitRanges) {
  auto toggle = [](const std::string& what, const std::string& hier, int count) {
    return "C '\x01"
           "f\x02/x/loom_fifo.sv\x01l\x02"
           "12\x01page\x02v_toggle/loom_fifo__W9\x01o\x02" +
           what + "\x01h\x02" + hier + "' " + std::to_string(count) + "\n";
  };
  std::string text = "# SystemC::Coverage-3\n";
  for (int bit = 0; bit < 8; ++bit) {
    const bool hit_a = bit == 0 || bit == 1 || bit == 3, hit_b = bit == 4;
    text += toggle("count_q[" + std::to_string(bit) + "]", "loom_accel.loom_accel.a", hit_a);
    text += toggle("count_q[" + std::to_string(bit) + "]", "loom_accel.loom_accel.b", hit_b);
  }
  text += toggle("halt", "loom_accel.loom_accel.a", 0) + toggle("mem_q[3][1]", "loom_accel.loom_accel.a", 0) +
          toggle("mem_q[3][0]", "loom_accel.loom_accel.a", 2);
  const std::vector<RtlToggleHoles> t = RtlCoverage::parse(text, "t.dat").toggle_holes_by_signal();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].signal, "count_q");
  EXPECT_EQ(t[0].bits, "[7:5,2]");
  EXPECT_EQ(t[0].unhit, 4u);
  EXPECT_EQ(t[0].points, 8u);
  EXPECT_EQ(t[1].signal, "halt");
  EXPECT_EQ(t[1].bits, "");
  EXPECT_EQ(t[2].signal, "mem_q[3]");
  EXPECT_EQ(t[2].bits, "[1]");
  EXPECT_EQ(t[2].points, 2u);
}

// A toggle point of loom_fifo's `what` in instance `hier`, hit `count` times.
std::string toggle_point(const std::string& what, const std::string& hier, int count) {
  return "C '\x01"
         "f\x02/x/loom_fifo.sv\x01l\x02"
         "12\x01page\x02v_toggle/loom_fifo__W9\x01o\x02" +
         what + "\x01h\x02" + hier + "' " + std::to_string(count) + "\n";
}

TEST(RtlCoverage, WaiversLeaveUnhitPointsOutAndCountContradictionsAsHit) {
  std::string text = "# SystemC::Coverage-3\n";
  for (int bit = 0; bit < 8; ++bit)  // bits 0-3 hit, 4-7 not, and bit 6 hit after all
    text += toggle_point("count_q[" + std::to_string(bit) + "]", "loom_accel.loom_accel.a", bit < 4 || bit == 6);
  text += toggle_point("halt", "loom_accel.loom_accel.a", 0) + toggle_point("busy", "loom_accel.loom_accel.a", 0);
  RtlCoverage c = RtlCoverage::parse(text, "t.dat");
  EXPECT_EQ(c.total(RtlCoverageKind::Toggle).points, 10u);
  c.set_waivers(RtlWaivers::parse(R"({"toggle": [
      {"signals": ["loom_fifo.count_q"], "bits": "[7:6]", "class": "bounded", "reason": "r1"},
      {"signals": ["loom_fifo.halt", "loom_fifo.gone_q"], "class": "structural", "reason": "r2"}]})",
                                  "w.json"));
  const RtlCoverageFigure t = c.total(RtlCoverageKind::Toggle);
  EXPECT_EQ(t.waived, 2u);  // count_q[7] and halt; count_q[6] toggled, so it is not waived
  EXPECT_EQ(t.points, 8u);
  EXPECT_EQ(t.hit, 5u);
  EXPECT_DOUBLE_EQ(t.percent(), 62.5);
  EXPECT_DOUBLE_EQ(t.raw_percent(), 50.0);
  const std::vector<RtlWaiverUse> uses = c.waiver_uses();
  ASSERT_EQ(uses.size(), 3u);
  EXPECT_EQ(uses[0].waived, 1u);
  EXPECT_EQ(uses[0].hit, 1u);  // contradicted
  EXPECT_EQ(uses[1].waived, 1u);
  EXPECT_EQ(uses[2].waived + uses[2].hit, 0u);       // matches nothing
  EXPECT_EQ(c.waivers().toggles()[2].reason, "r2");  // each signal of an entry, with its reason
  const std::vector<RtlToggleHoles> holes = c.toggle_holes_by_signal();
  ASSERT_EQ(holes.size(), 2u);  // count_q[5:4] and busy; halt and count_q[7] are waived
  EXPECT_EQ(holes[0].signal, "count_q");
  EXPECT_EQ(holes[0].bits, "[5:4]");
  EXPECT_EQ(holes[0].points, 7u);
  EXPECT_EQ(holes[1].signal, "busy");
  EXPECT_EQ(c.holes(RtlCoverageKind::Toggle).size(), 3u);
}

TEST(RtlCoverage, MalformedWaiversAreErrorsNamingTheFileAndTheEntry) {
  auto error = [](const std::string& text) {
    return test::error_text<Error>([&] { RtlWaivers::parse(text, "w.json"); });
  };
  const std::string ok = R"("signals": ["m.s"], "class": "structural", "reason": "why")";
  EXPECT_NO_THROW(RtlWaivers::parse("{\"toggle\": [{" + ok + "}]}", "w.json"));
  EXPECT_NE(error("{").find("coverage waivers 'w.json': not JSON"), std::string::npos) << error("{");
  EXPECT_NE(error("[]").find("expected an object"), std::string::npos);
  EXPECT_NE(error(R"({"lines": []})").find("unknown key 'lines'"), std::string::npos);
  EXPECT_NE(error(R"({"toggle": {}})").find("\"toggle\" must be a list"), std::string::npos);
  EXPECT_NE(error(R"({"toggle": [{"signals": ["m.s"], "class": "structural"}]})").find("toggle[0]: needs a \"reason\""),
            std::string::npos);
  EXPECT_NE(error("{\"toggle\": [{" + ok + "}, {" + ok + ", \"bits\": \"31:12\"}]}")
                .find("toggle[1]: bits '31:12' are not Verilog bit ranges"),
            std::string::npos);
  EXPECT_NE(error("{\"toggle\": [{" + ok + ", \"bits\": \"[3:7]\"}]}").find("are not Verilog bit ranges"),
            std::string::npos);
  EXPECT_NE(error(R"({"toggle": [{"signals": ["m.s"], "class": "never", "reason": "r"}]})")
                .find("class 'never': expected structural or bounded"),
            std::string::npos);
  EXPECT_NE(error("{\"toggle\": [{" + ok + ", \"why\": 1}]}").find("toggle[0]: unknown key 'why'"), std::string::npos);
  EXPECT_NE(error(R"({"toggle": [{"signals": ["m.s", ".s"], "class": "bounded", "reason": "r"}]})")
                .find("toggle[0]: signal \".s\" is not \"module.signal\""),
            std::string::npos);
  EXPECT_NE(error(R"({"toggle": [{"signals": [3], "class": "bounded", "reason": "r"}]})").find("signal 3 is not"),
            std::string::npos);
  EXPECT_NE(error(R"({"toggle": [{"signals": [], "class": "bounded", "reason": "r"}]})").find("needs \"signals\""),
            std::string::npos);
  EXPECT_NE(error(R"({"toggle": [{"class": "bounded", "reason": ""}]})").find("'reason' must be a non-empty string"),
            std::string::npos);
  EXPECT_NE(test::error_text<Error>([] {
              RtlWaivers::load("/nonexistent/w.json");
            }).find("cannot read the coverage waivers /nonexistent/w.json"),
            std::string::npos);
}

// The project's own waivers (hw/rtl/coverage_waivers.json) name toggle points that the default
// config's coverage build has: a waiver left behind by an RTL change fails here.
TEST(RtlCoverage, TheProjectsWaiversNameSignalsOfTheRtl) {
  REQUIRE_COVERAGE_BUILD();
  test::TestDir dir;
  const std::string file = (dir.path() / "cov.dat").string();
  run_covered(program_for(accel::default_config(), 7, 40), file);
  RtlCoverage c = RtlCoverage::load(file);
  c.set_waivers(RtlWaivers::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/../../hw/rtl/coverage_waivers.json"));
  const std::vector<RtlWaiverUse> uses = c.waiver_uses();
  ASSERT_FALSE(uses.empty());
  for (size_t i = 0; i < uses.size(); ++i) {
    const RtlToggleWaiver& w = c.waivers().toggles()[i];
    EXPECT_GT(uses[i].waived + uses[i].hit, 0u) << w.module << "." << w.signal << w.bits << " names no toggle point";
    EXPECT_EQ(uses[i].hit, 0u) << w.module << "." << w.signal << w.bits << " toggled in a short random program";
  }
}

TEST(RtlCoverage, MalformedFilesAreErrorsNamingTheFileAndLine) {
  auto error = [](const std::string& text) {
    return test::error_text<Error>([&] { RtlCoverage::parse(text, "bad.dat"); });
  };
  EXPECT_NE(error("").find("bad.dat:0: not Verilator coverage data: the file is empty"), std::string::npos)
      << error("");
  EXPECT_NE(error("hello\n").find("bad.dat:1:"), std::string::npos);
  const std::string h = "# SystemC::Coverage-3\n";
  EXPECT_NE(error(h + "X 'a' 1\n").find("bad.dat:2: not Verilator coverage data: a point starts with C '"),
            std::string::npos);
  EXPECT_NE(error(h + "C '\x01page\x02v_line/m' many\n").find("the count 'many' is not a whole number"),
            std::string::npos);
  EXPECT_NE(error(h + "C '\x01page\x02v_line/m 3\n").find("bad.dat:2:"), std::string::npos);
  EXPECT_NE(error(h + "C '\x01"
                      "f\x02x.sv' 3\n")
                .find("a point without a page"),
            std::string::npos);
  EXPECT_NE(error(h + "C 'page' 3\n").find("keys are separated"), std::string::npos);
  EXPECT_NE(test::error_text<Error>([] { RtlCoverage::load("/nonexistent/cov.dat"); }).find("/nonexistent/cov.dat"),
            std::string::npos);
}

TEST(RtlCoverage, AConfigWithoutACoverageBuildIsAClearError) {
  AccelConfig cfg = AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/1x32x32.json");
  if (!rtl::make_model(cfg, false) || rtl::make_model(cfg, true))
    GTEST_SKIP() << "needs 1x32x32 in LOOM_RTL_CONFIGS and not in LOOM_RTL_COVERAGE_CONFIGS";
  test::TestDir dir;
  const std::string file = (dir.path() / "never.dat").string();
  std::string json = cfg.to_json();
  json = json.substr(0, json.rfind('}')) + R"(, "rtl": {"coverage": ")" + file + R"("}})";
  std::string e = test::error_text<DeviceError>([&] { make_accel_device("rtl", json); });
  EXPECT_NE(e.find("coverage needs the RTL model of accelerator config '1x32x32' built with coverage counters"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("LOOM_RTL_COVERAGE_CONFIGS"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(RtlCoverage, AFileThatCannotBeWrittenIsSaidWhenTheDeviceCloses) {
  REQUIRE_COVERAGE_BUILD();
  testing::internal::CaptureStderr();
  {
    RtlSimOptions o;
    o.coverage_path = "/nonexistent/dir/cov.dat";
    RtlSim dev(accel::default_config(), o);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rtl: the RTL's coverage was not written"), std::string::npos) << err;
  EXPECT_NE(err.find("/nonexistent/dir/cov.dat"), std::string::npos) << err;
}

}  // namespace
}  // namespace loom::sim
