// A simulator standing in for a board (backends "board-fsim", "board-rtl"): the layer under
// BoardDevice (loom/runtime/board_device.h) with buffers that keep a host copy which only explicit
// syncs move to and from the simulated DRAM, as XRT's buffers do, and registers reached through
// the simulator. Everything the XRT backend does except the XRT calls runs on it.
#pragma once
#include <memory>
#include <string>

#include "loom/runtime/board_device.h"

namespace loom::sim {

// `inner`: "fsim" or "rtl"; `config_json` as for make_accel_device.
std::unique_ptr<BoardLayer> make_sim_board_layer(const std::string& inner, const std::string& config_json);

// Registers "board-fsim", "board-rtl" (where the RTL is built) and "xrt" (a DeviceError naming
// what is missing when Loom was built without XRT or no board is found).
void register_board_backends();

// Registers the Zynq boards without XRT (sim/src/zynq_platform.h): "zynq" (UIO and u-dma-buf on
// the board's Linux; a DeviceError naming what is missing elsewhere) and "zynq-fsim", "zynq-rtl"
// (a simulator behind the same layer, whose CPU view of the DMA region only syncs reconcile).
void register_zynq_backends();

}  // namespace loom::sim
