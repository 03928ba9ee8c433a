#include "loom/accel/energy_model.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "loom/accel/action_counts.h"
#include "loom/accel/isa.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/suggest.h"
#include "strict_json.h"

namespace loom::accel {

using nlohmann::json;

namespace {

// Linear between the points of `t` (keys ascending), along the nearest segment beyond them.
template <typename K>
double interpolate(const std::map<K, double>& t, double x, bool log_log) {
  if (t.size() == 1) return t.begin()->second * (log_log ? 1.0 : x / double(t.begin()->first));
  auto hi = t.lower_bound(K(std::ceil(x)));
  if (hi == t.begin()) ++hi;
  if (hi == t.end()) --hi;
  auto lo = std::prev(hi);
  auto f = [&](double v) { return log_log ? std::log(v) : v; };
  double x0 = f(double(lo->first)), x1 = f(double(hi->first)), y0 = f(lo->second), y1 = f(hi->second);
  double y = y0 + (y1 - y0) * (f(x) - x0) / (x1 - x0);
  return log_log ? std::exp(y) : std::max(0.0, y);
}

// The width of the GEMM core's adder tree: a product plus log2(block_in) bits.
int adder_tree_bits(const AccelConfig& c) {
  return c.inp_bits + c.wgt_bits + int(std::ceil(std::log2(double(c.block_in))));
}

const char* const kFields[] = {"name",
                               "source",
                               "node_nm",
                               "clock_mhz",
                               "add_pj",
                               "mult_pj_8x8",
                               "alu_factor",
                               "sram_read_pj_64b",
                               "sram_write_factor",
                               "dram_pj_per_byte",
                               "insn_pj",
                               "static_mw",
                               "static_mw_per_mm2",
                               "add_um2",
                               "mult_um2_8x8",
                               "sram_um2_per_bit",
                               "fixed_mm2"};

struct Reader {
  const json& j;
  std::string what;

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    LOOM_THROW(ConfigError, what, ": '", field, "' ", why);
  }
  bool has(const char* f) const { return j.contains(f); }
  double number(const char* f, bool required, double fallback = 0, bool zero_ok = false) const {
    if (!j.contains(f)) {
      if (required) fail(f, "is missing");
      return fallback;
    }
    const json& v = j[f];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || (!zero_ok && v.get<double>() == 0))
      fail(f, "must be a " + std::string(zero_ok ? "non-negative" : "positive") + " number, not " + v.dump());
    return v.get<double>();
  }
  std::string text(const char* f) const {
    if (!j.contains(f) || !j[f].is_string() || j[f].get<std::string>().empty()) fail(f, "must be a non-empty string");
    return j[f];
  }
  // {"POINT": value, ...}: positive whole-number points (bits or bytes), positive values, values
  // not decreasing as the points grow (a wider adder or a larger SRAM never costs less).
  template <typename K>
  std::map<K, double> points(const char* f, bool required, int64_t max_key) const {
    std::map<K, double> t;
    if (!j.contains(f)) {
      if (required) fail(f, "is missing");
      return t;
    }
    if (!j[f].is_object() || j[f].empty()) fail(f, "must be an object of {\"POINT\": value}, e.g. {\"8\": 0.03}");
    for (auto it = j[f].begin(); it != j[f].end(); ++it) {
      const std::string k = it.key();
      const json& v = it.value();
      const long long key = std::strtoll(k.c_str(), nullptr, 10);
      if (key <= 0 || key > max_key || std::to_string(key) != k)  // written plainly: not "08", " 8" or "8x"
        fail(f, "point '" + k + "' is not a whole number in [1, " + std::to_string(max_key) + "]");
      const double x = v.is_number() ? double(v) : 0;
      if (!(x > 0) || !std::isfinite(x)) fail(f, "value at " + k + " must be a positive number, not " + v.dump());
      t[K(key)] = x;
    }
    double last = 0;
    for (auto& [k, v] : t) {
      if (v < last) fail(f, "value at " + std::to_string(k) + " is smaller than at a smaller point");
      last = v;
    }
    return t;
  }
};

}  // namespace

