// `loom rpc-server` and `loom rpc-keygen` (rpc_server.cc).
#include "command.h"
#include "rpc_server.h"

namespace loom::tools {

LOOM_REGISTER_COMMAND("rpc-server", "export an accelerator device over TCP or TLS (rpc+tls://HOST:PORT/BACKEND)",
                      [](const std::vector<std::string>& args) { return rpc_server_command(args); });
LOOM_REGISTER_COMMAND("rpc-keygen", "write a self-signed key pair for an RPC server's TLS (or a client's)",
                      [](const std::vector<std::string>& args) { return rpc_keygen_command(args); });

}  // namespace loom::tools
