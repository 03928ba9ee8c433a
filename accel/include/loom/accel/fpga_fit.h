// Does the accelerator fit an FPGA? The parts VTA-style designs run on, the resources a
// technology-mapped netlist (yosys synth_xilinx) uses, and the comparison of the two.
// `loom hw-report` runs yosys and prints this (docs/fpga_fit.md).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::accel {

enum class FpgaFamily { Xc7, Xcup };  // Xilinx 7-series, UltraScale+

// "xc7" or "xcup" (yosys synth_xilinx -family); anything else is a ConfigError naming both.
FpgaFamily parse_fpga_family(const std::string& name);
std::string fpga_family_name(FpgaFamily family);

struct FpgaPart {
  std::string name;   // e.g. "xc7z020"
  std::string board;  // a board that carries it, e.g. "Pynq-Z1"
  FpgaFamily family;
  // Capacities from the vendor's product tables.
  int64_t luts, ffs, lutram_luts, dsps, bram36, uram;
};

// The named parts, smallest first within each family.
const std::vector<FpgaPart>& fpga_parts();
// The part called `name`; a ConfigError listing the named parts otherwise.
const FpgaPart& fpga_part(const std::string& name);

// What a mapped netlist uses, counted from its cells.
struct FpgaResources {
  int64_t luts = 0;         // LUT1-6, INV and the LUTs of distributed RAM and shift registers
  int64_t lutram_luts = 0;  // of those, LUTs used as memory (RAM32M, RAM64M, SRL...)
  int64_t ffs = 0;
  int64_t dsps = 0;
  int64_t ramb36 = 0, ramb18 = 0;
  int64_t uram = 0;
  double bram36() const { return double(ramb36) + double(ramb18) / 2.0; }  // in BRAM36 tiles
  std::map<std::string, int64_t> cells;  // every cell type of the netlist and its count
};

// Counts the resources in yosys' `stat -json` output for the module `top`. A cell type that is
// not a Xilinx primitive of `family` (an unmapped $mul, $mem, a black box) is an Error naming it:
// the report never claims a fit it did not compute.
FpgaResources fpga_resources_from_stat_json(const std::string& json_text, const std::string& top, FpgaFamily family,
                                            const std::string& origin = "<stat>");

// Use against one part: percent of each resource, and whether everything fits.
struct FpgaFit {
  const FpgaPart* part = nullptr;
  struct Use {
    std::string resource;  // "LUT", "LUTRAM", "FF", "DSP", "BRAM36", "URAM"
    double used = 0;
    int64_t available = 0;
    double percent() const { return available ? 100.0 * used / double(available) : (used > 0 ? 1e9 : 0.0); }
  };
  std::vector<Use> uses;
  bool fits(double max_percent = 100.0) const;
  // The resources above `max_percent`, e.g. "DSP 308 of 220 (140.0%)"; empty when all fit.
  std::vector<std::string> over(double max_percent = 100.0) const;
};

FpgaFit fpga_fit(const FpgaResources& used, const FpgaPart& part);

}  // namespace loom::accel
