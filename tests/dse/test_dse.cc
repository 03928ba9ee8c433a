// The design-space library: sweeps parsed and crossed, a point's regression job (kind dse-point)
// describing exactly the point, that job run by the regression runner's code giving the cycles
// the in-process run gives, and a manifest's dse-point workloads checked before anything runs.
#include <gtest/gtest.h>

#include <fstream>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "loom/accel/energy_model.h"
#include "loom/dse/run.h"
#include "loom/dse/sweep.h"
#include "loom/regress/job.h"
#include "loom/regress/job_kind.h"
#include "loom/regress/manifest.h"
#include "loom/runtime/error.h"

using namespace loom;
using nlohmann::json;

namespace {

std::string manifest_error(const std::string& text) {
  return test::error_text<Error>([&] { regress::parse_manifest(text, "m.json", "."); });
}

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

std::vector<dse::Point> two_by_two() {
  std::vector<dse::Sweep> sweeps = {dse::parse_sweep("block=8,16"), dse::parse_sweep("vthreads=1,2")};
  dse::check_sweeps(sweeps);
  return dse::make_points(accel::default_config(), sweeps, dse::conv_layers_workload("c10"));
}

}  // namespace

TEST(DseSweep, CrossProductSetsConfigAndRunParameters) {
  std::vector<dse::Point> points = two_by_two();
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[1].spec.config["block_in"], 8);
  EXPECT_EQ(points[1].spec.config["block_out"], 8);
  EXPECT_EQ(points[1].spec.options["vthreads"], 2.0);
  EXPECT_EQ(points[3].spec.config["block_in"], 16);
  EXPECT_EQ(points[0].spec.workload, "resnet18-convs:c10");
  EXPECT_NE(points[0].id, points[1].id);
  EXPECT_EQ(points[2].id, points[2].spec.id());
  expect_has(test::error_text<Error>([] {
               dse::check_sweeps({dse::parse_sweep("block=8"), dse::parse_sweep("block_in=8")});
             }),
             "not together with --sweep block_in");
  expect_has(test::error_text<Error>([] { dse::parse_sweep("dram_latency=0"); }), "is not a positive whole number");
  expect_has(test::error_text<Error>([] { dse::conv_layers_workload("c2,c99"); }), "did you mean 'c9'");
}

TEST(DsePointJob, DescribesExactlyThePoint) {
  for (const dse::Point& p : two_by_two()) {
    regress::JobSpec job = dse::point_job(p);
    EXPECT_EQ(job.workload, "dse-point:resnet18-convs:c10");
    EXPECT_EQ(job.backend, "perf");
    // through the round file and back, as a worker reads it
    regress::JobSpec back = regress::JobSpec::from_json(json::parse(job.to_json().dump()));
    EXPECT_EQ(back.params, job.params);
    EXPECT_EQ(dse::point_spec(back).id(), p.id);
  }
}

TEST(DsePointJob, RunByTheRegressionRunnerGivesTheInProcessResult) {
  std::vector<dse::Point> points = two_by_two();
  dse::SweepRunOptions threads;
  threads.quiet = true;
  dse::run_sweep(points, ".", threads);
  test::TestDir dir;
  for (const dse::Point& p : points) {
    regress::JobOutcome o = regress::run_job(dse::point_job(p), dir.path() / p.id);
    ASSERT_EQ(o.status, "pass") << o.message;
    dse::PointResult r = dse::PointResult::from_json(o.metrics);
    EXPECT_EQ(r.legal, p.result.legal) << p.id;
    EXPECT_EQ(r.cycles, p.result.cycles) << p.id;
    EXPECT_EQ(r.reason, p.result.reason) << p.id;
    EXPECT_EQ(o.metrics["id"], p.id);
  }
  EXPECT_TRUE(points[3].result.legal) << points[3].result.reason;
}

