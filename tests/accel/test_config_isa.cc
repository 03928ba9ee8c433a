// Accelerator config (one source of truth, validation) and ISA encode/decode/disassembly.
#include <gtest/gtest.h>

#include <tuple>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>

#include "accel_harness.h"
#include "common/temp_dir.h"

namespace loom::accel {
using loom::ConfigError;
using loom::DeviceError;
using loom::IsaError;
namespace {

TEST(AccelConfig, DefaultIsVtaClassic) {
  AccelConfig c = default_config();
  EXPECT_EQ(c.inp_depth(), 2048);
  EXPECT_EQ(c.wgt_depth(), 1024);
  EXPECT_EQ(c.acc_depth(), 2048);
  EXPECT_EQ(c.uop_depth(), 8192);
  EXPECT_EQ(c.acc_index_bits(), 11);
  EXPECT_EQ(c.wgt_index_bits(), 10);
  EXPECT_LE(IsaLayout(c).insn_bits(Opcode::Gemm), 128);
  EXPECT_EQ(AccelConfig::from_json(c.to_json()), c);
  EXPECT_EQ(AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/default.json"), c);
}

TEST(AccelConfig, ThreeConfigsLoad) {
  auto cs = test::test_configs();
  EXPECT_EQ(cs[1].block_in, 32);
  EXPECT_EQ(cs[2].batch, 2);
  for (auto& c : cs) EXPECT_NO_THROW(c.validate()) << c.name;
}

TEST(AccelConfig, ValidationNamesTheField) {
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"block_in": 12})");
            }).find("'block_in' must be a positive power of two, got 12"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"inp_buffer_bytes": 8})");
            }).find("'inp_buffer_bytes' = 8 is smaller than one entry"),
            std::string::npos);
  EXPECT_NE(
      test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"blocks": 2})"); }).find("unknown field 'blocks'"),
      std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] { AccelConfig::from_json("{"); }).find("not valid JSON"),
            std::string::npos);
  // Huge buffers no longer fit the 32-bit micro-op.
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(
                  R"({"acc_buffer_bytes": 1073741824, "out_buffer_bytes": 268435456, "inp_buffer_bytes": 1073741824,
                                      "wgt_buffer_bytes": 1073741824})");
            }).find("more than 32"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"acc_bits": 24})");
            }).find("'acc_bits' must be 16 or 32, got 24"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] { AccelConfig::load("/nonexistent/cfg.json"); }).find("cannot open"),
            std::string::npos);
}

Instruction random_insn(std::mt19937_64& g, const AccelConfig& c) {
  auto r = [&](uint64_t n) { return uint32_t(g() % n); };
  Instruction i;
  i.opcode = Opcode(r(5));
  i.dep = {bool(r(2)), bool(r(2)), bool(r(2)), bool(r(2))};
  if (i.opcode == Opcode::Load || i.opcode == Opcode::Store) {
    i.mem = MemType(r(5));
    i.sram_base = r(c.inp_depth());
    i.dram_base = uint32_t(g());
    i.y_size = r(65536);
    i.x_size = r(65536);
    i.x_stride = r(65536);
    i.y_pad0 = r(16);
    i.y_pad1 = r(16);
    i.x_pad0 = r(16);
    i.x_pad1 = r(16);
  } else if (i.opcode != Opcode::Finish) {
    i.reset = r(2);
    i.uop_begin = r(c.uop_depth());
    i.uop_end = r(c.uop_depth() + 1);
    i.iter_out = r(1 << 14);
    i.iter_in = r(1 << 14);
    i.dst_factor_out = r(c.acc_depth());
    i.dst_factor_in = r(c.acc_depth());
    i.src_factor_out = r(c.inp_depth());
    i.src_factor_in = r(c.inp_depth());
    if (i.opcode == Opcode::Gemm) {
      i.wgt_factor_out = r(c.wgt_depth());
      i.wgt_factor_in = r(c.wgt_depth());
    } else {
      i.alu_op = AluOp(r(5));
      i.use_imm = r(2);
      i.imm = int32_t(r(65536)) - 32768;
    }
  }
  return i;
}

