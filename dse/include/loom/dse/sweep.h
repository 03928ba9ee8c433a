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
  std::string name;  // a config or run parameter (point.h), or "block"
  std::vector<double> values;
};

// "NAME=V1,V2,...": Error naming the text and what is wrong (unknown name, a value that is not a
// positive (whole) number within the parameter's bound, a value given twice).
Sweep parse_sweep(const std::string& text);
// Error when two sweeps set the same parameter.
void check_sweeps(const std::vector<Sweep>& sweeps);

// The workload texts a point runs: ResNet-18's conv layers ("all" or "c2,c5"; Error naming an
// unknown layer), or a whole model (a built-in at an image size, or an .onnx file) in int8.
std::string conv_layers_workload(const std::string& layer_list);
std::string model_workload(const std::string& model, int64_t image);

struct Point {
  size_t index = 0;
  std::map<std::string, double> values;  // the swept parameters' values
  PointSpec spec;
  std::string id;  // spec.id()
  PointResult result;
  bool missing = false;  // its job left no result (crashed, timed out, not run)
  bool pareto = false;
};

// The cross product of the sweeps over `base` (the last sweep varies fastest).
std::vector<Point> make_points(const accel::AccelConfig& base, const std::vector<Sweep>& sweeps,
                               const std::string& workload);

// Pareto-optimal in cycles and area: no other legal point has at most its cycles and its area and
// less of one of them.
void mark_pareto(std::vector<Point>& points);

// points.csv, layers.csv and points.jsonl in `dir` (points.jsonl written aside, then renamed).
void write_outputs(const std::filesystem::path& dir, const std::vector<Point>& points,
                   const std::vector<Sweep>& sweeps);
// Gnuplot: cycles against area with the Pareto front, per-layer utilization of the Pareto points.
// Returns what happened (no gnuplot: no plots, and says so).
std::string plot(const std::filesystem::path& dir, const std::vector<Point>& points, const std::string& what);

}  // namespace loom::dse
