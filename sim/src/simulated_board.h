// Internal to loom_sim: the board backends that stand on a simulator ("board-fsim", "zynq-rtl",
// ...), registered the same way for every board layer (board_sim.cc, zynq_layer.cc).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "loom/runtime/board_device.h"

namespace loom::sim {

// The layer of a board backend over the simulator `inner` ("fsim", "rtl"), and its check of a
// config (the ConfigError or DeviceError opening it would throw).
using SimulatedLayerFactory =
    std::function<std::unique_ptr<BoardLayer>(const std::string& inner, const std::string& config_json)>;
using SimulatedLayerCheck = std::function<void(const std::string& inner, const std::string& config_json)>;

// Registers "<prefix>-fsim" and, where the RTL is built, "<prefix>-rtl": a BoardDevice over
// make(inner, config), checked by check(inner, config). Call after the simulators are registered.
void register_simulated_boards(const std::string& prefix, const SimulatedLayerFactory& make,
                               const SimulatedLayerCheck& check);

}  // namespace loom::sim