double EnergyTable::add(int bits) const { return interpolate(add_pj, bits, false); }
double EnergyTable::mult(int a, int b) const { return mult_pj_8x8 * double(a) * double(b) / 64.0; }
double EnergyTable::mac(const AccelConfig& c, const RtlOptions& rtl) const {
  const int k = gemm_multiplier_plan(c, rtl).products_per_multiplier;
  const double product = mult((k - 1) * (c.inp_bits + c.wgt_bits) + c.wgt_bits, c.inp_bits) / double(k);
  const double n = double(c.block_in);
  return product + add(adder_tree_bits(c)) * (n - 1) / n + add(c.acc_bits) / n;
}

double EnergyTable::sram_read(int64_t bytes, int64_t width_bits) const {
  // An entry wider than 64 bits is read from width/64 banks side by side, each a 64-bit-wide SRAM
  // holding its share of the bytes; narrower entries from one.
  const double banks = std::max(1.0, double(width_bits) / 64.0);
  return interpolate(sram_read_pj_64b, double(bytes) / banks, true) * double(width_bits) / 64.0;
}
double EnergyTable::add_area(int bits) const { return interpolate(add_um2, bits, false); }

EnergyTable EnergyTable::from_json(const std::string& text, const std::string& origin) {
  const std::string what = "energy table " + origin;
  json j = parse_strict_json(text, what);
  if (!j.is_object()) LOOM_THROW(ConfigError, what, ": expected a JSON object");
  const std::vector<std::string> known(std::begin(kFields), std::end(kFields));
  for (auto& [k, v] : j.items())
    if (std::find(known.begin(), known.end(), k) == known.end())
      LOOM_THROW(ConfigError, what, ": unknown field '", k, "'", did_you_mean(k, known));
  Reader r{j, what};
  EnergyTable t;
  t.name = r.text("name");
  t.source = r.text("source");
  t.node_nm = r.number("node_nm", true);
  t.clock_mhz = r.number("clock_mhz", true);
  t.add_pj = r.points<int>("add_pj", true, 64);
  t.mult_pj_8x8 = r.number("mult_pj_8x8", true);
  t.alu_factor = r.number("alu_factor", false, 1);
  t.sram_read_pj_64b = r.points<int64_t>("sram_read_pj_64b", true, int64_t(1) << 40);
  t.sram_write_factor = r.number("sram_write_factor", false, 1);
  t.dram_pj_per_byte = r.number("dram_pj_per_byte", true);
  t.insn_pj = r.number("insn_pj", true, 0, true);
  t.add_um2 = r.points<int>("add_um2", false, 64);
  t.mult_um2_8x8 = r.number("mult_um2_8x8", false);
  t.sram_um2_per_bit = r.number("sram_um2_per_bit", false);
  t.fixed_mm2 = r.number("fixed_mm2", false, 0, true);
  const bool area = r.has("add_um2") || r.has("mult_um2_8x8") || r.has("sram_um2_per_bit");
  if (area && !(r.has("add_um2") && r.has("mult_um2_8x8") && r.has("sram_um2_per_bit")))
    r.fail(!r.has("add_um2")        ? "add_um2"
           : !r.has("mult_um2_8x8") ? "mult_um2_8x8"
                                    : "sram_um2_per_bit",
           "is missing: an area model needs add_um2, mult_um2_8x8 and sram_um2_per_bit");
  if (r.has("static_mw") == r.has("static_mw_per_mm2"))
    r.fail("static_mw", "or 'static_mw_per_mm2' (one of the two) must be given");
  t.static_mw = r.number("static_mw", false, 0, true);
  t.static_mw_per_mm2 = r.number("static_mw_per_mm2", false, 0, true);
  if (r.has("static_mw_per_mm2") && !area)
    r.fail("static_mw_per_mm2", "needs the area model (add_um2, mult_um2_8x8, sram_um2_per_bit)");
  return t;
}