TEST(DsePointJob, ManifestWorkloadsAreCheckedBeforeAnythingRuns) {
  regress::Manifest m = regress::parse_manifest(
      R"({"jobs": [{"name": "d", "workloads": ["dse-point:resnet18-convs:c4,c10"], "backends": ["perf"],
                    "params": {"vthreads": 2}, "device": {"perf": {"dram_bytes_per_cycle": 16}}}]})",
      "m.json", ".");
  ASSERT_EQ(m.jobs.size(), 1u);
  EXPECT_EQ(m.jobs[0].expect.reference, "none");
  EXPECT_EQ(m.jobs[0].params["vthreads"], 2);
  EXPECT_EQ(regress::job_problem(m.jobs[0]), "");
  EXPECT_EQ(dse::point_spec(m.jobs[0]).options["dram_bytes_per_cycle"], 16.0);
  expect_has(manifest_error(R"({"jobs": [{"name": "d", "workloads": ["dse-point:resnet18-convs:c99"],
                               "backends": ["perf"]}]})"),
             "ResNet-18 has no conv layer 'c99'");
  expect_has(manifest_error(R"({"jobs": [{"name": "d", "workloads": ["dse-point:resnet18-convs:c4"],
                               "backends": ["perf"], "params": {"vthreads": 0}}]})"),
             "jobs[0] ('d'): workload 'dse-point:resnet18-convs:c4': 'params': dse-point takes {\"vthreads\"");
  expect_has(manifest_error(R"({"jobs": [{"name": "d", "workloads": ["dse-point:resnet18-convs:c4"],
                               "backends": ["perf"], "expect": {"reference": "fsim"}}]})"),
             "is a dse-point: the performance model times it");
  expect_has(manifest_error(R"({"jobs": [{"name": "d", "workloads": ["op:dense"], "backends": ["fsim"],
                               "params": {"vthreads": 2}}]})"),
             "workloads of kind op take none");
  regress::Manifest bad = regress::parse_manifest(
      R"({"jobs": [{"name": "d", "workloads": ["dse-point:resnet18-convs:c4"], "backends": ["perf"],
                    "device": {"perf": {"dram_latency": -3}}}]})",
      "m.json", ".");
  expect_has(regress::job_problem(bad.jobs[0]), "dram_latency");
}

// A model file in a manifest's dse-point workload: by its absolute path, and in the job's files
// (its contents join the cache key); a built-in model is neither.
TEST(DsePointJob, AModelFileIsFoundFromTheManifestsFolder) {
  test::TestDir dir;
  std::ofstream(dir.path() / "m.onnx") << "not read when the manifest is";
  regress::Manifest m = regress::parse_manifest(
      R"({"jobs": [{"name": "d", "workloads": ["dse-point:model:m.onnx:int8", "dse-point:model:resnet18@32:int8"],
                    "backends": ["perf"]}]})",
      "m.json", dir.path().string());
  ASSERT_EQ(m.jobs.size(), 2u);
  const std::string abs = (dir.path() / "m.onnx").string();
  EXPECT_EQ(m.jobs[0].workload, "dse-point:model:" + abs + ":int8");
  EXPECT_NE(std::find(m.jobs[0].files.begin(), m.jobs[0].files.end(), abs), m.jobs[0].files.end());
  EXPECT_EQ(m.jobs[1].workload, "dse-point:model:resnet18@32:int8");
  EXPECT_TRUE(m.jobs[1].files.empty());
  expect_has(manifest_error(R"({"jobs": [{"name": "d", "workloads": ["dse-point:model:nosuch.onnx:int8"],
                               "backends": ["perf"]}]})"),
             "no file '");
}

