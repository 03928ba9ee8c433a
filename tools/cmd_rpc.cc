// `loom rpc-server`: export an accelerator device over TCP (rpc_server.cc).
#include "command.h"
#include "rpc_server.h"

namespace loom::tools {

LOOM_REGISTER_COMMAND("rpc-server", "export an accelerator device over TCP (rpc://HOST:PORT/BACKEND)",
                      [](const std::vector<std::string>& args) { return rpc_server_command(args); });

}  // namespace loom::tools
