// Bad instruction streams on the functional simulator: each is reported as a DeviceError naming
// the instruction, never a crash or a hang.
#include <gtest/gtest.h>

#include "accel/accel_harness.h"
#include "common/temp_dir.h"
#include "loom/accel/program.h"

#include <fstream>
#include <functional>

namespace loom::accel {
using loom::ConfigError;
using loom::DeviceError;
using loom::IsaError;
namespace {

// Writes raw instruction words and launches them.
using test::run_words;

TEST(FsimErrors, IllegalOpcodeNamesTheInstruction) {
  test::AccelHarness h(default_config());
  IsaLayout L(h.cfg);
  Instruction fin;
  fin.opcode = Opcode::Finish;
  std::string e = run_words(h, {encode(fin, L), InsnWord{6, 0}, encode(fin, L)});
  EXPECT_NE(e.find("instruction 1: field 'opcode' = 6 is not a valid opcode"), std::string::npos) << e;
  EXPECT_EQ(h.dev->read_reg(reg::kErrorIndex), 1u);
}

// A legal stream that would run too long ends at the step limit with the instruction and the flag.
TEST(FsimErrors, StepLimitStopsALongStreamAndNamesTheFlag) {
  AccelConfig cfg = default_config();
  std::string json = cfg.to_json();
  json = json.substr(0, json.rfind('}')) + R"(, "fsim": {"step_limit": 1000}})";
  auto dev = make_accel_device("fsim", json);
  Driver drv(*dev, cfg);
  // 2 x 600 micro-op executions: the first GEMM fits under the limit, the second crosses it.
  for (int g = 0; g < 2; ++g) drv.gemm(UopKernelBuilder().loop(2, 0, 0).loop(300, 1, 1).push(0, 0, 0).build(), false);
  std::string e = test::error_text<DeviceError>([&] { drv.synchronize(); });
  EXPECT_NE(e.find("(GEMM"), std::string::npos) << e;
  EXPECT_NE(e.find("stopped after 1000 micro-op steps; raise the limit with --step-limit"), std::string::npos) << e;
  EXPECT_GT(dev->read_reg(reg::kErrorIndex), 1u) << "the first GEMM ran to completion";
  // The same stream runs under the default limit.
  test::AccelHarness ok(cfg);
  for (int g = 0; g < 2; ++g)
    ok.drv.gemm(UopKernelBuilder().loop(2, 0, 0).loop(300, 1, 1).push(0, 0, 0).build(), false);
  EXPECT_NO_THROW(ok.drv.synchronize());
  // The option is checked.
  for (const char* bad : {R"("step_limit": 0)", R"("step_limit": -5)", R"("step_limit": "many")"}) {
    std::string j = cfg.to_json();
    j = j.substr(0, j.rfind('}')) + ", \"fsim\": {" + bad + "}}";
    std::string m = test::error_text<ConfigError>([&] { make_accel_device("fsim", j); });
    EXPECT_NE(m.find("fsim backend: option \"step_limit\" must be an integer in [1, 1000000000000000], got"),
              std::string::npos)
        << m;
  }
}

TEST(FsimErrors, OutOfRangeDma) {
  test::AccelHarness h(default_config());
  auto small = h.drv.alloc(64);
  h.drv.load_2d(MemType::Inp, 0, small.addr, 1, 8, 8);  // 8 entries of 16 bytes from a 64-byte buffer
  h.drv.dep_push(Module::Load, Module::Compute);
  h.drv.dep_pop(Module::Load, Module::Compute);
  std::string e = test::error_text<DeviceError>([&] { h.drv.synchronize(); });
  EXPECT_NE(e.find("instruction 0 (LOAD inp"), std::string::npos) << e;
  EXPECT_NE(e.find("(128 bytes) is outside allocated device memory"), std::string::npos) << e;
}

TEST(FsimErrors, ScratchpadIndexOverflow) {
  test::AccelHarness h(default_config());
  // Loop factors walk the accumulator index past its depth (2048).
  h.drv.gemm(UopKernelBuilder().loop(3, 1000, 0).push(100, 0).build(), true);
  std::string e = test::error_text<DeviceError>([&] { h.drv.synchronize(); });
  EXPECT_NE(e.find("instruction 1 (GEMM"), std::string::npos) << e;  // instruction 0 loads the micro-ops
  EXPECT_NE(e.find("accumulator index 2100 out of range (depth 2048)"), std::string::npos) << e;
}

TEST(FsimErrors, SramOverflowIsCaughtBeforeRunning) {
  test::AccelHarness h(default_config());
  auto b = h.drv.alloc(1 << 16);
  EXPECT_THROW(h.drv.load_2d(MemType::Inp, 2047, b.addr, 1, 2, 2), IsaError);
  // The same instruction written raw is rejected by the simulator with its index.
  IsaLayout L(h.cfg);
  Instruction ld;
  ld.opcode = Opcode::Load;
  ld.mem = MemType::Inp;
  ld.sram_base = 2047;
  ld.y_size = 1;
  ld.x_size = ld.x_stride = 2;
  ld.dram_base = h.drv.dram_entry(b.addr, MemType::Inp);
  Instruction fin;
  std::string e = run_words(h, {encode(fin, L), encode(ld, L), encode(fin, L)});
  EXPECT_NE(e.find("instruction 1 (LOAD): field 'sram_base': inp buffer overflow"), std::string::npos) << e;
}

TEST(FsimErrors, TokenDeadlockIsReportedNotHung) {
  test::AccelHarness h(default_config());
  auto b = h.drv.alloc(1024);
  // The compute module waits for a token the load module never pushes.
  h.drv.dep_pop(Module::Load, Module::Compute);
  h.drv.gemm(UopKernelBuilder().push(0, 0, 0).build(), true);
  h.drv.load_2d(MemType::Inp, 0, b.addr, 1, 1, 1);
  std::string e = test::error_text<DeviceError>([&] { h.drv.synchronize(std::chrono::milliseconds(5000)); });
  EXPECT_NE(e.find("dependency deadlock"), std::string::npos) << e;
  EXPECT_NE(e.find("compute module waits at instruction 0"), std::string::npos) << e;
}

// Raw words that decode badly or fail the config's checks: the message names the instruction
// index and the field, ERROR_INDEX holds the index.
TEST(FsimErrors, MalformedWordsNameIndexAndField) {
  test::AccelHarness h(default_config());
  IsaLayout L(h.cfg);
  Instruction fin;
  InsnWord f = encode(fin, L);
  auto field_offset = [&](Opcode op, const std::string& name) {
    for (auto& fl : L.fields(op))
      if (fl.name == name) return fl.offset;
    ADD_FAILURE() << "no field " << name;
    return 0;
  };
  auto set_bits = [](InsnWord w, int offset, uint64_t v) {
    for (int k = 0; k < 8; ++k)
      if ((v >> k) & 1) w[(offset + k) / 64] |= uint64_t{1} << ((offset + k) % 64);
    return w;
  };
  Instruction ld;
  ld.opcode = Opcode::Load;
  InsnWord bad_mem = set_bits(encode(ld, L), field_offset(Opcode::Load, "memory_type"), 6);
  std::string e = run_words(h, {f, f, bad_mem, f});
  EXPECT_NE(e.find("instruction 2 (LOAD): field 'memory_type' = 6 is not a valid memory type"), std::string::npos) << e;
  EXPECT_EQ(h.dev->read_reg(reg::kErrorIndex), 2u);

  Instruction alu;
  alu.opcode = Opcode::Alu;
  alu.uop_end = alu.iter_out = alu.iter_in = 1;
  // Every 3-bit ALU opcode names an op (7 is SHRSAT): an illegal ALU word is one whose fields its
  // op refuses, here SHRSAT with a register operand.
  InsnWord bad_alu = set_bits(encode(alu, L), field_offset(Opcode::Alu, "alu_opcode"), 7);
  e = run_words(h, {bad_alu, f});
  EXPECT_NE(e.find("instruction 0 (ALU): field 'use_imm': SHRSAT takes its shift and range from the immediate only"),
            std::string::npos)
      << e;

  Instruction st;
  st.opcode = Opcode::Store;
  st.mem = MemType::Inp;
  st.y_size = st.x_size = st.x_stride = 1;
  e = run_words(h, {f, encode(st, L), f});
  EXPECT_NE(e.find("instruction 1 (STORE): field 'memory_type': STORE reads the out buffer, not inp"),
            std::string::npos)
      << e;

  Instruction gemm;
  gemm.opcode = Opcode::Gemm;
  gemm.uop_begin = 8000;
  gemm.uop_end = 8193;  // one past the uop buffer
  gemm.iter_out = gemm.iter_in = 1;
  e = run_words(h, {encode(gemm, L), f});
  EXPECT_NE(e.find("instruction 0 (GEMM): field 'uop_end': micro-op range end 8193 exceeds the uop buffer depth 8192"),
            std::string::npos)
      << e;

  alu.alu_op = AluOp::Shr;
  alu.use_imm = true;
  alu.imm = -40;
  e = run_words(h, {f, encode(alu, L)});
  EXPECT_NE(e.find("instruction 1 (ALU): field 'imm': shift amount -40 is outside [-31, 31]"), std::string::npos) << e;
}

TEST(FsimErrors, DmaOutsidePhysicalMemoryAndStoresToUnallocatedMemory) {
  test::AccelHarness h(default_config());
  IsaLayout L(h.cfg);
  Instruction ld;  // DRAM entry 0: below the simulator's physical memory
  ld.opcode = Opcode::Load;
  ld.mem = MemType::Wgt;
  ld.y_size = ld.x_size = ld.x_stride = 1;
  Instruction fin;
  std::string e = run_words(h, {encode(ld, L), encode(fin, L)});
  EXPECT_NE(e.find("instruction 0 (LOAD wgt"), std::string::npos) << e;
  EXPECT_NE(e.find("DMA row 0x0 (256 bytes) is outside allocated device memory"), std::string::npos) << e;

  auto out = h.drv.alloc(64);
  h.drv.gemm(UopKernelBuilder().push(0, 0).build(), true);
  h.drv.dep_push(Module::Compute, Module::Store);
  h.drv.dep_pop(Module::Compute, Module::Store);
  h.drv.store_2d(0, out.addr, 2, 2, 4);  // second row lands past the 64-byte buffer
  e = test::error_text<DeviceError>([&] { h.drv.synchronize(); });
  EXPECT_NE(e.find("instruction 2 (STORE out"), std::string::npos) << e;
  EXPECT_NE(e.find("is outside allocated device memory"), std::string::npos) << e;
}

TEST(FsimErrors, SourceAndWeightIndexOverflowAtRunTime) {
  test::AccelHarness h(default_config());
  h.drv.gemm(UopKernelBuilder().loop(2, 0, 2000, 0).push(0, 100, 0).build(), false);  // input index 2100 > 2048
  std::string e = test::error_text<DeviceError>([&] { h.drv.synchronize(); });
  EXPECT_NE(e.find("instruction 1 (GEMM"), std::string::npos) << e;
  EXPECT_NE(e.find("source index 2100 out of range (depth 2048)"), std::string::npos) << e;
  h.drv.gemm(UopKernelBuilder().loop(2, 0, 0, 1000).push(0, 0, 30).build(), false);  // weight index 1030 > 1024
  e = test::error_text<DeviceError>([&] { h.drv.synchronize(); });
  EXPECT_NE(e.find("weight index 1030 out of range (depth 1024)"), std::string::npos) << e;
}

TEST(FsimErrors, StoreModuleWaitingForever) {
  test::AccelHarness h(default_config());
  auto out = h.drv.alloc(64);
  h.drv.dep_pop(Module::Compute, Module::Store);  // nobody ever pushes compute -> store
  h.drv.store_2d(0, out.addr, 1, 1, 1);
  std::string e = test::error_text<DeviceError>([&] { h.drv.synchronize(); });
  EXPECT_NE(e.find("dependency deadlock"), std::string::npos) << e;
  EXPECT_NE(e.find("store module waits at instruction 0 (STORE"), std::string::npos) << e;
  EXPECT_NE(e.find("compute module waits at instruction"), std::string::npos) << e;  // FINISH waits for the store
  EXPECT_EQ(h.dev->read_reg(reg::kErrorIndex), 0u);
}

TEST(FsimErrors, MissingFinishAndBadRegisters) {
  test::AccelHarness h(default_config());
  IsaLayout L(h.cfg);
  Instruction nop;
  nop.opcode = Opcode::Load;
  nop.mem = MemType::Uop;
  std::string e = run_words(h, {encode(nop, L)});
  EXPECT_NE(e.find("no FINISH"), std::string::npos) << e;
  // A bogus INSN_COUNT stops at the first fetch outside memory instead of exhausting the host.
  auto two = h.drv.alloc(32);
  InsnWord words[2] = {encode(nop, L), encode(nop, L)};
  h.drv.copy_to_device(two, words, sizeof(words));
  h.dev->launch(two.addr, 0xffffffffu);
  e = test::error_text<DeviceError>([&] { h.dev->wait(); });
  EXPECT_NE(e.find("instruction 2: fetch address is outside allocated device memory"), std::string::npos) << e;
  EXPECT_THROW(h.dev->write_reg(reg::kStatus, 1), DeviceError);
  EXPECT_THROW(h.dev->read_reg(0x1001), DeviceError);
  EXPECT_THROW(h.dev->read(0x10, nullptr, 4), DeviceError);
  std::string none = test::error_text<DeviceError>([&] { make_accel_device("no-such-backend", ""); });
  EXPECT_NE(none.find("no accelerator backend named 'no-such-backend' (available: board-fsim, "), std::string::npos)
      << none;
  EXPECT_NE(none.find(", fsim"), std::string::npos) << none;
  EXPECT_NE(none.find("; a remote device is rpc://HOST:PORT/BACKEND"), std::string::npos) << none;
}

}  // namespace
}  // namespace loom::accel

