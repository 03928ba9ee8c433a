// `loom rpc-server` and the board-side `loom-rpc-server` (the same options): export one
// accelerator device over TCP (loom/runtime/rpc.h).
#pragma once
#include <string>
#include <vector>

namespace loom::tools {

int rpc_server_command(const std::vector<std::string>& args);

}  // namespace loom::tools
