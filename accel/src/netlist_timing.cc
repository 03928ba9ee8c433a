#include "loom/accel/netlist_timing.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "loom/runtime/error.h"

namespace loom::accel {
namespace {

// Per-primitive delays in ns, -1 speed grade (AMD DS187 for 7-series, DS925 for UltraScale+),
// rounded; `net` is one average routed hop. docs/fpga.md explains the choice and the limits.
struct Delays {
  double net, lut, muxf, carry_entry, carry_chain, ff_clk_q, ff_setup, ff_ctrl_setup;
  double bram_clk_q, bram_clk_q_reg, bram_setup;
  double lutram_read, lutram_clk_q, lutram_setup;
  double dsp_comb, dsp_to_mreg, dsp_mreg_to_p, dsp_clk_p, dsp_setup_reg;
};

const Delays& delays(FpgaFamily f) {
  static const Delays xc7{0.50, 0.12, 0.29, 0.40, 0.11, 0.46, 0.06, 0.30, 2.45, 0.88,
                          0.60, 0.30, 1.20, 0.50, 3.90, 2.60, 1.60, 0.64, 0.30};
  static const Delays xcup{0.40, 0.10, 0.20, 0.30, 0.05, 0.10, 0.05, 0.20, 1.60, 0.60,
                           0.40, 0.25, 0.90, 0.40, 2.90, 1.90, 1.20, 0.40, 0.20};
  return f == FpgaFamily::Xc7 ? xc7 : xcup;
}

enum class Kind { Lut, Muxf, Carry, Ff, Bram, LutRam, Srl, Dsp, Buffer, Const };

Kind classify(const std::string& type, const std::string& where) {
  if (type.rfind("LUT", 0) == 0 || type == "INV") return Kind::Lut;
  if (type.rfind("MUXF", 0) == 0) return Kind::Muxf;
  if (type == "CARRY4" || type == "CARRY8") return Kind::Carry;
  if (type.rfind("FD", 0) == 0) return Kind::Ff;
  if (type.rfind("RAMB", 0) == 0 || type == "URAM288") return Kind::Bram;
  if (type.rfind("SRL", 0) == 0) return Kind::Srl;
  if (type.rfind("RAM", 0) == 0) return Kind::LutRam;
  if (type.rfind("DSP48", 0) == 0) return Kind::Dsp;
  if (type == "BUFG" || type == "IBUF" || type == "OBUF") return Kind::Buffer;
  if (type == "GND" || type == "VCC") return Kind::Const;
  LOOM_THROW(Error, where, ": cell type '", type, "' is not a mapped Xilinx primitive");
}

bool param_on(const nlohmann::json& cell, const char* name) {
  if (!cell.contains("parameters") || !cell["parameters"].contains(name)) return false;
  const auto& v = cell["parameters"][name];
  if (v.is_number()) return v.get<int64_t>() != 0;
  std::string s = v.get<std::string>();  // yosys writes parameters as binary strings
  return s.find('1') != std::string::npos;
}

struct Cell {
  std::string name, type;
  Kind kind;
  bool dsp_in_reg = false, dsp_mreg = false, dsp_preg = false, bram_out_reg = false;
};

struct Pin {  // an input bit of a cell
  int cell;
  std::string port;
  int64_t bit;
};

// Where a bit's value comes from.
struct Driver {
  int cell = -1;  // -1: a top-level input (driven by a register outside: arrival = clock-to-out)
  std::string port;
};

}  // namespace

namespace {
TimingEstimate estimate(const std::string& netlist_json, const std::string& top, FpgaFamily family, int paths,
                        const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(netlist_json);
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(Error, origin, ": not a yosys JSON netlist: ", e.what());
  }
  if (!j.contains("modules") || !j["modules"].contains(top))
    LOOM_THROW(Error, origin, ": no module '", top, "' in the netlist");
  const nlohmann::json& mod = j["modules"][top];
  const Delays& d = delays(family);