namespace loom::test {
namespace {

// Untrusted addresses near 2^64 (a corrupted program file) must not wrap into an allocation: the
// stream is refused by name, never read out of bounds (these crashed with SIGSEGV).
TEST(FsimErrors, AddressesNearTheTopOfTheAddressSpaceDoNotWrap) {
  DeviceMemoryAllocator a(0x1000, 0x10000);
  uint64_t at = a.alloc(256, 64, "test");
  EXPECT_TRUE(a.contains(at, 256));
  EXPECT_FALSE(a.contains(at, 257));
  EXPECT_FALSE(a.contains(at + 16, UINT64_MAX - 8));  // addr + bytes wraps to below the allocation's end
  EXPECT_FALSE(a.contains(UINT64_MAX - 15, 32));

  accel::AccelConfig cfg = accel::default_config();
  accel::Program p;
  p.config = cfg;
  p.segments.push_back({0x10000, 64, std::vector<uint8_t>(64, 0)});
  p.insn_addr = UINT64_MAX - 15;  // the second instruction would wrap to address 0
  p.insn_count = 2;
  std::string e = error_text<RuntimeError>([&] { p.instructions(); });
  EXPECT_NE(e.find("not inside any memory segment"), std::string::npos) << e;
  sim::FunctionalSim dev(cfg);
  dev.alloc(64);
  dev.launch(p.insn_addr, p.insn_count);
  e = error_text<DeviceError>([&] { dev.wait(); });
  EXPECT_NE(e.find("fetch address is outside allocated device memory"), std::string::npos) << e;
}

}  // namespace
}  // namespace loom::test

