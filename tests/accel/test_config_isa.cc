// Accelerator config (one source of truth, validation) and ISA encode/decode/disassembly.
#include <gtest/gtest.h>

#include <random>

#include "accel_harness.h"

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
  EXPECT_LE(IsaLayout(c).compute_insn_bits(), 128);
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
  EXPECT_NE(test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"block_in": 12})"); }).find("'block_in' must be a positive power of two, got 12"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"inp_buffer_bytes": 8})"); }).find("'inp_buffer_bytes' = 8 is smaller than one entry"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"blocks": 2})"); }).find("unknown field 'blocks'"), std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] { AccelConfig::from_json("{"); }).find("not valid JSON"), std::string::npos);
  // Huge buffers no longer fit the 32-bit micro-op.
  EXPECT_NE(test::error_text<ConfigError>([] {
              AccelConfig::from_json(R"({"acc_buffer_bytes": 1073741824, "out_buffer_bytes": 268435456, "inp_buffer_bytes": 1073741824,
                                      "wgt_buffer_bytes": 1073741824})");
            }).find("more than 32"),
            std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] { AccelConfig::from_json(R"({"acc_bits": 16})"); }).find("'acc_bits' must be 32"), std::string::npos);
  EXPECT_NE(test::error_text<ConfigError>([] { AccelConfig::load("/nonexistent/cfg.json"); }).find("cannot open"), std::string::npos);
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
    EXPECT_NE(std::string(e.what()).find("instruction 12: invalid opcode 7"), std::string::npos) << e.what();
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
    EXPECT_NE(std::string(e.what()).find("instruction 3 (FINISH): reserved bits are set"), std::string::npos) << e.what();
  }
  Instruction big;
  big.opcode = Opcode::Load;
  big.sram_base = 1u << 20;
  EXPECT_THROW(encode(big, layout), IsaError);
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
    EXPECT_NE(std::string(e.what()).find("instruction 5 (LOAD): inp buffer overflow: entries [2040, 2050) exceed its depth 2048"),
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
