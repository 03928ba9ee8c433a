// The regression runner's library: manifests expanded and checked, jobs run in this process against
// independent references, cache keys, array comparison and the reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "loom/regress/compare.h"
#include "loom/regress/job.h"
#include "loom/regress/manifest.h"
#include "loom/regress/process.h"
#include "loom/regress/report.h"
#include "loom/regress/runner.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"

using namespace loom;
using namespace loom::regress;
using nlohmann::json;

namespace {

std::string manifest_error(const std::string& text, const std::string& dir = ".") {
  return test::error_text<Error>([&] { parse_manifest(text, "m.json", dir); });
}

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST(RegressManifest, ExpandsTheCrossProductWithNamesAndExpectations) {
  Manifest m = parse_manifest(R"({"name": "n", "retries": 2, "configs": {"small": {"inp_buffer_bytes": 16384}},
    "jobs": [{"name": "g", "workloads": ["resnet18:c2", {"name": "tiny", "workload": "op:dense,channels=16"}],
              "configs": ["default", "small"], "backends": ["fsim", "perf"], "timeout_s": 5,
              "expect": {"reference": "fsim", "max_cycles": 100}},
             {"name": "h", "workloads": ["command:true"], "backends": ["fsim"]}]})",
                              "m.json", ".");
  ASSERT_EQ(m.jobs.size(), 2u * 2 * 2 + 1);
  EXPECT_EQ(m.name, "n");
  EXPECT_EQ(m.jobs[0].name, "g/resnet18-c2/default/fsim");
  EXPECT_EQ(m.jobs[1].name, "g/resnet18-c2/default/perf");
  EXPECT_EQ(m.jobs[2].name, "g/resnet18-c2/small/fsim");
  EXPECT_EQ(m.jobs[4].name, "g/tiny/default/fsim");
  EXPECT_EQ(m.jobs[2].config["inp_buffer_bytes"], 16384);
  EXPECT_EQ(m.jobs[0].config["inp_buffer_bytes"], 32768);
  EXPECT_EQ(m.jobs[0].expect.reference, "fsim");
  EXPECT_EQ(*m.jobs[0].expect.max_cycles, 100u);
  EXPECT_EQ(m.jobs[0].timeout_s, 5);
  EXPECT_EQ(m.jobs[0].retries, 2);
  EXPECT_EQ(m.jobs[8].expect.reference, "none") << "a command has no CPU reference";
  // A description survives the trip through a round file.
  EXPECT_EQ(JobSpec::from_json(m.jobs[3].to_json()).to_json(), m.jobs[3].to_json());
}

