// The zynq backends (Zynq boards without XRT): the Linux platform's UIO and u-dma-buf code on a
// stand-in sysfs and /dev of plain files (the registers it maps, the bytes it copies, the syncs it
// asks u-dma-buf for), what is missing said clearly, and the simulated board refusing to run or
// to be read with a sync missing. The shared simulator table runs on "zynq-rtl" (test_zynq_table).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "loom/accel/config.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/sim/backends.h"
#include "zynq_platform.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using test::error_text;
using ::testing::AllOf;
using ::testing::HasSubstr;

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}
void put_zeros(const fs::path& p, uint64_t bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.seekp(std::streamoff(bytes - 1));
  out.put('\0');
}
std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A board's sysfs and /dev as the overlay and u-dma-buf make them, in plain files.
struct FakeBoard {
  test::TestDir dir;
  fs::path sys = dir.path() / "sys", dev = dir.path() / "dev";
  fs::path dma = sys / "class/u-dma-buf/udmabuf0";
  FakeBoard() {
    put(sys / "class/uio/uio0/name", "gpio_leds\n");
    put(sys / "class/uio/uio3/name", "loom_accel\n");
    put(sys / "class/uio/uio3/maps/map0/size", "0x1000\n");
    put_zeros(dev / "uio3", 4096);
    put(dma / "phys_addr", "0x3f000000\n");
    put(dma / "size", "1048576\n");
    for (const char* f : {"sync_offset", "sync_size", "sync_direction", "sync_for_cpu", "sync_for_device"})
      put(dma / f, "");
    put_zeros(dev / "udmabuf0", 1 << 20);
  }
  std::string config(const std::string& extra = "") const {
    return R"({"zynq": {"sysfs": ")" + sys.string() + R"(", "dev": ")" + dev.string() + "\"" + extra + "}}";
  }
  std::string sync_record() const {
    return read_all(dma / "sync_offset") + "," + read_all(dma / "sync_size") + "," + read_all(dma / "sync_direction");
  }
};

TEST(Zynq, LinuxPlatformMapsRegistersAndAsksUDmaBufForEverySync) {
  FakeBoard b;
  std::unique_ptr<AccelDevice> d = make_accel_device("zynq", b.config());
  EXPECT_EQ(d->name(), "zynq:uio3:udmabuf0");
  d->write_reg(reg::kInsnAddrLo, 0x12345678);
  const std::string regs = read_all(b.dev / "uio3");
  uint32_t seen = 0;
  std::memcpy(&seen, regs.data() + reg::kInsnAddrLo, 4);
  EXPECT_EQ(seen, 0x12345678u);
  EXPECT_EQ(d->read_reg(reg::kInsnAddrLo), 0x12345678u);

  const uint64_t a = d->alloc(5000), c = d->alloc(100);
  EXPECT_EQ(a, 0x3f000000u);  // the region's physical address, first fit
  EXPECT_EQ(c, 0x3f000000u + 8192);
  const std::string data = "weights of the first layer";
  d->write(c + 10, data.data(), data.size());
  EXPECT_EQ(read_all(b.dev / "udmabuf0").substr(8192 + 10, data.size()), data);
  EXPECT_EQ(b.sync_record(), "8202," + std::to_string(data.size()) + ",1");
  EXPECT_EQ(read_all(b.dma / "sync_for_device"), "1");
  std::string back(data.size(), ' ');
  d->read(c + 10, back.data(), back.size());
  EXPECT_EQ(back, data);
  EXPECT_EQ(b.sync_record(), "8202," + std::to_string(data.size()) + ",2");
  EXPECT_EQ(read_all(b.dma / "sync_for_cpu"), "1");
  // A region that is full says how much is free.
  EXPECT_THAT(error_text<DeviceError>([&] { d->alloc(1 << 20); }),
              AllOf(HasSubstr("the DMA region (1 MiB at 0x3f000000) has no room for 1048576 bytes"),
                    HasSubstr("u-dma-buf's size")));
  d->free(a);
  EXPECT_EQ(d->alloc(4096), 0x3f000000u);  // freed pages are placed again
}

TEST(Zynq, WhatIsMissingOnTheBoardIsNamed) {
  {
    FakeBoard b;
    EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device("zynq", b.config(R"(, "uio": "loom_acel")")); }),
                AllOf(HasSubstr("no UIO device named 'loom_acel'"), HasSubstr("uio0 'gpio_leds'"),
                      HasSubstr("uio3 'loom_accel'"), HasSubstr("device-tree overlay")));
  }
  {
    FakeBoard b;
    fs::remove_all(b.dma);
    EXPECT_THAT(
        error_text<DeviceError>([&] { check_accel_backend("zynq", b.config()); }),
        AllOf(HasSubstr("no contiguous memory: no u-dma-buf device 'udmabuf0'"), HasSubstr("modprobe u-dma-buf")));
  }
  {
    FakeBoard b;
    put(b.sys / "class/uio/uio3/maps/map0/size", "0x40\n");
    EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device("zynq", b.config()); }),
                HasSubstr("the UIO device's register map is 64 bytes"));
  }
  {
    FakeBoard b;
    EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device("zynq", b.config(R"(, "udmabuff": "x")")); }),
                HasSubstr("unknown config field zynq.udmabuff"));
    EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device("zynq", b.config(R"(, "uio": 3)")); }),
                HasSubstr("config field zynq.uio has the wrong type"));
  }
  // This machine has no accelerator's UIO device.
  EXPECT_THAT(error_text<DeviceError>([&] { make_accel_device("zynq", "{}"); }),
              HasSubstr("no UIO device named 'loom_accel'"));
}

// The simulated board's cache: bytes the CPU wrote reach the accelerator only when synced, and
// bytes in memory reach the CPU only when synced; either missing stops with the address.
TEST(Zynq, SimulatedBoardStopsOnAMissingSync) {
  const std::string cfg = accel::default_config().to_json();
  auto layer = sim::make_zynq_layer(sim::make_sim_zynq_platform("fsim", cfg));
  EXPECT_EQ(layer->name(), "zynq-fsim");
  auto buf = layer->alloc(4096);
  std::vector<uint8_t> data(256, 7), back(256);
  buf->write(data.data(), data.size(), 64);
  EXPECT_THAT(error_text<DeviceError>([&] { layer->write_register(reg::kControl, reg::kStart); }),
              AllOf(HasSubstr("START while the CPU's write of 0x"), HasSubstr("is not synced for the device")));
  buf->sync(SyncDirection::ToDevice, 256, 64);
  buf->read(back.data(), back.size(), 64);  // synced both ways: the CPU's view is memory
  EXPECT_EQ(back, data);
  EXPECT_THAT(error_text<DeviceError>([&] { buf->read(back.data(), 16, 1024); }),
              HasSubstr("which was not synced for the CPU"));
  buf->sync(SyncDirection::FromDevice, 16, 1024);
  EXPECT_NO_THROW(buf->read(back.data(), 16, 1024));
}

}  // namespace
}  // namespace loom