std::string EnergyTable::to_json() const {
  nlohmann::ordered_json j = {{"name", name}, {"source", source}, {"node_nm", node_nm}, {"clock_mhz", clock_mhz}};
  auto points = [](const auto& t) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (auto& [k, v] : t) o[std::to_string(k)] = v;
    return o;
  };
  j["add_pj"] = points(add_pj);
  j["mult_pj_8x8"] = mult_pj_8x8;
  j["alu_factor"] = alu_factor;
  j["sram_read_pj_64b"] = points(sram_read_pj_64b);
  j["sram_write_factor"] = sram_write_factor;
  j["dram_pj_per_byte"] = dram_pj_per_byte;
  j["insn_pj"] = insn_pj;
  if (static_mw_per_mm2 > 0)
    j["static_mw_per_mm2"] = static_mw_per_mm2;
  else
    j["static_mw"] = static_mw;
  if (!add_um2.empty()) {
    j["add_um2"] = points(add_um2);
    j["mult_um2_8x8"] = mult_um2_8x8;
    j["sram_um2_per_bit"] = sram_um2_per_bit;
    j["fixed_mm2"] = fixed_mm2;
  }
  return j.dump(2);
}

void EnergyCounts::add(const std::vector<uint64_t>& run, uint64_t run_cycles) {
  if (counters.size() < run.size()) counters.resize(run.size(), 0);
  for (size_t k = 0; k < run.size(); ++k) counters[k] += run[k];
  cycles += run_cycles;
  ++runs;
}

double EnergyReport::total_pj() const {
  double s = 0;
  for (const EnergyPart& p : parts) s += p.pj();
  return s;
}

std::map<std::string, double> EnergyReport::by_category() const {
  std::map<std::string, double> m;
  for (const EnergyPart& p : parts) m[p.category] += p.pj();
  return m;
}

std::string EnergyReport::to_json() const {
  json j = {{"table", table}, {"total_pj", total_pj()}, {"by_category", by_category()}, {"parts", json::array()}};
  for (const EnergyPart& p : parts)
    j["parts"].push_back(
        {{"name", p.name}, {"category", p.category}, {"count", p.count}, {"pj_each", p.pj_each}, {"pj", p.pj()}});
  return j.dump();
}

std::string EnergyReport::summary(const std::string& indent) const {
  std::ostringstream os;
  const double total = total_pj();
  os << std::fixed << std::setprecision(3);
  for (auto& [category, pj] : by_category())
    os << indent << std::left << std::setw(8) << category << std::right << std::setw(12) << pj * 1e-6 << " uJ"
       << std::setw(7) << std::setprecision(1) << (total > 0 ? 100 * pj / total : 0.0) << "%\n"
       << std::setprecision(3);
  return os.str();
}

double estimate_asic_area_mm2(const AccelConfig& c, const EnergyTable& t) {
  if (t.add_um2.empty())
    LOOM_THROW(ConfigError, "energy table '", t.name,
               "' has no ASIC area model (add_um2, mult_um2_8x8, sram_um2_per_bit)");
  const double products = double(c.batch) * c.block_in * c.block_out, lanes = double(c.batch) * c.block_out;
  const double mult = t.mult_um2_8x8 * c.inp_bits * c.wgt_bits / 64.0;
  // Per output: a block_in-input adder tree and the accumulator's adder (mac()).
  const double gemm =
      products * mult + lanes * ((c.block_in - 1) * t.add_area(adder_tree_bits(c)) + t.add_area(c.acc_bits));
  const double alu = lanes * t.alu_factor * t.add_area(c.acc_bits);
  const double sram_bits = 8.0 * double(c.inp_buffer_bytes + c.wgt_buffer_bytes + c.acc_buffer_bytes +
                                        c.out_buffer_bytes + c.uop_buffer_bytes);
  return (gemm + alu + sram_bits * t.sram_um2_per_bit) * 1e-6 + t.fixed_mm2;
}