TEST(RegressManifest, BadManifestsNameTheLineOrTheGroup) {
  expect_has(manifest_error("{\"jobs\": [\n  {\"name\": \"a\",\n   \"workloads\": [}\n]}"), "m.json' line 3");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["op:dense"], "backends": ["rtll"]}]})"),
             "jobs[0] ('a'): unknown backend 'rtll' (");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["op:dense"], "backends": ["fsim"],
                               "configs": ["big"]}]})"),
             "unknown config 'big' (default)");
  expect_has(
      manifest_error(R"({"jobs": [{"name": "a", "workloads": ["op:dense"], "backends": ["fsim"], "timeout": 3}]})"),
      "unknown key 'timeout'");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["op:dense"], "backends": ["fsim"]},
                                         {"name": "a", "workloads": ["op:add"], "backends": ["fsim"]}]})"),
             "jobs[1] ('a'): a group of this name comes earlier");
  expect_has(
      manifest_error(R"({"jobs": [{"name": "a", "workloads": ["op:dense", {"name": "op-dense", "workload": "op:add"}],
                               "backends": ["fsim"]}]})"),
      "two jobs are named 'a/op-dense/default/fsim'");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["op:conv3d"], "backends": ["fsim"]}]})"),
             "unknown operator 'conv3d'");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["resnet18:c12"], "backends": ["fsim"]}]})"),
             "ResNet-18 has no conv layer 'c12'");
  {
    // Named where it is once: the workload's kind finds the file missing, the manifest says where.
    std::string e =
        manifest_error(R"({"jobs": [{"name": "a", "workloads": ["program:nosuch.prg"], "backends": ["fsim"]}]})");
    expect_has(e, "manifest 'm.json': jobs[0] ('a'): workload 'program:nosuch.prg': no file '");
    EXPECT_EQ(e.find("manifest 'm.json'", 1), std::string::npos) << e;
  }
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["command:true"], "backends": ["fsim"],
                               "expect": {"reference": "fsim"}}]})"),
             "is a command: it checks itself");
  expect_has(manifest_error(R"({"configs": {"../x": {}}, "jobs": [{"name": "a", "workloads": ["op:dense"],
                               "backends": ["fsim"]}]})"),
             "config name '../x' may hold only");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": [{"name": "..", "workload": "op:add"}],
                               "backends": ["fsim"]}]})"),
             "workload name '..' may hold only");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["op:dense"], "backends": ["fsim"],
                               "expect": {"min_accuracy": 0.9}}]})"),
             "min_accuracy needs a model workload");
  expect_has(manifest_error(R"({"configs": {"x": {"block_in": 7}}, "jobs": []})"), "config 'x'");
  expect_has(manifest_error(R"({"jobs": []})"), "'jobs' must be a non-empty list");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["op:dense"], "backends": ["fsim"],
                               "timeout_s": -1}]})"),
             "'timeout_s' must be a number in");
  expect_has(manifest_error(R"({"jobs": [{"name": "a/b", "workloads": ["op:dense"], "backends": ["fsim"]}]})"),
             "may hold only letters");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["random:x1"], "backends": ["fsim"]}]})"),
             "the seed 'x1' is not a whole number (random:SEED)");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["random:1"], "backends": ["fsim"],
                               "params": {"lenght": 10}}]})"),
             "unknown field 'lenght'");
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["random:1"], "backends": ["fsim"],
                               "params": {"max_pad": 99}}]})"),
             "max_pad is 99, not in [0, 15]");
}

// random:SEED: a generated program on the job's backend against the reference's commit records and
// control-register answers, its ISA coverage in the metrics; with no reference it only runs.
TEST(RegressJob, RandomProgramsCommitAsTheReferenceAndReportTheirCoverage) {
  test::TestDir dir;
  Manifest m = parse_manifest(R"({"jobs": [
      {"name": "a", "workloads": ["random:5"], "backends": ["fsim"], "params": {"length": 90}},
      {"name": "b", "workloads": ["random:5"], "backends": ["perf"], "params": {"length": 90},
       "expect": {"reference": "none"}}]})",
                              "m.json", ".");
  JobOutcome a = run_job(m.jobs[0], dir.path() / "a");
  EXPECT_EQ(a.status, "pass") << a.message;
  EXPECT_GT(a.metrics["instructions"].get<uint64_t>(), 90u);
  EXPECT_GT(a.metrics["isa_coverage"]["gemm: reset"].get<uint64_t>() +
                a.metrics["isa_coverage"]["gemm: accumulate"].get<uint64_t>(),
            0u);
  ASSERT_EQ(a.checks.size(), 2u);  // the control registers around the run, then the commit records
  EXPECT_EQ(a.checks[0].name, "control registers");
  expect_has(a.checks[0].detail, "accesses answered alike");
  EXPECT_TRUE(a.checks[0].ok);
  EXPECT_TRUE(a.checks[1].ok);
  JobOutcome b = run_job(m.jobs[1], dir.path() / "b");
  EXPECT_EQ(b.status, "pass") << b.message;
  EXPECT_TRUE(b.checks.empty());
  EXPECT_GT(b.metrics["cycles"].get<uint64_t>(), 0u);               // the performance model's
  EXPECT_EQ(b.metrics["isa_coverage"], a.metrics["isa_coverage"]);  // the same seed, the same program
}

// "random:{1..3}" is three workloads; a range counts up and is the only one; other braces stay.
TEST(RegressManifest, ASeedRangeExpandsIntoOneJobPerSeed) {
  Manifest m = parse_manifest(R"({"jobs": [{"name": "r", "workloads": ["random:{2..4}", "command:echo {a}"],
                                             "backends": ["fsim"]}]})",
                              "m.json", ".");
  ASSERT_EQ(m.jobs.size(), 4u);
  EXPECT_EQ(m.jobs[0].workload, "random:2");
  EXPECT_EQ(m.jobs[2].workload, "random:4");
  EXPECT_EQ(m.jobs[3].workload, "command:echo {a}");
  auto bad = [](const std::string& w) {
    return manifest_error(R"({"jobs": [{"name": "r", "workloads": [")" + w + R"("], "backends": ["fsim"]}]})");
  };
  expect_has(bad("random:{5..4}"), "workload 'random:{5..4}': the range must count up and hold at most 100000 numbers");
  expect_has(bad("random:{0..100000}"), "at most 100000 numbers");
  expect_has(bad("random:{1..2}{3..4}"), "at most one {FIRST..LAST} range per workload");
}

