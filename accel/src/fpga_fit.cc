#include "loom/accel/fpga_fit.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"

namespace loom::accel {

FpgaFamily parse_fpga_family(const std::string& name) {
  if (name == "xc7") return FpgaFamily::Xc7;
  if (name == "xcup") return FpgaFamily::Xcup;
  LOOM_THROW(ConfigError, "FPGA family '", name, "': expected xc7 (7-series) or xcup (UltraScale+)");
}

std::string fpga_family_name(FpgaFamily family) { return family == FpgaFamily::Xc7 ? "xc7" : "xcup"; }

const std::vector<FpgaPart>& fpga_parts() {
  // Capacities: AMD DS190 (Zynq-7000), DS891 (Zynq UltraScale+ MPSoC), DS987 (Kria K26), DS962 (Alveo U250).
  static const std::vector<FpgaPart> parts = {
      {"xc7z020", "Pynq-Z1", FpgaFamily::Xc7, 53200, 106400, 17400, 220, 140, 0},
      {"xczu3eg", "Ultra96", FpgaFamily::Xcup, 70560, 141120, 28800, 360, 216, 0},
      {"xczu7ev", "ZCU104", FpgaFamily::Xcup, 230400, 460800, 101760, 1728, 312, 96},
      {"xck26", "Kria KV260", FpgaFamily::Xcup, 117120, 234240, 57600, 1248, 144, 64},
      {"xcu250", "Alveo U250", FpgaFamily::Xcup, 1728000, 3456000, 791040, 12288, 2688, 1280},
  };
  return parts;
}

const FpgaPart& fpga_part(const std::string& name) {
  std::string known;
  for (const FpgaPart& p : fpga_parts()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name + " (" + p.board + ")";
  }
  LOOM_THROW(ConfigError, "FPGA part '", name, "' is not one Loom knows; named parts: ", known);
}

namespace {

// LUTs a distributed-memory primitive occupies (UG474 / UG574).
const std::map<std::string, int64_t>& lutram_primitives() {
  static const std::map<std::string, int64_t> m = {
      {"RAM32X1S", 1}, {"RAM64X1S", 1},  {"RAM128X1S", 2}, {"RAM256X1S", 4}, {"RAM32X1D", 2},
      {"RAM64X1D", 2}, {"RAM128X1D", 4}, {"RAM256X1D", 8}, {"RAM32M", 4},    {"RAM64M", 4},
      {"RAM32M16", 8}, {"RAM64M8", 8},   {"SRL16E", 1},    {"SRLC16E", 1},   {"SRLC32E", 1},
  };
  return m;
}

}  // namespace

FpgaResources fpga_resources_from_stat_json(const std::string& json_text, const std::string& top, FpgaFamily family,
                                            const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(Error, origin, ": not yosys `stat -json` output: ", e.what());
  }
  const nlohmann::json* cells = nullptr;
  if (j.contains("modules") && j["modules"].contains("\\" + top)) cells = &j["modules"]["\\" + top];
  if (!cells || !cells->contains("num_cells_by_type"))
    LOOM_THROW(Error, origin, ": no statistics for module '", top, "'");
  const bool seven = family == FpgaFamily::Xc7;
  FpgaResources r;
  for (const auto& [type, count_json] : (*cells)["num_cells_by_type"].items()) {
    if (!count_json.is_number_integer() || count_json.get<int64_t>() < 0)
      LOOM_THROW(Error, origin, ": the count of cell type '", type, "' is not a non-negative integer");
    const int64_t n = count_json.get<int64_t>();
    r.cells[type] = n;
    if (type.size() == 4 && type.rfind("LUT", 0) == 0 && type[3] >= '1' && type[3] <= '6') {
      r.luts += n;
    } else if (type == "INV") {
      r.luts += n;  // Vivado usually folds these into the LUT or flip-flop they drive: an upper bound
    } else if (type == "FDRE" || type == "FDSE" || type == "FDCE" || type == "FDPE") {
      r.ffs += n;
    } else if (type == (seven ? "DSP48E1" : "DSP48E2")) {
      r.dsps += n;
    } else if (type == (seven ? "RAMB36E1" : "RAMB36E2")) {
      r.ramb36 += n;
    } else if (type == (seven ? "RAMB18E1" : "RAMB18E2")) {
      r.ramb18 += n;
    } else if (!seven && type == "URAM288") {
      r.uram += n;
    } else if (auto it = lutram_primitives().find(type); it != lutram_primitives().end()) {
      r.luts += n * it->second;
      r.lutram_luts += n * it->second;
    } else if (type == "CARRY4" || (!seven && type == "CARRY8") || type == "MUXF7" || type == "MUXF8" ||
               (!seven && type == "MUXF9") || type == "BUFG" || type == "IBUF" || type == "OBUF" || type == "GND" ||
               type == "VCC") {
      // inside slices next to the LUTs they extend (yosys 0.23 maps carries to CARRY4 on UltraScale+
      // too, which Vivado retargets), or clock/IO buffers outside the count
    } else {
      LOOM_THROW(Error, origin, ": cell type '", type, "' (", n, " of them) is not a ", fpga_family_name(family),
                 " primitive Loom counts; the netlist is not fully mapped");
    }
  }
  return r;
}

FpgaFit fpga_fit(const FpgaResources& used, const FpgaPart& part) {
  FpgaFit f;
  f.part = &part;
  f.uses = {{"LUT", double(used.luts), part.luts},  {"LUTRAM", double(used.lutram_luts), part.lutram_luts},
            {"FF", double(used.ffs), part.ffs},     {"DSP", double(used.dsps), part.dsps},
            {"BRAM36", used.bram36(), part.bram36}, {"URAM", double(used.uram), part.uram}};
  return f;
}

bool FpgaFit::fits(double max_percent) const { return over(max_percent).empty(); }

std::vector<std::string> FpgaFit::over(double max_percent) const {
  std::vector<std::string> out;
  for (const Use& u : uses) {
    if (u.percent() <= max_percent) continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s %g of %lld (%.1f%%)", u.resource.c_str(), u.used, (long long)u.available,
                  u.percent());
    out.push_back(buf);
  }
  return out;
}

}  // namespace loom::accel