TEST(Isa, EncodeDecodeRoundTripAllConfigs) {
  for (auto& c : test::test_configs()) {
    IsaLayout layout(c);
    std::mt19937_64 g(42);
    for (int n = 0; n < 2000; ++n) {
      Instruction i = random_insn(g, c);
      EXPECT_EQ(decode(encode(i, layout), layout, n), i) << disassemble(i);
    }
    MicroOp u{uint32_t(c.acc_depth() - 1), uint32_t(c.inp_depth() - 1), uint32_t(c.wgt_depth() - 1)};
    EXPECT_EQ(decode_uop(encode_uop(u, c), c), u);
  }
}

TEST(Isa, DecoderRejectsMalformedWords) {
  IsaLayout layout(default_config());
  InsnWord bad_op{7, 0};
  try {
    decode(bad_op, layout, 12);
    FAIL();
  } catch (const IsaError& e) {
    EXPECT_NE(std::string(e.what()).find("instruction 12: field 'opcode' = 7 is not a valid opcode"), std::string::npos)
        << e.what();
  }
  Instruction ld;
  ld.opcode = Opcode::Load;
  InsnWord w = encode(ld, layout);
  w[0] |= uint64_t(7) << 7;  // memory type 7
  EXPECT_THROW(decode(w, layout, 0), IsaError);
  Instruction fin;
  InsnWord f = encode(fin, layout);
  f[1] |= uint64_t(1) << 60;  // reserved bit
  try {
    decode(f, layout, 3);
    FAIL();
  } catch (const IsaError& e) {
    EXPECT_NE(std::string(e.what()).find("instruction 3 (FINISH): reserved bits above field 'push_next' are set"),
              std::string::npos)
        << e.what();
  }
  Instruction big;
  big.opcode = Opcode::Load;
  big.sram_base = 1u << 20;
  EXPECT_THROW(encode(big, layout), IsaError);
}

TEST(Isa, LayoutIsDerivedFromTheConfigAndFits) {
  for (auto& c : test::test_configs()) {
    IsaLayout L(c);
    for (Opcode op : {Opcode::Load, Opcode::Store, Opcode::Gemm, Opcode::Alu, Opcode::Finish}) {
      auto fields = L.fields(op);
      EXPECT_EQ(fields[0].name, "opcode");
      EXPECT_LE(L.insn_bits(op), IsaLayout::kInsnBits) << c.name << " " << to_string(op);
      for (size_t k = 1; k < fields.size(); ++k)
        EXPECT_EQ(fields[k].offset, fields[k - 1].offset + fields[k - 1].width);
    }
    auto width = [&](Opcode op, const std::string& n) {
      for (auto& f : L.fields(op))
        if (f.name == n) return f.width;
      return -1;
    };
    EXPECT_EQ(width(Opcode::Gemm, "dst_factor_in"), c.acc_index_bits());
    EXPECT_EQ(width(Opcode::Gemm, "wgt_factor_out"), c.wgt_index_bits());
    EXPECT_EQ(width(Opcode::Load, "sram_base"), c.uop_index_bits());  // the deepest scratchpad
    EXPECT_EQ(width(Opcode::Alu, "imm"), 16);
    EXPECT_LE(c.uop_bits(), 32);
  }
  // A config whose buffers are too deep for the instruction word is rejected, naming the reason.
  std::string e = test::error_text<ConfigError>([] {
    AccelConfig::from_json(R"({"uop_buffer_bytes": 65536})");  // VTA's classic layout has one bit to spare
  });
  EXPECT_NE(e.find("'uop/acc/inp/wgt_buffer_bytes': GEMM instructions would need 129 bits"), std::string::npos) << e;
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"batch": 4294967296})");
            }).find("'batch' = 4294967296 is out of range"),
            std::string::npos);
  EXPECT_NE(
      test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"name": 3})"); }).find("'name' must be a string"),
      std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"block_out": 0})");
            }).find("'block_out' must be a positive power of two"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"out_bits": 16})");
            }).find("'out_bits' must equal inp_bits (8): a layer's outputs are the next layer's inputs, got 16"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"out_buffer_bytes": 16384})");
            }).find("every accumulator entry needs an output entry"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"wgt_buffer_bytes": 100000})");
            }).find("'wgt_buffer_bytes' must be a power of two"),
            std::string::npos);
}