// "directed": true draws seed S toward the ISA bins seeds 1..S-1 left unhit (isa_bins_before);
// a bad value is a clear error.
TEST(RegressJob, DirectedRandomProgramsSteerTowardTheEarlierSeedsHoles) {
  test::TestDir dir;
  Manifest m = parse_manifest(R"({"jobs": [
      {"name": "d", "workloads": ["random:1", "random:4"], "backends": ["fsim"], "params": {"length": 40, "weights": {"gemm": 10}, "directed": true}},
      {"name": "u", "workloads": ["random:4"], "backends": ["fsim"], "params": {"length": 40, "weights": {"gemm": 10}}}]})",
                              "m.json", ".");
  JobOutcome first = run_job(m.jobs[0], dir.path() / "1"), fourth = run_job(m.jobs[1], dir.path() / "4"),
             plain = run_job(m.jobs[2], dir.path() / "u");
  for (const JobOutcome* o : {&first, &fourth, &plain}) EXPECT_EQ(o->status, "pass") << o->message;
  EXPECT_EQ(first.metrics["isa_bins_before"].get<uint64_t>(), 0u);
  EXPECT_GT(fourth.metrics["isa_bins_before"].get<uint64_t>(), 40u);  // seeds 1..3 hit bins already
  EXPECT_FALSE(plain.metrics.contains("isa_bins_before"));
  EXPECT_NE(fourth.metrics["isa_coverage"], plain.metrics["isa_coverage"]);  // steered: another program
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["random:1"], "backends": ["fsim"],
                               "params": {"directed": "yes"}}]})"),
             "\"directed\" must be true or false, got \"yes\"");
}

// "faults": planted faults, each reported by the job's backend as by the reference (here both
// fsim: the mechanism; test_rtl's ProgramGen.PlantedFaults* compares the RTL with fsim), or at all
// without a reference; a bad share is a clear error.
TEST(RegressJob, PlantedFaultsAreReportedAsTheReferenceReportsThem) {
  test::TestDir dir;
  Manifest m = parse_manifest(R"({"jobs": [
      {"name": "f", "workloads": ["random:{1..4}"], "backends": ["perf"], "params": {"length": 30, "faults": 1}},
      {"name": "n", "workloads": ["random:1"], "backends": ["fsim"], "params": {"length": 30, "faults": 1},
       "expect": {"reference": "none"}},
      {"name": "z", "workloads": ["random:1"], "backends": ["fsim"], "params": {"length": 30, "faults": 0}}]})",
                              "m.json", ".");
  for (size_t i = 0; i < 4; ++i) {
    JobOutcome o = run_job(m.jobs[i], dir.path() / std::to_string(i));
    EXPECT_EQ(o.status, "pass") << o.message;
    ASSERT_EQ(o.checks.size(), 1u);
    expect_has(o.checks[0].detail, "as fsim reports");
    const std::string planted = o.metrics["planted_fault"].get<std::string>();
    EXPECT_TRUE(planted.find(" in instruction ") != std::string::npos || planted.find("stream ") != std::string::npos)
        << planted;                                    // an instruction's fault or the launched stream's
    EXPECT_GT(o.metrics["isa_coverage"].size(), 10u);  // sampled before the fault was planted
  }
  JobOutcome alone = run_job(m.jobs[4], dir.path() / "n");
  EXPECT_EQ(alone.status, "pass") << alone.message;
  EXPECT_EQ(alone.checks.at(0).name, "planted fault");
  JobOutcome clean = run_job(m.jobs[5], dir.path() / "z");
  EXPECT_FALSE(clean.metrics.contains("planted_fault"));
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["random:1"], "backends": ["fsim"],
                               "params": {"faults": 2}}]})"),
             "\"faults\" must be a share in [0, 1], got 2");
}

