// An accelerator design-space sweep: the cross product of parameter values over a base config, one
// point each (point.h), the Pareto front of cycles against area, and the files a sweep leaves:
// points.csv, layers.csv, points.jsonl (each point's description and id) and gnuplot plots.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/dse/point.h"

namespace loom::dse {

struct Sweep {
  std::string name;  // a config or run parameter (point.h), "block" or "precision"
  std::vector<double> values;
  std::vector<std::string> labels;  // precision: the widths ("w4a8"), values[k] = k
};

// "NAME=V1,V2,...": Error naming the text and what is wrong (unknown name, a value that is not a
// positive (whole) number within the parameter's bound, a value given twice). Precision values
// are wWaA[-accN]: weight and input (and output) widths, and the accumulator's (default 32).
Sweep parse_sweep(const std::string& text);
// Error when two sweeps set the same parameter.
void check_sweeps(const std::vector<Sweep>& sweeps);

// The workload texts a point runs: ResNet-18's conv layers ("all" or "c2,c5"; Error naming an
// unknown layer), or a whole model (a built-in at an image size, or an .onnx file) in int8.
std::string conv_layers_workload(const std::string& layer_list);
std::string model_workload(const std::string& model, int64_t image);

struct Point {
  size_t index = 0;
  std::map<std::string, double> values;       // the swept parameters' values
  std::map<std::string, std::string> labels;  // of those, the named ones' names (precision)
  PointSpec spec;
  std::string id;  // spec.id()
  PointResult result;
  bool missing = false;    // its job left no result (crashed, timed out, not run)
  std::string infeasible;  // a legal point outside the constraints: which and why
  bool pareto = false;
};

// What a sweep minimizes: cycles; energy (per inference); area (the mean share of the part's LUT,
// FF, DSP and BRAM36); asic_area (mm²); accuracy (maximized: the quantized model's cosine).
const std::vector<std::string>& objective_names();
// "cycles,energy[,accuracy]": two or three distinct objectives; Error naming an unknown one.
std::vector<std::string> parse_objectives(const std::string& text);
// A legal result's value of an objective, as minimized (accuracy negated); NaN when the result
// lacks it (no energy table, no accuracy inputs).
double objective_value(const PointResult& r, const std::string& objective);

// What a point must meet to be on the front.
struct Constraints {
  std::string part = "xc7z020";  // the FPGA the area shares are of
  bool fits = false;             // every resource within the part
  double min_accuracy = -1;      // the quantized model's cosine at least this
  double max_energy_uj = 0;      // energy per inference at most this (0: no bound)
};
// Why a legal result does not meet `c` ("" when it does): the first constraint it misses. A
// model point whose config keeps int8 layers on the CPU meets none (its figures leave them out).
std::string violation(const PointResult& r, const Constraints& c);

// The cross product of the sweeps over `base` (the last sweep varies fastest).
std::vector<Point> make_points(const accel::AccelConfig& base, const std::vector<Sweep>& sweeps,
                               const std::string& workload);

// What a sweep judges its points by (`loom dse`'s and loom.dse.sweep's options), checked before
// any point runs: the energy table (a built-in's name or a JSON file), accuracy inputs (-1: 16 for
// a model, none for layers), two or three objectives, the part (or `fits`, which also makes
// fitting it a constraint), --min-accuracy (-1: none) and --max-energy (0: none). Errors name the
// option: an unknown objective, table or part, accuracy without a model.
struct Judging {
  Evaluation evaluation;
  std::vector<std::string> objectives;
  Constraints constraints;
};
Judging make_judging(const std::string& energy_table, int accuracy_inputs, bool model, const std::string& objectives,
                     const std::string& part, const std::string& fits, double min_accuracy, double max_energy_uj);
// Every point judged so: the evaluation in its description (and id).
void set_evaluation(std::vector<Point>& points, const Evaluation& e);
// After the run: the area shares of the judging's part, the constraints and (with `front`; not
// for a sweep some of whose points have no result) the front.
void judge(std::vector<Point>& points, const Judging& j, bool front = true);

// Marks each legal point's `infeasible`, then the Pareto-optimal feasible points: no other feasible
// point is at least as good in every objective and better in one. Error when an objective has no
// value (energy without a table, accuracy without a model).
void mark_pareto(std::vector<Point>& points, const std::vector<std::string>& objectives = {"cycles", "area"},
                 const Constraints& constraints = {});

// points.csv, layers.csv and points.jsonl in `dir` (points.jsonl written aside, then renamed).
void write_outputs(const std::filesystem::path& dir, const std::vector<Point>& points, const std::vector<Sweep>& sweeps,
                   const std::string& part = "xc7z020");
// Gnuplot: the Pareto front over the first two objectives; with energy, energy against cycles
// coloured by precision; per-layer utilization of the Pareto points. Returns what happened (no
// gnuplot: no plots, and says so).
std::string plot(const std::filesystem::path& dir, const std::vector<Point>& points, const std::string& what,
                 const std::vector<std::string>& objectives = {"cycles", "area"}, const std::string& part = "xc7z020");

}  // namespace loom::dse