// Strict inputs: a field given twice, a config file missing fields, and a name that would break
// the generated SystemVerilog are errors naming them; a JSON object of overrides (from_json) is
// documented to take the default's other fields.
TEST(AccelConfig, DuplicateMissingAndBadNamesAreRefused) {
  std::string e =
      test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"batch": 1, "block_in": 16, "batch": 2})"); });
  EXPECT_NE(e.find("field 'batch' is given twice"), std::string::npos) << e;
  e = test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"name": "two\nlines"})"); });
  EXPECT_NE(e.find("'name' must be 1 to 64 letters"), std::string::npos) << e;
  e = test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"name": "x\"; endpackage"})"); });
  EXPECT_NE(e.find("'name' must be"), std::string::npos) << e;
  EXPECT_EQ(AccelConfig::from_json(R"({"block_out": 32})").block_in, default_config().block_in);  // overrides
  test::TestDir dir;
  std::string path = dir.file("partial.json");
  {
    std::ofstream f(path);
    f << R"({"name": "partial", "batch": 1, "block_in": 16, "block_out": 16, "inp_bits": 8, "wgt_bits": 8, "acc_bits": 32, "out_bits": 8,
              "inp_buffer_bytes": 32768, "wgt_buffer_bytes": 262144, "acc_buffer_bytes": 131072})";
  }
  e = test::error_text<ConfigError>([&] { AccelConfig::load(path); });
  EXPECT_NE(e.find("missing field(s) 'out_buffer_bytes', 'uop_buffer_bytes'"), std::string::npos) << e;
  EXPECT_NE(e.find("partial.json"), std::string::npos) << e;
}

// A misspelt field in a config file is named as unknown, with the field it most likely meant (not
// reported as the field it misspells missing).
TEST(AccelConfig, MisspeltFieldsNameTheirClosestField) {
  test::TestDir dir;
  std::string path = dir.file("typo.json");
  {
    std::ofstream f(path);
    f << R"({"name": "typo", "batch": 1, "blok_in": 16, "block_out": 16, "inp_bits": 8, "wgt_bits": 8, "acc_bits": 32,
             "out_bits": 8, "inp_buffer_bytes": 32768, "wgt_buffer_bytes": 262144, "acc_buffer_bytes": 131072,
             "out_buffer_bytes": 32768, "uop_buffer_bytes": 32768})";
  }
  std::string e = test::error_text<ConfigError>([&] { AccelConfig::load(path); });
  EXPECT_NE(e.find("unknown field 'blok_in' (did you mean 'block_in'?)"), std::string::npos) << e;
  e = test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"UOP_BUFFER_BYTE": 1024})"); });
  EXPECT_NE(e.find("(did you mean 'uop_buffer_bytes'?)"), std::string::npos) << e;
  e = test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"frequency": 200})"); });
  EXPECT_NE(e.find("unknown field 'frequency'"), std::string::npos) << e;
  EXPECT_EQ(e.find("did you mean"), std::string::npos) << e;  // nothing close: no guess
}

// A board's settings ride in the config file as objects by backend name; they are not part of the
// hardware, so equality and to_json ignore them.
TEST(AccelConfig, BackendSectionsAreKeptOutsideTheHardware) {
  AccelConfig c = AccelConfig::from_json(R"({"block_in": 16, "zynq": {"uio": "acc0"}, "xrt": {"device": 1}})");
  ASSERT_EQ(c.backend_sections.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(c.backend_sections.at("zynq"))["uio"], "acc0");
  EXPECT_EQ(nlohmann::json::parse(c.backend_sections.at("xrt"))["device"], 1);
  EXPECT_TRUE(c == default_config());
  EXPECT_EQ(c.to_json().find("zynq"), std::string::npos);
  // A field given as an object is still a field of the wrong type.
  std::string e = test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"batch": {"x": 1}})"); });
  EXPECT_NE(e.find("'batch' must be an integer"), std::string::npos) << e;
}

