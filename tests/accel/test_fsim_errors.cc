// Bad instruction streams on the functional simulator: each is reported as a DeviceError naming
// the instruction, never a crash or a hang.
#include <gtest/gtest.h>

#include "accel_harness.h"

namespace loom::accel {
using loom::ConfigError;
using loom::DeviceError;
using loom::IsaError;
namespace {

// Writes raw instruction words and launches them.
std::string run_words(test::AccelHarness& h, const std::vector<InsnWord>& words) {
  auto b = h.drv.alloc(words.size() * 16);
  h.drv.copy_to_device(b, words.data(), words.size() * 16);
  return test::error_text<DeviceError>([&] {
    h.dev->launch(b.addr, uint32_t(words.size()));
    h.dev->wait();
  });
}

TEST(FsimErrors, IllegalOpcodeNamesTheInstruction) {
  test::AccelHarness h(default_config());
  IsaLayout L(h.cfg);
  Instruction fin;
  fin.opcode = Opcode::Finish;
  std::string e = run_words(h, {encode(fin, L), InsnWord{6, 0}, encode(fin, L)});
  EXPECT_NE(e.find("instruction 1: invalid opcode 6"), std::string::npos) << e;
  EXPECT_EQ(h.dev->read_reg(reg::kErrorIndex), 1u);
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
  EXPECT_NE(e.find("instruction 1 (LOAD): inp buffer overflow"), std::string::npos) << e;
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

TEST(FsimErrors, MissingFinishAndBadRegisters) {
  test::AccelHarness h(default_config());
  IsaLayout L(h.cfg);
  Instruction nop;
  nop.opcode = Opcode::Load;
  nop.mem = MemType::Uop;
  std::string e = run_words(h, {encode(nop, L)});
  EXPECT_NE(e.find("no FINISH"), std::string::npos) << e;
  EXPECT_THROW(h.dev->write_reg(reg::kStatus, 1), DeviceError);
  EXPECT_THROW(h.dev->read_reg(0x1001), DeviceError);
  EXPECT_THROW(h.dev->read(0x10, nullptr, 4), DeviceError);
  EXPECT_NE(test::error_text<DeviceError>([&] { make_accel_device("no-such-backend", ""); }).find("available: fsim"), std::string::npos);
}

}  // namespace
}  // namespace loom::accel
