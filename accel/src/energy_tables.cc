// The built-in energy tables. docs/energy.md gives each figure's source and the rules that derive
// the FPGA table from the ASIC one.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loom/accel/energy_model.h"
#include "loom/runtime/error.h"

namespace loom::accel {

namespace {

// 45 nm, 0.9 V: Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014
// (adds, multiplies, SRAM reads by size, DRAM per 64-bit access at the low end of 1.3-2.6 nJ; the
// same talk's area table); SRAM area from a 45 nm 6T cell of 0.346 um² at 50% array efficiency.
// Instructions, static power and the fixed area are stated assumptions (docs/energy.md).
constexpr const char* kAsic45 = R"({
  "name": "asic-45nm",
  "source": "Horowitz, Computing's energy problem, ISSCC 2014 (45 nm, 0.9 V); assumptions in docs/energy.md",
  "node_nm": 45, "clock_mhz": 500,
  "add_pj": {"8": 0.03, "32": 0.1}, "mult_pj_8x8": 0.2, "alu_factor": 2,
  "sram_read_pj_64b": {"8192": 10, "32768": 20, "1048576": 100}, "sram_write_factor": 1,
  "dram_pj_per_byte": 162.5, "insn_pj": 10, "static_mw_per_mm2": 10,
  "add_um2": {"8": 36, "32": 137}, "mult_um2_8x8": 282, "sram_um2_per_bit": 0.692, "fixed_mm2": 0.05
})";

// Xilinx 7-series (28 nm HPL, 1.0 V): the 45 nm figures scaled by (28/45) x (1.0/0.9)² = 0.768,
// times the FPGA/ASIC dynamic-energy gap of Kuon and Rose (IEEE TCAD 2007): 7 for work in hard
// blocks (DSP48 multiply-accumulates, block RAM), 14 for soft logic (the ALU, 2x through
// alu_factor; instruction decode). DRAM is the board's DDR3, as above. Static power: the device's.
constexpr const char* kXc7 = R"({
  "name": "xc7-28nm",
  "source": "asic-45nm scaled to 28 nm x the FPGA/ASIC gap of Kuon and Rose, IEEE TCAD 26(2) 2007; docs/energy.md",
  "node_nm": 28, "clock_mhz": 100,
  "add_pj": {"8": 0.161, "32": 0.538}, "mult_pj_8x8": 1.075, "alu_factor": 4,
  "sram_read_pj_64b": {"8192": 53.8, "32768": 107.5, "1048576": 537.6}, "sram_write_factor": 1,
  "dram_pj_per_byte": 162.5, "insn_pj": 107.5, "static_mw": 120
})";

// Xilinx UltraScale+ (16 nm FinFET, VCCINT 0.85 V), for the Ultra96's and ZCU104's parts: the 45 nm
// figures x (16/45) x (0.85/0.9)² = 0.317, x the same gaps (7 hard blocks, 14 soft logic). DRAM as
// above; static power the device's (an assumption); clock 200 MHz.
constexpr const char* kXcup = R"({
  "name": "xcup-16nm",
  "source": "asic-45nm scaled to 16 nm x the FPGA/ASIC gap of Kuon and Rose, IEEE TCAD 26(2) 2007; docs/energy.md",
  "node_nm": 16, "clock_mhz": 200,
  "add_pj": {"8": 0.0666, "32": 0.222}, "mult_pj_8x8": 0.444, "alu_factor": 4,
  "sram_read_pj_64b": {"8192": 22.2, "32768": 44.4, "1048576": 222}, "sram_write_factor": 1,
  "dram_pj_per_byte": 162.5, "insn_pj": 44.4, "static_mw": 300
})";

struct BuiltIn {
  const char* name;
  const char* json;
};
constexpr BuiltIn kBuiltIns[] = {{"asic-45nm", kAsic45}, {"xc7-28nm", kXc7}, {"xcup-16nm", kXcup}};

}  // namespace

std::vector<std::string> energy_table_names() {
  std::vector<std::string> names;
  for (const BuiltIn& b : kBuiltIns) names.push_back(b.name);
  return names;
}

EnergyTable energy_table(const std::string& name) {
  std::string all;
  for (const BuiltIn& b : kBuiltIns) {
    if (name == b.name) return EnergyTable::from_json(b.json, b.name);
    all += (all.empty() ? "" : ", ") + std::string(b.name);
  }
  if (!std::filesystem::is_regular_file(name))
    LOOM_THROW(ConfigError, "energy table '", name, "': neither a built-in table (", all, ") nor a file");
  std::ifstream f(name);
  std::stringstream ss;
  ss << f.rdbuf();
  if (!f) LOOM_THROW(ConfigError, "energy table '", name, "': cannot read the file");
  return EnergyTable::from_json(ss.str(), "'" + name + "'");
}

}  // namespace loom::accel
