// The boards and the system `loom hw-board` writes for each: the registry agrees with the FPGA
// parts table, the HP port takes the bus's width up to the port's, the options are checked, and
// board.json reads back as the config with the zynq section the overlay's names are in.
// tests/tools/check_board_design.py checks the written files against the TRMs and compiles them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error_text.h"
#include "loom/accel/board_design.h"
#include "loom/accel/board_estimate.h"
#include "loom/accel/boards.h"
#include "loom/accel/fpga_fit.h"
#include "loom/runtime/error.h"

using namespace loom;
using namespace loom::accel;

TEST(Boards, EachNamesAKnownPartOfItsFamily) {
  ASSERT_EQ(boards().size(), 3u);
  for (const Board& b : boards()) {
    const FpgaPart& part = fpga_part(b.fit_part);
    EXPECT_EQ(part.family, b.ps == ProcessingSystem::Zynq7000 ? FpgaFamily::Xc7 : FpgaFamily::Xcup) << b.name;
    EXPECT_EQ(b.part.rfind(b.fit_part, 0), 0u) << b.name << ": " << b.part;
    EXPECT_EQ(&board(b.name), &b);
  }
  std::string e = test::error_text<ConfigError>([] { board("ultra96"); });
  EXPECT_NE(e.find("board 'ultra96' is not one Loom builds for; boards: pynq-z1 (Digilent Pynq-Z1), zcu104"),
            std::string::npos)
      << e;
}

TEST(BoardDesign, HpPortTakesTheBusWidthUpToThePorts) {
  const AccelConfig wide = default_config();  // a 128-bit bus
  ASSERT_EQ(wide.dram_bus_bytes() * 8, 128);
  EXPECT_EQ(board_design_files(wide, board("pynq-z1")).hp_bits, 64);
  EXPECT_EQ(board_design_files(wide, board("zcu104")).hp_bits, 128);
  const AccelConfig narrow =
      AccelConfig::from_json(R"({"name": "narrow", "block_in": 4, "block_out": 4, "acc_buffer_bytes": 512})");
  ASSERT_EQ(narrow.dram_bus_bytes() * 8, 32);
  EXPECT_EQ(board_design_files(narrow, board("kv260")).hp_bits, 32);
  EXPECT_NE(board_design_files(narrow, board("kv260")).wrapper_v.find("wire [31:0] m_axi_gmem_rdata"),
            std::string::npos);
}

TEST(BoardDesign, BoardJsonIsTheConfigWithTheOverlaysNames) {
  BoardDesignOptions o;
  o.uio = "lab_accel";
  o.udmabuf = "lab_dma";
  o.dma_bytes = 32 << 20;
  BoardDesignFiles f = board_design_files(default_config(), board("pynq-z1"), o);
  AccelConfig back = AccelConfig::from_json(f.board_json);
  EXPECT_TRUE(back == default_config());
  nlohmann::json zynq = nlohmann::json::parse(back.backend_sections.at("zynq"));
  EXPECT_EQ(zynq["uio"], "lab_accel");
  EXPECT_EQ(zynq["udmabuf"], "lab_dma");
  EXPECT_EQ(zynq["dma_bytes"], 32 << 20);
  EXPECT_NE(f.overlay_dtso.find("lab_accel@43c00000 {"), std::string::npos) << f.overlay_dtso;
  EXPECT_NE(f.overlay_dtso.find("device-name = \"lab_dma\";"), std::string::npos);
  EXPECT_NE(f.overlay_dtso.find("size = <0x2000000>;"), std::string::npos);
  EXPECT_NE(f.block_design_tcl.find("-offset 0x43c00000 -range 4K"), std::string::npos);
  EXPECT_EQ(f.clock_mhz, 100);
  EXPECT_TRUE(f.shell_json.empty());
  EXPECT_FALSE(board_design_files(default_config(), board("kv260")).shell_json.empty());
  // The MPSoC's amba bus has two address cells.
  EXPECT_NE(
      board_design_files(default_config(), board("zcu104")).overlay_dtso.find("reg = <0x0 0xa0000000 0x0 0x1000>;"),
      std::string::npos);
}