namespace loom::test {
namespace {

// A corrupt length in a program file is refused against the file's size before anything is
// allocated (a 0xffffffff config length made `loom disasm` allocate 4 GB first).
TEST(FsimErrors, CorruptProgramLengthsAreRefusedBeforeAllocating) {
  TestDir dir;
  std::string path = dir.file("bad.loomprg");
  {
    std::ofstream f(path, std::ios::binary);
    f.write("LOOMPRG1", 8);
    uint32_t huge = 0xffffffffu;
    f.write(reinterpret_cast<const char*>(&huge), 4);
    f.write("{}", 2);
  }
  std::string e = error_text<RuntimeError>([&] { accel::Program::load(path); });
  EXPECT_NE(e.find("truncated file (a block of 4294967295 bytes at offset 12, the file has 14)"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace loom::test

namespace loom::test {
namespace {

// A program's layout is checked when it is read (found by scripts/bad_inputs.py: a segment at
// 2^64 - 16 crashed `loom sim`; misaligned, empty or trailing-byte files were accepted).
TEST(FsimErrors, ProgramLayoutIsValidated) {
  accel::Program good;
  good.config = accel::default_config();
  good.segments.push_back({0x10000000, 64, std::vector<uint8_t>(64, 0)});
  good.insn_addr = 0x10000000;
  good.insn_count = 1;
  good.checks.push_back({0x10000010, 64, std::vector<uint8_t>(16, 0)});
  EXPECT_NO_THROW(good.validate("p"));
  struct Case {
    const char* what;
    std::function<void(accel::Program&)> edit;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"alignment 3", [](accel::Program& p) { p.segments[0].alignment = 3; },
       "segment 0: alignment 3 is not a power of two"},
      {"misaligned", [](accel::Program& p) { p.segments[0].alignment = uint64_t(1) << 29; },
       "segment 0: address 0x10000000 is not 536870912-byte aligned"},
      {"wraps",
       [](accel::Program& p) {
         p.segments[0].addr = UINT64_MAX - 15;
         p.segments[0].alignment = 16;
       },
       "run past the end of the address space"},
      {"overlap",
       [](accel::Program& p) {
         p.segments.push_back({0x10000020, 32, std::vector<uint8_t>(8, 0)});
       },
       "overlap"},
      {"empty stream", [](accel::Program& p) { p.insn_count = 0; }, "the instruction stream is empty"},
      {"stream outside", [](accel::Program& p) { p.insn_count = 5; },
       "(5 instructions at 0x10000000) is not inside a memory segment"},
      {"check outside", [](accel::Program& p) { p.checks[0].addr = 0x10000038; },
       "check 0: 16 bytes at 0x10000038 are not inside a memory segment"},
  };
  for (auto& c : cases) {
    accel::Program p = good;
    c.edit(p);
    std::string e = error_text<RuntimeError>([&] { p.validate("p"); });
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.what << ": " << e;
  }
  // Trailing bytes after the last check.
  TestDir dir;
  std::string path = dir.file("p.loomprg");
  good.save(path);
  std::ofstream(path, std::ios::binary | std::ios::app) << "xx";
  std::string e = error_text<RuntimeError>([&] { accel::Program::load(path); });
  EXPECT_NE(e.find("2 trailing bytes after the last check"), std::string::npos) << e;
}

}  // namespace
}  // namespace loom::test