  std::vector<Cell> cells;
  std::unordered_map<int64_t, Driver> driver;
  std::unordered_map<int, int64_t> first_output;                                 // cell -> one of its output bits
  std::unordered_map<int, std::vector<std::pair<std::string, int64_t>>> inputs;  // cell -> (port, bit)
  const nlohmann::json empty = nlohmann::json::object();
  if (!mod.is_object()) LOOM_THROW(Error, origin, ": module '", top, "' is not a JSON object");
  const nlohmann::json cell_list = mod.value("cells", empty);  // a copy: items() must not outlive it
  for (const auto& [name, c] : cell_list.items()) {
    if (!c.is_object() || !c.contains("connections") || !c["connections"].is_object())
      LOOM_THROW(Error, origin, ": cell '", name, "' has no connections");
    Cell cell{name, c.value("type", std::string()), Kind::Const};
    cell.kind = classify(cell.type, origin + ": cell '" + name + "'");
    if (cell.kind == Kind::Dsp) {
      cell.dsp_in_reg = param_on(c, "AREG") || param_on(c, "BREG");
      cell.dsp_mreg = param_on(c, "MREG");
      cell.dsp_preg = param_on(c, "PREG");
    }
    if (cell.kind == Kind::Bram) cell.bram_out_reg = param_on(c, "DOA_REG") || param_on(c, "DOB_REG");
    const int id = int(cells.size());
    cells.push_back(cell);
    const nlohmann::json dirs = c.value("port_directions", empty);
    for (const auto& [port, bits] : c["connections"].items()) {
      const std::string dir = dirs.value(port, std::string("input"));
      for (const auto& b : bits) {
        if (!b.is_number()) continue;  // constants
        if (dir == "output") {
          driver[b.get<int64_t>()] = {id, port};
          first_output.try_emplace(id, b.get<int64_t>());
        } else
          inputs[id].push_back({port, b.get<int64_t>()});
      }
    }
  }
  // A readable name per bit: the shortest public net name that carries it.
  std::unordered_map<int64_t, std::string> bit_name;
  const nlohmann::json net_list = mod.value("netnames", empty);
  for (const auto& [name, n] : net_list.items()) {
    if (!n.is_object() || n.value("hide_name", 0) != 0 || !n.contains("bits") || !n["bits"].is_array()) continue;
    const auto& bits = n["bits"];
    for (size_t i = 0; i < bits.size(); ++i) {
      if (!bits[i].is_number()) continue;
      std::string label = bits.size() == 1 ? name : name + "[" + std::to_string(i) + "]";
      auto [it, fresh] = bit_name.try_emplace(bits[i].get<int64_t>(), label);
      if (!fresh && label.size() < it->second.size()) it->second = label;
    }
  }

  // Arrival of each bit at its driver's output, with the predecessor bit on the longest path.
  struct Arrival {
    double ns = 0;
    int luts = 0;
    int64_t from = -1;  // the input bit that set it; -1 at a start point
  };
  std::unordered_map<int64_t, Arrival> arrival;
  std::unordered_map<int64_t, int> state;  // 1 visiting, 2 done

  auto is_start = [&](const Cell& c) -> bool {
    switch (c.kind) {
      case Kind::Ff:
      case Kind::Bram:
      case Kind::Const:
      case Kind::Srl:
        return true;
      case Kind::Dsp:
        return c.dsp_preg || c.dsp_mreg || c.dsp_in_reg;
      default:  // LUTs, muxes, carries, LUTRAM reads, buffers: paths run through them
        return false;
    }
  };
  auto start_delay = [&](const Cell& c) -> double {
    switch (c.kind) {
      case Kind::Ff:
        return d.ff_clk_q;
      case Kind::Bram:
        return c.bram_out_reg ? d.bram_clk_q_reg : d.bram_clk_q;
      case Kind::Srl:
        return d.lutram_clk_q;
      case Kind::Dsp:
        if (c.dsp_preg) return d.dsp_clk_p;
        if (c.dsp_mreg) return d.dsp_clk_p + d.dsp_mreg_to_p;
        return d.dsp_clk_p + d.dsp_comb;  // input registers only: through the multiplier
      default:
        return 0;
    }
  };
  // Delay from an input pin of a combinational cell to its outputs (net hop included).
  auto through_delay = [&](const Cell& c, const std::string& port) -> double {
    switch (c.kind) {
      case Kind::Lut:
        return d.net + d.lut;
      case Kind::Muxf:
        return port == "I0" || port == "I1" ? d.muxf : d.net + d.muxf;  // I0/I1 from the LUTs beside it
      case Kind::Carry:
        return port == "CI" ? d.carry_chain : d.net + d.carry_entry;  // CI: the dedicated chain
      case Kind::LutRam:
        return d.net + d.lutram_read;
      case Kind::Dsp:
        return d.net + d.dsp_comb;
      case Kind::Buffer:
        return 0;
      default:
        return 0;
    }
  };
  // A LUTRAM's write side (data, write address, enable) ends paths; its read address does not.
  auto lutram_read_port = [](const std::string& p) {
    return p.rfind("ADDR", 0) == 0 || p.rfind("DPRA", 0) == 0 || (p.size() >= 2 && p[0] == 'A' && std::isdigit(p[1]));
  };

  // Iterative depth-first evaluation of arrival(bit).
  auto evaluate = [&](int64_t root) {
    std::vector<int64_t> stack{root};
    while (!stack.empty()) {
      int64_t bit = stack.back();
      if (state[bit] == 2) {
        stack.pop_back();
        continue;
      }
      auto drv = driver.find(bit);
      if (drv == driver.end() || drv->second.cell < 0) {  // a top-level input: from a register outside
        arrival[bit] = {d.ff_clk_q, 0, -1};
        state[bit] = 2;
        stack.pop_back();
        continue;
      }
      const Cell& c = cells[drv->second.cell];
      if (is_start(c)) {
        arrival[bit] = {start_delay(c), 0, -1};
        state[bit] = 2;
        stack.pop_back();
        continue;
      }
      if (state[bit] == 0) {
        state[bit] = 1;
        bool pushed = false;
        for (const auto& [port, in] : inputs[drv->second.cell]) {
          if (c.kind == Kind::LutRam && !lutram_read_port(port)) continue;
          if (state[in] == 1)
            LOOM_THROW(Error, origin, ": combinational loop through cell '", c.name, "' (", c.type, ")");
          if (state[in] == 0) {
            stack.push_back(in);
            pushed = true;
          }
        }
        if (pushed) continue;
      }
      Arrival best;
      bool any = false;
      for (const auto& [port, in] : inputs[drv->second.cell]) {
        if (c.kind == Kind::LutRam && !lutram_read_port(port)) continue;
        const Arrival& a = arrival[in];
        double t = a.ns + through_delay(c, port);
        if (!any || t > best.ns) best = {t, a.luts, in};
        any = true;
      }
      if (c.kind == Kind::Lut || c.kind == Kind::LutRam) best.luts += 1;
      arrival[bit] = best;
      state[bit] = 2;
      stack.pop_back();
    }
  };

