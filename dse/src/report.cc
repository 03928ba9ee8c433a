#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iomanip>

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

void write_outputs(const fs::path& dir, const std::vector<Point>& points, const std::vector<Sweep>& sweeps) {
  // points.jsonl whole or not at all (written aside, then renamed): jobs of an earlier run of the
  // sweep may be reading it.
  std::ofstream csv(dir / "points.csv"), layers(dir / "layers.csv"), jobs(dir / "points.jsonl.tmp");
  csv << "point,id,status";
  for (const Sweep& s : sweeps) csv << "," << s.name;
  csv << ",cycles,macs,utilization,lut,ff,dsp,bram36,area_xc7z020,binding_share,fits_xc7z020,pareto,reason\n";
  layers << "point,id,layer,cycles,macs,utilization\n";
  for (const Point& p : points) {
    csv << p.index << "," << p.id << "," << (p.result.legal ? "ok" : p.missing ? "no_result" : "illegal");
    for (const Sweep& s : sweeps) csv << "," << (s.name == "block" ? p.values.at("block_in") : p.values.at(s.name));
    const PointResult& r = p.result;
    if (r.legal)
      csv << "," << r.cycles << "," << std::setprecision(12) << r.macs << "," << std::setprecision(4) << r.utilization
          << "," << std::setprecision(6) << r.area.lut << "," << r.area.ff << "," << r.area.dsp << "," << r.area.bram36
          << "," << std::setprecision(4) << r.area_mean << "," << r.binding << "," << int(r.binding <= 1) << ","
          << int(p.pareto) << ",\n";
    else
      csv << ",,,,,,,,,,,," << csv_field(r.reason) << "\n";
    for (const LayerResult& l : r.layers)
      layers << p.index << "," << p.id << "," << csv_field(l.layer) << "," << l.cycles << "," << std::setprecision(12)
             << l.macs << "," << std::setprecision(4) << l.utilization << "\n";
    jobs << json{{"id", p.id}, {"job", p.spec.to_json()}}.dump() << "\n";
  }
  jobs.close();
  if (!csv || !layers || !jobs) LOOM_THROW(Error, "cannot write the results into '", dir.string(), "'");
  fs::rename(dir / "points.jsonl.tmp", dir / "points.jsonl");
}

// Gnuplot: cycles against area with the Pareto front; per-layer utilization of the Pareto points.
// Returns what happened (the plots are optional: no gnuplot, no plots).
std::string plot(const fs::path& dir, const std::vector<Point>& points, const std::string& what) {
  std::ofstream all(dir / "plot_points.dat"), front(dir / "plot_pareto.dat"), util(dir / "plot_utilization.dat");
  std::vector<const Point*> pareto;
  for (const Point& p : points) {
    if (!p.result.legal) continue;
    all << p.result.area_mean * 100 << " " << double(p.result.cycles) / 1e6 << "\n";
    if (p.pareto) pareto.push_back(&p);
  }
  std::sort(pareto.begin(), pareto.end(), [](auto* a, auto* b) { return a->result.area_mean < b->result.area_mean; });
  for (const Point* p : pareto)
    front << p->result.area_mean * 100 << " " << double(p->result.cycles) / 1e6 << " " << p->index << "\n";
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
  all.close(), front.close(), util.close();
  std::ofstream gp(dir / "plot.gp");
  gp << "set terminal svg size 900,600 dynamic background rgb 'white'\n"
     << "set datafile separator whitespace\nset grid\nset key top right\n"
     << "set output 'pareto.svg'\nset title 'Accelerator design space: " << what << "'\n"
     << "set xlabel 'area: mean share of an xc7z020 (LUT, FF, DSP, BRAM36; analytical model), %'\n"
     << "set ylabel 'cycles (millions, performance model)'\n"
     << "plot 'plot_points.dat' using 1:2 with points pt 7 ps 0.6 lc rgb '#8080a0' title 'design points', \\\n"
     << "     'plot_pareto.dat' using 1:2 with steps lw 2 lc rgb '#c03030' title 'Pareto front', \\\n"
     << "     'plot_pareto.dat' using 1:2 with points pt 7 ps 1 lc rgb '#c03030' notitle, \\\n"
     << "     'plot_pareto.dat' using 1:2:(sprintf('p%d', $3)) with labels offset 1,1 notitle\n";
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
  return "plots: " + (dir / "pareto.svg").string() + (pareto.empty() ? "" : ", " + (dir / "utilization.svg").string());
}

}  // namespace loom::dse
