#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <map>

#include "loom/dse/sweep.h"
#include "loom/runtime/error.h"

namespace loom::dse {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string csv_field(std::string s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return out + "\"";
}

}  // namespace

void write_outputs(const fs::path& dir, const std::vector<Point>& points, const std::vector<Sweep>& sweeps,
                   const std::string& part) {
  // points.jsonl whole or not at all (written aside, then renamed): jobs of an earlier run of the
  // sweep may be reading it.
  std::ofstream csv(dir / "points.csv"), layers(dir / "layers.csv"), jobs(dir / "points.jsonl.tmp");
  csv << "point,id,status";
  for (const Sweep& s : sweeps) csv << "," << s.name;
  csv << ",operand_widths,cycles,macs,utilization,lut,ff,dsp,bram36,area_" << part << ",binding_share,fits_" << part
      << ",energy_uj,energy_mac_uj,energy_sram_uj,energy_dram_uj,energy_static_uj,asic_mm2,accuracy,top1,feasible,"
         "pareto,reason\n";
  layers << "point,id,layer,cycles,macs,utilization\n";
  for (const Point& p : points) {
    csv << p.index << "," << p.id << "," << (p.result.legal ? "ok" : p.missing ? "no_result" : "illegal");
    for (const Sweep& s : sweeps) {
      if (s.name == "precision")
        csv << "," << p.labels.at(s.name);
      else
        csv << "," << (s.name == "block" ? p.values.at("block_in") : p.values.at(s.name));
    }
    const PointResult& r = p.result;
    auto uj = [&](const char* category) {
      auto it = r.energy.find(category);
      return it == r.energy.end() ? 0.0 : it->second * 1e-6;
    };
    if (r.legal) {
      csv << "," << r.precision << "," << r.cycles << "," << std::setprecision(12) << r.macs << ","
          << std::setprecision(4) << r.utilization << "," << std::setprecision(6) << r.area.lut << "," << r.area.ff
          << "," << r.area.dsp << "," << r.area.bram36 << "," << std::setprecision(4) << r.area_mean << "," << r.binding
          << "," << int(r.binding <= 1) << ",";
      if (!r.energy.empty())
        csv << std::setprecision(6) << r.energy_pj * 1e-6 << "," << uj("mac") << "," << uj("sram") << "," << uj("dram")
            << "," << uj("static") << "," << std::setprecision(4) << r.asic_mm2;
      else
        csv << ",,,,,";
      csv << ",";
      if (r.accuracy >= 0) {
        csv << std::setprecision(6) << r.accuracy << ",";
        if (r.top1 >= 0) csv << r.top1;
      } else {
        csv << ",";
      }
      csv << "," << int(p.infeasible.empty()) << "," << int(p.pareto) << "," << csv_field(p.infeasible) << "\n";
    } else {
      csv << ",,,,,,,,,,,,,,,,,,,,,," << csv_field(r.reason) << "\n";
    }
    for (const LayerResult& l : r.layers)
      layers << p.index << "," << p.id << "," << csv_field(l.layer) << "," << l.cycles << "," << std::setprecision(12)
             << l.macs << "," << std::setprecision(4) << l.utilization << "\n";
    jobs << json{{"id", p.id}, {"job", p.spec.to_json()}}.dump() << "\n";
  }
  jobs.close();
  if (!csv || !layers || !jobs) LOOM_THROW(Error, "cannot write the results into '", dir.string(), "'");
  fs::rename(dir / "points.jsonl.tmp", dir / "points.jsonl");
}

namespace {

// An objective on a plot's axis: its value as plotted and the axis label.
// An objective on a plot's axis: its value (objective_value, accuracy's sign restored) in the
// axis' units, and the axis' label.
struct Axis {
  std::string objective;
  double scale;
  std::string label;
  double operator()(const PointResult& r) const { return objective_value(r, objective) * scale; }
};
Axis axis(const std::string& o, const std::string& part) {
  if (o == "cycles") return {o, 1e-6, "cycles (millions, performance model)"};
  if (o == "area") return {o, 100, "area: mean share of an " + part + " (LUT, FF, DSP, BRAM36; analytical model), %"};
  if (o == "energy") return {o, 1e-6, "energy per inference (uJ, energy model)"};
  if (o == "asic_area") return {o, 1, "ASIC area (mm2, energy table's area model)"};
  return {o, -1, "accuracy: cosine of the quantized model's outputs with the float model's"};
}

}  // namespace