// Precision as a sweep parameter: the widths it sets, the scratchpads kept as deep as the base's
// (fewer bytes for narrower entries) unless their size is swept too; malformed precisions named.
TEST(DseSweep, PrecisionSetsTheWidthsAndKeepsTheDepths) {
  std::vector<dse::Sweep> sweeps = {dse::parse_sweep("precision=W8A8,w4a8,w4a4-acc16"), dse::parse_sweep("inp_kib=64")};
  const accel::AccelConfig base = accel::default_config();
  std::vector<dse::Point> points = dse::make_points(base, sweeps, dse::conv_layers_workload("c10"));
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].labels.at("precision"), "w8a8");
  EXPECT_EQ(points[1].spec.config["wgt_bits"], 4);
  EXPECT_EQ(points[1].spec.config["inp_bits"], 8);
  EXPECT_EQ(points[1].spec.config["wgt_buffer_bytes"], base.wgt_buffer_bytes / 2);
  EXPECT_EQ(points[1].spec.config["acc_buffer_bytes"], base.acc_buffer_bytes);
  EXPECT_EQ(points[2].spec.config["inp_bits"], 4);
  EXPECT_EQ(points[2].spec.config["out_bits"], 4);
  EXPECT_EQ(points[2].spec.config["acc_bits"], 16);
  EXPECT_EQ(points[2].spec.config["acc_buffer_bytes"], base.acc_buffer_bytes / 2);
  EXPECT_EQ(points[2].spec.config["out_buffer_bytes"], base.out_buffer_bytes / 2);
  EXPECT_EQ(points[2].spec.config["inp_buffer_bytes"], 64 * 1024);  // swept: as given
  for (const char* bad : {"precision=w3a8", "precision=w4a2", "precision=w8a8-acc8", "precision=w8a8x", "precision=8"})
    expect_has(test::error_text<Error>([&] { dse::parse_sweep(bad); }), "is not a precision");
  expect_has(test::error_text<Error>([] { dse::parse_sweep("precision=w4a8,W4A8"); }), "w4a8 is given twice");
  // Named by the widths: two spellings of one precision are one value.
  expect_has(test::error_text<Error>([] { dse::parse_sweep("precision=w8a8,w8a8-acc32"); }), "w8a8 is given twice");
  EXPECT_EQ(dse::parse_sweep("precision=W04A8-ACC16").labels, std::vector<std::string>{"w4a8-acc16"});
}

namespace {

dse::Point point_with(double cycles, double energy_uj, double accuracy, double area, double binding = 0.5) {
  dse::Point p;
  p.result.legal = true;
  p.result.cycles = uint64_t(cycles);
  p.result.energy_pj = energy_uj * 1e6;
  p.result.energy = {{"mac", energy_uj * 1e6}};
  p.result.accuracy = accuracy;
  p.result.area_mean = area;
  p.result.binding = binding;
  return p;
}

}  // namespace

