// The FPGA report's arithmetic: parts, cell counting from yosys' `stat -json`, the fit verdict,
// and the timing estimate on small hand-written netlists whose answer is known.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "loom/accel/fpga_fit.h"
#include "loom/accel/netlist_timing.h"
#include "loom/runtime/error.h"

using namespace loom::accel;

namespace {

std::string stat_json(const std::map<std::string, int64_t>& cells, const std::string& top = "loom_accel") {
  nlohmann::json j;
  j["modules"]["\\" + top]["num_cells_by_type"] = cells;
  return j.dump();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const loom::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(FpgaParts, NamedPartsAndFamilies) {
  const FpgaPart& z = fpga_part("xc7z020");
  EXPECT_EQ(z.board, "Pynq-Z1");
  EXPECT_EQ(z.dsps, 220);
  EXPECT_EQ(z.bram36, 140);
  EXPECT_EQ(fpga_part("xczu3eg").family, FpgaFamily::Xcup);
  std::string e = error_of([] { fpga_part("xc7a35t"); });
  EXPECT_NE(e.find("'xc7a35t'"), std::string::npos) << e;
  EXPECT_NE(e.find("xc7z020 (Pynq-Z1)"), std::string::npos) << e;
  EXPECT_NE(e.find("xcu250"), std::string::npos) << e;
  e = error_of([] { parse_fpga_family("virtex"); });
  EXPECT_NE(e.find("'virtex'"), std::string::npos) << e;
  EXPECT_EQ(parse_fpga_family("xcup"), FpgaFamily::Xcup);
}

TEST(FpgaResources, CountsPrimitivesOfTheFamily) {
  FpgaResources r = fpga_resources_from_stat_json(stat_json({{"LUT2", 10},
                                                             {"LUT6", 5},
                                                             {"INV", 3},
                                                             {"FDRE", 40},
                                                             {"FDSE", 2},
                                                             {"DSP48E1", 7},
                                                             {"RAMB36E1", 4},
                                                             {"RAMB18E1", 3},
                                                             {"RAM32M", 2},
                                                             {"SRLC32E", 1},
                                                             {"CARRY4", 9},
                                                             {"MUXF7", 4},
                                                             {"BUFG", 1}}),
                                                  "loom_accel", FpgaFamily::Xc7);
  EXPECT_EQ(r.luts, 10 + 5 + 3 + 2 * 4 + 1);
  EXPECT_EQ(r.lutram_luts, 2 * 4 + 1);
  EXPECT_EQ(r.ffs, 42);
  EXPECT_EQ(r.dsps, 7);
  EXPECT_DOUBLE_EQ(r.bram36(), 5.5);
  EXPECT_EQ(r.cells.at("CARRY4"), 9);
}

TEST(FpgaResources, RefusesWhatItCannotCount) {
  // an unmapped multiplier, a primitive of the other family, a module that is not there
  std::string e = error_of([] {
    fpga_resources_from_stat_json(stat_json({{"LUT2", 1}, {"$mul", 2}}), "loom_accel", FpgaFamily::Xc7);
  });
  EXPECT_NE(e.find("'$mul' (2 of them)"), std::string::npos) << e;
  EXPECT_NE(e.find("not fully mapped"), std::string::npos) << e;
  e = error_of([] { fpga_resources_from_stat_json(stat_json({{"DSP48E2", 1}}), "loom_accel", FpgaFamily::Xc7); });
  EXPECT_NE(e.find("'DSP48E2'"), std::string::npos) << e;
  e = error_of([] { fpga_resources_from_stat_json(stat_json({}, "other"), "loom_accel", FpgaFamily::Xc7, "s.json"); });
  EXPECT_NE(e.find("s.json: no statistics for module 'loom_accel'"), std::string::npos) << e;
  e = error_of([] { fpga_resources_from_stat_json("{not json", "loom_accel", FpgaFamily::Xc7, "s.json"); });
  EXPECT_NE(e.find("s.json: not yosys"), std::string::npos) << e;
}

TEST(FpgaFitTest, PercentAndVerdict) {
  FpgaResources r;
  r.luts = 26600;  // 50%
  r.ffs = 1000;
  r.dsps = 198;    // 90%
  r.ramb36 = 127;  // 90.7%
  FpgaFit f = fpga_fit(r, fpga_part("xc7z020"));
  EXPECT_TRUE(f.fits());
  EXPECT_FALSE(f.fits(90.0));
  std::vector<std::string> over = f.over(90.0);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_NE(over[0].find("BRAM36 127 of 140"), std::string::npos) << over[0];
  r.dsps = 221;
  f = fpga_fit(r, fpga_part("xc7z020"));
  EXPECT_FALSE(f.fits());
  EXPECT_TRUE(fpga_fit(r, fpga_part("xczu7ev")).fits(90.0));
  r.uram = 1;  // no URAM on the xc7z020
  EXPECT_FALSE(fpga_fit(r, fpga_part("xczu7ev")).fits() && fpga_fit(r, fpga_part("xc7z020")).fits());
}

namespace {

// A netlist of module "top": cells given as (name, type, {port: bit}); outputs are ports O/Q/P.
std::string netlist(const std::vector<std::tuple<std::string, std::string, std::map<std::string, int>>>& cells,
                    const std::map<std::string, std::map<std::string, std::string>>& params = {}) {
  nlohmann::json m;
  for (const auto& [name, type, ports] : cells) {
    nlohmann::json c;
    c["type"] = type;
    for (const auto& [port, bit] : ports) {
      bool out = port == "O" || port == "Q" || port == "P" || port == "CO" || port == "DO";
      c["port_directions"][port] = out ? "output" : "input";
      c["connections"][port] = {bit};
    }
    if (auto it = params.find(name); it != params.end()) c["parameters"] = it->second;
    m["cells"][name] = c;
  }
  m["netnames"]["q_start"] = {{"hide_name", 0}, {"bits", {2}}};
  m["netnames"]["q_end"] = {{"hide_name", 0}, {"bits", {9}}};
  nlohmann::json j;
  j["modules"]["top"] = m;
  return j.dump();
}

}  // namespace

TEST(NetlistTiming, RegisterToRegisterThroughLuts) {
  // ff_a.Q(2) -> lut1 -> lut2 -> lut3 -> ff_b.D ; ff_b.Q(9); bit 1 is the clock
  std::string n = netlist({{"ff_a", "FDRE", {{"C", 1}, {"D", 9}, {"Q", 2}}},
                           {"lut1", "LUT2", {{"I0", 2}, {"I1", 2}, {"O", 3}}},
                           {"lut2", "LUT3", {{"I0", 3}, {"I1", 2}, {"I2", 2}, {"O", 4}}},
                           {"lut3", "LUT1", {{"I0", 4}, {"O", 5}}},
                           {"ff_b", "FDRE", {{"C", 1}, {"D", 5}, {"Q", 9}}}});
  TimingEstimate t = estimate_timing(n, "top", FpgaFamily::Xc7);
  ASSERT_FALSE(t.worst.empty());
  // clock-to-out 0.46, three LUTs of 0.50 net + 0.12, the last net 0.50, setup 0.06
  EXPECT_NEAR(t.critical_ns(), 0.46 + 3 * 0.62 + 0.50 + 0.06, 1e-9);
  EXPECT_EQ(t.worst.front().lut_levels, 3);
  EXPECT_EQ(t.worst.front().from, "q_start");
  EXPECT_EQ(t.worst.front().to, "q_end");
  EXPECT_EQ(t.max_lut_levels, 3);
  EXPECT_NEAR(t.fmax_mhz(), 1000.0 / t.critical_ns(), 1e-9);
  // UltraScale+ is faster on the same path
  EXPECT_LT(estimate_timing(n, "top", FpgaFamily::Xcup).critical_ns(), t.critical_ns());
}

TEST(NetlistTiming, ABusIsListedOnceByItsLongestBit) {
  // ff_a.Q(2) -> lut1 -> bus[0] ; ff_a.Q(2) -> lut1 -> lut2 -> bus[1]: one entry for the bus,
  // its longer bit, so that other end registers are not crowded out of the list
  std::string n = netlist({{"ff_a", "FDRE", {{"C", 1}, {"D", 9}, {"Q", 2}}},
                           {"lut1", "LUT2", {{"I0", 2}, {"I1", 2}, {"O", 3}}},
                           {"lut2", "LUT1", {{"I0", 3}, {"O", 4}}},
                           {"ff_b0", "FDRE", {{"C", 1}, {"D", 3}, {"Q", 5}}},
                           {"ff_b1", "FDRE", {{"C", 1}, {"D", 4}, {"Q", 6}}}});
  nlohmann::json j = nlohmann::json::parse(n);
  j["modules"]["top"]["netnames"]["bus"] = {{"hide_name", 0}, {"bits", {5, 6}}};
  TimingEstimate t = estimate_timing(j.dump(), "top", FpgaFamily::Xc7, 10);
  int bus_entries = 0;
  for (const TimingPath& p : t.worst)
    if (p.to.rfind("bus", 0) == 0) {
      ++bus_entries;
      EXPECT_EQ(p.to, "bus[1]");
      EXPECT_EQ(p.lut_levels, 2);
    }
  EXPECT_EQ(bus_entries, 1);
}

TEST(NetlistTiming, RegisteredDspEndsAndStartsPaths) {
  // ff -> lut -> DSP (PREG) -> lut -> ff: two short paths, not one through the multiplier
  std::string n = netlist({{"ff_a", "FDRE", {{"C", 1}, {"D", 9}, {"Q", 2}}},
                           {"lut1", "LUT2", {{"I0", 2}, {"I1", 2}, {"O", 3}}},
                           {"dsp", "DSP48E1", {{"A", 3}, {"CLK", 1}, {"P", 4}}},
                           {"lut2", "LUT1", {{"I0", 4}, {"O", 5}}},
                           {"ff_b", "FDRE", {{"C", 1}, {"D", 5}, {"Q", 9}}}},
                          {{"dsp", {{"PREG", "00000000000000000000000000000001"}}}});
  TimingEstimate reg = estimate_timing(n, "top", FpgaFamily::Xc7);
  std::string comb = netlist({{"ff_a", "FDRE", {{"C", 1}, {"D", 9}, {"Q", 2}}},
                              {"lut1", "LUT2", {{"I0", 2}, {"I1", 2}, {"O", 3}}},
                              {"dsp", "DSP48E1", {{"A", 3}, {"CLK", 1}, {"P", 4}}},
                              {"lut2", "LUT1", {{"I0", 4}, {"O", 5}}},
                              {"ff_b", "FDRE", {{"C", 1}, {"D", 5}, {"Q", 9}}}});
  TimingEstimate through = estimate_timing(comb, "top", FpgaFamily::Xc7);
  EXPECT_GT(through.critical_ns(), 3.9 + 2 * 0.62);
  EXPECT_LT(reg.critical_ns(), 0.46 + 0.62 + 0.50 + 3.9 + 0.01);  // ff -> lut -> DSP through its multiplier
  EXPECT_LT(reg.critical_ns(), through.critical_ns());
}

TEST(NetlistTiming, BadNetlistsAreNamed) {
  std::string loop = netlist({{"lut1", "LUT1", {{"I0", 4}, {"O", 3}}},
                              {"lut2", "LUT1", {{"I0", 3}, {"O", 4}}},
                              {"ff", "FDRE", {{"C", 1}, {"D", 4}, {"Q", 9}}}});
  std::string e = error_of([&] { estimate_timing(loop, "top", FpgaFamily::Xc7, 5, "n.json"); });
  EXPECT_NE(e.find("n.json: combinational loop through cell 'lut"), std::string::npos) << e;
  std::string unmapped = netlist({{"m", "$mul", {{"A", 2}, {"Y", 3}}}});
  e = error_of([&] { estimate_timing(unmapped, "top", FpgaFamily::Xc7, 5, "n.json"); });
  EXPECT_NE(e.find("'$mul' is not a mapped Xilinx primitive"), std::string::npos) << e;
  e = error_of([&] { estimate_timing("[]", "top", FpgaFamily::Xc7, 5, "n.json"); });
  EXPECT_NE(e.find("n.json: no module 'top'"), std::string::npos) << e;
  // fields of the wrong type: a named error, not a JSON library exception
  e = error_of([&] {
    estimate_timing(R"({"modules": {"top": {"cells": {"c": {"type": 5, "connections": {}}}}}})", "top", FpgaFamily::Xc7,
                    5, "n.json");
  });
  EXPECT_NE(e.find("n.json: malformed yosys netlist"), std::string::npos) << e;
  e = error_of([&] {
    estimate_timing(R"({"modules": {"top": {"cells": {"c": {"type": "LUT1"}}}}})", "top", FpgaFamily::Xc7, 5, "n.json");
  });
  EXPECT_NE(e.find("n.json: cell 'c' has no connections"), std::string::npos) << e;
  e = error_of([] {
    fpga_resources_from_stat_json(R"({"modules": {"\\loom_accel": {"num_cells_by_type": {"LUT2": "many"}}}})",
                                  "loom_accel", FpgaFamily::Xc7, "s.json");
  });
  EXPECT_NE(e.find("s.json: the count of cell type 'LUT2' is not a non-negative integer"), std::string::npos) << e;
}
