// The device interface every backend implements: the memory allocator helper, the backend
// registry, and the register map as a driver sees it (program the registers, set START, poll
// STATUS, read the counters). A second backend defined here shows the driver runs unchanged on
// anything that implements AccelDevice.
#include <gtest/gtest.h>

#include "accel_harness.h"
#include "loom/accel/examples.h"

namespace loom::accel {
namespace {

TEST(DeviceMemoryAllocator, AlignsReusesAndReportsExhaustion) {
  DeviceMemoryAllocator a(0x1000, 0x1000);
  uint64_t x = a.alloc(10, 64, "dev");
  uint64_t y = a.alloc(100, 256, "dev");
  EXPECT_EQ(x, 0x1000u);
  EXPECT_EQ(y % 256, 0u);
  EXPECT_GE(y, x + 10);
  EXPECT_TRUE(a.contains(x, 10));
  EXPECT_FALSE(a.contains(x, 11));      // past the end of the allocation
  EXPECT_FALSE(a.contains(x + 10, 1));  // the gap between allocations
  a.free(x, "dev");
  EXPECT_FALSE(a.contains(x, 1));
  EXPECT_EQ(a.alloc(16, 16, "dev"), 0x1000u);  // first fit reuses the freed hole
  EXPECT_NE(test::error_text<DeviceError>([&] {
              a.alloc(0x1000, 64, "dev");
            }).find("dev: out of device memory allocating 4096 bytes"),
            std::string::npos);
  EXPECT_NE(test::error_text<DeviceError>([&] { a.free(0x1234, "dev"); }).find("free of 0x1234 which is not allocated"),
            std::string::npos);
  EXPECT_NE(test::error_text<DeviceError>([&] { a.alloc(8, 3, "dev"); }).find("alignment 3 is not a power of two"),
            std::string::npos);
  EXPECT_NE(test::error_text<DeviceError>([&] { a.alloc_at(y + 8, 8, "dev"); }).find("overlaps a live allocation"),
            std::string::npos);
  EXPECT_NE(test::error_text<DeviceError>([&] {
              a.alloc_at(0x1ff8, 16, "dev");
            }).find("16 bytes at 0x1ff8 lie outside device memory"),
            std::string::npos);
  // Untrusted sizes and addresses near 2^64 must not wrap into a range that looks valid.
  EXPECT_NE(test::error_text<DeviceError>([&] {
              a.alloc_at(~uint64_t(0) - 15, 32, "dev");
            }).find("lie outside device memory"),
            std::string::npos);
  EXPECT_NE(test::error_text<DeviceError>([&] {
              a.alloc_at(0x1f00, ~uint64_t(0) - 0x1000, "dev");
            }).find("lie outside device memory"),
            std::string::npos);
  EXPECT_NE(test::error_text<DeviceError>([&] { a.alloc(~uint64_t(0) - 8, 64, "dev"); }).find("out of device memory"),
            std::string::npos);
  EXPECT_NE(test::error_text<DeviceError>([&] {
              a.alloc(8, uint64_t(1) << 63, "dev");
            }).find("alignment 9223372036854775808 exceeds"),
            std::string::npos);
  a.alloc_at(0x1f00, 16, "dev");
  EXPECT_TRUE(a.contains(0x1f00, 16));
}

TEST(AccelBackends, FactoryBuildsTheFunctionalSimulatorForAConfig) {
  auto names = accel_backends();
  EXPECT_NE(std::find(names.begin(), names.end(), "fsim"), names.end());
  AccelConfig batch2 = test::test_configs()[2];
  auto dev = make_accel_device("fsim", batch2.to_json());
  EXPECT_EQ(dev->name(), "fsim");
  EXPECT_EQ(dynamic_cast<sim::FunctionalSim&>(*dev).config(), batch2);
  EXPECT_EQ(dynamic_cast<sim::FunctionalSim&>(*make_accel_device("fsim", "")).config(), default_config());
  EXPECT_THROW(make_accel_device("fsim", R"({"batch": 3})"), ConfigError);
  std::string e = test::error_text<DeviceError>([] { make_accel_device("xrt-board", ""); });
  EXPECT_NE(e.find("no accelerator backend named 'xrt-board' (available: "), std::string::npos) << e;
}

// Drives the registers by hand, the way a bare-metal driver would, and reads the counters back.
TEST(AccelRegisters, StartDoneAndCountersThroughTheRegisterMap) {
  AccelConfig cfg = default_config();
  sim::FunctionalSim dev(cfg);
  IsaLayout L(cfg);
  std::vector<int8_t> inp(3 * cfg.inp_block_bytes(), 1);
  uint64_t data = dev.alloc(inp.size());
  dev.write(data, inp.data(), inp.size());
  Instruction ld;
  ld.opcode = Opcode::Load;
  ld.mem = MemType::Inp;
  ld.dram_base = uint32_t(data / cfg.inp_block_bytes());
  ld.y_size = 1;
  ld.x_size = ld.x_stride = 3;
  Instruction fin;
  std::vector<InsnWord> words = {encode(ld, L), encode(fin, L)};
  uint64_t insns = dev.alloc(words.size() * 16);
  dev.write(insns, words.data(), words.size() * 16);

  EXPECT_EQ(dev.read_reg(reg::kStatus), 0u);
  dev.write_reg(reg::kInsnAddrLo, uint32_t(insns));
  dev.write_reg(reg::kInsnAddrHi, uint32_t(insns >> 32));
  dev.write_reg(reg::kInsnCount, 2);
  dev.write_reg(reg::kControl, reg::kStart);
  EXPECT_EQ(dev.read_reg(reg::kStatus), reg::kDone);
  EXPECT_EQ(dev.read_reg(reg::kControl) & reg::kStart, 0u);  // START is self-clearing
  EXPECT_EQ(dev.read_reg(counter_reg(AccelCounter::LoadInsns)), 1u);
  EXPECT_EQ(dev.read_reg(counter_reg(AccelCounter::DmaLoadBytesInp)), uint32_t(inp.size()));
  EXPECT_EQ(dev.read_reg(counter_reg(AccelCounter::DmaLoadBytesInp) + 4), 0u);  // high word
  EXPECT_EQ(dev.cycles(), 0u);                                                  // untimed backend
  auto c = dev.counters();
  EXPECT_EQ(c["dma_load_bytes"], inp.size());
  EXPECT_EQ(c["gemm_insns"], 0u);
  EXPECT_EQ(c.size(), size_t(AccelCounter::Count) + 1);

  // A failing run sets ERROR and ERROR_INDEX; the next START clears them.
  dev.write_reg(reg::kInsnCount, 1);  // no FINISH
  dev.write_reg(reg::kControl, reg::kStart);
  EXPECT_EQ(dev.read_reg(reg::kStatus), reg::kError);
  EXPECT_EQ(dev.read_reg(reg::kErrorIndex), 1u);
  EXPECT_NE(dev.error_message().find("no FINISH"), std::string::npos);
  dev.launch(insns, 2);
  EXPECT_EQ(dev.read_reg(reg::kStatus), reg::kDone);

  for (uint32_t ro : {reg::kStatus, reg::kCyclesLo, reg::kErrorIndex, counter_reg(AccelCounter::AluOps)})
    EXPECT_THROW(dev.write_reg(ro, 1), DeviceError) << "register 0x" << std::hex << ro;
  EXPECT_THROW(dev.read_reg(kAccelRegsEnd), DeviceError);
  EXPECT_THROW(dev.read_reg(2), DeviceError);  // unaligned
}

// Another backend: forwards to a functional simulator placed elsewhere in the address space and
// logs register writes. Registered by name, built through the factory, driven by the unchanged
// driver.
class LoggingDevice : public AccelDevice {
 public:
  explicit LoggingDevice(const std::string& json)
      : inner_(json.empty() ? default_config() : AccelConfig::from_json(json)) {}
  std::string name() const override { return "logging"; }
  uint64_t alloc(uint64_t bytes, uint64_t alignment) override { return inner_.alloc(bytes, alignment); }
  void free(uint64_t addr) override { inner_.free(addr); }
  void write(uint64_t addr, const void* src, uint64_t bytes) override { inner_.write(addr, src, bytes); }
  void read(uint64_t addr, void* dst, uint64_t bytes) override { inner_.read(addr, dst, bytes); }
  void write_reg(uint32_t offset, uint32_t value) override {
    log.push_back(offset);
    inner_.write_reg(offset, value);
  }
  uint32_t read_reg(uint32_t offset) override { return inner_.read_reg(offset); }
  std::string error_message() const override { return inner_.error_message(); }
  std::vector<uint32_t> log;

