// The energy model (accel/energy_model.h): the built-in tables give the published figures they are
// made of (Horowitz, ISSCC 2014, 45 nm), every action of a run is charged at the energy of its
// kind, precision changes the multiply-accumulate's energy as the operand widths' product, and a
// malformed table is an error naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "loom/accel/energy_model.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"

namespace loom::accel {
namespace {

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(EnergyTable, BuiltInTablesGiveThePublishedFigures) {
  EnergyTable t = energy_table("asic-45nm");
  EXPECT_DOUBLE_EQ(t.add(8), 0.03);
  EXPECT_DOUBLE_EQ(t.add(32), 0.1);
  EXPECT_NEAR(t.add(16), 0.03 + 0.07 / 3, 1e-12);  // linear between 8 and 32 bits
  EXPECT_DOUBLE_EQ(t.mult(8, 8), 0.2);
  EXPECT_NEAR(t.mult(32, 32), 3.2, 1e-12);  // the product rule: the talk measured 3.1
  EXPECT_DOUBLE_EQ(t.mult(4, 8), 0.1);
  EXPECT_NEAR(t.sram_read(8 << 10, 64), 10, 1e-9);
  EXPECT_NEAR(t.sram_read(32 << 10, 64), 20, 1e-9);
  EXPECT_NEAR(t.sram_read(1 << 20, 64), 100, 1e-9);
  EXPECT_NEAR(t.sram_read(16 << 10, 64), 10 * std::sqrt(2.0), 1e-9);      // log-log between 8 and 32 KiB
  EXPECT_NEAR(t.sram_read(16 << 10, 32), 10 * std::sqrt(2.0) / 2, 1e-9);  // half a word: half the energy
  // 128 bits wide: two banks of 64-bit words, 16 KiB each, both read.
  EXPECT_NEAR(t.sram_read(32 << 10, 128), 2 * 10 * std::sqrt(2.0), 1e-9);
  EXPECT_DOUBLE_EQ(t.dram_pj_per_byte, 1300.0 / 8);  // 1.3 nJ per 64-bit access
  // The FPGA table: the same figures x 0.768 (28 nm, 1.0 V) x 7 (hard blocks).
  EnergyTable f = energy_table("xc7-28nm");
  EXPECT_NEAR(f.mult(8, 8) / t.mult(8, 8), 0.768 * 7, 0.01);
  EXPECT_NEAR(f.sram_read(8 << 10, 64) / t.sram_read(8 << 10, 64), 0.768 * 7, 0.01);
  EXPECT_GT(f.static_mw, 0);
  // UltraScale+: x 0.317 (16 nm, 0.85 V) x 7.
  EnergyTable u = energy_table("xcup-16nm");
  EXPECT_NEAR(u.mult(8, 8) / t.mult(8, 8), 16.0 / 45 * 0.85 * 0.85 / 0.81 * 7, 0.01);
  EXPECT_NEAR(u.insn_pj / t.insn_pj, 16.0 / 45 * 0.85 * 0.85 / 0.81 * 14, 0.01);
  EXPECT_EQ(EnergyTable::from_json(u.to_json(), "printed").to_json(), u.to_json());
  // A printed table reads back as the same table.
  EXPECT_EQ(EnergyTable::from_json(t.to_json(), "printed").to_json(), t.to_json());
  EXPECT_EQ(EnergyTable::from_json(f.to_json(), "printed").to_json(), f.to_json());
}

TEST(EnergyModel, ChargesEveryActionAtItsEnergy) {
  const AccelConfig c = default_config();  // 1x16x16, int8, 32 KiB inputs, 256 KiB weights
  const EnergyTable t = energy_table("asic-45nm");
  EnergyCounts n;
  std::vector<uint64_t> run(size_t(AccelCounter::Count), 0);
  run[size_t(AccelCounter::GemmMacs)] = 10 * 256;  // ten multiply-accumulate steps
  run[size_t(AccelCounter::GemmResetSteps)] = 2;
  run[size_t(AccelCounter::AluOps)] = 3 * 16;  // three ALU steps, one of them on an accumulator operand
  run[size_t(AccelCounter::AluVectorOps)] = 16;
  run[size_t(AccelCounter::DmaLoadBytesInp)] = 4 * 16;  // four input entries and two of padding
  run[size_t(AccelCounter::PadEntriesInp)] = 2;
  run[size_t(AccelCounter::DmaStoreBytes)] = 5 * 16;
  run[size_t(AccelCounter::GemmInsns)] = 2;
  n.add(run, 1000);
  EnergyReport r = estimate_energy(n, c, t);
  auto part = [&](const std::string& name) {
    for (const EnergyPart& p : r.parts)
      if (p.name == name) return p;
    ADD_FAILURE() << "no part " << name;
    return EnergyPart{};
  };
  // Half of a 24 x 8-bit multiply (two 8 x 8 products packed into one multiplier, as the RTL's DSP48
  // packing builds them), 15/16 of a 20-bit add of the 16-input tree, 1/16 of a 32-bit add.
  const double tree20 = 0.03 + 0.07 * 12 / 24;
  EXPECT_NEAR(part("mac").pj(), 2560 * (0.2 * 24 / 8 / 2 + tree20 * 15 / 16 + 0.1 / 16), 1e-9);
  const double inp_read = 2 * 10 * std::sqrt(2.0);  // a 128-bit entry of a 32 KiB SRAM: two 16 KiB banks
  EXPECT_NEAR(part("sram.inp.read").pj(), 10 * inp_read, 1e-9);
  EXPECT_NEAR(part("sram.inp.write").pj(), 6 * inp_read, 1e-9);
  EXPECT_DOUBLE_EQ(part("sram.acc.read").count, 10 + 3 + 1);   // accumulate, ALU destination, ALU operand
  EXPECT_DOUBLE_EQ(part("sram.acc.write").count, 10 + 2 + 3);  // accumulate, reset, ALU
  EXPECT_DOUBLE_EQ(part("sram.out.write").count, 10 + 2 + 3);
  EXPECT_DOUBLE_EQ(part("sram.out.read").count, 5);
  EXPECT_DOUBLE_EQ(part("sram.uop.read").count, 15);
  EXPECT_DOUBLE_EQ(part("dram.data").pj(), (64 + 80) * 162.5);
  EXPECT_DOUBLE_EQ(part("dram.insn").count, 3 * 16);  // two GEMMs and the run's FINISH
  EXPECT_DOUBLE_EQ(part("alu").pj(), 48 * 2 * 0.1);
  // Static: 10 mW/mm² over the config's area for 1000 cycles at 500 MHz.
  EXPECT_NEAR(part("static").pj(), 10 * estimate_asic_area_mm2(c, t) * 1000 * 2, 1e-6);
  double sum = 0;
  for (auto& [category, pj] : r.by_category()) sum += pj;
  EXPECT_NEAR(sum, r.total_pj(), 1e-6);
  expect_has(r.summary(), "mac");
  expect_has(r.summary(), "static");
}

TEST(EnergyModel, NarrowOperandsCostLessPerMultiplyAccumulate) {
  AccelConfig w8 = default_config(), w4 = default_config();
  w4.wgt_bits = 4;
  const EnergyTable t = energy_table("asic-45nm");
  EnergyCounts n;
  std::vector<uint64_t> run(size_t(AccelCounter::Count), 0);
  run[size_t(AccelCounter::GemmMacs)] = 256;
  n.add(run, 1);
  auto mac = [&](const AccelConfig& c) { return estimate_energy(n, c, t).by_category()["mac"]; };
  // Two 4 x 8 products from one 16 x 8 multiply; a 16-bit tree.
  EXPECT_NEAR(mac(w4), 256 * (0.2 * 16 / 8 / 2 + (0.03 + 0.07 * 8 / 24) * 15 / 16 + 0.1 / 16), 1e-9);
  // Plain multipliers (RtlOptions): one 8 x 8 multiply a product.
  RtlOptions plain;
  plain.gemm = GemmMultipliers::Plain;
  EXPECT_NEAR(t.mac(w8, plain), 0.2 + (0.03 + 0.07 * 12 / 24) * 15 / 16 + 0.1 / 16, 1e-9);
  EXPECT_LT(mac(w4), mac(w8));
  EXPECT_LT(estimate_asic_area_mm2(w4, t), estimate_asic_area_mm2(w8, t));
}

TEST(EnergyTable, MalformedTablesAreErrorsNamingTheField) {
  const std::string good = energy_table("asic-45nm").to_json();
  auto error = [](const std::string& text) {
    return test::error_text<ConfigError>([&] { EnergyTable::from_json(text, "t.json"); });
  };
  auto with = [&](const std::string& field, const std::string& value) {
    auto j = nlohmann::json::parse(good);
    if (value.empty())
      j.erase(field);
    else
      j[field] = nlohmann::json::parse(value);
    return j.dump();
  };
  expect_has(error("{"), "not valid JSON");
  expect_has(error("[]"), "expected a JSON object");
  expect_has(error(with("dram_pj_per_byte", "")), "'dram_pj_per_byte' is missing");
  expect_has(error(with("dram_pj_per_byt", "3")), "unknown field 'dram_pj_per_byt' (did you mean 'dram_pj_per_byte'");
  expect_has(error(with("mult_pj_8x8", "-1")), "'mult_pj_8x8' must be a positive number");
  expect_has(error(with("mult_pj_8x8", "\"x\"")), "'mult_pj_8x8' must be a positive number");
  expect_has(error(with("add_pj", "{\"8\": 0.1, \"32\": 0.05}")), "smaller than at a smaller point");
  expect_has(error(with("add_pj", "{\"eight\": 0.1}")), "point 'eight' is not a whole number");
  expect_has(error(with("add_pj", "{\"8\": 0.03, \"08\": 0.05}")), "point '08' is not a whole number");
  expect_has(error(with("add_pj", "{}")), "'add_pj' must be an object");
  expect_has(error(with("sram_read_pj_64b", "{\"1024\": 0}")), "value at 1024 must be a positive number");
  expect_has(error(with("static_mw", "5")), "one of the two");
  expect_has(error(with("static_mw_per_mm2", "")), "one of the two");
  expect_has(error(with("mult_um2_8x8", "")), "'mult_um2_8x8' is missing: an area model needs");
  {
    auto j = nlohmann::json::parse(good);
    for (const char* f : {"add_um2", "mult_um2_8x8", "sram_um2_per_bit", "fixed_mm2"}) j.erase(f);
    expect_has(error(j.dump()), "'static_mw_per_mm2' needs the area model");
  }
  expect_has(error("{\"name\": \"a\", \"name\": \"b\"}"), "field 'name' is given twice");
  expect_has(test::error_text<ConfigError>([] { energy_table("asic-7nm"); }), "neither a built-in table");
  // A table of one's own, from a file, named in its errors.
  test::TestDir dir;
  const std::string path = (dir.path() / "mine.json").string();
  std::ofstream(path) << with("insn_pj", "-2");
  expect_has(test::error_text<ConfigError>([&] { energy_table(path); }), "energy table '" + path + "': 'insn_pj'");
  std::ofstream(path) << with("name", "\"mine\"");
  EXPECT_EQ(energy_table(path).name, "mine");
}

}  // namespace
}  // namespace loom::accel