TEST(RegressManifest, YamlIsTheSameManifest) {
  const std::string json_text = R"({"name": "y", "timeout_s": 30, "configs": {"small": {"inp_buffer_bytes": 16384}},
    "jobs": [{"name": "g", "workloads": ["resnet18:c2", {"name": "n", "workload": "command:echo 'a: b'"}],
              "configs": ["default", "small"], "backends": ["fsim"], "expect": {"reference": "none", "max_cycles": 100}}]})";
  const std::string yaml_text = R"(name: y
timeout_s: 30
configs:
  small: {inp_buffer_bytes: 16384}
jobs:
  - name: g
    workloads: [resnet18:c2, {name: n, workload: "command:echo 'a: b'"}]
    configs: [default, small]
    backends: [fsim]
    expect: {reference: none, max_cycles: 100}
)";
#ifdef LOOM_HAVE_YAML
  Manifest a = parse_manifest(json_text, "m.json", "."), b = parse_manifest(yaml_text, "m.yaml", ".");
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) EXPECT_EQ(a.jobs[i].to_json(), b.jobs[i].to_json());
  expect_has(test::error_text<Error>([] { parse_manifest("jobs:\n  - name: [a\n", "m.yml", "."); }),
             "manifest 'm.yml' line ");
#else
  expect_has(test::error_text<Error>([&] { parse_manifest(yaml_text, "m.yaml", "."); }), "without YAML support");
#endif
}

TEST(RegressJob, OperatorsMatchTheCpuAndTheReferenceBackend) {
  test::TestDir dir;
  Manifest m = parse_manifest(R"({"jobs": [
      {"name": "a", "workloads": ["op:conv2d,channels=16,out_channels=16,size=6", "resnet18:c11"], "backends": ["perf"]},
      {"name": "b", "workloads": ["op:add,channels=16,size=4"], "backends": ["perf"],
       "expect": {"reference": "fsim", "max_cycles": 1, "min_utilization": 0.0}}]})",
                              "m.json", ".");
  for (size_t i = 0; i < 2; ++i) {
    JobOutcome o = run_job(m.jobs[i], dir.path() / std::to_string(i));
    EXPECT_EQ(o.status, "pass") << m.jobs[i].name << ": " << o.message;
    EXPECT_EQ(o.metrics["mismatches"], 0);
    EXPECT_GT(o.metrics["cycles"].get<uint64_t>(), 0u);
    EXPECT_TRUE(std::filesystem::exists(dir.path() / std::to_string(i) / "output.npy"));
  }
  // ResNet-18's last layer keeps the 1x16x16 core busy (the performance model's figure).
  JobOutcome c11 = run_job(m.jobs[1], dir.path() / "c11");
  EXPECT_GT(c11.metrics["utilization"].get<double>(), 0.9);
  // A cycle budget that the run exceeds is a failure naming both numbers.
  JobOutcome b = run_job(m.jobs[2], dir.path() / "b");
  EXPECT_EQ(b.status, "fail");
  expect_has(b.message, "max_cycles: ");
  expect_has(b.message, "cycles, budget 1");
}

