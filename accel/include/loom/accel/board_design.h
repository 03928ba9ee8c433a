// A whole system for one board (boards.h): the Vivado block design that puts the accelerator
// beside the board's processing system (registers on a GP/HPM port, the AXI master on an HP port,
// a fabric clock, reset and the interrupt, the address map), the Verilog wrapper the block design
// instantiates, and the device-tree overlay and config file the `zynq` backend finds the
// accelerator through. One set of names and addresses feeds them all, so the overlay's register
// window is the block design's, and the backend's UIO name is the overlay's node.
// docs/fpga.md walks from these files to a bitstream and a run.
#pragma once
#include <cstdint>
#include <string>

#include "loom/accel/boards.h"
#include "loom/accel/config.h"

namespace loom::accel {

struct BoardDesignOptions {
  std::string uio = "loom_accel";    // the overlay's node: the UIO device's name
  std::string udmabuf = "udmabuf0";  // the u-dma-buf device's name (/dev/udmabuf0)
  uint64_t dma_bytes = 0;            // the contiguous region; 0: the board's default
  int clock_mhz = 0;                 // the fabric clock; 0: the board's default
};

struct BoardDesignFiles {
  std::string block_design_tcl;  // block_design.tcl: vivado -mode batch -source block_design.tcl
  std::string wrapper_v;         // rtl/loom_accel_bd.v: the kernel with concrete widths, for the block design
  std::string overlay_dtso;      // loom_accel.dtso: dtc -@ -I dts -O dtb -o loom_accel.dtbo loom_accel.dtso
  std::string bootgen_bif;       // loom_accel.bif: the .bit.bin the overlay's firmware-name loads
  std::string board_json;        // board.json: the config with its "zynq" section (loom run --config)
  std::string shell_json;        // shell.json for Kria's dfx-mgr; empty on other boards
  int hp_bits = 0;               // the HP port's data width the design sets
  int clock_mhz = 0;
  uint64_t dma_bytes = 0;
};

// ConfigError naming the option when a name is not a device-tree node name, the region is not a
// positive multiple of 4096 that leaves the board's Linux half its memory, or the clock is out
// of [10, 400] MHz.
BoardDesignFiles board_design_files(const AccelConfig& config, const Board& board,
                                    const BoardDesignOptions& options = {});

inline constexpr const char* kBoardDesignTop = "loom_accel_bd";  // the wrapper's module

}  // namespace loom::accel