  auto describe_cell = [&](int id) { return cells[id].name + " (" + cells[id].type + ")"; };
  auto bit_label = [&](int64_t bit) -> std::string {
    if (auto it = bit_name.find(bit); it != bit_name.end()) return it->second;
    auto drv = driver.find(bit);
    return drv == driver.end() ? "input bit " + std::to_string(bit) : describe_cell(drv->second.cell);
  };

  // End points: the inputs of sequential cells (and of a registered DSP's first register).
  std::map<std::string, TimingPath> by_end;  // one path per end register (a bus counts once)
  TimingEstimate est;
  for (int id = 0; id < int(cells.size()); ++id) {
    const Cell& c = cells[id];
    double setup = 0;
    switch (c.kind) {
      case Kind::Ff:
        setup = d.ff_setup;
        break;
      case Kind::Bram:
        setup = d.bram_setup;
        break;
      case Kind::Srl:
      case Kind::LutRam:
        setup = d.lutram_setup;
        break;
      case Kind::Dsp:
        if (c.dsp_in_reg)
          setup = d.dsp_setup_reg;
        else if (c.dsp_mreg)
          setup = d.dsp_to_mreg;
        else if (c.dsp_preg)
          setup = d.dsp_comb;
        else
          continue;  // combinational: paths run through it
        break;
      default:
        continue;
    }
    for (const auto& [port, in] : inputs[id]) {
      if (c.kind == Kind::LutRam && lutram_read_port(port)) continue;
      if (c.kind == Kind::Ff && port == "C") continue;  // the clock
      if ((c.kind == Kind::Bram || c.kind == Kind::Dsp || c.kind == Kind::Srl || c.kind == Kind::LutRam) &&
          port.find("CLK") != std::string::npos)
        continue;
      evaluate(in);
      const Arrival& a = arrival[in];
      const bool ctrl = c.kind == Kind::Ff && port != "D";
      TimingPath p;
      p.ns = a.ns + d.net + (ctrl ? d.ff_ctrl_setup : setup);
      p.lut_levels = a.luts;
      est.max_lut_levels = std::max(est.max_lut_levels, a.luts);
      // the end point: a flip-flop's output net when it has a name, else the cell
      std::string end = describe_cell(id);
      if (auto q = first_output.find(id); c.kind == Kind::Ff && q != first_output.end() && bit_name.count(q->second))
        end = bit_name[q->second];
      p.to = c.kind == Kind::Ff ? end : end + " ." + port;
      // walk back to the start point
      int64_t b = in;
      std::vector<std::string> names;
      int64_t start = b;
      while (b >= 0) {
        start = b;
        if (auto it = bit_name.find(b); it != bit_name.end() && (names.empty() || names.back() != it->second))
          names.push_back(it->second);
        else if (getenv("LOOM_TIMING_DEBUG") && driver.count(b))
          names.push_back(describe_cell(driver[b].cell) + "@" + std::to_string(arrival[b].ns));
        b = arrival[b].from;
      }
      p.from = bit_label(start);
      std::reverse(names.begin(), names.end());
      for (const std::string& n : names)
        if (n != p.from && (p.through.size() < 4 || getenv("LOOM_TIMING_DEBUG"))) p.through.push_back(n);
      // One path per end register: the bits of a bus share their logic, so listing them one by
      // one would hide every other path behind the longest.
      std::string reg = end;
      if (size_t k = reg.rfind('['); k != std::string::npos && reg.back() == ']') reg.erase(k);
      auto it = by_end.find(reg);
      if (it == by_end.end() || p.ns > it->second.ns) by_end[reg] = p;
    }
  }
  for (auto& [end, p] : by_end) est.worst.push_back(p);
  std::sort(est.worst.begin(), est.worst.end(), [](const TimingPath& a, const TimingPath& b) { return a.ns > b.ns; });
  if (int(est.worst.size()) > paths) est.worst.resize(size_t(paths));
  return est;
}

}  // namespace

TimingEstimate estimate_timing(const std::string& netlist_json, const std::string& top, FpgaFamily family, int paths,
                               const std::string& origin) {
  try {
    return estimate(netlist_json, top, family, paths, origin);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    LOOM_THROW(Error, origin, ": malformed yosys netlist: ", e.what());
  }
}

}  // namespace loom::accel