// A config too deep for the instruction word says which buffer fields to shrink and to what; each
// suggestion, applied alone, validates, and one step above it (twice the size) does not.
TEST(AccelConfig, InstructionWidthErrorsSayWhatToShrink) {
  struct Case {
    const char* json;
    std::vector<std::string> fields;
  };
  for (const Case& c : {Case{R"({"uop_buffer_bytes": 65536})", {"uop_buffer_bytes"}},
                        Case{R"({"inp_buffer_bytes": 4194304, "out_buffer_bytes": 131072})", {"inp_buffer_bytes"}},
                        Case{R"({"acc_buffer_bytes": 1048576, "out_buffer_bytes": 262144})", {"acc_buffer_bytes"}}}) {
    std::string e = test::error_text<ConfigError>([&] { AccelConfig::from_json(c.json); });
    ASSERT_NE(e.find("shrink "), std::string::npos) << c.json << ": " << e;
    for (const std::string& field : c.fields) {
      size_t at = e.find(field + " to at most ");
      ASSERT_NE(at, std::string::npos) << c.json << ": " << e;
      int64_t fits = std::stoll(e.substr(at + field.size() + 12));
      nlohmann::json j = nlohmann::json::parse(c.json);
      j[field] = fits;
      EXPECT_NO_THROW(AccelConfig::from_json(j.dump())) << j.dump();
      j[field] = 2 * fits;
      EXPECT_THROW(AccelConfig::from_json(j.dump()), ConfigError) << j.dump();
    }
  }
}

// Precision: inputs and weights of 2, 4 or 8 bits independently, outputs as wide as inputs,
// accumulators of 16 or 32; entries of whole bytes; every entry size and depth follows the widths.
TEST(AccelConfig, PrecisionIsAParameter) {
  for (auto [inp, wgt, acc] : {std::tuple{8, 4, 32}, {4, 4, 32}, {8, 2, 32}, {8, 8, 16}, {2, 2, 16}}) {
    // Buffers holding as many entries as the default's.
    nlohmann::json j = {{"inp_bits", inp},
                        {"wgt_bits", wgt},
                        {"acc_bits", acc},
                        {"out_bits", inp},
                        {"inp_buffer_bytes", 32768 * inp / 8},
                        {"wgt_buffer_bytes", 262144 * wgt / 8},
                        {"acc_buffer_bytes", 131072 * acc / 32},
                        {"out_buffer_bytes", 32768 * inp / 8}};
    AccelConfig c = AccelConfig::from_json(j.dump());
    EXPECT_EQ(c.inp_block_bytes(), c.batch * c.block_in * inp / 8) << j.dump();
    EXPECT_EQ(c.wgt_block_bytes(), c.block_out * c.block_in * wgt / 8) << j.dump();
    EXPECT_EQ(c.acc_block_bytes(), c.batch * c.block_out * acc / 8) << j.dump();
    EXPECT_EQ(c.wgt_depth(), accel::default_config().wgt_depth()) << j.dump();
    EXPECT_EQ(c.acc_depth(), accel::default_config().acc_depth()) << j.dump();
    if (acc == 32) EXPECT_NO_THROW(c.require_32bit_accumulators("the schedules")) << j.dump();
  }
  EXPECT_EQ(AccelConfig::from_json(R"({"wgt_bits": 4, "wgt_buffer_bytes": 131072})").precision(),
            "W4A8, 32-bit accumulators");
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"wgt_bits": 3})");
            }).find("'wgt_bits' must be 2, 4 or 8 (narrower elements are packed within bytes), got 3"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"inp_bits": 16, "out_bits": 16})");
            }).find("'inp_bits' must be 2, 4 or 8"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"inp_bits": 4})");
            }).find("'out_bits' must equal inp_bits (4)"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"block_in": 2, "block_out": 2, "inp_bits": 2, "out_bits": 2})");
            }).find("'inp_bits': an entry of 2 elements of 2 bits is not a whole number of bytes"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"name": "a16", "acc_bits": 16, "acc_buffer_bytes": 65536})")
                  .require_32bit_accumulators("the schedules");
            }).find("the schedules accumulate in 32 bits; config 'a16' is W8A8, 16-bit accumulators"),
            std::string::npos);
}

