#include "loom/accel/config.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "loom/accel/isa.h"
#include "loom/runtime/error.h"
#include "loom/runtime/suggest.h"
#include "strict_json.h"

namespace loom::accel {

namespace {

int bits_for(int64_t depth) {
  int b = 0;
  while ((int64_t{1} << b) < depth) ++b;
  return b;
}

bool pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

int AccelConfig::inp_index_bits() const { return bits_for(inp_depth()); }
int AccelConfig::wgt_index_bits() const { return bits_for(wgt_depth()); }
int AccelConfig::dram_bus_bytes() const {
  return std::min({16, inp_block_bytes(), wgt_block_bytes(), acc_block_bytes(), out_block_bytes()});
}
int AccelConfig::acc_index_bits() const { return bits_for(acc_depth()); }
int AccelConfig::out_index_bits() const { return bits_for(out_depth()); }
int AccelConfig::uop_index_bits() const { return bits_for(uop_depth()); }
int AccelConfig::sram_index_bits() const {
  return std::max({inp_index_bits(), wgt_index_bits(), acc_index_bits(), out_index_bits(), uop_index_bits()});
}

int AccelConfig::uop_src_bits() const { return std::max(inp_index_bits(), acc_index_bits()); }

namespace {

// Whether the config's buffer indices fit the 32-bit micro-op and every instruction format.
bool fits_instruction_word(const AccelConfig& c) {
  if (c.uop_bits() > 8 * AccelConfig::kUopBytes) return false;
  IsaLayout layout(c);
  for (Opcode op : {Opcode::Load, Opcode::Gemm, Opcode::Alu})
    if (layout.insn_bits(op) > IsaLayout::kInsnBits) return false;
  return true;
}

}  // namespace

std::string instruction_width_advice(const AccelConfig& c) {
  // For each buffer, alone: the largest power-of-two size (not above today's) at which everything fits.
  struct Field {
    const char* name;
    int64_t AccelConfig::*bytes;
    int64_t entry;  // the smallest legal size: one entry
  };
  const Field fields[] = {{"inp_buffer_bytes", &AccelConfig::inp_buffer_bytes, c.inp_block_bytes()},
                          {"wgt_buffer_bytes", &AccelConfig::wgt_buffer_bytes, c.wgt_block_bytes()},
                          {"acc_buffer_bytes", &AccelConfig::acc_buffer_bytes, c.acc_block_bytes()},
                          {"out_buffer_bytes", &AccelConfig::out_buffer_bytes, c.out_block_bytes()},
                          {"uop_buffer_bytes", &AccelConfig::uop_buffer_bytes, AccelConfig::kUopBytes}};
  std::string fixes;
  for (const Field& f : fields) {
    AccelConfig t = c;
    while (t.*f.bytes / 2 >= f.entry && !fits_instruction_word(t)) t.*f.bytes /= 2;
    if (t.*f.bytes < c.*f.bytes && fits_instruction_word(t) && t.out_depth() >= t.acc_depth())
      fixes += (fixes.empty() ? "" : ", ") + std::string(f.name) + " to at most " + std::to_string(t.*f.bytes);
  }
  if (!fixes.empty()) return "shrink " + fixes + " (any one of them alone fits the instruction word)";
  return "no single buffer fits it alone: shrink several of inp/wgt/acc/out/uop_buffer_bytes (each halving takes "
         "one bit off its index)";
}

void AccelConfig::validate() const {
  // The name becomes SystemVerilog and file names: letters, digits, '_', '-', '.' only.
  if (name.empty() || name.size() > 64 || std::any_of(name.begin(), name.end(), [](char ch) {
        return !std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.';
      }))
    LOOM_THROW(ConfigError, "accelerator config: 'name' must be 1 to 64 letters, digits, '_', '-' or '.', got \"", name,
               "\"");
  auto field = [&](const char* f) { return "accelerator config '" + name + "': '" + std::string(f) + "'"; };
  for (auto [f, v] : {std::pair{"batch", batch}, std::pair{"block_in", block_in}, std::pair{"block_out", block_out}})
    if (!pow2(v)) LOOM_THROW(ConfigError, field(f), " must be a positive power of two, got ", v);
  for (auto [f, v] : {std::pair{"inp_bits", inp_bits}, std::pair{"wgt_bits", wgt_bits}})
    if (v != 2 && v != 4 && v != 8)
      LOOM_THROW(ConfigError, field(f), " must be 2, 4 or 8 (narrower elements are packed within bytes), got ", v);
  if (acc_bits != 16 && acc_bits != 32) LOOM_THROW(ConfigError, field("acc_bits"), " must be 16 or 32, got ", acc_bits);
  if (out_bits != inp_bits)
    LOOM_THROW(ConfigError, field("out_bits"), " must equal inp_bits (", inp_bits,
               "): a layer's outputs are the next layer's inputs, got ", out_bits);
  // Every entry a whole number of bytes (DMA moves entries; a sub-byte entry has no address).
  for (auto [f, elements, bits] : {std::tuple{"inp_bits", int64_t(batch) * block_in, inp_bits},
                                   std::tuple{"wgt_bits", int64_t(block_out) * block_in, wgt_bits},
                                   std::tuple{"out_bits", int64_t(batch) * block_out, out_bits}})
    if (elements * bits % 8)
      LOOM_THROW(ConfigError, field(f), ": an entry of ", elements, " elements of ", bits,
                 " bits is not a whole number of bytes; make the blocks larger");
  struct Buf {
    const char* name;
    int64_t bytes;
    int64_t entry;
  };
  for (Buf b : {Buf{"inp_buffer_bytes", inp_buffer_bytes, inp_block_bytes()},
                Buf{"wgt_buffer_bytes", wgt_buffer_bytes, wgt_block_bytes()},
                Buf{"acc_buffer_bytes", acc_buffer_bytes, acc_block_bytes()},
                Buf{"out_buffer_bytes", out_buffer_bytes, out_block_bytes()},
                Buf{"uop_buffer_bytes", uop_buffer_bytes, kUopBytes}}) {
    if (b.bytes < b.entry)
      LOOM_THROW(ConfigError, field(b.name), " = ", b.bytes, " is smaller than one entry (", b.entry, " bytes)");
    if (!pow2(b.bytes)) LOOM_THROW(ConfigError, field(b.name), " must be a power of two, got ", b.bytes);
  }
  if (out_depth() < acc_depth())
    LOOM_THROW(ConfigError, field("out_buffer_bytes"), " holds ", out_depth(), " entries but the accumulator has ",
               acc_depth(), "; every accumulator entry needs an output entry");
  if (uop_bits() > 8 * kUopBytes)
    LOOM_THROW(ConfigError, field("acc/inp/wgt_buffer_bytes"), ": a micro-op needs dst:", uop_dst_bits(),
               " + src:", uop_src_bits(), " + wgt:", uop_wgt_bits(), " = ", uop_bits(), " bits, more than ",
               8 * kUopBytes, "; ", instruction_width_advice(*this));
  IsaLayout layout(*this);
  for (Opcode op : {Opcode::Load, Opcode::Gemm, Opcode::Alu})
    if (layout.insn_bits(op) > IsaLayout::kInsnBits)
      LOOM_THROW(ConfigError, field(op == Opcode::Load ? "*_buffer_bytes" : "uop/acc/inp/wgt_buffer_bytes"), ": ",
                 to_string(op), " instructions would need ", layout.insn_bits(op), " bits (",
                 op == Opcode::Load ? "sram_base indexes the deepest buffer"
                                    : "micro-op range and loop factors index the buffers",
                 "), more than ", IsaLayout::kInsnBits, "; ", instruction_width_advice(*this));
}

std::string AccelConfig::precision() const {
  return "W" + std::to_string(wgt_bits) + "A" + std::to_string(inp_bits) + ", " + std::to_string(acc_bits) +
         "-bit accumulators";
}

std::vector<int> AccelConfig::weight_widths() const {
  std::vector<int> w;
  for (int b = wgt_bits; b <= 8; b *= 2) w.push_back(b);
  return w;
}

std::pair<int64_t, int64_t> AccelConfig::weight_range(int bits) const {
  if (bits < wgt_bits || bits > 8 || bits % wgt_bits || !pow2(bits / wgt_bits))
    LOOM_THROW(ConfigError, "config '", name, "' (", precision(), ") runs weights of ", wgt_bits,
               " bits, or twice or four times that up to 8 bits in passes, not ", bits);
  return digit_range(wgt_bits, bits);
}

std::pair<int64_t, int64_t> AccelConfig::digit_range(int digit_bits, int bits) {
  if (digit_bits < 1 || bits < digit_bits || bits > 32 || bits % digit_bits)
    LOOM_THROW(ConfigError, "digit_range: ", bits, " bits are no whole number of ", digit_bits, "-bit digits");
  // sum_p d_p 2^(p b) over P = bits / b passes, each d_p in [-2^(b-1), 2^(b-1) - 1]
  const int64_t b = digit_bits, scale = ((int64_t(1) << bits) - 1) / ((int64_t(1) << b) - 1);
  return {-(int64_t(1) << (b - 1)) * scale, ((int64_t(1) << (b - 1)) - 1) * scale};
}

void AccelConfig::require_32bit_accumulators(const std::string& who) const {
  if (acc_bits != 32)
    LOOM_THROW(ConfigError, who, " accumulate in 32 bits; config '", name, "' is ", precision(),
               ", which every accelerator backend runs, and loom compile uses for the layers whose sums provably fit "
               "(the others stay on the CPU, with the bound in its report)");
}

std::string AccelConfig::to_json() const {
  nlohmann::ordered_json j = {{"name", name},
                              {"batch", batch},
                              {"block_in", block_in},
                              {"block_out", block_out},
                              {"inp_bits", inp_bits},
                              {"wgt_bits", wgt_bits},
                              {"acc_bits", acc_bits},
                              {"out_bits", out_bits},
                              {"inp_buffer_bytes", inp_buffer_bytes},
                              {"wgt_buffer_bytes", wgt_buffer_bytes},
                              {"acc_buffer_bytes", acc_buffer_bytes},
                              {"out_buffer_bytes", out_buffer_bytes},
                              {"uop_buffer_bytes", uop_buffer_bytes}};
  return j.dump(2);
}

namespace {

const char* const kConfigFields[] = {"name",
                                     "batch",
                                     "block_in",
                                     "block_out",
                                     "inp_bits",
                                     "wgt_bits",
                                     "acc_bits",
                                     "out_bits",
                                     "inp_buffer_bytes",
                                     "wgt_buffer_bytes",
                                     "acc_buffer_bytes",
                                     "out_buffer_bytes",
                                     "uop_buffer_bytes"};

// Unknown fields first: a misspelt field would otherwise be reported as the field it misspells missing.
void check_known_fields(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) return;
  const std::vector<std::string> known(std::begin(kConfigFields), std::end(kConfigFields));
  for (auto& [k, v] : j.items())
    if (!v.is_object() && std::find(known.begin(), known.end(), k) == known.end())
      LOOM_THROW(ConfigError, "accelerator config ", origin, ": unknown field '", k, "'", did_you_mean(k, known));
}

}  // namespace

AccelConfig AccelConfig::from_json(const std::string& text, const std::string& origin) {
  nlohmann::json j = parse_strict_json(text, "accelerator config " + origin);
  if (!j.is_object()) LOOM_THROW(ConfigError, "accelerator config ", origin, ": expected a JSON object");
  AccelConfig c;
  auto get_int = [&](const char* key, auto& out) {
    using T = std::decay_t<decltype(out)>;
    if (!j.contains(key)) return;
    if (!j[key].is_number_integer())
      LOOM_THROW(ConfigError, "accelerator config ", origin, ": '", key, "' must be an integer");
    // Reject values the field cannot hold instead of silently wrapping them.
    if (j[key].is_number_unsigned() ? j[key].get<uint64_t>() > uint64_t(std::numeric_limits<T>::max())
                                    : j[key].get<int64_t>() < int64_t(std::numeric_limits<T>::min()) ||
                                          j[key].get<int64_t>() > int64_t(std::numeric_limits<T>::max()))
      LOOM_THROW(ConfigError, "accelerator config ", origin, ": '", key, "' = ", j[key].dump(), " is out of range");
    out = j[key].get<T>();
  };
  check_known_fields(j, origin);
  if (j.contains("name")) {
    if (!j["name"].is_string()) LOOM_THROW(ConfigError, "accelerator config ", origin, ": 'name' must be a string");
    c.name = j["name"].get<std::string>();
  }
  get_int("batch", c.batch);
  get_int("block_in", c.block_in);
  get_int("block_out", c.block_out);
  get_int("inp_bits", c.inp_bits);
  get_int("wgt_bits", c.wgt_bits);
  get_int("acc_bits", c.acc_bits);
  get_int("out_bits", c.out_bits);
  get_int("inp_buffer_bytes", c.inp_buffer_bytes);
  get_int("wgt_buffer_bytes", c.wgt_buffer_bytes);
  get_int("acc_buffer_bytes", c.acc_buffer_bytes);
  get_int("out_buffer_bytes", c.out_buffer_bytes);
  get_int("uop_buffer_bytes", c.uop_buffer_bytes);
  // Object-valued entries that are not fields (those were type-checked above): backend sections.
  for (auto& [k, v] : j.items())
    if (v.is_object()) c.backend_sections[k] = v.dump();
  c.validate();
  return c;
}

AccelConfig AccelConfig::load(const std::string& path) {
  const std::string text = read_data_file(path, "accelerator config: cannot open '" + path + "'");
  nlohmann::json j = parse_strict_json(text, "accelerator config '" + path + "'");
  check_known_fields(j, "'" + path + "'");
  if (j.is_object()) {
    std::string missing;
    for (auto* f : kConfigFields)
      if (!j.contains(f)) missing += (missing.empty() ? "'" : ", '") + std::string(f) + "'";
    if (!missing.empty())
      LOOM_THROW(ConfigError, "accelerator config '", path, "': missing field(s) ", missing,
                 " (a config file gives every field)");
  }
  return from_json(text, "'" + path + "'");
}

AccelConfig default_config() { return AccelConfig{}; }

}  // namespace loom::accel