EnergyReport estimate_energy(const EnergyCounts& counts, const AccelConfig& c, const EnergyTable& t,
                             const RtlOptions& rtl) {
  auto n = [&](AccelCounter k) {
    return size_t(k) < counts.counters.size() ? double(counts.counters[size_t(k)]) : 0.0;
  };
  const double products = double(c.batch) * c.block_in * c.block_out, lanes = double(c.batch) * c.block_out;
  // Steps of the GEMM core and the ALU: each reads one micro-op and writes one accumulator and one
  // output entry; a multiply-accumulate step reads an input, a weight and an accumulator entry.
  const double mac_steps = n(AccelCounter::GemmMacs) / products, reset_steps = n(AccelCounter::GemmResetSteps);
  const double alu_steps = n(AccelCounter::AluOps) / lanes, alu_vec_steps = n(AccelCounter::AluVectorOps) / lanes;
  EnergyReport r;
  r.table = t.name;
  auto part = [&](const std::string& name, const std::string& category, double count, double each) {
    r.parts.push_back({name, category, count, each});
  };
  part("mac", "mac", n(AccelCounter::GemmMacs), t.mac(c, rtl));
  // A scratchpad's accesses of one entry each; `moved`: the entries its DMA moved (dma_counter).
  auto sram = [&](const char* buffer, MemType m, int64_t bytes, double reads, double writes) {
    const double each = t.sram_read(bytes, 8 * int64_t(entry_bytes(c, m)));
    part(std::string("sram.") + buffer + ".read", "sram", reads, each);
    part(std::string("sram.") + buffer + ".write", "sram", writes, each * t.sram_write_factor);
  };
  auto moved = [&](MemType m) { return n(dma_counter(m)) / double(entry_bytes(c, m)); };
  sram("inp", MemType::Inp, c.inp_buffer_bytes, mac_steps, moved(MemType::Inp) + n(AccelCounter::PadEntriesInp));
  sram("wgt", MemType::Wgt, c.wgt_buffer_bytes, mac_steps, moved(MemType::Wgt) + n(AccelCounter::PadEntriesWgt));
  sram("acc", MemType::Acc, c.acc_buffer_bytes, mac_steps + alu_steps + alu_vec_steps,
       mac_steps + reset_steps + alu_steps + moved(MemType::Acc) + n(AccelCounter::PadEntriesAcc));
  sram("out", MemType::Out, c.out_buffer_bytes, moved(MemType::Out), mac_steps + reset_steps + alu_steps);
  sram("uop", MemType::Uop, c.uop_buffer_bytes, mac_steps + reset_steps + alu_steps, moved(MemType::Uop));
  const double insns = n(AccelCounter::LoadInsns) + n(AccelCounter::UopLoadInsns) + n(AccelCounter::AccLoadInsns) +
                       n(AccelCounter::StoreInsns) + n(AccelCounter::GemmInsns) + n(AccelCounter::AluInsns) +
                       double(counts.runs);  // each run's FINISH
  const double dma = n(AccelCounter::DmaLoadBytesInp) + n(AccelCounter::DmaLoadBytesWgt) +
                     n(AccelCounter::DmaLoadBytesAcc) + n(AccelCounter::DmaLoadBytesUop) +
                     n(AccelCounter::DmaStoreBytes);
  part("dram.data", "dram", dma, t.dram_pj_per_byte);
  part("dram.insn", "dram", insns * 16, t.dram_pj_per_byte);
  part("alu", "alu", n(AccelCounter::AluOps), t.alu_factor * t.add(c.acc_bits));
  part("insn", "insn", insns, t.insn_pj);
  const double static_mw = t.static_mw_per_mm2 > 0 ? t.static_mw_per_mm2 * estimate_asic_area_mm2(c, t) : t.static_mw;
  // mW over one cycle of clock_mhz: 1e-3 W x 1e-6/clock_mhz s = 1e-9/clock_mhz J = 1e3/clock_mhz pJ.
  part("static", "static", double(counts.cycles), static_mw * 1e3 / t.clock_mhz);
  return r;
}

}  // namespace loom::accel
