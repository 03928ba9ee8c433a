// BoardDevice, the XRT backend's code path, on simulators standing in for the board: sync
// directions and ranges per copy, placement inside buffers, refused accesses; the ap_ctrl_hs
// control bits on fsim and the RTL; the xrt backend without a board; the Vitis kernel's files
// against the register map.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "common/error_text.h"
#include "loom/accel/config.h"
#include "loom/accel/driver.h"
#include "loom/accel/examples.h"
#include "loom/accel/isa.h"
#include "loom/accel/vitis_kernel.h"
#include "loom/runtime/board_device.h"
#include "loom/runtime/error.h"
#include "loom/sim/backends.h"
#include "loom/sim/board.h"

namespace loom {
namespace {

using test::error_text;

std::string config_json() { return accel::default_config().to_json(); }

// Whether a backend is built here ("rtl" and "board-rtl" need the Verilated models).
bool registered(const std::string& backend) {
  auto names = accel_backends();
  return std::find(names.begin(), names.end(), backend) != names.end();
}

// Records every sync (direction, bytes, offset) of the buffers of the layer it wraps.
struct SyncLog {
  std::vector<std::tuple<SyncDirection, uint64_t, uint64_t>> syncs;
  std::vector<uint64_t> buffer_bytes;
};
class RecordingBuffer : public BoardBuffer {
 public:
  RecordingBuffer(std::unique_ptr<BoardBuffer> b, SyncLog& log) : b_(std::move(b)), log_(log) {}
  uint64_t address() const override { return b_->address(); }
  uint64_t size() const override { return b_->size(); }
  void write(const void* s, uint64_t n, uint64_t o) override { b_->write(s, n, o); }
  void read(void* d, uint64_t n, uint64_t o) override { b_->read(d, n, o); }
  void sync(SyncDirection dir, uint64_t n, uint64_t o) override {
    log_.syncs.emplace_back(dir, n, o);
    b_->sync(dir, n, o);
  }

 private:
  std::unique_ptr<BoardBuffer> b_;
  SyncLog& log_;
};
class RecordingLayer : public BoardLayer {
 public:
  RecordingLayer(std::unique_ptr<BoardLayer> l, SyncLog& log) : l_(std::move(l)), log_(log) {}
  std::string name() const override { return l_->name(); }
  std::unique_ptr<BoardBuffer> alloc(uint64_t bytes) override {
    log_.buffer_bytes.push_back(bytes);
    return std::make_unique<RecordingBuffer>(l_->alloc(bytes), log_);
  }
  void write_register(uint32_t o, uint32_t v) override { l_->write_register(o, v); }
  uint32_t read_register(uint32_t o) override { return l_->read_register(o); }