// The front over two or three objectives (accuracy maximized), the constraints keeping points off
// it with their reason, and objectives without a value named.
TEST(DsePareto, FrontOverTheChosenObjectivesWithinTheConstraints) {
  std::vector<dse::Point> points = {point_with(100, 5, 0.99, 0.5), point_with(100, 4, 0.95, 0.5),
                                    point_with(120, 6, 0.999, 0.4), point_with(130, 7, 0.98, 0.6)};
  for (size_t k = 0; k < points.size(); ++k) points[k].index = k;
  auto front = [&](const std::vector<std::string>& objectives, const dse::Constraints& c = {}) {
    dse::mark_pareto(points, objectives, c);
    std::string f;
    for (const dse::Point& p : points) f += p.pareto ? "1" : "0";
    return f;
  };
  EXPECT_EQ(front({"cycles", "energy"}), "0100");              // p1 beats p0 in energy at equal cycles
  EXPECT_EQ(front({"cycles", "energy", "accuracy"}), "1110");  // accuracy keeps p0 and p2
  EXPECT_EQ(front({"energy", "area"}), "0110");
  dse::Constraints accurate;
  accurate.min_accuracy = 0.97;
  EXPECT_EQ(front({"cycles", "energy"}, accurate), "1000");
  expect_has(points[1].infeasible, "accuracy 0.95 below --min-accuracy 0.97");
  dse::Constraints cheap;
  cheap.max_energy_uj = 4.5;
  EXPECT_EQ(front({"cycles", "accuracy"}, cheap), "0100");
  expect_has(points[0].infeasible, "above --max-energy 4.5");
  points[1].result.binding = 1.3;
  dse::Constraints fits;
  fits.fits = true;
  EXPECT_EQ(front({"cycles", "energy"}, fits), "1000");
  expect_has(points[1].infeasible, "does not fit the xc7z020 (its largest resource share 130.0%)");
  // A config that keeps a layer on the CPU: its figures leave that layer out, never feasible.
  points[0].result.kept_on_cpu = {"layer1.0.conv1: its sums could pass 16 bits"};
  EXPECT_EQ(front({"cycles", "energy", "accuracy"}, fits), "0010");
  expect_has(points[0].infeasible, "1 int8 layer kept on the CPU, their work counted nowhere (layer1.0.conv1");
  points[2].result.accuracy = -1;  // no accuracy measured
  expect_has(test::error_text<Error>([&] {
               front({"cycles", "accuracy"});
             }),
             "objective accuracy has no value at point p2");
  expect_has(test::error_text<Error>([] { dse::parse_objectives("cycles"); }), "two or three objectives, not 1");
  expect_has(test::error_text<Error>([] { dse::parse_objectives("cycles,energy,energy"); }), "energy is given twice");
  expect_has(test::error_text<Error>([] { dse::parse_objectives("cycles,enrgy"); }), "did you mean 'energy'");
}

// A point's energy and accuracy survive its job's result file, and the evaluation its job file.
TEST(DsePointJob, EvaluationAndItsResultsRoundTrip) {
  std::vector<dse::Point> points = two_by_two();
  points[3].spec.evaluation.energy_table = json::parse(accel::energy_table("xc7-28nm").to_json());
  regress::JobSpec job = dse::point_job(points[3]);
  regress::JobSpec back = regress::JobSpec::from_json(json::parse(job.to_json().dump()));
  dse::PointSpec spec = dse::point_spec(back);
  EXPECT_EQ(spec.evaluation, points[3].spec.evaluation);
  EXPECT_NE(spec.id(), points[3].id);  // judged by energy: another point
  dse::PointResult r = dse::run_point(spec, dse::Workload::from(spec.workload));
  ASSERT_TRUE(r.legal) << r.reason;
  EXPECT_GT(r.energy_pj, 0);
  EXPECT_GT(r.energy.at("dram"), 0);
  EXPECT_GT(r.asic_mm2, 0);  // xc7-28nm has no area model: asic-45nm's
  dse::PointResult again = dse::PointResult::from_json(r.to_json());
  EXPECT_EQ(again.energy, r.energy);
  EXPECT_EQ(again.precision, "W8A8");
  expect_has(test::error_text<Error>([] {
               dse::Evaluation::from_json(json{{"accuracy_inputs", 0}}, "x");
             }),
             "'accuracy_inputs' must be a whole number in [1, 10000]");
  expect_has(test::error_text<ConfigError>([] {
               dse::Evaluation::from_json(json{{"energy_table", {{"name", "t"}}}}, "x");
             }),
             "'source'");
}

TEST(RegressJobKinds, LoomsKindsAndTheRegisteredOnesAreListed) {
  std::vector<std::string> kinds = regress::job_kind_names();
  for (const char* k : {"command", "dse-point", "model", "op", "program", "random", "resnet18"})
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), k), kinds.end()) << k;
  expect_has(test::error_text<Error>([] { regress::parse_workload("conv3d:x"); }),
             "workload 'conv3d:x': unknown kind 'conv3d' (command, dse-point, model, op, program, random, resnet18)");
  expect_has(test::error_text<Error>([] { regress::parse_workload("nokind"); }), "dse-point:resnet18-convs:LAYERS");
}