// Gnuplot: the front over the first two objectives; energy against cycles by precision; per-layer
// utilization of the Pareto points. Returns what happened (the plots are optional: no gnuplot, no plots).
std::string plot(const fs::path& dir, const std::vector<Point>& points, const std::string& what,
                 const std::vector<std::string>& objectives, const std::string& part) {
  const std::string &ox = objectives.at(1), &oy = objectives.at(0);
  const Axis x = axis(ox, part), y = axis(oy, part), cycles_axis = axis("cycles", part),
             energy_axis = axis("energy", part);
  std::ofstream all(dir / "plot_points.dat"), outside(dir / "plot_infeasible.dat"), front(dir / "plot_pareto.dat"),
      util(dir / "plot_utilization.dat"), energy(dir / "plot_energy.dat");
  std::vector<const Point*> pareto;
  std::map<std::string, std::vector<const Point*>> by_precision;
  for (const Point& p : points) {
    if (!p.result.legal) continue;
    (p.infeasible.empty() ? all : outside) << x(p.result) << " " << y(p.result) << "\n";
    if (p.pareto) pareto.push_back(&p);
    if (!p.result.energy.empty()) by_precision[p.result.precision].push_back(&p);
  }
  // Each precision a block of its own (two blank lines): gnuplot's `index` picks one.
  for (auto& [precision, ps] : by_precision) {
    for (const Point* p : ps)
      energy << cycles_axis(p->result) << " " << energy_axis(p->result) << " " << p->index << "\n";
    energy << "\n\n";
  }
  std::sort(pareto.begin(), pareto.end(), [&](auto* a, auto* b) { return x(a->result) < x(b->result); });
  for (const Point* p : pareto) front << x(p->result) << " " << y(p->result) << " " << p->index << "\n";
  // Many layers (a whole model's kernels): numbered on the axis, their names in layers.csv.
  const bool numbered = !pareto.empty() && pareto.front()->result.layers.size() > 16;
  if (!pareto.empty()) {
    util << "layer";
    for (const Point* p : pareto) util << " p" << p->index;
    util << "\n";
    for (size_t l = 0; l < pareto.front()->result.layers.size(); ++l) {
      std::string name = numbered ? std::to_string(l + 1) : pareto.front()->result.layers[l].layer;
      std::replace(name.begin(), name.end(), ' ', '_');
      util << name;
      for (const Point* p : pareto)
        if (l < p->result.layers.size())
          util << " " << p->result.layers[l].utilization * 100;
        else
          util << " NaN";  // a model compiled to fewer accelerator kernels for that config
      util << "\n";
    }
  }
  const bool any_outside = outside.tellp() > 0;
  all.close(), outside.close(), front.close(), util.close(), energy.close();
  std::ofstream gp(dir / "plot.gp");
  // A two-objective front is a staircase; over three, the points of the front seen from two.
  const bool steps = objectives.size() == 2 && ox != "accuracy" && oy != "accuracy";
  gp << "set terminal svg size 900,600 dynamic background rgb 'white'\n"
     << "set datafile separator whitespace\nset grid\nset key below center horizontal\n"
     << "set output 'pareto.svg'\nset title 'Accelerator design space: " << what << "'\n"
     << "set xlabel '" << x.label << "'\n"
     << "set ylabel '" << y.label << "'\n"
     << "plot 'plot_points.dat' using 1:2 with points pt 7 ps 0.6 lc rgb '#8080a0' title 'design points', \\\n"
     << (any_outside
             ? "     'plot_infeasible.dat' using 1:2 with points pt 6 ps 0.6 lc rgb '#b0b0b0' title 'outside the "
               "constraints', \\\n"
             : "")
     << "     'plot_pareto.dat' using 1:2 with " << (steps ? "steps" : "points pt 6 ps 1.5")
     << " lw 2 lc rgb '#c03030' title 'Pareto front" << (objectives.size() == 3 ? " (three objectives)" : "")
     << "', \\\n"
     << "     'plot_pareto.dat' using 1:2 with points pt 7 ps 1 lc rgb '#c03030' notitle, \\\n"
     << "     'plot_pareto.dat' using 1:2:(sprintf('p%d', $3)) with labels offset 1,1 notitle\n";
  if (!by_precision.empty()) {
    gp << "set output 'energy_cycles.svg'\nset title 'Energy against cycles by precision: " << what << "'\n"
       << "set xlabel '" << cycles_axis.label << "'\nset ylabel '" << energy_axis.label << "'\n"
       << "plot";
    int k = 0;
    for (auto& [precision, ps] : by_precision) {
      gp << (k ? ", \\\n    " : " ") << "'plot_energy.dat' index " << k << " using 1:2 with points pt 7 ps 0.8 title '"
         << precision << "'";
      ++k;
    }
    gp << "\n";
  }
  if (!pareto.empty())
    gp << "set output 'utilization.svg'\nset title 'GEMM utilization per layer, Pareto points: " << what << "'\n"
       << (numbered ? "set xlabel 'accelerator kernel, in order (names: layers.csv)'\nset xtics 5\n"
                    : "set xlabel 'layer'\n")
       << "set ylabel 'GEMM utilization (%)'\nset yrange [0:105]\nset key outside right\n"
       << "plot for [i=2:" << pareto.size() + 1 << "] 'plot_utilization.dat' using "
       << (numbered ? "1:i" : "0:i:xtic(1)") << " with linespoints title columnheader(i)\n";
  gp.close();
  std::string cmd = "cd '" + dir.string() + "' && timeout 60 gnuplot plot.gp > plot.log 2>&1";
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0)
    return "no plots: gnuplot is not installed (Debian: apt-get install gnuplot-nox; scripts/bootstrap.sh does)";
  if (std::system(cmd.c_str()) != 0) return "no plots: gnuplot failed (see " + (dir / "plot.log").string() + ")";
  return "plots: " + (dir / "pareto.svg").string() +
         (by_precision.empty() ? "" : ", " + (dir / "energy_cycles.svg").string()) +
         (pareto.empty() ? "" : ", " + (dir / "utilization.svg").string());
}

}  // namespace loom::dse