// Weights wider than the multipliers run in passes of wgt_bits-bit signed digits: the widths a
// design takes, and the range each holds (the digits' sums, checked against every digit
// combination).
TEST(AccelConfig, WeightWidthsInPasses) {
  auto config = [](int wgt) {
    nlohmann::json j = {{"wgt_bits", wgt}, {"wgt_buffer_bytes", 262144 * wgt / 8}};
    return AccelConfig::from_json(j.dump());
  };
  EXPECT_EQ(accel::default_config().weight_widths(), (std::vector<int>{8}));
  EXPECT_EQ(config(4).weight_widths(), (std::vector<int>{4, 8}));
  EXPECT_EQ(config(2).weight_widths(), (std::vector<int>{2, 4, 8}));
  for (auto [wgt, bits] : {std::pair{8, 8}, {4, 4}, {4, 8}, {2, 2}, {2, 4}, {2, 8}}) {
    int64_t lo = 0, hi = 0;
    const int passes = bits / wgt, half = 1 << (wgt - 1);
    for (int64_t code = 0; code < (int64_t(1) << bits); ++code) {  // every combination of digits
      int64_t v = 0;
      for (int p = passes - 1; p >= 0; --p) v = v * (1 << wgt) + ((code >> (p * wgt)) & ((1 << wgt) - 1)) - half;
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    EXPECT_EQ(config(wgt).weight_range(bits), std::make_pair(lo, hi)) << wgt << "-bit digits, " << bits << " bits";
  }
  EXPECT_EQ(config(4).weight_range(8), std::make_pair(int64_t(-136), int64_t(119)));
  EXPECT_NE(test::error_text<ConfigError>([&] { config(4).weight_range(2); }).find("runs weights of 4 bits"),
            std::string::npos);
  EXPECT_THROW(config(2).weight_range(6), ConfigError);
}

// Every config shipped in accel/configs (read from the folder, so a new file is covered too).
std::vector<AccelConfig> shipped_configs() {
  std::vector<std::filesystem::path> files;
  for (auto& e : std::filesystem::directory_iterator(LOOM_ACCEL_CONFIG_DIR))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<AccelConfig> out;
  for (auto& f : files) out.push_back(AccelConfig::load(f.string()));
  return out;
}

constexpr Opcode kOpcodes[] = {Opcode::Load, Opcode::Store, Opcode::Gemm, Opcode::Alu, Opcode::Finish};

// The instruction formats as docs/accel.md describes them (VTA's layout), written out here
// independently of isa.cc: field names and widths in bit order, LSB first.
std::vector<std::pair<std::string, int>> documented_format(Opcode op, const AccelConfig& c) {
  auto bits = [](int64_t depth) {
    int b = 0;
    while ((int64_t{1} << b) < depth) ++b;
    return b;
  };
  const int inp = bits(c.inp_depth()), wgt = bits(c.wgt_depth()), acc = bits(c.acc_depth()), out = bits(c.out_depth()),
            uop = bits(c.uop_depth());
  std::vector<std::pair<std::string, int>> f = {
      {"opcode", 3}, {"pop_prev", 1}, {"pop_next", 1}, {"push_prev", 1}, {"push_next", 1}};
  auto add = [&](std::vector<std::pair<std::string, int>> more) { f.insert(f.end(), more.begin(), more.end()); };
  switch (op) {
    case Opcode::Load:
    case Opcode::Store:
      add({{"memory_type", 3},
           {"sram_base", std::max({inp, wgt, acc, out, uop})},
           {"dram_base", 32},
           {"y_size", 16},
           {"x_size", 16},
           {"x_stride", 16},
           {"y_pad_0", 4},
           {"y_pad_1", 4},
           {"x_pad_0", 4},
           {"x_pad_1", 4}});
      break;
    case Opcode::Gemm:
    case Opcode::Alu:
      add({{"reset", 1},
           {"uop_begin", uop},
           {"uop_end", uop + 1},
           {"iter_out", 14},
           {"iter_in", 14},
           {"dst_factor_out", acc},
           {"dst_factor_in", acc},
           {"src_factor_out", std::max(inp, acc)},
           {"src_factor_in", std::max(inp, acc)}});
      if (op == Opcode::Gemm)
        add({{"wgt_factor_out", wgt}, {"wgt_factor_in", wgt}});
      else
        add({{"alu_opcode", 3}, {"use_imm", 1}, {"imm", 16}});
      break;
    case Opcode::Finish:
      break;
  }
  return f;
}

TEST(Isa, FieldsFollowTheDocumentedFormatsForEveryShippedConfig) {
  auto configs = shipped_configs();
  ASSERT_GE(configs.size(), 3u);
  for (auto& c : configs) {
    IsaLayout L(c);
    for (Opcode op : kOpcodes) {
      SCOPED_TRACE(c.name + " " + to_string(op));
      auto want = documented_format(op, c);
      auto got = L.fields(op);
      ASSERT_EQ(got.size(), want.size());
      int offset = 0;
      for (size_t k = 0; k < want.size(); ++k) {
        EXPECT_EQ(got[k].name, want[k].first) << "field " << k;
        EXPECT_EQ(got[k].width, want[k].second) << want[k].first;
        EXPECT_EQ(got[k].offset, offset) << want[k].first;
        offset += want[k].second;
      }
      EXPECT_EQ(L.insn_bits(op), offset);
    }
  }
}

// Sets one field of `i` by its name in fields() to `raw`, the field's bits (the immediate is a
// two's-complement number of `width` bits). False for a name this table does not know.
bool set_field(Instruction& i, const std::string& name, uint64_t raw, int width) {
  static const std::map<std::string, std::function<void(Instruction&, uint64_t)>> set = {
      {"pop_prev", [](Instruction& i, uint64_t v) { i.dep.pop_prev = v; }},
      {"pop_next", [](Instruction& i, uint64_t v) { i.dep.pop_next = v; }},
      {"push_prev", [](Instruction& i, uint64_t v) { i.dep.push_prev = v; }},
      {"push_next", [](Instruction& i, uint64_t v) { i.dep.push_next = v; }},
      {"memory_type", [](Instruction& i, uint64_t v) { i.mem = MemType(v); }},
      {"sram_base", [](Instruction& i, uint64_t v) { i.sram_base = uint32_t(v); }},
      {"dram_base", [](Instruction& i, uint64_t v) { i.dram_base = uint32_t(v); }},
      {"y_size", [](Instruction& i, uint64_t v) { i.y_size = uint32_t(v); }},
      {"x_size", [](Instruction& i, uint64_t v) { i.x_size = uint32_t(v); }},
      {"x_stride", [](Instruction& i, uint64_t v) { i.x_stride = uint32_t(v); }},
      {"y_pad_0", [](Instruction& i, uint64_t v) { i.y_pad0 = uint32_t(v); }},
      {"y_pad_1", [](Instruction& i, uint64_t v) { i.y_pad1 = uint32_t(v); }},
      {"x_pad_0", [](Instruction& i, uint64_t v) { i.x_pad0 = uint32_t(v); }},
      {"x_pad_1", [](Instruction& i, uint64_t v) { i.x_pad1 = uint32_t(v); }},
      {"reset", [](Instruction& i, uint64_t v) { i.reset = v; }},
      {"uop_begin", [](Instruction& i, uint64_t v) { i.uop_begin = uint32_t(v); }},
      {"uop_end", [](Instruction& i, uint64_t v) { i.uop_end = uint32_t(v); }},
      {"iter_out", [](Instruction& i, uint64_t v) { i.iter_out = uint32_t(v); }},
      {"iter_in", [](Instruction& i, uint64_t v) { i.iter_in = uint32_t(v); }},
      {"dst_factor_out", [](Instruction& i, uint64_t v) { i.dst_factor_out = uint32_t(v); }},
      {"dst_factor_in", [](Instruction& i, uint64_t v) { i.dst_factor_in = uint32_t(v); }},
      {"src_factor_out", [](Instruction& i, uint64_t v) { i.src_factor_out = uint32_t(v); }},
      {"src_factor_in", [](Instruction& i, uint64_t v) { i.src_factor_in = uint32_t(v); }},
      {"wgt_factor_out", [](Instruction& i, uint64_t v) { i.wgt_factor_out = uint32_t(v); }},
      {"wgt_factor_in", [](Instruction& i, uint64_t v) { i.wgt_factor_in = uint32_t(v); }},
      {"alu_opcode", [](Instruction& i, uint64_t v) { i.alu_op = AluOp(v); }},
      {"use_imm", [](Instruction& i, uint64_t v) { i.use_imm = v; }},
  };
  if (name == "imm") {
    i.imm = int32_t(int64_t(raw) - ((raw >> (width - 1)) & 1 ? int64_t{1} << width : 0));
    return true;
  }
  auto it = set.find(name);
  if (it == set.end()) return false;
  it->second(i, raw);
  return true;
}

// The 128-bit word with bits [offset, offset + width) set.
InsnWord field_bits(int offset, int width) {
  InsnWord w{0, 0};
  for (int b = offset; b < offset + width; ++b) w[b / 64] |= uint64_t{1} << (b % 64);
  return w;
}
InsnWord operator|(InsnWord a, const InsnWord& b) { return {a[0] | b[0], a[1] | b[1]}; }
std::string hex(const InsnWord& w) {
  char s[40];
  std::snprintf(s, sizeof s, "%016llx%016llx", (unsigned long long)w[1], (unsigned long long)w[0]);
  return s;
}

// encode() writes each field exactly at the bits fields() declares, and decode() reads it from
// there: for every shipped config, opcode and field, an instruction with that one field all ones
// (then each of its bits alone) and every other field zero encodes to the opcode's bits plus
// exactly that bit range.
TEST(Isa, EncodeAndDecodeUseExactlyTheDeclaredBitsOfEveryField) {
  for (auto& c : shipped_configs()) {
    IsaLayout L(c);
    for (Opcode op : kOpcodes) {
      Instruction base;  // every field of the format zero (the others keep decode's defaults)
      base.opcode = op;
      if (op == Opcode::Load || op == Opcode::Store) base.mem = MemType(0);
      if (op == Opcode::Alu) base.alu_op = AluOp(0);
      const auto fields = L.fields(op);
      ASSERT_EQ(fields[0].name, "opcode");
      const InsnWord op_word{uint64_t(op), 0};
      ASSERT_EQ(hex(encode(base, L)), hex(op_word)) << c.name << " " << to_string(op) << ": the opcode alone";
      for (size_t k = 1; k < fields.size(); ++k) {
        const auto& f = fields[k];
        SCOPED_TRACE(c.name + " " + to_string(op) + " field '" + f.name + "' at bits [" + std::to_string(f.offset) +
                     ", " + std::to_string(f.offset + f.width) + ")");
        Instruction all = base;
        ASSERT_TRUE(set_field(all, f.name, (uint64_t{1} << f.width) - 1, f.width)) << "unknown field";
        EXPECT_EQ(hex(encode(all, L)), hex(op_word | field_bits(f.offset, f.width)));
        for (int b = 0; b < f.width; ++b) {
          Instruction one = base;
          set_field(one, f.name, uint64_t{1} << b, f.width);
          InsnWord w = op_word | field_bits(f.offset + b, 1);
          EXPECT_EQ(hex(encode(one, L)), hex(w)) << "bit " << b;
          bool valid_enum = (f.name != "memory_type" && f.name != "alu_opcode") || (uint64_t{1} << b) < 5;
          if (valid_enum) {
            EXPECT_EQ(decode(w, L, 0), one) << "bit " << b << ": " << disassemble(decode(w, L, 0));
          }
        }
      }
    }
  }
}

TEST(Isa, EncodeNamesTheFieldThatDoesNotFit) {
  IsaLayout L(default_config());
  Instruction alu;
  alu.opcode = Opcode::Alu;
  alu.imm = 40000;
  EXPECT_NE(
      test::error_text<IsaError>([&] { encode(alu, L); }).find("field 'imm' = 40000 does not fit in 16 signed bits"),
      std::string::npos);
  alu.imm = -32768;  // the most negative immediate round-trips
  EXPECT_EQ(decode(encode(alu, L), L, 0).imm, -32768);
  Instruction g;
  g.opcode = Opcode::Gemm;
  g.iter_out = 1 << 14;
  EXPECT_NE(test::error_text<IsaError>([&] { encode(g, L); }).find("field 'iter_out' = 16384 does not fit in 14 bits"),
            std::string::npos);
  InsnWord w = encode(Instruction{}, L);
  w[0] |= uint64_t(5) << 0 | uint64_t(1) << 2;  // opcode 7
  EXPECT_NE(test::error_text<IsaError>([&] { decode(w, L, 9); }).find("instruction 9: field 'opcode' = 7"),
            std::string::npos);
}

TEST(Isa, CheckInstructionAndDisassembly) {
  AccelConfig c = default_config();
  Instruction ld;
  ld.opcode = Opcode::Load;
  ld.mem = MemType::Inp;
  ld.sram_base = 2040;
  ld.y_size = 2;
  ld.x_size = 4;
  ld.x_stride = 8;
  ld.x_pad0 = 1;
  ld.dep.push_next = true;
  EXPECT_EQ(disassemble(ld), "LOAD inp sram=2040 dram=0x0 y=2 x=4 stride=8 pad=(0,0,1,0) deps=[push_next]");
  try {
    check_instruction(ld, c, 5);
    FAIL();
  } catch (const IsaError& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "instruction 5 (LOAD): field 'sram_base': inp buffer overflow: entries [2040, 2050) exceed its depth 2048"),
        std::string::npos)
        << e.what();
  }
  ld.sram_base = 0;
  ld.dep.push_prev = true;
  EXPECT_THROW(check_instruction(ld, c, 0), IsaError);  // load module has no previous module
  Instruction alu;
  alu.opcode = Opcode::Alu;
  alu.alu_op = AluOp::Shr;
  alu.use_imm = true;
  alu.imm = -3;
  alu.uop_begin = 0;
  alu.uop_end = 1;
  alu.iter_out = alu.iter_in = 1;
  EXPECT_EQ(disassemble(alu), "ALU.shr imm=-3 uop=[0,1) loop=1x1 dst=(0,0) src=(0,0)");
  EXPECT_NO_THROW(check_instruction(alu, c, 0));
}

}  // namespace
}  // namespace loom::accel

