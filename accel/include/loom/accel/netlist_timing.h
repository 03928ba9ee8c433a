// A static timing estimate of a netlist mapped to Xilinx primitives (yosys synth_xilinx, then
// write_json), for when no vendor timing tool is at hand. Every register-to-register path gets
// the sum of fixed per-primitive delays plus one average routed net per hop; the longest ones are
// named. It ranks paths and tracks logic depth well; absolute figures are only as good as the
// delay table (docs/fpga_fit.md lists it and its limits): no placement, no fan-out, no clock skew.
#pragma once
#include <string>
#include <vector>

#include "loom/accel/fpga_fit.h"

namespace loom::accel {

struct TimingPath {
  double ns = 0;                     // start register's clock-to-out through the end register's setup
  int lut_levels = 0;                // LUTs (and LUTRAM reads) along it
  std::string from, to;              // the start and end points: a named net, or a cell and its type
  std::vector<std::string> through;  // named nets along the way, in order (at most a few)
};

struct TimingEstimate {
  std::vector<TimingPath> worst;  // the longest paths, at most one per end register (bus), longest first
  int max_lut_levels = 0;         // deepest path in LUT levels (not necessarily the longest)
  double critical_ns() const { return worst.empty() ? 0.0 : worst.front().ns; }
  double fmax_mhz() const { return worst.empty() ? 0.0 : 1000.0 / worst.front().ns; }
};

// `netlist_json` is yosys' write_json of the mapped, flattened module `top`. Errors (not JSON,
// no such module, a combinational loop, an unmapped cell) name what and where.
TimingEstimate estimate_timing(const std::string& netlist_json, const std::string& top, FpgaFamily family,
                               int paths = 5, const std::string& origin = "<netlist>");

}  // namespace loom::accel