 private:
  sim::FunctionalSim inner_;
};

TEST(AccelBackends, DriverRunsOnAnyRegisteredBackend) {
  register_accel_backend("logging", [](const std::string& json) { return std::make_unique<LoggingDevice>(json); });
  for (const AccelConfig& cfg : test::test_configs()) {
    auto dev = make_accel_device("logging", cfg.to_json());
    const int M = 2 * cfg.batch, N = 2 * cfg.block_out, K = 2 * cfg.block_in;
    auto a = test::random_values<int8_t>(M * K, 1, -128, 127), w = test::random_values<int8_t>(N * K, 2, -128, 127);
    Driver drv(*dev, cfg);
    auto pa = pack_blocks(a, M, K, cfg.batch, cfg.block_in), pw = pack_blocks(w, N, K, cfg.block_out, cfg.block_in);
    DeviceBuffer da = drv.alloc(pa.size()), dw = drv.alloc(pw.size()), dc = drv.alloc(size_t(M) * N);
    drv.copy_to_device(da, pa.data(), pa.size());
    drv.copy_to_device(dw, pw.data(), pw.size());
    emit_blocked_matmul(drv, da, dw, dc, M, N, K);
    auto counters = drv.synchronize();
    EXPECT_EQ(counters["gemm_macs"], uint64_t(M) * N * K);
    std::vector<int8_t> c(size_t(M) * N);
    drv.copy_from_device(dc, c.data(), c.size());
    EXPECT_EQ(unpack_blocks(c, M, N, cfg.batch, cfg.block_out), reference_matmul(a, w, M, N, K)) << cfg.name;
    auto& log = static_cast<LoggingDevice&>(*dev).log;
    EXPECT_EQ(log, (std::vector<uint32_t>{reg::kInsnAddrLo, reg::kInsnAddrHi, reg::kInsnCount, reg::kControl}));
  }
}

}  // namespace
}  // namespace loom::accel
