// `loom rpc-server` and the board-side `loom-rpc-server` (the same options): export one
// accelerator device over TCP or TLS (loom/runtime/rpc.h); and the key pairs TLS needs.
#pragma once
#include <string>
#include <vector>

namespace loom::tools {

// `program`: the name errors and --help show ("loom rpc-server" or "loom-rpc-server").
int rpc_server_command(const std::vector<std::string>& args, const std::string& program = "loom rpc-server");
// `loom rpc-keygen` and `loom-rpc-server keygen`: a self-signed key pair for a server or client.
int rpc_keygen_command(const std::vector<std::string>& args, const std::string& program = "loom rpc-keygen");

}  // namespace loom::tools
