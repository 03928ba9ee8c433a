// `loom energy-table [NAME|FILE]`: the energy tables (accel/energy_model.h, docs/energy.md). Without
// an argument, the built-in tables; with one, that table checked and printed as JSON (a start for
// a table of one's own), and with --config, the config's ASIC area and energy per action by it.
#include <iomanip>
#include <iostream>

#include "cli.h"
#include "command.h"
#include "loom/accel/energy_model.h"
#include "loom/runtime/error.h"

namespace loom::tools {

namespace {

int energy_table_cmd(const std::vector<std::string>& args) {
  CLI::App app{"Energy tables: list the built-in ones, or check and print one (a built-in or a JSON file)",
               "loom energy-table"};
  std::string name, config_path;
  app.add_option("table", name, "asic-45nm, xc7-28nm, xcup-16nm or a JSON file");
  app.add_option("--config", config_path, "also print this accelerator config's energy per action by the table")
      ->check(CLI::ExistingFile);
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (name.empty()) {
    if (!config_path.empty()) LOOM_THROW(Error, "--config needs a table");
    for (const std::string& n : accel::energy_table_names())
      std::cout << n << ": " << accel::energy_table(n).source << "\n";
    return 0;
  }
  accel::EnergyTable t = accel::energy_table(name);  // ConfigError naming the field
  if (config_path.empty()) {
    std::cout << t.to_json() << "\n";
    return 0;
  }
  accel::AccelConfig c = accel::AccelConfig::load(config_path);
  std::cout << "config " << c.name << " by table " << t.name << " (" << t.source << "):\n"
            << std::setprecision(4) << "  multiply-accumulate (W" << c.wgt_bits << "A" << c.inp_bits << ", "
            << c.acc_bits << "-bit accumulator): " << t.mac(c) << " pJ\n"
            << "  input entry read: " << t.sram_read(c.inp_buffer_bytes, int64_t(c.inp_block_bytes()) * 8) << " pJ\n"
            << "  weight entry read: " << t.sram_read(c.wgt_buffer_bytes, int64_t(c.wgt_block_bytes()) * 8) << " pJ\n"
            << "  accumulator entry read: " << t.sram_read(c.acc_buffer_bytes, int64_t(c.acc_block_bytes()) * 8)
            << " pJ\n"
            << "  DRAM byte: " << t.dram_pj_per_byte << " pJ\n";
  if (!t.add_um2.empty()) std::cout << "  ASIC area: " << accel::estimate_asic_area_mm2(c, t) << " mm2\n";
  return 0;
}

}  // namespace

LOOM_REGISTER_COMMAND("energy-table", "energy tables for `loom run --energy` and `loom dse`: list, check and print one",
                      energy_table_cmd);

}  // namespace loom::tools