// Every bound of an expectation, at the measured figure, just inside and just outside it: a bound
// equal to the figure passes (max_cycles, min_utilization and min_accuracy are inclusive).
TEST(RegressJob, BoundsHoldAtTheirValueAndFailJustPast) {
  test::TestDir dir;
  auto run = [&](const std::string& workload, const std::string& backend, const std::string& expect, int inputs = 1) {
    Manifest m =
        parse_manifest(R"({"jobs": [{"name": "a", "workloads": [")" + workload + R"("], "backends": [")" + backend +
                           R"("], "inputs": )" + std::to_string(inputs) + R"(, "expect": )" + expect + "}]}",
                       "m.json", ".");
    return run_job(m.jobs[0], dir.path() / "j");
  };
  JobOutcome timed = run("resnet18:c11", "perf", R"({"reference": "none"})");
  ASSERT_EQ(timed.status, "pass") << timed.message;
  const uint64_t cycles = timed.metrics["cycles"].get<uint64_t>();
  const double use = timed.metrics["utilization"].get<double>();
  auto with = [](const char* key, const std::string& value) {
    return std::string(R"({"reference": "none", ")") + key + "\": " + value + "}";
  };
  auto exact = [](double v) {
    std::ostringstream os;
    os.precision(17);
    os << v;
    return os.str();
  };
  EXPECT_EQ(run("resnet18:c11", "perf", with("max_cycles", std::to_string(cycles))).status, "pass");
  EXPECT_EQ(run("resnet18:c11", "perf", with("max_cycles", std::to_string(cycles + 1))).status, "pass");
  EXPECT_EQ(run("resnet18:c11", "perf", with("max_cycles", std::to_string(cycles - 1))).status, "fail");
  EXPECT_EQ(run("resnet18:c11", "perf", with("min_utilization", exact(use))).status, "pass");
  EXPECT_EQ(run("resnet18:c11", "perf", with("min_utilization", exact(std::nextafter(use, 0.0)))).status, "pass");
  EXPECT_EQ(run("resnet18:c11", "perf", with("min_utilization", exact(std::nextafter(use, 1.0)))).status, "fail");
  // Accuracy over 8 inputs of the built-in MLP (which tells them apart): at, below and above.
  JobOutcome measured = run("model:mlp", "fsim", with("min_accuracy", "0"), 8);
  ASSERT_EQ(measured.status, "pass") << measured.message;
  const double acc = measured.metrics["accuracy"].get<double>();
  ASSERT_GT(acc, 0.0);
  EXPECT_EQ(run("model:mlp", "fsim", with("min_accuracy", exact(acc)), 8).status, "pass");
  EXPECT_EQ(run("model:mlp", "fsim", with("min_accuracy", exact(std::nextafter(acc, 0.0))), 8).status, "pass");
  if (acc < 1) {
    EXPECT_EQ(run("model:mlp", "fsim", with("min_accuracy", exact(acc + 0.125)), 8).status, "fail");
  }
}

TEST(RegressJob, DeviceOptionsReachOnlyTheirBackend) {
  test::TestDir dir;
  auto cycles = [&](const std::string& device) {
    Manifest m =
        parse_manifest(R"({"jobs": [{"name": "a", "workloads": ["op:conv2d,channels=16,out_channels=16,size=6"],
                                   "backends": ["perf"], "expect": {"reference": "fsim"}, "device": )" +
                           device + "}]}",
                       "m.json", ".");
    JobOutcome o = run_job(m.jobs[0], dir.path() / "j");
    EXPECT_EQ(o.status, "pass") << device << ": " << o.message;
    return o.metrics.value("cycles", uint64_t(0));
  };
  uint64_t plain = cycles("{}");
  // The rtl section is the RTL's: neither perf nor the fsim reference sees it (nor refuses it).
  EXPECT_EQ(cycles(R"({"rtl": {"dram_latency": 400}})"), plain);
  EXPECT_GT(cycles(R"({"perf": {"dram_latency": 400}})"), plain);
  expect_has(manifest_error(R"({"jobs": [{"name": "a", "workloads": ["op:dense"], "backends": ["fsim"],
                               "device": {"dram_latency": 40}}]})"),
             "'device': 'dram_latency' is not one of the backends' option sections");
}