TEST(BoardDesign, OptionsAreChecked) {
  auto error = [](BoardDesignOptions o) {
    return test::error_text<ConfigError>([&] { board_design_files(default_config(), board("zcu104"), o); });
  };
  BoardDesignOptions o;
  o.uio = "9accel";
  EXPECT_NE(error(o).find("--uio '9accel' is not a device-tree node name"), std::string::npos) << error(o);
  o = {};
  o.udmabuf = std::string(32, 'a');
  EXPECT_NE(error(o).find("--udmabuf 'aaaa"), std::string::npos) << error(o);
  o = {};
  o.udmabuf = "loom_accel";
  EXPECT_NE(error(o).find("--uio and --udmabuf are both 'loom_accel'"), std::string::npos) << error(o);
  o = {};
  o.dma_bytes = 4097;
  EXPECT_NE(error(o).find("--dma-bytes 4097 must be a positive multiple of 4096"), std::string::npos) << error(o);
  o.dma_bytes = 1024ull << 20;  // the ZCU104's PS DDR is 2 GiB: at most half
  EXPECT_EQ(error(o), "<no error>");
  o.dma_bytes = (1024ull << 20) + 4096;
  EXPECT_NE(error(o).find("of at most 1073741824"), std::string::npos) << error(o);
  o = {};
  o.clock_mhz = 401;
  EXPECT_NE(error(o).find("--clock-mhz 401 is outside [10, 400]"), std::string::npos) << error(o);
  o.clock_mhz = 400;
  EXPECT_EQ(error(o), "<no error>");
}

// The estimate's arithmetic on a board whose figures give round numbers: the Pynq-Z1's two
// Cortex-A9 cores peak at 2 x 0.65 GHz x 4 = 5.2 G operations a second, its DDR at 2.1 GB/s.
TEST(BoardEstimate, RooflineOnTheCoresAndCyclesAtTheClock) {
  const Board& pynq = board("pynq-z1");
  std::vector<KernelWork> work = {{"conv (compute-bound)", false, 0, 5.2e9, 1e6},
                                  {"copy (memory-bound)", false, 0, 1e3, 2.1e9},
                                  {"gemm", true, 100'000'000, 0, 0},
                                  {"reshape (run-time shape)", false, 0, 0, 4.2e8}};
  BoardEstimate e = estimate_on_board(work, pynq);
  ASSERT_EQ(e.kernels.size(), 4u);
  EXPECT_DOUBLE_EQ(e.kernels[0].seconds, 1.0);
  EXPECT_STREQ(e.kernels[0].bound, "compute");
  EXPECT_DOUBLE_EQ(e.kernels[1].seconds, 1.0);
  EXPECT_STREQ(e.kernels[1].bound, "memory");
  EXPECT_DOUBLE_EQ(e.kernels[2].seconds, 1.0);  // 1e8 cycles at 100 MHz
  EXPECT_DOUBLE_EQ(e.kernels[3].seconds, 0.2);
  EXPECT_STREQ(e.kernels[3].bound, "memory (operations not counted)");
  EXPECT_EQ(e.uncounted_cpu_kernels, 1);
  EXPECT_DOUBLE_EQ(e.seconds(), 3.2);
  EXPECT_EQ(e.accel_cycles, 100'000'000u);
  // At another clock the accelerator's share scales, the CPU's does not.
  EXPECT_DOUBLE_EQ(estimate_on_board(work, pynq, 200).seconds(), 2.7);
  // The bandwidth the performance model gets: the HP port's width a cycle, or the DDR's share.
  EXPECT_DOUBLE_EQ(board_dram_bytes_per_cycle(default_config(), pynq, 100), 8.0);
  EXPECT_DOUBLE_EQ(board_dram_bytes_per_cycle(default_config(), board("zcu104"), 200), 16.0);
  EXPECT_DOUBLE_EQ(board_dram_bytes_per_cycle(default_config(), pynq, 400), 2.1e9 / 400e6);
}