#include "loom/accel/hw_params.h"

namespace loom::accel {
namespace {

// The RTL parameter package is derived from the same config and ISA layout as the C++ side.
TEST(HwParams, PackageFollowsConfigAndLayout) {
  for (auto& c : test::test_configs()) {
    std::string pkg = sv_package(c);
    EXPECT_NE(pkg.find("package loom_accel_pkg;"), std::string::npos);
    EXPECT_NE(pkg.find("localparam int BLOCK_IN = " + std::to_string(c.block_in) + ";"), std::string::npos) << c.name;
    EXPECT_NE(pkg.find("localparam int BATCH = " + std::to_string(c.batch) + ";"), std::string::npos) << c.name;
    EXPECT_NE(pkg.find("localparam int ACC_IDX_BITS = " + std::to_string(c.acc_index_bits()) + ";"), std::string::npos)
        << c.name;
    IsaLayout L(c);
    for (auto& f : L.fields(Opcode::Gemm)) {
      std::string name = f.name;
      for (auto& ch : name) ch = char(std::toupper(static_cast<unsigned char>(ch)));
      EXPECT_NE(pkg.find("localparam int GEMM_" + name + "_LSB = " + std::to_string(f.offset) + ";"), std::string::npos)
          << name;
      EXPECT_NE(pkg.find("localparam int GEMM_" + name + "_W = " + std::to_string(f.width) + ";"), std::string::npos)
          << name;
    }
  }
  AccelConfig bad = default_config();
  bad.block_in = 3;
  EXPECT_THROW(sv_package(bad), ConfigError);
}

}  // namespace
}  // namespace loom::accel
