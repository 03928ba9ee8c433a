// `loom rpc-server` and the board-side `loom-rpc-server` (the same options): export one
// accelerator device over TCP (loom/runtime/rpc.h).
#pragma once
#include <string>
#include <vector>

namespace loom::tools {

// `program`: the name errors and --help show ("loom rpc-server" or "loom-rpc-server").
int rpc_server_command(const std::vector<std::string>& args, const std::string& program = "loom rpc-server");

}  // namespace loom::tools
