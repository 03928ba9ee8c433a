// Energy per inference: the accelerator's action counts (the functional counters every backend
// reports alike; action_counts.h) times an energy per action from a technology table. Actions are
// the GEMM core's multiply-accumulates at the config's operand widths, each scratchpad's reads and
// writes (energy per access from the buffer's size and entry width), DRAM bytes (the DMA's and the
// instruction fetch's), ALU element operations, instructions, and static power over the cycles.
// The tables are data (JSON): two built in with their published sources (docs/energy.md), or the
// user's own, validated with errors naming the field. The same table gives an ASIC area in mm².
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/accel/hw_params.h"

namespace loom::accel {

// Energies per action and the rules that scale them. Widths and sizes between the table's points
// are interpolated (linearly in bits; log-log in buffer bytes), beyond them extrapolated along the
// nearest segment.
struct EnergyTable {
  std::string name, source;
  double node_nm = 0;                          // what the figures were measured at (informational)
  double clock_mhz = 0;                        // the clock static power is charged over
  std::map<int, double> add_pj;                // integer add of N bits
  double mult_pj_8x8 = 0;                      // 8x8-bit multiply; an AxB multiply scales with A*B/64
  double alu_factor = 1;                       // an ALU operation: this many accumulator-width adds
  std::map<int64_t, double> sram_read_pj_64b;  // a 64-bit read of an SRAM of this many bytes
  double sram_write_factor = 1;                // write energy / read energy
  double dram_pj_per_byte = 0;
  double insn_pj = 0;  // fetching into the queues and decoding one instruction
  // Static power: of the whole device (an FPGA), or per mm² of the design's ASIC area.
  double static_mw = 0, static_mw_per_mm2 = 0;
  // ASIC area: adders and multipliers as above, SRAM per bit, control and DMA as a fixed part.
  std::map<int, double> add_um2;
  double mult_um2_8x8 = 0, sram_um2_per_bit = 0, fixed_mm2 = 0;

  double add(int bits) const;
  double mult(int a_bits, int b_bits) const;
  // One multiply-accumulate of the config's GEMM core, as its RTL (built with `rtl`) computes it:
  // the product (a DSP-packed multiplier's share: k products that share the input x from one
  // multiply of ((k - 1) x product width + wgt_bits) x inp_bits bits), its share of the
  // block_in-input adder tree (block_in - 1 adds of the product's width plus log2(block_in) bits
  // per block_in products), and of the one accumulator add per output.
  double mac(const AccelConfig& config, const RtlOptions& rtl = {}) const;
  // One access of `width_bits` to an SRAM of `bytes`: wider than 64 bits, width/64 banks of 64-bit
  // words side by side, each holding its share of the bytes.
  double sram_read(int64_t bytes, int64_t width_bits) const;
  double add_area(int bits) const;

  // A ConfigError naming `origin` and the field: missing, not a positive number, points not
  // increasing, an unknown field (a typo is never ignored).
  static EnergyTable from_json(const std::string& json_text, const std::string& origin);
  std::string to_json() const;
};

// "asic-45nm", "xc7-28nm" and "xcup-16nm" (docs/energy.md gives their sources and rules).
std::vector<std::string> energy_table_names();
// A built-in table by name, or a JSON file by path; a ConfigError listing the built-ins otherwise.
EnergyTable energy_table(const std::string& name_or_path);

// The counts an energy figure is built from: AccelCounter values summed over runs (the timing
// counters are not used), the cycles, and how many runs (each fetches one FINISH).
struct EnergyCounts {
  std::vector<uint64_t> counters;  // indexed by AccelCounter
  uint64_t cycles = 0, runs = 0;
  void add(const std::vector<uint64_t>& run_counters, uint64_t run_cycles);
};

// Energy of one part, in picojoules, and the action count behind it.
struct EnergyPart {
  std::string name;      // e.g. "mac", "sram.wgt.read", "dram", "static"
  std::string category;  // mac, sram, dram, alu, insn, static
  double count = 0, pj_each = 0;
  double pj() const { return count * pj_each; }
};

struct EnergyReport {
  std::string table;  // the table's name
  std::vector<EnergyPart> parts;
  double total_pj() const;
  // Picojoules per category (mac, sram, dram, alu, insn, static).
  std::map<std::string, double> by_category() const;
  // {"table", "total_pj", "by_category": {...}, "parts": [{"name", "category", "count", "pj_each", "pj"}]}
  std::string to_json() const;
  // The total and the categories as a few lines of text (microjoules and shares), indented by `indent`.
  std::string summary(const std::string& indent = "  ") const;
};

// The energy of the counted runs on `config` (its RTL built with `rtl`) by `table`.
EnergyReport estimate_energy(const EnergyCounts& counts, const AccelConfig& config, const EnergyTable& table,
                             const RtlOptions& rtl = {});

// The design's ASIC area in mm² by the table: GEMM products, ALU lanes, scratchpads, fixed part.
double estimate_asic_area_mm2(const AccelConfig& config, const EnergyTable& table);

}  // namespace loom::accel
