// The FPGA boards Loom builds a whole system for: the part and the Vivado board part, the
// processing system and the ports the accelerator sits on, where its registers and interrupt
// appear to Linux, and the Arm cores beside it. `loom hw-board` writes a board's block design and
// device-tree overlay from this (board_design.h); `loom run --board` estimates latency on it.
// Figures are the vendors' (board reference manuals, Zynq TRMs UG585/UG1085).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace loom::accel {

enum class ProcessingSystem {
  Zynq7000,   // processing_system7: control on M_AXI_GP0, memory through S_AXI_HP0, IRQ_F2P
  ZynqMpsoc,  // zynq_ultra_ps_e: control on M_AXI_HPM0_FPD, memory through S_AXI_HP0_FPD, pl_ps_irq0
};

struct Board {
  std::string name;               // as --board takes it: "pynq-z1"
  std::string title;              // "Digilent Pynq-Z1"
  std::string part;               // the Vivado part: "xc7z020clg400-1"
  std::string fit_part;           // its entry in fpga_parts() (fpga_fit.h): "xc7z020"
  std::string board_part;         // the Vivado board part (DDR and MIO presets)
  std::string board_connections;  // a carrier-card connection (Kria SOMs), empty if none
  ProcessingSystem ps;
  // Where the processing system sees the control registers (the GP/HPM port's PL window).
  uint64_t control_base;
  int hp_port_max_bits;             // the widest data width of the HP port the AXI master is linked to
  int ps_address_bits;              // physical addresses the PS decodes (what the HP port passes on)
  uint64_t ddr_bytes;               // the board's DDR behind the HP port
  double ddr_gbytes_per_s;          // its peak bandwidth
  int irq_spi;                      // the GIC's shared-peripheral interrupt the accelerator's interrupt lands on
  std::string dt_interrupt_parent;  // the base device tree's label of the GIC: "intc", "gic"
  int dt_address_cells;             // #address-cells (and #size-cells) of the amba bus
  int pl_clock_mhz;                 // the default fabric clock the design runs at
  uint64_t default_dma_bytes;       // the contiguous region for the zynq backend (u-dma-buf)
  // The Arm cores, for what Loom compiles for them (--host-target) and the latency estimate.
  std::string cpu;          // "Cortex-A9"
  std::string host_target;  // loom compile --host-target: "armv7a-linux-gnueabihf"
  int cores;
  double cpu_ghz;
  int fp32_flops_per_cycle;  // one core's NEON peak (fused multiply-adds count two)
  bool dfx_mgr = false;      // loads bitstreams as dfx-mgr applications (Kria: xmutil loadapp)
  // The bitstream loader's architecture (bootgen -arch) for the .bit.bin the overlay names.
  const char* bootgen_arch() const { return ps == ProcessingSystem::Zynq7000 ? "zynq" : "zynqmp"; }
  // The device-tree interrupt specifier's number: SPIs are numbered from 32 in the GIC's ID space.
  int dt_spi() const { return irq_spi - 32; }
};

const std::vector<Board>& boards();
// The board called `name`; a ConfigError listing the boards otherwise.
const Board& board(const std::string& name);

}  // namespace loom::accel
