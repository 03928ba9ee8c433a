// `loom dse`: design-space exploration of the accelerator (libloom_dse: loom/dse/). This file reads
// the command line; the sweep, its points, their runs, the Pareto front, the files and the plots
// are the library's.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <thread>

#include "cli.h"
#include "command.h"
#include "loom/dse/run.h"
#include "loom/dse/sweep.h"
#include "loom/runtime/error.h"

namespace loom::tools {

namespace {

namespace fs = std::filesystem;

// What the sweep found: the Pareto front, the points outside the constraints and the illegal ones.
void print_summary(const std::vector<dse::Point>& points, double seconds, const std::string& out,
                   const std::vector<std::string>& objectives, const std::string& part) {
  size_t ok = 0, infeasible = 0;
  for (const dse::Point& p : points) ok += p.result.legal, infeasible += p.result.legal && !p.infeasible.empty();
  std::string over;
  for (const std::string& o : objectives) over += (over.empty() ? "" : " vs ") + o;
  std::cout << std::fixed << std::setprecision(1) << ok << " legal, " << points.size() - ok << " illegal points in "
            << seconds << " s; results in " << fs::path(out) / "points.csv"
            << (infeasible ? "; " + std::to_string(infeasible) + " outside the constraints" : "") << "\nPareto front ("
            << over << "):\n";
  for (const dse::Point& p : points) {
    if (!p.pareto) continue;
    const dse::PointResult& r = p.result;
    std::cout << "  p" << p.index << " " << p.id << ":";
    for (auto& [k, v] : p.values) {
      if (p.labels.count(k))
        std::cout << " " << k << "=" << p.labels.at(k);
      else
        std::cout << " " << k << "=" << std::defaultfloat << std::setprecision(6) << v << std::fixed;
    }
    std::cout << std::setprecision(3) << "  " << double(r.cycles) / 1e6 << " M cycles, area " << std::setprecision(1)
              << r.area_mean * 100 << "% of an " << part << " (LUT " << std::setprecision(0) << r.area.lut << ", DSP "
              << r.area.dsp << ", BRAM36 " << r.area.bram36 << (r.binding <= 1 ? "; fits" : "; does not fit") << ")";
    if (!r.energy.empty())
      std::cout << std::setprecision(2) << ", " << r.energy_pj * 1e-6 << " uJ, " << std::setprecision(3) << r.asic_mm2
                << " mm2";
    if (r.accuracy >= 0) std::cout << std::setprecision(4) << ", " << r.precision << " cosine " << r.accuracy;
    std::cout << "\n";
  }
  for (const dse::Point& p : points)
    if (!p.result.legal) std::cout << "  illegal p" << p.index << ": " << p.result.reason << "\n";
}

int dse_cmd(const std::vector<std::string>& args) {
  CLI::App app{
      "Design-space exploration of the accelerator: sweep config parameters and precision over ResNet-18's conv "
      "layers or a whole model, timed by the performance model, with analytical area and energy models and the "
      "quantized model's accuracy; constraints, the Pareto front over two or three objectives, CSV and plots",
      "loom dse"};
  std::vector<std::string> sweep_texts;
  std::string out, base_path, layer_list = "all";
  int jobs = 0;
  bool quiet = false;
  app.add_option("--sweep", sweep_texts,
                 "NAME=V1,V2,...: block (block_in and block_out together), batch, block_in, block_out, inp_kib, "
                 "wgt_kib, acc_kib, out_kib, uop_kib, dram_latency, dram_bytes_per_cycle, vthreads, queue_depth, "
                 "precision (wWaA[-accN]: w8a8, w4a8, w4a4, w2a8, w8a8-acc16) (repeat for a cross product)");
  std::string energy_name = "asic-45nm", objectives_text = "cycles,area", part = "xc7z020", fits;
  int accuracy_inputs = -1;
  double min_accuracy = -1, max_energy = 0;
  app.add_option("--energy-table", energy_name,
                 "energy per inference by this table: asic-45nm, xc7-28nm, xcup-16nm or a JSON file (docs/energy.md)")
      ->capture_default_str();
  number_option(app, "--accuracy-inputs", accuracy_inputs,
                "--model: random inputs that calibrate each precision's quantized model, and as many others its "
                "accuracy against the float model is measured on (default 16; 0: no accuracy)",
                0, 10000);
  app.add_option("--objectives", objectives_text,
                 "the Pareto front's two or three objectives: cycles, energy, area, asic_area, accuracy")
      ->capture_default_str();
  app.add_option("--part", part, "the FPGA the area shares are of (xc7z020, xczu3eg, ...)")->capture_default_str();
  app.add_option("--fits", fits, "only points that fit this FPGA (sets --part)")->excludes("--part");
  number_option(app, "--min-accuracy", min_accuracy,
                "--model: only points whose quantized model's cosine with the float model is at least this", 0.0, 1.0);
  number_option(app, "--max-energy", max_energy, "only points of at most this energy per inference (uJ)", 1e-9, 1e12);
  app.add_option("--out", out, "folder for points.csv, layers.csv, points.jsonl and the plots");
  std::string job_file;
  int job_line = 1;
  app.add_option("--run-job", job_file,
                 "run one point described in a JSON-lines file (a sweep's points.jsonl) and print its result as JSON")
      ->check(CLI::ExistingFile);
  number_option(app, "--line", job_line, "--run-job: the line of the file (1 = the first)", 1, 100000000);
  std::string job_id;
  app.add_option("--id", job_id, "--run-job: the point of this id (instead of --line)")->excludes("--line");
  app.add_option("--base", base_path, "the config the sweeps start from (default: the built-in default)")
      ->check(CLI::ExistingFile);
  app.add_option("--layers", layer_list, "ResNet-18 conv layers: all, or a list such as c2,c5,c11")
      ->capture_default_str();
  std::string model;
  int64_t image = 224;
  app.add_option("--model", model,
                 "instead of the layers, a whole model (a built-in such as resnet18, or an .onnx file), quantized to "
                 "int8 and compiled per config with its int8 layers on the accelerator (one point at a time)");
  number_option(app, "--image", image, "--model: image size of a built-in model", 32, 1024)->capture_default_str();
  number_option(app, "--jobs", jobs, "points run at once (default: the cores)", 1, 256);
  app.add_flag("-q,--quiet", quiet, "no progress bar");
  dse::SweepRunOptions ro;
  app.add_option("--executor", ro.executor,
                 "threads: the points on threads of this process; local or slurm: each point a dse-point job of a "
                 "`loom regress` run (cached), on a local process pool or as a Slurm job array")
      ->check(CLI::IsMember({"threads", "local", "slurm"}))
      ->capture_default_str();
  app.add_option("--partition", ro.regress.slurm.partition, "--executor slurm: sbatch --partition");
  app.add_option("--account", ro.regress.slurm.account, "--executor slurm: sbatch --account");
  number_option(app, "--max-running", ro.regress.slurm.max_running, "--executor slurm: points running at once", 1,
                100000);
  if (int rc = parse(app, args); rc >= 0) return rc;

  if (!job_file.empty()) {
    std::cout << dse::run_job_line(job_file, job_line, job_id).dump() << "\n";
    return 0;
  }
  if (sweep_texts.empty() || out.empty()) LOOM_THROW(Error, "loom dse needs --sweep and --out (or --run-job FILE)");
  std::vector<dse::Sweep> sweeps;
  for (const std::string& t : sweep_texts) sweeps.push_back(dse::parse_sweep(t));
  dse::check_sweeps(sweeps);
  // Everything a sweep is judged by is checked before any point runs.
  const dse::Judging judging = dse::make_judging(energy_name, accuracy_inputs, !model.empty(), objectives_text, part,
                                                 fits, min_accuracy, max_energy);
  const std::vector<std::string>& objectives = judging.objectives;
  const dse::Constraints& constraints = judging.constraints;
  accel::AccelConfig base = base_path.empty() ? accel::default_config() : accel::AccelConfig::load(base_path);
  std::string workload;
  if (!model.empty()) {
    workload = dse::model_workload(model, image);
    jobs = 1;  // one model build at a time
  } else {
    workload = dse::conv_layers_workload(layer_list);
  }
  std::vector<dse::Point> points = dse::make_points(base, sweeps, workload);
  dse::set_evaluation(points, judging.evaluation);
  fs::create_directories(out);
  ro.jobs = jobs ? jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  ro.quiet = quiet;
  std::cout << "loom dse: " << points.size() << " points of " << workload << ", " << ro.jobs << " at once\n";
  auto t0 = std::chrono::steady_clock::now();
  if (ro.executor != "threads")
    dse::write_outputs(out, points, sweeps, constraints.part);  // what the points are, before they run
  dse::SweepRun run = dse::run_sweep(points, out, ro);
  if (run.exit_code > 1) {  // interrupted, or the cluster could not run it: no front drawn from part of the points
    dse::judge(points, judging, false);
    dse::write_outputs(out, points, sweeps, constraints.part);
    std::cout << "the sweep did not finish (see " << fs::path(out) / "regress/report.md"
              << "); points without a result: " << run.missing << "\n";
    return run.exit_code;
  }
  if (!run.missing.empty()) {  // some points' jobs failed: the results so far, and exit code 1
    dse::judge(points, judging, false);
    dse::write_outputs(out, points, sweeps, constraints.part);
    std::cout << "points without a result (see " << fs::path(out) / "regress/report.md"
              << "): " << run.missing << "\n";
    return 1;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  dse::judge(points, judging);
  dse::write_outputs(out, points, sweeps, constraints.part);
  print_summary(points, seconds, out, objectives, constraints.part);
  std::string what = model.empty() ? "ResNet-18 conv layers (" + workload.substr(workload.find(':') + 1) + ")"
                                   : fs::path(model).stem().string() + " (int8, whole model)";
  std::replace(what.begin(), what.end(), '\'', ' ');  // a gnuplot string in single quotes
  std::cout << dse::plot(out, points, what, objectives, constraints.part) << "\n";
  const bool any_legal = std::any_of(points.begin(), points.end(), [](const dse::Point& p) { return p.result.legal; });
  if (any_legal && std::none_of(points.begin(), points.end(), [](const dse::Point& p) { return p.pareto; })) {
    // Impossible constraints are the sweep's answer, said plainly, with the closest points.
    std::cout << "no point meets the constraints:";
    for (const dse::Point& p : points)
      if (p.result.legal) std::cout << "\n  p" << p.index << ": " << p.infeasible;
    std::cout << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

LOOM_REGISTER_COMMAND("dse",
                      "design-space exploration: sweep accelerator configs over ResNet-18's layers (performance and "
                      "area models), CSV and Pareto plots",
                      dse_cmd);

}  // namespace loom::tools
