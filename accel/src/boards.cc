#include "loom/accel/boards.h"

#include "loom/runtime/error.h"

namespace loom::accel {

const std::vector<Board>& boards() {
  // Sources: Digilent Pynq-Z1 reference manual; AMD UG585 (Zynq-7000 TRM: IRQ_F2P[0] is SPI 61,
  // GP0's PL window at 0x4000_0000, HP ports 32/64 bits), UG1085 (Zynq UltraScale+ TRM: pl_ps_irq0[0]
  // is SPI 121, HPM0_FPD's window at 0xA000_0000, HP ports up to 128 bits, 49-bit addresses),
  // UG1267 (ZCU104), DS987 (Kria K26 SOM). The NEON peaks: Cortex-A9 one 64-bit multiply-accumulate
  // pipe (2 fp32 lanes), Cortex-A53 two 64-bit pipes.
  static const std::vector<Board> list = {
      {"pynq-z1",
       "Digilent Pynq-Z1",
       "xc7z020clg400-1",
       "xc7z020",
       "www.digilentinc.com:pynq-z1:part0:1.0",
       "",
       ProcessingSystem::Zynq7000,
       0x43C00000ull,
       64,
       32,
       512ull << 20,
       2.1,
       61,
       "intc",
       1,
       100,
       64ull << 20,
       "Cortex-A9",
       "armv7a-linux-gnueabihf",
       2,
       0.65,
       4},
      {"zcu104",
       "AMD Zynq UltraScale+ MPSoC ZCU104",
       "xczu7ev-ffvc1156-2-e",
       "xczu7ev",
       "xilinx.com:zcu104:part0:1.1",
       "",
       ProcessingSystem::ZynqMpsoc,
       0xA0000000ull,
       128,
       49,
       2048ull << 20,
       19.2,
       121,
       "gic",
       2,
       200,
       256ull << 20,
       "Cortex-A53",
       "aarch64-linux-gnu",
       4,
       1.2,
       8},
      {"kv260",
       "AMD Kria KV260 (K26 SOM)",
       "xck26-sfvc784-2LV-c",
       "xck26",
       "xilinx.com:kv260_som:part0:1.3",
       "som240_1_connector xilinx.com:kv260_carrier:som240_1_connector:1.3",
       ProcessingSystem::ZynqMpsoc,
       0xA0000000ull,
       128,
       49,
       4096ull << 20,
       19.2,
       121,
       "gic",
       2,
       200,
       256ull << 20,
       "Cortex-A53",
       "aarch64-linux-gnu",
       4,
       1.333,
       8,
       true},
  };
  return list;
}

const Board& board(const std::string& name) {
  std::string known;
  for (const Board& b : boards()) {
    if (b.name == name) return b;
    known += (known.empty() ? "" : ", ") + b.name + " (" + b.title + ")";
  }
  LOOM_THROW(ConfigError, "board '", name, "' is not one Loom builds for; boards: ", known);
}

}  // namespace loom::accel