 private:
  std::unique_ptr<BoardLayer> l_;
  SyncLog& log_;
};

TEST(BoardDevice, CopiesSyncTheirRangeInTheRightDirection) {
  sim::register_backends();
  SyncLog log;
  BoardDevice d(std::make_unique<RecordingLayer>(sim::make_sim_board_layer("fsim", config_json()), log));
  uint64_t a = d.alloc(10000, 64);
  std::vector<uint8_t> in(3000), out(3000);
  for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 13 + 1);
  d.write(a + 100, in.data(), in.size());
  d.read(a + 100, out.data(), out.size());
  EXPECT_EQ(in, out);
  using S = SyncDirection;
  ASSERT_EQ(log.syncs.size(), 2u);
  EXPECT_EQ(log.syncs[0], std::make_tuple(S::ToDevice, uint64_t(3000), uint64_t(100) + (a - a)));
  EXPECT_EQ(std::get<0>(log.syncs[1]), S::FromDevice);
  EXPECT_EQ(std::get<1>(log.syncs[1]), 3000u);
  // An alignment the runtime's buffers lack: a larger buffer, the allocation aligned inside it.
  uint64_t big = d.alloc(5000, uint64_t(1) << 20);
  EXPECT_EQ(big % (uint64_t(1) << 20), 0u);
  EXPECT_GE(log.buffer_bytes.back(), 5000u + (uint64_t(1) << 20) - 1);
  d.write(big, in.data(), 1000);
  d.read(big, out.data(), 1000);
  EXPECT_TRUE(std::equal(in.begin(), in.begin() + 1000, out.begin()));
  // Refused: a range no one allocation holds, a fixed address, a double free.
  EXPECT_NE(error_text<DeviceError>([&] { d.write(a + 9990, in.data(), 20); }).find("no one allocation holds"),
            std::string::npos);
  EXPECT_NE(error_text<DeviceError>([&] { d.alloc_at(0x10000, 64); }).find("the board's runtime places buffers"),
            std::string::npos);
  d.free(a);
  EXPECT_NE(error_text<DeviceError>([&] { d.free(a); }).find("not allocated"), std::string::npos);
}

// A whole program through the driver on each board stand-in: the result and the counters equal
// the plain simulator's, and an illegal instruction is reported from the registers.
TEST(BoardDevice, DriverRunsOnBoardStandIns) {
  sim::register_backends();
  int ran = 0;
  for (const char* backend : {"board-fsim", "board-rtl"}) {
    if (!registered(backend)) continue;
    SCOPED_TRACE(backend);
    ++ran;
    accel::AccelConfig cfg = accel::default_config();
    auto dev = make_accel_device(backend, cfg.to_json());
    accel::Driver drv(*dev, cfg);
    const int M = 2, N = 32, K = 48;
    std::vector<int8_t> a(M * K), w(N * K);
    for (size_t i = 0; i < a.size(); ++i) a[i] = int8_t(i * 7 - 50);
    for (size_t i = 0; i < w.size(); ++i) w[i] = int8_t(i * 3 - 70);
    auto pa = accel::pack_blocks(a, M, K, cfg.batch, cfg.block_in),
         pw = accel::pack_blocks(w, N, K, cfg.block_out, cfg.block_in);
    auto da = drv.alloc(pa.size()), dw = drv.alloc(pw.size()), dc = drv.alloc(size_t(M) * N);
    drv.copy_to_device(da, pa.data(), pa.size());
    drv.copy_to_device(dw, pw.data(), pw.size());
    accel::emit_blocked_matmul(drv, da, dw, dc, M, N, K);
    auto counters = drv.synchronize();
    EXPECT_EQ(counters["gemm_macs"], uint64_t(M) * N * K);
    std::vector<int8_t> c(size_t(M) * N);
    drv.copy_from_device(dc, c.data(), c.size());
    EXPECT_EQ(accel::unpack_blocks(c, M, N, cfg.batch, cfg.block_out), accel::reference_matmul(a, w, M, N, K));
    std::vector<uint8_t> bad(16, 0xff);  // opcode 7: illegal
    auto db = drv.alloc(16);
    drv.copy_to_device(db, bad.data(), 16);
    std::string e = error_text<DeviceError>([&] {
      dev->launch(db.addr, 1);
      dev->wait();
    });
    EXPECT_NE(e.find("instruction 0"), std::string::npos) << e;
  }
#ifdef LOOM_HAVE_RTL
  EXPECT_EQ(ran, 2);
#endif
}

// ap_ctrl_hs: DONE and READY set when a run ends and cleared when CONTROL is read, IDLE while
// not running, ISR set by the run and toggled by writes, START refused nowhere else.
TEST(ApCtrlHs, ControlBitsOnEveryBackend) {
  sim::register_backends();
  int ran = 0;
  for (const char* backend : {"fsim", "rtl"}) {
    if (!registered(backend)) continue;
    SCOPED_TRACE(backend);
    ++ran;
    accel::AccelConfig cfg = accel::default_config();
    auto dev = make_accel_device(backend, cfg.to_json());
    EXPECT_EQ(dev->read_reg(reg::kControl) & (reg::kApDone | reg::kApIdle | reg::kStart), reg::kApIdle);
    dev->write_reg(reg::kGie, 1);
    dev->write_reg(reg::kIer, reg::kIrqDone);
    accel::Driver drv(*dev, cfg);
    accel::InsnWord finish = accel::encode(accel::Instruction{}, accel::IsaLayout(cfg));  // FINISH
    auto b = drv.alloc(16);
    drv.copy_to_device(b, finish.data(), 16);
    dev->launch(b.addr, 1);
    dev->wait();
    uint32_t ctrl = dev->read_reg(reg::kControl);
    EXPECT_EQ(ctrl & (reg::kApDone | reg::kApReady | reg::kApIdle), reg::kApDone | reg::kApReady | reg::kApIdle);
    EXPECT_EQ(dev->read_reg(reg::kControl) & (reg::kApDone | reg::kApReady), 0u) << "cleared when read";
    EXPECT_EQ(dev->read_reg(reg::kStatus) & reg::kDone, reg::kDone) << "STATUS is not cleared by reads";
    EXPECT_EQ(dev->read_reg(reg::kIsr), reg::kIrqDone | reg::kIrqReady);
    dev->write_reg(reg::kIsr, reg::kIrqDone);  // toggle on write
    EXPECT_EQ(dev->read_reg(reg::kIsr), reg::kIrqReady);
    EXPECT_EQ(dev->read_reg(reg::kGie), 1u);
    EXPECT_EQ(dev->read_reg(reg::kIer), reg::kIrqDone);
  }
#ifdef LOOM_HAVE_RTL
  EXPECT_EQ(ran, 2);
#endif
}

TEST(XrtBackend, NoBoardIsAClearError) {
  sim::register_backends();
  std::string e = error_text<DeviceError>([&] { make_accel_device("xrt", config_json()); });
#ifdef LOOM_HAVE_XRT
  EXPECT_NE(e.find("no XRT device found (looked for device index 0)"), std::string::npos) << e;
  std::string with = config_json();
  with = with.substr(0, with.rfind('}')) + R"(, "xrt": {"device": 3, "xclbin": "/nonexistent.xclbin"}})";
  e = error_text<DeviceError>([&] { make_accel_device("xrt", with); });
  EXPECT_NE(e.find("no XRT device found (looked for device index 3)"), std::string::npos) << e;
#else
  EXPECT_NE(e.find("the xrt backend is not built"), std::string::npos) << e;
#endif
}

// The kernel's files name every register at its offset in the one register map.
TEST(VitisKernel, FilesFollowTheRegisterMap) {
  for (const char* name : {"default", "1x32x32"}) {
    accel::AccelConfig cfg = accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/" + name + ".json");
    accel::VitisKernelFiles f = accel::vitis_kernel_files(cfg, "HP0");
    auto hex = [](uint32_t v) {
      std::ostringstream os;
      os << "0x" << std::uppercase << std::hex << v;
      return os.str();
    };
    EXPECT_NE(f.kernel_xml.find("name=\"insn_addr\" addressQualifier=\"1\" id=\"0\" port=\"m_axi_gmem\" size=\"0x8\" "
                                "offset=\"" +
                                hex(reg::kInsnAddrLo) + "\""),
              std::string::npos);
    EXPECT_NE(
        f.kernel_xml.find("name=\"insn_count\" addressQualifier=\"0\" id=\"1\" port=\"s_axi_control\" size=\"0x4\" "
                          "offset=\"" +
                          hex(reg::kInsnCount) + "\""),
        std::string::npos);
    EXPECT_NE(f.kernel_xml.find("dataWidth=\"" + std::to_string(cfg.dram_bus_bytes() * 8) + "\""), std::string::npos);
    for (auto [reg_name, offset] : {std::pair{"CTRL", reg::kControl}, std::pair{"GIER", reg::kGie},
                                    std::pair{"IP_IER", reg::kIer}, std::pair{"IP_ISR", reg::kIsr},
                                    std::pair{"STATUS", reg::kStatus}, std::pair{"ERROR_INDEX", reg::kErrorIndex}})
      EXPECT_NE(f.package_tcl.find(std::string("add_register -quiet ") + reg_name +
                                   " $block]\nset_property "
                                   "address_offset " +
                                   hex(offset)),
                std::string::npos)
          << reg_name;
    EXPECT_NE(f.connectivity_cfg.find("sp=loom_accel_1.m_axi_gmem:HP0"), std::string::npos);
  }
  EXPECT_THROW(accel::vitis_kernel_files(accel::default_config(), "DDR\"0"), ConfigError);
}

}  // namespace
}  // namespace loom
