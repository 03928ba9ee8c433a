// `loom rpc-server`: export an accelerator device over TCP (rpc_server.cc).
#include "command.h"
#include "rpc_server.h"

namespace loom::tools {

LOOM_REGISTER_COMMAND("rpc-server", "export an accelerator device over TCP (rpc://HOST:PORT/BACKEND)",
                      rpc_server_command);

}  // namespace loom::tools