// A device option that the backend would refuse (a misspelt key, a value out of its range) is
// found before any job runs, by the backend's own reader: the run starts nothing and names the
// job (its group first) and the key.
TEST(RegressJob, BadDeviceOptionsAreRefusedBeforeAnythingRuns) {
  auto manifest = [](const std::string& backend, const std::string& device) {
    return parse_manifest(R"({"jobs": [{"name": "fine", "workloads": ["op:dense"], "backends": ["fsim"]},
        {"name": "typo", "workloads": ["op:dense"], "backends": [")" +
                              backend + R"("], "device": )" + device + "}]}",
                          "m.json", ".");
  };
  EXPECT_EQ(job_problem(manifest("fsim", "{}").jobs[1]), "");  // the simulators are registered from here on
  const auto known = accel_backends();
  struct Case {
    std::string backend, device, says;
  };
  for (const Case& c : std::vector<Case>{
           {"fsim", R"({"fsim": {"step_limt": 5}})",
            "fsim backend: unknown option \"step_limt\" (did you mean 'step_limit'?)"},
           {"fsim", R"({"fsim": {"step_limit": 0}})",
            "fsim backend: option \"step_limit\" must be an integer in [1, 1000000000000000], got 0"},
           {"fsim", R"({"fsim": {"seed": 4}})", "fsim backend: option \"seed\" needs \"interleave\""},
           {"perf", R"({"perf": {"queue_depth": 0}})",
            "perf backend: option \"queue_depth\" must be an integer in [1, 1000000], got 0"},
           {"perf", R"({"perf": {"dram_latncy": 4}})",
            "perf backend: unknown option \"dram_latncy\" (did you mean 'dram_latency'?)"},
           {"perf", R"({"perf": {"functional": 1}})",
            "perf backend: option \"functional\" must be true or false, got 1"},
           {"rtl", R"({"rtl": {"dram_stall_rate": 1.5}})",
            "rtl backend: option \"dram_stall_rate\" must be a number in [0, 1), got 1.5"},
           {"rtl", R"({"rtl": {"cycle_limt": 5}})",
            "rtl backend: unknown option \"cycle_limt\" (did you mean 'cycle_limit'?)"},
           {"rtl", R"({"rtl": {"fst": "w.fst", "fst_begin": 9, "fst_end": 5}})",
            "rtl backend: fst_end (5) must be after fst_begin (9)"},
           {"systemc", R"({"systemc": {"banks": 0}})",
            "systemc backend: option \"banks\" must be an integer in [1, 1024], got 0"},
           {"systemc", R"({"systemc": {"memory": "stacked"}})",
            "systemc backend: option \"memory\" must be one of fixed, banked, got \"stacked\""},
       }) {
    if (std::find(known.begin(), known.end(), c.backend) == known.end()) continue;  // no RTL models built
    Manifest m = manifest(c.backend, c.device);
    EXPECT_EQ(job_problem(m.jobs[0]), "");
    if (job_problem(m.jobs[1]).find("is not built") != std::string::npos) continue;  // no SystemC
    expect_has(job_problem(m.jobs[1]), c.says);
    test::TestDir dir;
    RunOptions o;
    o.out = dir.path() / "out";
    o.quiet = true;
    o.loom = "/bin/false";  // were a job started anyway, its worker fails at once (this program is no worker)
    std::string msg = test::error_text<Error>([&] { run_regression(m, o); });
    expect_has(msg, "1 of the 2 jobs cannot run here, so none ran");
    expect_has(msg, m.jobs[1].name + ": ");
    expect_has(msg, c.says);
    EXPECT_EQ(m.jobs[1].name.rfind("typo/", 0), 0u) << m.jobs[1].name;  // the group names the job
    EXPECT_FALSE(std::filesystem::exists(o.out / "jobs" / m.jobs[0].name / "result.json")) << c.device;
  }
}

TEST(RegressJob, AWorkloadThatCannotRunIsAnErrorNotACrash) {
  test::TestDir dir;
  Manifest m = parse_manifest(R"({"jobs": [{"name": "a", "workloads": ["op:dense,channels=17"], "backends": ["fsim"]},
      {"name": "b", "workloads": ["op:dense"], "backends": ["fsim"], "expect": {"max_cycles": 10}}]})",
                              "m.json", ".");
  JobOutcome o = run_job(m.jobs[0], dir.path() / "a");
  EXPECT_EQ(o.status, "error");
  expect_has(o.message, "17");
  // fsim does not time: a cycle budget cannot be checked there, and says so.
  JobOutcome f = run_job(m.jobs[1], dir.path() / "b");
  EXPECT_EQ(f.status, "fail");
  expect_has(f.message, "no cycle count: backend fsim does not time the run");
}

TEST(RegressCache, TheKeyFollowsTheDescriptionAndTheFilesButNotTheTimeLimit) {
  test::TestDir dir;
  std::ofstream(dir.path() / "p.prg") << "one";
  auto job = [&](const std::string& extra) {
    return parse_manifest(
               R"({"jobs": [{"name": "a", "workloads": ["program:p.prg"], "backends": ["fsim"])" + extra + "}]}",
               "m.json", dir.path().string())
        .jobs[0];
  };
  std::string k = cache_key(job(""));
  EXPECT_EQ(k, cache_key(job("")));
  EXPECT_EQ(k, cache_key(job(R"(, "timeout_s": 9, "retries": 3)")));
  EXPECT_NE(k, cache_key(job(R"(, "seed": 2)")));
  std::ofstream(dir.path() / "p.prg") << "two";
  EXPECT_NE(k, cache_key(job(""))) << "the program file changed";
}

TEST(RegressCompare, BitsNotValuesAndShapes) {
  NDArray a = NDArray::empty({4}, DataType::Int(8)), b = NDArray::empty({4}, DataType::Int(8));
  for (int i = 0; i < 4; ++i) a.data<int8_t>()[i] = b.data<int8_t>()[i] = int8_t(i);
  EXPECT_TRUE(compare_arrays(a, b).equal());
  b.data<int8_t>()[2] = 5;
  ArrayDiff d = compare_arrays(a, b);
  EXPECT_EQ(d.mismatches, 1);
  EXPECT_EQ(d.first, 2);
  EXPECT_EQ(d.detail, "element 2: 2 vs 5");
  ArrayDiff s = compare_arrays(a, NDArray::empty({2, 2}, DataType::Int(8)));
  EXPECT_FALSE(s.equal());
  expect_has(s.detail, "shape 4");
  NDArray z = NDArray::zeros({1}, DataType::Float(32)), nz = NDArray::zeros({1}, DataType::Float(32));
  nz.data<float>()[0] = -0.0f;
  EXPECT_FALSE(compare_arrays(z, nz).equal()) << "-0 and +0 differ in their bits";
  EXPECT_EQ(argmax(a), 3);
}

TEST(RegressReport, FailuresFirstAndAPartialRunSaysSo) {
  test::TestDir dir;
  std::vector<ReportRow> rows = {
      {"g/a/default/fsim", "g", "op:add", "default", "fsim", json{{"status", "pass"}, {"metrics", {{"cycles", 10}}}}},
      {"g/b/default/fsim", "g", "op:add", "default", "fsim",
       json{{"status", "crash"}, {"message", "killed by SIGSEGV <&>"}, {"log", "jobs/g/b/log.txt"}}},
      {"g/c/default/fsim", "g", "op:add", "default", "fsim", json{{"status", "not_run"}, {"message", "not run"}}}};
  std::filesystem::create_directories(dir.path() / "jobs/g/b");
  std::ofstream(dir.path() / "jobs/g/b/log.txt") << "line one\n\x01 control\n";
  ReportSummary s = write_reports(dir.path(), "suite", rows, "interrupted");
  EXPECT_EQ(s.pass, 1u);
  EXPECT_EQ(s.crash, 1u);
  EXPECT_EQ(s.not_run, 1u);
  std::string md = read(dir.path() / "report.md"), csv = read(dir.path() / "report.csv"),
              xml = read(dir.path() / "report.xml");
  expect_has(md, "**INCOMPLETE: interrupted.** 1 of 3 jobs did not run");
  EXPECT_LT(md.find("g/b/default/fsim"), md.find("g/a/default/fsim")) << "failures first";
  EXPECT_LT(csv.find("g/b/default/fsim"), csv.find("g/a/default/fsim"));
  expect_has(xml, "killed by SIGSEGV &lt;&amp;&gt;");
  expect_has(xml, "<error type=\"crash\"");
  expect_has(xml, "line one\n? control");
  expect_has(xml, "name=\"incomplete\" value=\"interrupted\"");
}

TEST(RegressProcess, TimeLimitsAndSignalsAreReported) {
  test::TestDir dir;
  ChildStatus hang = run_forked(
      []() -> int {
        for (;;) pause();
      },
      (dir.path() / "log").string(), 0.3);
  EXPECT_EQ(hang.kind, ChildStatus::TimedOut);
  ChildStatus crash = run_forked(
      []() -> int {
        raise(SIGABRT);
        return 0;
      },
      (dir.path() / "log").string(), 5);
  EXPECT_EQ(crash.kind, ChildStatus::Signaled);
  EXPECT_EQ(crash.describe(), "killed by SIGABRT");
  std::string out;
  ChildStatus ok = run_command({"sh", "-c", "echo hi; exit 4"}, &out, 5);
  EXPECT_EQ(ok.code, 4);
  EXPECT_EQ(out, "hi\n");
  ChildStatus missing = run_command({"no-such-program-loom"}, &out, 5);
  EXPECT_EQ(missing.code, 127);
  EXPECT_FALSE(on_path("no-such-program-loom"));
  EXPECT_TRUE(on_path("sh"));
}
